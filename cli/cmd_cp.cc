// cp: copies files or whole directories between the host and the guest.
// One side names the guest with a "guest:" prefix (":" for short); trees go
// through the tar routes with full fidelity (modes, symlinks, hard links,
// empty directories, mtimes).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "commands.h"
#include "exit_codes.h"
#include "progress.h"

namespace agentd::cli {
namespace {

bool IsGuest(const std::string& s, std::string* path) {
  for (std::string_view prefix : {"guest:", ":"}) {
    if (s.rfind(prefix, 0) == 0) {
      *path = s.substr(prefix.size());
      return true;
    }
  }
  return false;
}

// A daemon older than PUT /v1/fs/file's `etag` parameter refuses it as
// unknown (400 invalid_request naming the field).
bool RefusedEtagParameter(const Status& s) {
  if (s.code() != ErrorCode::kInvalidRequest) return false;
  const json::Value* field = s.details().Find("field");
  return field && field->is_string() && field->as_string() == "etag";
}

int Upload(Context& ctx, const std::string& local, const std::string& remote) {
  struct stat st;
  if (::stat(local.c_str(), &st) != 0) {
    return ctx.out().Fail(
        Status::Error(ErrorCode::kNotFound, "cannot read " + local + ": " + std::strerror(errno))
            .With("path", local),
        kExitNotFound);
  }
  if (S_ISDIR(st.st_mode)) {
    MkdirRequest mk;
    mk.path = remote;
    mk.parents = true;
    Result<FileStat> made = ctx.client().MakeDir(mk);
    if (!made.ok()) return ctx.out().Fail(made.status());
    Result<client::TreeStats> t = ctx.client().UploadDir(local, remote);
    if (!t.ok()) return ctx.out().Fail(t.status());
    json::Object result;
    result.Set("entries", t->entries);
    result.Set("bytes", t->bytes);
    return ctx.out().Succeed(result, "copied " + std::to_string(t->entries) + " entries (" +
                                         Output::HumanSize(t->bytes) + ") to guest:" + remote);
  }
  int fd = ::open(local.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ctx.out().Fail(Status::Error(ErrorCode::kIoError, "cannot open " + local));
  Progress progress(ctx.out(), local, static_cast<uint64_t>(st.st_size));
  std::vector<char> buf(256 * 1024);
  client::ByteSource source = [&]() -> Result<std::string_view> {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) return Status::Error(ErrorCode::kIoError, "cannot read " + local);
    progress.Add(static_cast<uint64_t>(n));
    return std::string_view(buf.data(), static_cast<size_t>(n));
  };
  client::WriteOptions w;
  w.mode = st.st_mode & 07777;  // the file keeps its mode, exec bits included
  w.parents = ctx.args().Has("parents");
  // A regular file goes with Content-Length by sendfile (the daemon checks
  // free space first; the bytes skip this process); anything else (a pipe,
  // a device) is streamed chunked through the buffer, and so is a file
  // that says it is empty (procfs makes its content up when read).
  bool whole = S_ISREG(st.st_mode) && st.st_size > 0;
  // cp never shows the new content's tag, so the daemon is spared hashing
  // it (etag=0, docs/PROTOCOL.md "Write"); a daemon older than that
  // parameter refuses it before reading the body, and is asked again with
  // the tag. A streamed body cannot be sent twice: it asks for the tag.
  w.etag = !whole;
  Result<FileStat> written =
      whole ? ctx.client().WriteFileFromFd(remote, fd, static_cast<uint64_t>(st.st_size), w)
            : ctx.client().WriteFileFrom(remote, source, w);
  if (whole && !written.ok() && RefusedEtagParameter(written.status())) {
    w.etag = true;
    written = ctx.client().WriteFileFromFd(remote, fd, static_cast<uint64_t>(st.st_size), w);
  }
  if (written.ok() && whole) progress.Add(written->size);
  ::close(fd);
  progress.Done();
  if (!written.ok()) return ctx.out().Fail(written.status());
  return ctx.out().Succeed(EncodeFileStat(*written),
                           "copied " + Output::HumanSize(written->size) + " to guest:" + remote);
}

int Download(Context& ctx, const std::string& remote, const std::string& local) {
  Result<FileStat> st = ctx.client().Stat(remote, /*follow=*/true);
  if (!st.ok()) return ctx.out().Fail(st.status());
  if (st->type == FileStat::Type::kDir) {
    Result<client::TreeStats> t = ctx.client().DownloadDir(remote, local);
    if (!t.ok()) return ctx.out().Fail(t.status());
    json::Object result;
    result.Set("entries", t->entries);
    result.Set("bytes", t->bytes);
    return ctx.out().Succeed(result, "copied " + std::to_string(t->entries) + " entries (" +
                                         Output::HumanSize(t->bytes) + ") to " + local);
  }
  // Into a temporary beside the target, renamed into place when whole.
  std::string target = local;
  struct stat lst;
  if (::stat(local.c_str(), &lst) == 0 && S_ISDIR(lst.st_mode)) {
    target = local + "/" + remote.substr(remote.rfind('/') + 1);
  }
  std::string tmp = target + ".agentctl-partial";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return ctx.out().Fail(
        Status::Error(ErrorCode::kIoError, "cannot write " + tmp + ": " + std::strerror(errno)));
  }
  Progress progress(ctx.out(), remote, st->size);
  // The body moves socket -> pipe -> file by splice(2): it never passes
  // through this process (ReadFileToFd copies only where splice refuses).
  Result<uint64_t> n =
      ctx.client().ReadFileToFd(remote, {}, fd, [&](uint64_t b) { progress.Add(b); });
  progress.Done();
  ::fchmod(fd, st->mode & 07777);
  ::close(fd);
  if (!n.ok() || ::rename(tmp.c_str(), target.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return ctx.out().Fail(n.ok() ? Status::Error(ErrorCode::kIoError, "cannot rename to " + target)
                                 : n.status());
  }
  json::Object result;
  result.Set("path", target);
  result.Set("bytes", *n);
  return ctx.out().Succeed(result, "copied " + Output::HumanSize(*n) + " to " + target);
}

}  // namespace

int CmdCp(Context& ctx) {
  const std::string& from = ctx.args().positional[0];
  const std::string& to = ctx.args().positional[1];
  std::string from_path, to_path;
  bool from_guest = IsGuest(from, &from_path);
  bool to_guest = IsGuest(to, &to_path);
  if (from_guest == to_guest) {
    return ctx.out().UsageError("exactly one side of cp names the guest (guest:/path)");
  }
  return from_guest ? Download(ctx, from_path, to) : Upload(ctx, from, to_path);
}

}  // namespace agentd::cli
