#include "proc/runtime_probe.h"

#include <errno.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "proc/runtimes.h"

namespace agentd {
namespace {

constexpr uint32_t kDirEvents = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |
                                IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

std::vector<std::string> SplitPath(const std::string& path_list) {
  std::vector<std::string> dirs;
  size_t start = 0;
  for (;;) {
    size_t end = path_list.find(':', start);
    dirs.push_back(path_list.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos) return dirs;
    start = end + 1;
  }
}

std::string Parent(const std::string& dir) {
  size_t slash = dir.find_last_of('/');
  if (slash == 0 || slash == std::string::npos) return "/";
  return dir.substr(0, slash);
}

}  // namespace

bool RuntimeProbe::WatchAll(const std::string& path_list) {
  inotify_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));  // drops every earlier watch
  if (!inotify_) return false;
  for (std::string dir : SplitPath(path_list)) {
    if (dir.empty() || dir[0] != '/') return false;  // relative to the cwd: probe every call
    // A missing directory: watch the nearest ancestor that exists, whose
    // new entry is the first step of the directory's creation.
    while (::inotify_add_watch(inotify_.get(), dir.c_str(), kDirEvents) < 0) {
      if ((errno != ENOENT && errno != ENOTDIR) || dir == "/") return false;
      dir = Parent(dir);
    }
  }
  return true;
}

bool RuntimeProbe::Changed() {
  alignas(struct inotify_event) char buf[4096];
  bool any = false;
  for (;;) {
    ssize_t n = ::read(inotify_.get(), buf, sizeof buf);
    if (n > 0) {
      any = true;  // any event (IN_Q_OVERFLOW and IN_IGNORED included) means probe again
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return any || !(n < 0 && errno == EAGAIN);
  }
}

std::vector<Runtime> RuntimeProbe::Present(const std::string& path_list) {
  std::vector<Runtime> out;
  for (const RuntimeCheck& c : Check(path_list)) {
    if (c.ok()) out.push_back(c.runtime);
  }
  return out;
}

void RuntimeProbe::RefreshLocked(const std::string& path_list) {
  if (cached_ && path_list == path_list_ && !Changed()) return;
  // Watch anew (a directory created or replaced since needs its own
  // watch), then probe: a change between the two is seen next call.
  cached_ = WatchAll(path_list);
  if (!cached_) inotify_.reset();
  path_list_ = path_list;
  checks_ = CheckRuntimes(path_list);
  ++probes_;
}

std::vector<RuntimeCheck> RuntimeProbe::Check(const std::string& path_list) {
  std::lock_guard lock(mu_);
  RefreshLocked(path_list);
  return checks_;
}

unsigned long long RuntimeProbe::Refresh(const std::string& path_list) {
  std::lock_guard lock(mu_);
  RefreshLocked(path_list);
  return probes_;
}

unsigned long long RuntimeProbe::probes() const {
  std::lock_guard lock(mu_);
  return probes_;
}

}  // namespace agentd
