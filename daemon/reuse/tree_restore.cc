#include "reuse/tree_restore.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

int64_t CtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
}

std::string Join(const std::string& rel, const std::string& name) {
  return rel.empty() ? name : rel + "/" + name;
}

std::set<std::string> Names(int dir_fd) {
  std::set<std::string> out;
  int fd = ::dup(dir_fd);
  if (fd < 0) return out;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return out;
  }
  ::rewinddir(d);
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      out.insert(e->d_name);
    }
  }
  ::closedir(d);
  return out;
}

bool SameContents(int a_dir, int b_dir, const std::string& name, off_t size) {
  UniqueFd a(::openat(a_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  UniqueFd b(::openat(b_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!a || !b) return false;
  static thread_local std::vector<char> x(1 << 16), y(1 << 16);
  off_t left = size;
  while (left > 0) {
    ssize_t n = ::read(a.get(), x.data(), x.size());
    if (n <= 0 || ::read(b.get(), y.data(), static_cast<size_t>(n)) != n) return false;
    if (std::memcmp(x.data(), y.data(), static_cast<size_t>(n)) != 0) return false;
    left -= n;
  }
  return true;
}

std::string LinkTarget(int dir, const std::string& name) {
  char buf[4096];
  ssize_t n = ::readlinkat(dir, name.c_str(), buf, sizeof(buf));
  return n < 0 ? std::string() : std::string(buf, static_cast<size_t>(n));
}

struct Walk {
  std::string live_root;
  dev_t live_dev = 0;
  TreeManifest* manifest = nullptr;
  RestoreResult* result = nullptr;

  void Remaining(const std::string& rel, std::string reason) {
    result->remaining.push_back({"path", live_root + "/" + rel, std::move(reason)});
  }

  // Removes one live entry and everything beneath it; false on failure
  // (then named as remaining).
  bool Remove(int dir, const std::string& name, const std::string& rel) {
    struct stat st;
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT;
    if (S_ISDIR(st.st_mode)) {
      if (st.st_dev == live_dev) {
        UniqueFd sub(::openat(dir, name.c_str(), kDirFlags));
        if (sub) {
          ::fchmod(sub.get(), 0700);  // a read-only directory of the tenant's
          for (const std::string& child : Names(sub.get())) {
            if (!Remove(sub.get(), child, Join(rel, child))) return false;
          }
        }
      }
      if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0) {
        Remaining(rel, std::string("cannot remove directory: ") + std::strerror(errno));
        return false;
      }
    } else if (::unlinkat(dir, name.c_str(), 0) != 0) {
      Remaining(rel, std::string("cannot remove: ") + std::strerror(errno));
      return false;
    }
    ++result->removed_entries;
    if (S_ISREG(st.st_mode)) result->removed_bytes += st.st_size;
    manifest->erase(rel);
    return true;
  }

  void FixMeta(int dir, const std::string& name, const struct stat& want, const std::string& rel) {
    struct stat st;
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    if ((st.st_uid != want.st_uid || st.st_gid != want.st_gid) &&
        ::fchownat(dir, name.c_str(), want.st_uid, want.st_gid, AT_SYMLINK_NOFOLLOW) != 0) {
      Remaining(rel, std::string("cannot restore the owner: ") + std::strerror(errno));
    }
    if (!S_ISLNK(want.st_mode) && (st.st_mode & 07777) != (want.st_mode & 07777) &&
        ::fchmodat(dir, name.c_str(), want.st_mode & 07777, 0) != 0) {
      Remaining(rel, std::string("cannot restore the mode: ") + std::strerror(errno));
    }
    if (S_ISREG(want.st_mode)) {
      struct timespec times[2] = {want.st_atim, want.st_mtim};
      ::utimensat(dir, name.c_str(), times, AT_SYMLINK_NOFOLLOW);
      if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        (*manifest)[rel] = {st.st_ino, CtimeNs(st)};
      }
    }
  }

  // Creates `name` in `to` as a copy of `name` in `from` (recursively).
  bool Copy(int from, int to, const std::string& name, const struct stat& st,
            const std::string& rel) {
    bool ok = true;
    if (S_ISDIR(st.st_mode)) {
      ok = ::mkdirat(to, name.c_str(), 0700) == 0;
      UniqueFd src(ok ? ::openat(from, name.c_str(), kDirFlags) : -1);
      UniqueFd dst(ok ? ::openat(to, name.c_str(), kDirFlags) : -1);
      ok = ok && src && dst;
      if (ok) {
        for (const std::string& child : Names(src.get())) {
          struct stat cst;
          if (::fstatat(src.get(), child.c_str(), &cst, AT_SYMLINK_NOFOLLOW) == 0) {
            Copy(src.get(), dst.get(), child, cst, Join(rel, child));
          }
        }
      }
    } else if (S_ISREG(st.st_mode)) {
      UniqueFd src(::openat(from, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      UniqueFd dst(
          ::openat(to, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      ok = src && dst;
      off_t left = st.st_size;
      while (ok && left > 0) {
        ssize_t n =
            ::copy_file_range(src.get(), nullptr, dst.get(), nullptr, static_cast<size_t>(left), 0);
        if (n <= 0) {
          char buf[1 << 16];
          n = ::read(src.get(), buf, sizeof(buf));
          ok = n > 0 && ::write(dst.get(), buf, static_cast<size_t>(n)) == n;
        }
        left -= n;
      }
    } else if (S_ISLNK(st.st_mode)) {
      ok = ::symlinkat(LinkTarget(from, name).c_str(), to, name.c_str()) == 0;
    } else if (!S_ISSOCK(st.st_mode)) {
      ok = ::mknodat(to, name.c_str(), st.st_mode, st.st_rdev) == 0;
    } else {
      return true;  // a socket is no content; whoever binds makes it again
    }
    if (!ok) {
      Remaining(rel, std::string("cannot restore from the golden copy: ") + std::strerror(errno));
      return false;
    }
    FixMeta(to, name, st, rel);
    return true;
  }

  void Restore(int golden, int live, const std::string& rel) {
    std::set<std::string> want = Names(golden);
    for (const std::string& name : Names(live)) {
      if (!want.count(name)) Remove(live, name, Join(rel, name));
    }
    for (const std::string& name : want) {
      std::string path = Join(rel, name);
      struct stat g, l;
      if (::fstatat(golden, name.c_str(), &g, AT_SYMLINK_NOFOLLOW) != 0) continue;
      bool exists = ::fstatat(live, name.c_str(), &l, AT_SYMLINK_NOFOLLOW) == 0;
      bool same = exists && (g.st_mode & S_IFMT) == (l.st_mode & S_IFMT);
      if (same && S_ISDIR(g.st_mode)) {
        same = l.st_dev == live_dev;  // a mount over it: remove (and fail, named)
      } else if (same && S_ISREG(g.st_mode)) {
        auto it = manifest->find(path);
        bool identical = it != manifest->end() && it->second.first == l.st_ino &&
                         it->second.second == CtimeNs(l);
        same = identical || (g.st_size == l.st_size && SameContents(golden, live, name, g.st_size));
      } else if (same && S_ISLNK(g.st_mode)) {
        same = LinkTarget(golden, name) == LinkTarget(live, name);
      } else if (same && (S_ISCHR(g.st_mode) || S_ISBLK(g.st_mode))) {
        same = g.st_rdev == l.st_rdev;
      }
      if (!same) {
        if (exists && !Remove(live, name, path)) continue;
        Copy(golden, live, name, g, path);
        continue;
      }
      if (S_ISDIR(g.st_mode)) {
        UniqueFd gsub(::openat(golden, name.c_str(), kDirFlags));
        UniqueFd lsub(::openat(live, name.c_str(), kDirFlags));
        if (gsub && lsub) Restore(gsub.get(), lsub.get(), path);
      }
      FixMeta(live, name, g, path);
    }
  }
};

void Compare(int golden, int live, const std::string& rel, const std::string& root, dev_t dev,
             const TreeManifest& manifest, TreeManifest* learn, std::vector<ResetRemaining>& out) {
  auto differ = [&](const std::string& path, std::string why) {
    out.push_back({"path", root + "/" + path, std::move(why)});
  };
  std::set<std::string> want = Names(golden);
  for (const std::string& name : Names(live)) {
    if (!want.count(name)) differ(Join(rel, name), "not in the golden copy");
  }
  for (const std::string& name : want) {
    std::string path = Join(rel, name);
    struct stat g, l;
    if (::fstatat(golden, name.c_str(), &g, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (::fstatat(live, name.c_str(), &l, AT_SYMLINK_NOFOLLOW) != 0) {
      differ(path, "missing");
      continue;
    }
    if ((g.st_mode & S_IFMT) != (l.st_mode & S_IFMT)) {
      differ(path, "another type");
      continue;
    }
    if ((!S_ISLNK(g.st_mode) && (g.st_mode & 07777) != (l.st_mode & 07777)) ||
        g.st_uid != l.st_uid || g.st_gid != l.st_gid) {
      differ(path, "another mode or owner");
    }
    if (S_ISREG(g.st_mode)) {
      auto it = manifest.find(path);
      if (g.st_size != l.st_size) {
        differ(path, "another size");
      } else if (it == manifest.end() || it->second.first != l.st_ino ||
                 it->second.second != CtimeNs(l)) {
        if (learn && SameContents(golden, live, name, g.st_size)) {
          (*learn)[path] = {l.st_ino, CtimeNs(l)};
        } else {
          differ(path, "changed since it was restored");
        }
      }
    } else if (S_ISLNK(g.st_mode) && LinkTarget(golden, name) != LinkTarget(live, name)) {
      differ(path, "another symlink target");
    } else if (S_ISDIR(g.st_mode)) {
      if (l.st_dev != dev) {
        differ(path, "another file system is mounted here");
        continue;
      }
      UniqueFd gsub(::openat(golden, name.c_str(), kDirFlags));
      UniqueFd lsub(::openat(live, name.c_str(), kDirFlags));
      if (gsub && lsub) Compare(gsub.get(), lsub.get(), path, root, dev, manifest, learn, out);
    }
  }
}

}  // namespace

Status SnapshotTree(const std::string& from, const std::string& to, TreeManifest& manifest) {
  UniqueFd src(::open(from.c_str(), kDirFlags));
  if (!src) return PosixError(errno, "cannot open reset path", from);
  struct stat st;
  if (::fstat(src.get(), &st) != 0) return PosixError(errno, "cannot stat reset path", from);
  std::string parent = to.substr(0, to.rfind('/'));
  UniqueFd dst_parent(::open(parent.c_str(), kDirFlags));
  if (!dst_parent) return PosixError(errno, "cannot open", parent);
  std::string leaf = to.substr(to.rfind('/') + 1);
  TreeManifest golden_manifest;  // identities in the golden copy are not the live tree's
  RestoreResult result;
  Walk walk{to, st.st_dev, &golden_manifest, &result};
  // Copy() works on (dir, name): copy the root's children into a fresh
  // directory made here.
  if (::mkdirat(dst_parent.get(), leaf.c_str(), 0700) != 0) {
    return PosixError(errno, "cannot create the golden copy", to);
  }
  UniqueFd dst(::openat(dst_parent.get(), leaf.c_str(), kDirFlags));
  if (!dst) return PosixError(errno, "cannot open the golden copy", to);
  for (const std::string& name : Names(src.get())) {
    struct stat cst;
    if (::fstatat(src.get(), name.c_str(), &cst, AT_SYMLINK_NOFOLLOW) == 0) {
      walk.Copy(src.get(), dst.get(), name, cst, name);
    }
  }
  if (!result.remaining.empty()) {
    return Status::Error(ErrorCode::kIoError, "cannot copy " + result.remaining[0].name + " (" +
                                                  result.remaining[0].reason + ")");
  }
  // The live tree's identities, so the first reset skips what is untouched.
  RestoreResult unused;
  Walk live{from, st.st_dev, &manifest, &unused};
  live.Restore(dst.get(), src.get(), "");
  return Status::Ok();
}

RestoreResult RestoreTree(const std::string& golden, const std::string& live,
                          TreeManifest& manifest) {
  RestoreResult result;
  UniqueFd g(::open(golden.c_str(), kDirFlags));
  UniqueFd l(::open(live.c_str(), kDirFlags));
  struct stat st;
  if (!g || !l || ::fstat(l.get(), &st) != 0) {
    result.remaining.push_back({"path", live, std::string("cannot open: ") + std::strerror(errno)});
    return result;
  }
  Walk walk{live, st.st_dev, &manifest, &result};
  walk.Restore(g.get(), l.get(), "");
  return result;
}

std::vector<ResetRemaining> CompareTrees(const std::string& golden, const std::string& live,
                                         const TreeManifest& manifest, TreeManifest* learn) {
  std::vector<ResetRemaining> out;
  UniqueFd g(::open(golden.c_str(), kDirFlags));
  UniqueFd l(::open(live.c_str(), kDirFlags));
  struct stat st;
  if (!g || !l || ::fstat(l.get(), &st) != 0) {
    out.push_back({"path", live, std::string("cannot open: ") + std::strerror(errno)});
    return out;
  }
  Compare(g.get(), l.get(), "", live, st.st_dev, manifest, learn, out);
  return out;
}

}  // namespace agentd
