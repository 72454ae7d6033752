#include "fs/tree_watcher.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>

#include "agentd/trees/posix_error.h"

namespace agentd {
namespace {

constexpr uint32_t kMask = IN_CREATE | IN_MODIFY | IN_ATTRIB | IN_DELETE | IN_MOVED_FROM |
                           IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR |
                           IN_EXCL_UNLINK;

std::string JoinDisplay(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

WatchEvent Change(std::string kind, std::string path, std::string type, std::string from = {}) {
  WatchEvent ev;
  ev.kind = std::move(kind);
  ev.path = std::move(path);
  ev.type = std::move(type);
  ev.from = std::move(from);
  return ev;
}

Status TooManyWatches(std::string message, size_t limit) {
  return Status::Error(ErrorCode::kTooManyWatches, std::move(message))
      .With("limit", static_cast<uint64_t>(limit));
}

// Names of the subdirectories of `dir_fd` (not following symlinks).
std::vector<std::string> SubdirNames(int dir_fd, std::vector<std::string>* others) {
  std::vector<std::string> dirs;
  int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return dirs;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return dirs;
  }
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st;
      is_dir = ::fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    if (is_dir) {
      dirs.push_back(std::move(name));
    } else if (others) {
      others->push_back(std::move(name));
    }
  }
  ::closedir(d);
  return dirs;
}

}  // namespace

Result<TreeWatcher> TreeWatcher::Start(const ConfinedRoot& root, const RelPath& dir,
                                       std::string display, bool recursive, size_t max_dirs) {
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    if (errno == EMFILE || errno == ENFILE) {
      return TooManyWatches(
          std::string("the kernel refused another inotify instance: ") + std::strerror(errno),
          max_dirs);
    }
    return PosixError(errno, "cannot start watching", display);
  }
  TreeWatcher w(root, UniqueFd(fd), recursive, max_dirs);
  AGENTD_RETURN_IF_ERROR(w.AddTree(dir, display, nullptr));
  return w;
}

Status TreeWatcher::AddOne(int dir_fd, const RelPath& rel, const std::string& display) {
  if (dirs_.size() >= max_dirs_) {
    return TooManyWatches(
        "more than " + std::to_string(max_dirs_) + " directories to watch under " + display,
        max_dirs_);
  }
  std::string via = "/proc/self/fd/" + std::to_string(dir_fd);
  int wd = ::inotify_add_watch(inotify_.get(), via.c_str(), kMask);
  if (wd < 0) {
    if (errno == ENOSPC) {
      return TooManyWatches(
          "the kernel's inotify watch limit (fs.inotify.max_user_watches) is reached", max_dirs_);
    }
    return PosixError(errno, "cannot watch", display);
  }
  if (dirs_.empty()) top_wd_ = wd;
  dirs_[wd] = Dir{rel, display};
  return Status::Ok();
}

Status TreeWatcher::AddTree(const RelPath& rel, const std::string& display,
                            std::vector<WatchEvent>* out) {
  Result<UniqueFd> dir = root_->OpenAt(rel, O_RDONLY | O_DIRECTORY);
  if (!dir.ok()) return dir.status();
  AGENTD_RETURN_IF_ERROR(AddOne(dir->get(), rel, display));
  std::vector<std::string> files;
  std::vector<std::string> subdirs = SubdirNames(dir->get(), out ? &files : nullptr);
  if (out) {
    for (const std::string& f : files)
      Emit(*out, Change("created", JoinDisplay(display, f), "file"));
  }
  for (const std::string& name : subdirs) {
    std::string child = JoinDisplay(display, name);
    if (out) Emit(*out, Change("created", child, "dir"));
    if (!recursive_) continue;
    Status s = AddTree(rel.Child(name), child, out);
    // A directory removed or replaced meanwhile is not an error: its own
    // events tell the story. The limit is.
    if (s.code() == ErrorCode::kTooManyWatches) return s;
  }
  return Status::Ok();
}

void TreeWatcher::Emit(std::vector<WatchEvent>& out, WatchEvent ev) {
  if (ev.kind == "modified" && !out.empty() && out.back().kind == "modified" &&
      out.back().path == ev.path) {
    return;
  }
  out.push_back(std::move(ev));
}

void TreeWatcher::Overflow(std::vector<WatchEvent>& out, const char* reason) {
  WatchEvent ev;
  ev.kind = "overflow";
  ev.reason = reason;
  out.push_back(std::move(ev));
}

