#include "exec/exec_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "agentd/trees/dir_entries.h"
#include "agentd/trees/posix_error.h"
#include "log/log.h"
#include "sys/read_file.h"

namespace agentd {
namespace {

constexpr char kDirPrefix[] = "exec-";
constexpr size_t kMaxMetaBytes = 1 << 20;

// mkdir -p with `mode` for every directory it creates.
Status MakeDirs(const std::string& path, mode_t mode) {
  std::string partial;
  size_t i = 0;
  while (i <= path.size()) {
    size_t slash = path.find('/', i);
    if (slash == std::string::npos) slash = path.size();
    partial = path.substr(0, slash);
    i = slash + 1;
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), mode) != 0 && errno != EEXIST) {
      return PosixError(errno, "cannot create directory", partial);
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return PosixError(errno, "cannot stat", path);
  if (!S_ISDIR(st.st_mode)) return PosixError(ENOTDIR, "not a directory:", path);
  return Status::Ok();
}

Status PrepareOne(const std::string& dir) {
  AGENTD_RETURN_IF_ERROR(MakeDirs(dir, 0755));
  if (::chmod(dir.c_str(), 0700) != 0) return PosixError(errno, "cannot chmod", dir);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return PosixError(errno, "cannot write to", dir);
  return Status::Ok();
}

std::optional<StoredExec> LoadOne(const std::string& dir) {
  Result<std::string> meta = ReadFileToString(dir + "/meta.json", kMaxMetaBytes);
  if (!meta.ok()) return std::nullopt;
  Result<json::Value> doc = json::Parse(*meta);
  if (!doc.ok()) return std::nullopt;
  Result<ExecInfo> info = DecodeExecInfo(*doc);
  const json::Value* fingerprint = doc->Find("fingerprint");
  if (!info.ok() || !IsValidExecId(info->id) || !fingerprint || !fingerprint->is_string()) {
    return std::nullopt;
  }
  StoredExec out;
  out.dir = dir;
  out.fingerprint = fingerprint->as_string();
  out.info = std::move(*info);
  if (const json::Value* a = doc->Find("acked_at_ms"); a && a->is_int()) {
    out.acked_at_ms = a->as_int();
  }
  if (const json::Value* e = doc->Find("egress_state"); e && e->is_object()) out.egress_state = *e;
  if (const json::Value* g = doc->Find("cgroup_state"); g && g->is_object()) out.cgroup_state = *g;
  if (const json::Value* n = doc->Find("stdin_streamed_next");
      n && n->is_int() && n->as_int() >= 0) {
    out.stdin_streamed_next = static_cast<uint64_t>(n->as_int());
  }
  const json::Value* internal = doc->Find("internal");
  out.internal = internal && internal->is_bool() && internal->as_bool();
  return out;
}

}  // namespace

Result<std::string> PrepareStateDir(const std::string& wanted) {
  if (!wanted.empty()) {
    AGENTD_RETURN_IF_ERROR(PrepareOne(wanted));
    return wanted;
  }
  if (PrepareOne(kDefaultStateDir).ok()) return std::string(kDefaultStateDir);
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg == '/') {
    std::string dir = std::string(xdg) + "/agentd";
    if (PrepareOne(dir).ok()) return dir;
  }
  const char* tmpdir = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmpdir && *tmpdir == '/' ? tmpdir : "/tmp") + "/agentd-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return PosixError(errno, "cannot create a state directory in", tmpl);
  }
  return tmpl;
}

Status ExecStore::Open() { return PrepareOne(root_); }

std::string ExecStore::DirFor(std::string_view id) const {
  return root_ + "/" + kDirPrefix + std::string(id);
}

Status ExecStore::CreateDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0) return Status::Ok();
  if (errno != EEXIST) return PosixError(errno, "cannot create directory", dir);
  RemoveDir(dir);  // leftovers of a released record whose removal was cut short
  if (::mkdir(dir.c_str(), 0700) != 0) return PosixError(errno, "cannot create directory", dir);
  return Status::Ok();
}

Result<UniqueFd> ExecStore::WriteMeta(const std::string& dir, const ExecInfo& info,
                                      std::string_view fingerprint,
                                      std::optional<int64_t> acked_at_ms, json::Value egress_state,
                                      json::Value cgroup_state,
                                      std::optional<uint64_t> stdin_streamed_next, bool internal) {
  json::Object o = EncodeExecInfoObject(info);
  o.Set("fingerprint", fingerprint);
  if (acked_at_ms) o.Set("acked_at_ms", *acked_at_ms);
  if (egress_state.is_object()) o.Set("egress_state", std::move(egress_state));
  if (cgroup_state.is_object()) o.Set("cgroup_state", std::move(cgroup_state));
  if (stdin_streamed_next) o.Set("stdin_streamed_next", static_cast<int64_t>(*stdin_streamed_next));
  if (internal) o.Set("internal", true);
  std::string text = json::Serialize(o);
  text += '\n';
  return ReplaceFile(dir + "/meta.json", text, SyncMode::kByCaller);
}

std::vector<StoredExec> ExecStore::LoadAll() {
  std::vector<StoredExec> out;
  DIR* d = ::opendir(root_.c_str());
  if (!d) return out;
  std::vector<std::string> dirs;
  while (struct dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name.starts_with(kDirPrefix)) dirs.push_back(root_ + "/" + std::string(name));
  }
  ::closedir(d);
  for (const std::string& dir : dirs) {
    ::unlink((dir + "/meta.json.tmp").c_str());  // a write cut short by a crash
    std::optional<StoredExec> rec = LoadOne(dir);
    if (!rec || DirFor(rec->info.id) != dir) {
      Log(LogLevel::kWarn, "removing an unreadable exec record", json::Object().Set("dir", dir));
      RemoveDir(dir);
      continue;
    }
    out.push_back(std::move(*rec));
  }
  return out;
}

void ExecStore::RemoveDir(const std::string& dir) {
  Status removed = RemoveTreeAtPath(dir).status();
  if (!removed.ok() && removed.code() != ErrorCode::kNotFound) {
    Log(LogLevel::kWarn, "cannot remove an exec record",
        json::Object().Set("dir", dir).Set("error", removed.message()));
  }
}

}  // namespace agentd
