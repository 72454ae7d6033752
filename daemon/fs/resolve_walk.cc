#include "fs/resolve_walk.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cerrno>
#include <deque>

namespace agentd {
namespace {

constexpr int kMaxSymlinks = 40;  // as the kernel's MAXSYMLINKS

struct Frame {
  UniqueFd fd;
  std::string name;
};

UniqueFd Dup(int fd) { return UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 0)); }

std::vector<std::string> SplitTarget(const std::string& target) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= target.size()) {
    size_t end = target.find('/', i);
    if (end == std::string::npos) end = target.size();
    std::string part = target.substr(i, end - i);
    if (!part.empty() && part != ".") parts.push_back(std::move(part));
    i = end + 1;
  }
  return parts;
}

// Reads the symlink `fd` (an O_PATH descriptor of it); -1 and errno on failure.
int ReadLink(int fd, std::string* target) {
  char buf[4096];
  ssize_t n = ::readlinkat(fd, "", buf, sizeof(buf));
  if (n < 0) return -1;
  if (static_cast<size_t>(n) == sizeof(buf)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  target->assign(buf, static_cast<size_t>(n));
  return 0;
}

// A procfs link whose target is not a plain relative path is a "magic"
// link (fd/N, cwd, root, exe): never followed, as RESOLVE_NO_MAGICLINKS.
bool IsMagicLink(int dir_fd, const std::string& target) {
  struct statfs fs;
  if (::fstatfs(dir_fd, &fs) != 0) return true;  // cannot tell: refuse
  if (fs.f_type != PROC_SUPER_MAGIC) return false;
  return target.empty() || target.front() == '/' || target.find(':') != std::string::npos;
}

std::vector<std::string> Names(const std::vector<Frame>& stack) {
  std::vector<std::string> names;
  for (size_t i = 1; i < stack.size(); ++i) names.push_back(stack[i].name);
  return names;
}

WalkResult Fail(int err) {
  WalkResult r;
  r.error = err;
  return r;
}

}  // namespace

WalkResult ResolveWalk(int root_fd, const std::vector<std::string>& parts, bool beneath,
                       bool follow_final, bool allow_missing_leaf) {
  std::vector<Frame> stack;
  stack.push_back({Dup(root_fd), ""});
  if (!stack[0].fd) return Fail(errno);
  std::deque<std::string> todo(parts.begin(), parts.end());
  int links = 0;
  while (!todo.empty()) {
    std::string comp = std::move(todo.front());
    todo.pop_front();
    bool last = todo.empty();
    if (comp == "..") {
      if (stack.size() > 1) {
        stack.pop_back();
      } else if (beneath) {
        return Fail(EXDEV);
      }
      continue;
    }
    int top = stack.back().fd.get();
    UniqueFd fd(::openat(top, comp.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
      if (errno != ENOENT || !last || !allow_missing_leaf) return Fail(errno);
      WalkResult r;
      r.parent = Dup(top);
      r.leaf = comp;
      r.canonical = Names(stack);
      r.canonical.push_back(std::move(comp));
      return r;
    }
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return Fail(errno);
    if (S_ISLNK(st.st_mode) && (!last || follow_final)) {
      std::string target;
      if (++links > kMaxSymlinks) return Fail(ELOOP);
      if (ReadLink(fd.get(), &target) != 0) return Fail(errno);
      if (IsMagicLink(top, target)) return Fail(ELOOP);
      if (!target.empty() && target.front() == '/') {
        if (beneath) return Fail(EXDEV);
        stack.resize(1);
      }
      std::vector<std::string> spliced = SplitTarget(target);
      todo.insert(todo.begin(), spliced.begin(), spliced.end());
      continue;
    }
    if (last) {
      WalkResult r;
      r.parent = Dup(top);
      r.leaf = comp;
      r.leaf_fd = std::move(fd);
      r.canonical = Names(stack);
      r.canonical.push_back(std::move(comp));
      return r;
    }
    if (!S_ISDIR(st.st_mode)) return Fail(ENOTDIR);
    stack.push_back({std::move(fd), std::move(comp)});
  }
  // The walk ended on a directory already on the stack (a trailing "..",
  // or a symlink to "." or "/"): that directory is the final component.
  WalkResult r;
  r.canonical = Names(stack);
  if (stack.size() == 1) {
    r.leaf_fd = std::move(stack[0].fd);
    return r;
  }
  r.leaf = stack.back().name;
  r.leaf_fd = std::move(stack.back().fd);
  stack.pop_back();
  r.parent = std::move(stack.back().fd);
  return r;
}

}  // namespace agentd
