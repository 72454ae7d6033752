#include "run/driver_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "agentd/trees/unique_fd.h"

namespace agentd {
namespace {

// FNV-1a: a stable name for the content (not a security measure: the
// content itself is compared on every use).
std::string ContentTag(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

bool ReadsAs(int fd, const std::string& want) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 07777) != 0644 || st.st_size != static_cast<off_t>(want.size())) {
    return false;
  }
  std::string got(want.size() + 1, '\0');
  size_t n = 0;
  while (n < got.size()) {
    ssize_t r = ::pread(fd, got.data() + n, got.size() - n, static_cast<off_t>(n));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += static_cast<size_t>(r);
  }
  return n == want.size() && got.compare(0, n, want) == 0;
}

bool WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t w = ::write(fd, s.data() + done, s.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

DriverFile::DriverFile(std::string stem, std::string content, std::string shared_dir,
                       std::string private_dir)
    : name_(stem + "-" + ContentTag(content) + ".js"),
      content_(std::move(content)),
      shared_dir_(std::move(shared_dir)),
      private_dir_(std::move(private_dir)) {}

std::optional<std::string> DriverFile::Ensure(bool same_identity) {
  if (!shared_dir_.empty() && EnsureIn(shared_dir_, true)) return shared_dir_ + "/" + name_;
  if (same_identity && !private_dir_.empty() && EnsureIn(private_dir_, false)) {
    return private_dir_ + "/" + name_;
  }
  return std::nullopt;
}

bool DriverFile::EnsureIn(const std::string& dir, bool shared) {
  auto fail = [this, &dir](const char* what) {
    last_error_ = dir + ": " + what + (errno ? std::string(": ") + std::strerror(errno) : "");
    return false;
  };
  errno = 0;
  if (::mkdir(dir.c_str(), shared ? 0755 : 0700) != 0 && errno != EEXIST) {
    return fail("cannot make the directory");
  }
  UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d) return fail("cannot open the directory");
  struct stat st {};
  errno = 0;
  // Anyone else able to write here could swap the driver between the check
  // and the interpreter's read.
  if (::fstat(d.get(), &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    return fail("not owned by the daemon's user, or writable by others");
  }
  if (shared && (st.st_mode & 05) != 05) {
    if (::fchmod(d.get(), 0755) != 0) return fail("cannot make the directory readable");
  }
  UniqueFd f(::openat(d.get(), name_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (f && ReadsAs(f.get(), content_)) return true;
  // mkostemps takes a path; the directory was checked above and is the daemon's.
  std::string tmp_path = dir + "/." + name_ + ".XXXXXX";
  UniqueFd w(::mkostemps(tmp_path.data(), 0, O_CLOEXEC));
  if (!w) return fail("cannot write the driver");
  bool ok = ::fchmod(w.get(), 0644) == 0 && WriteAll(w.get(), content_);
  if (!ok || ::rename(tmp_path.c_str(), (dir + "/" + name_).c_str()) != 0) {
    int saved = errno;
    ::unlink(tmp_path.c_str());
    errno = saved;
    return fail("cannot write the driver");
  }
  last_error_.clear();
  return true;
}

}  // namespace agentd