void TreeWatcher::Rebase(const std::string& from, const std::string& to, const RelPath& to_rel) {
  for (auto& [wd, dir] : dirs_) {
    if (dir.display != from && dir.display.rfind(from + "/", 0) != 0) continue;
    std::string below = dir.display.substr(from.size());
    RelPath rel = to_rel;
    // The components below the renamed directory carry over unchanged.
    size_t depth = 0;
    for (char c : below) depth += c == '/';
    rel.parts.insert(rel.parts.end(), dir.rel.parts.end() - static_cast<long>(depth),
                     dir.rel.parts.end());
    dir.display = to + below;
    dir.rel = std::move(rel);
  }
}

void TreeWatcher::Forget(const std::string& gone) {
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    if (it->first != top_wd_ &&
        (it->second.display == gone || it->second.display.rfind(gone + "/", 0) == 0)) {
      ::inotify_rm_watch(inotify_.get(), it->first);
      it = dirs_.erase(it);
    } else {
      ++it;
    }
  }
}

void TreeWatcher::FlushPending(std::vector<WatchEvent>& out) {
  if (pending_move_.cookie == 0) return;
  // Moved out of the tree: stop watching what left (its events would carry
  // paths that no longer exist here).
  if (pending_move_.is_dir) Forget(pending_move_.path);
  Emit(out, Change("removed", pending_move_.path, pending_move_.is_dir ? "dir" : "file"));
  pending_move_ = PendingMove{};
}

Status TreeWatcher::Drain(std::vector<WatchEvent>& out) {
  alignas(inotify_event) char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(inotify_.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return Status::Ok();
      return PosixError(errno, "cannot read inotify events");
    }
    for (char* p = buf; p < buf + n;) {
      auto* e = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + e->len;
      if (e->mask & IN_Q_OVERFLOW) {
        FlushPending(out);
        Overflow(out, "kernel_queue");
        continue;
      }
      auto it = dirs_.find(e->wd);
      if (it == dirs_.end()) continue;  // a watch already gone
      if (e->mask & IN_IGNORED) {
        if (e->wd == top_wd_) alive_ = false;
        dirs_.erase(it);
        continue;
      }
      if (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        if (e->wd == top_wd_) alive_ = false;
        continue;  // below the top, the parent's event reports it
      }
      const Dir dir = it->second;
      std::string name = e->len ? std::string(e->name) : std::string();
      std::string path = JoinDisplay(dir.display, name);
      bool is_dir = e->mask & IN_ISDIR;
      const char* type = is_dir ? "dir" : "file";
      // A held move-out settles here: paired with this move-in, or removed.
      if (pending_move_.cookie != 0 &&
          !((e->mask & IN_MOVED_TO) && e->cookie == pending_move_.cookie)) {
        FlushPending(out);
      }
      if (e->mask & IN_MOVED_FROM) {
        pending_move_ = PendingMove{e->cookie, path, is_dir};
        continue;
      }
      if (e->mask & IN_MOVED_TO) {
        if (pending_move_.cookie != 0) {
          WatchEvent ev = Change("renamed", path, type, pending_move_.path);
          pending_move_ = PendingMove{};
          if (is_dir) Rebase(ev.from, path, dir.rel.Child(name));
          Emit(out, std::move(ev));
          continue;  // its watches moved with it
        } else {
          Emit(out, Change("created", path, type));
        }
      } else if (e->mask & IN_CREATE) {
        Emit(out, Change("created", path, type));
      } else if (e->mask & IN_DELETE) {
        Emit(out, Change("removed", path, type));
        continue;
      } else if (e->mask & (IN_MODIFY | IN_ATTRIB)) {
        Emit(out, Change("modified", path, type));
        continue;
      }
      // Created or moved in: follow a new directory and report what it
      // already holds (made before its watch landed).
      if (is_dir && recursive_) {
        Status s = AddTree(dir.rel.Child(name), path, &out);
        if (s.code() == ErrorCode::kTooManyWatches && !limit_reported_) {
          limit_reported_ = true;
          Overflow(out, "directory_limit");
        }
      }
    }
  }
}

json::Value TreeWatcher::Save(std::vector<int>& fds) const {
  fds.push_back(inotify_.get());
  json::Array dirs;
  for (const auto& [wd, dir] : dirs_) {
    json::Array parts;
    for (const std::string& p : dir.rel.parts) parts.emplace_back(p);
    dirs.push_back(json::Object()
                       .Set("wd", wd)
                       .Set("parts", std::move(parts))
                       .Set("rel_display", dir.rel.display)
                       .Set("display", dir.display));
  }
  return json::Object()
      .Set("inotify_fd", inotify_.get())
      .Set("recursive", recursive_)
      .Set("max_dirs", static_cast<uint64_t>(max_dirs_))
      .Set("top_wd", top_wd_)
      .Set("alive", alive_)
      .Set("limit_reported", limit_reported_)
      .Set("dirs", std::move(dirs))
      .Set("pending_move", json::Object()
                               .Set("cookie", static_cast<int64_t>(pending_move_.cookie))
                               .Set("path", pending_move_.path)
                               .Set("is_dir", pending_move_.is_dir));
}

