#include "sys/write_probe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {

WriteProbe::WriteProbe(std::string dir, std::chrono::milliseconds interval)
    : path_(std::move(dir) + "/.write-probe"), interval_(interval) {}

Status WriteProbe::Check() {
  auto now = std::chrono::steady_clock::now();
  if (checked_ && now - last_ < interval_) return last_status_;
  checked_ = true;
  last_ = now;
  UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return last_status_ = PosixError(errno, "cannot create", path_);
  static constexpr char kBytes[] = "agentd write probe\n";
  ssize_t n = ::write(fd.get(), kBytes, sizeof kBytes - 1);
  int write_errno = errno;
  fd.reset();
  ::unlink(path_.c_str());
  if (n < 0) return last_status_ = PosixError(write_errno, "cannot write", path_);
  if (n != static_cast<ssize_t>(sizeof kBytes - 1)) {
    return last_status_ = PosixError(ENOSPC, "short write to", path_);
  }
  return last_status_ = Status::Ok();
}

}  // namespace agentd
