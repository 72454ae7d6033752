#include "reuse/ipc_sweep.h"

#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "sys/read_file.h"

namespace agentd {
namespace {

constexpr const char* kTables[] = {"shm", "msg", "sem"};
// /proc/sysvipc tables are small (the kernel's limits: 4096 segments by
// default); a bound keeps a hostile namespace from costing more.
constexpr size_t kMaxTableBytes = 8 << 20;

// (snprintf, not fmt: the daemon links no fmt, whose locale support would
// add some 600 KiB to the static binary.)
std::string Describe(const IpcObject& o) {
  char key[16];
  std::snprintf(key, sizeof(key), "%#x", static_cast<unsigned>(static_cast<uint32_t>(o.key)));
  return o.kind + " " + std::to_string(o.id) + " (key " + key + ")";
}

bool InBaseline(const std::vector<IpcObject>& baseline, const IpcObject& o) {
  return std::find(baseline.begin(), baseline.end(), o) != baseline.end();
}

int Remove(const IpcObject& o) {
  int id = static_cast<int>(o.id);
  if (o.kind == "shm") return ::shmctl(id, IPC_RMID, nullptr);
  if (o.kind == "msg") return ::msgctl(id, IPC_RMID, nullptr);
  return ::semctl(id, 0, IPC_RMID);
}

ResetRemaining Unlisted(const Status& s) {
  return {"ipc", "/proc/sysvipc", "cannot list the IPC objects: " + s.message()};
}

}  // namespace

Result<std::vector<IpcObject>> ListSysvIpc(const std::string& root) {
  std::vector<IpcObject> out;
  for (const char* kind : kTables) {
    Result<std::string> text = ReadFileToString(root + "/" + kind, kMaxTableBytes);
    if (!text.ok() && text.status().code() == ErrorCode::kNotFound) continue;
    if (!text.ok()) return text.status();
    // Parsed by hand: string streams would pull iostreams and their
    // locales into the static binary.
    std::string_view rest = *text;
    bool header = true;
    while (!rest.empty()) {
      size_t nl = rest.find('\n');
      std::string line(rest.substr(0, nl));
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      if (std::exchange(header, false)) continue;
      const char* p = line.c_str();
      char* end = nullptr;
      errno = 0;
      long long key = std::strtoll(p, &end, 10);
      if (end == p || errno != 0) continue;
      p = end;
      long long id = std::strtoll(p, &end, 10);
      if (end == p || errno != 0) continue;
      out.push_back({kind, id, key});
    }
  }
  return out;
}

IpcSweepResult RemoveIpcBeyond(const std::vector<IpcObject>& baseline, const std::string& root) {
  IpcSweepResult result;
  Result<std::vector<IpcObject>> now = ListSysvIpc(root);
  if (!now.ok()) {
    result.remaining.push_back(Unlisted(now.status()));
    return result;
  }
  for (const IpcObject& o : *now) {
    if (InBaseline(baseline, o)) continue;
    if (Remove(o) == 0) {
      ++result.removed;
    } else if (errno != EINVAL && errno != EIDRM) {  // not gone already
      result.remaining.push_back(
          {"ipc", Describe(o), std::string("cannot remove: ") + std::strerror(errno)});
    }
  }
  return result;
}

std::vector<ResetRemaining> IpcLeft(const std::vector<IpcObject>& baseline,
                                    const std::string& root) {
  Result<std::vector<IpcObject>> now = ListSysvIpc(root);
  if (!now.ok()) return {Unlisted(now.status())};
  std::vector<ResetRemaining> left;
  for (const IpcObject& o : *now) {
    if (!InBaseline(baseline, o)) {
      left.push_back({"ipc", Describe(o), "still present after the reset"});
    }
  }
  return left;
}

}  // namespace agentd