Result<TreeWatcher> TreeWatcher::Restore(const ConfinedRoot& root, const json::Value& saved) {
  auto bad = [](std::string_view field) {
    return Status::InvalidRequest("a handed-over watch has no valid \"" + std::string(field) + "\"")
        .With("field", std::string(field));
  };
  auto integer = [&saved](std::string_view key) -> std::optional<int64_t> {
    const json::Value* v = saved.Find(key);
    return v && v->is_int() ? std::optional<int64_t>(v->as_int()) : std::nullopt;
  };
  auto boolean = [&saved](std::string_view key) -> std::optional<bool> {
    const json::Value* v = saved.Find(key);
    return v && v->is_bool() ? std::optional<bool>(v->as_bool()) : std::nullopt;
  };
  std::optional<int64_t> fd = integer("inotify_fd");
  std::optional<int64_t> max_dirs = integer("max_dirs");
  std::optional<int64_t> top_wd = integer("top_wd");
  std::optional<bool> recursive = boolean("recursive");
  std::optional<bool> alive = boolean("alive");
  std::optional<bool> limit_reported = boolean("limit_reported");
  if (!fd || *fd < 3 || *fd > INT32_MAX) return bad("inotify_fd");
  if (!max_dirs || *max_dirs < 1) return bad("max_dirs");
  if (!top_wd || !recursive || !alive || !limit_reported) return bad("top_wd");
  std::unordered_map<int, Dir> dirs;
  const json::Value* list = saved.Find("dirs");
  if (!list || !list->is_array()) return bad("dirs");
  for (const json::Value& d : list->as_array()) {
    const json::Value* wd = d.Find("wd");
    const json::Value* parts = d.Find("parts");
    const json::Value* rel_display = d.Find("rel_display");
    const json::Value* display = d.Find("display");
    if (!wd || !wd->is_int() || !parts || !parts->is_array() || !rel_display ||
        !rel_display->is_string() || !display || !display->is_string()) {
      return bad("dirs");
    }
    Dir dir;
    for (const json::Value& p : parts->as_array()) {
      // Components only: what CheckPath and Child() ever produced.
      if (!p.is_string() || p.as_string().empty() || p.as_string() == "." ||
          p.as_string().find('/') != std::string::npos) {
        return bad("dirs");
      }
      dir.rel.parts.push_back(p.as_string());
    }
    dir.rel.display = rel_display->as_string();
    dir.display = display->as_string();
    dirs[static_cast<int>(wd->as_int())] = std::move(dir);
  }
  const json::Value* pending = saved.Find("pending_move");
  const json::Value* cookie = pending ? pending->Find("cookie") : nullptr;
  const json::Value* path = pending ? pending->Find("path") : nullptr;
  const json::Value* is_dir = pending ? pending->Find("is_dir") : nullptr;
  if (!cookie || !cookie->is_int() || cookie->as_int() < 0 || cookie->as_int() > UINT32_MAX ||
      !path || !path->is_string() || !is_dir || !is_dir->is_bool()) {
    return bad("pending_move");
  }
  // Only an inotify instance is taken (/proc/self/fd/N names it so).
  char link[64] = {};
  std::string proc = "/proc/self/fd/" + std::to_string(*fd);
  ssize_t n = ::readlink(proc.c_str(), link, sizeof link - 1);
  if (n <= 0 || std::string_view(link, static_cast<size_t>(n)) != "anon_inode:inotify") {
    return bad("inotify_fd");
  }
  int raw = static_cast<int>(*fd);
  ::fcntl(raw, F_SETFD, FD_CLOEXEC);
  ::fcntl(raw, F_SETFL, ::fcntl(raw, F_GETFL) | O_NONBLOCK);
  TreeWatcher w(root, UniqueFd(raw), *recursive, static_cast<size_t>(*max_dirs));
  w.top_wd_ = static_cast<int>(*top_wd);
  w.alive_ = *alive;
  w.limit_reported_ = *limit_reported;
  w.dirs_ = std::move(dirs);
  w.pending_move_ =
      PendingMove{static_cast<uint32_t>(cookie->as_int()), path->as_string(), is_dir->as_bool()};
  return w;
}

}  // namespace agentd
