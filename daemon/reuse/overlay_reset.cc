#include "reuse/overlay_reset.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <thread>

#include "agentd/trees/posix_error.h"
#include "log/log.h"
#include "sys/read_file.h"

namespace agentd {
namespace {

// Detaching one mount a round: a tenant (as root) could stack a few; more
// than this many and the path is named as remaining.
constexpr int kMaxStacked = 64;

uint64_t MountId(const std::string& path) {
  struct statx stx;
  if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) != 0 ||
      !(stx.stx_mask & STATX_MNT_ID)) {
    return 0;
  }
  return stx.stx_mnt_id;
}

std::string Parent(const std::string& path) { return path.substr(0, path.rfind('/')); }

std::string Upper(const OverlaySlot& s) { return s.dir + "/upper"; }

// One line of /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT POINT OPTS
// [TAGS...] - FSTYPE SOURCE SUPEROPTS".
struct MountLine {
  uint64_t id = 0;
  uint64_t parent = 0;
  std::string point;
  std::string fstype;
  std::string super_options;
};

std::vector<MountLine> MountTable() {
  std::vector<MountLine> out;
  Result<std::string> text = ReadFileToString("/proc/self/mountinfo", 16 << 20);
  if (!text.ok()) return out;
  size_t at = 0;
  while (at < text->size()) {
    size_t end = text->find('\n', at);
    if (end == std::string::npos) end = text->size();
    std::vector<std::string_view> f;
    std::string_view line(text->data() + at, end - at);
    size_t p = 0;
    while (p < line.size()) {
      size_t q = line.find(' ', p);
      if (q == std::string_view::npos) q = line.size();
      f.push_back(line.substr(p, q - p));
      p = q + 1;
    }
    size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash + 3 < f.size()) {
      MountLine m;
      m.id = std::strtoull(std::string(f[0]).c_str(), nullptr, 10);
      m.parent = std::strtoull(std::string(f[1]).c_str(), nullptr, 10);
      m.point = f[4];
      m.fstype = f[dash + 1];
      m.super_options = std::string(",") + std::string(f[dash + 3]) + ",";
      out.push_back(std::move(m));
    }
    at = end + 1;
  }
  return out;
}

// Whether `m` is the overlay of `slot` (its upper dir is the slot's).
bool IsOurs(const MountLine& m, const OverlaySlot& slot) {
  return m.fstype == "overlay" && m.point == slot.live &&
         m.super_options.find(",upperdir=" + Upper(slot) + ",") != std::string::npos &&
         m.super_options.find(",lowerdir=" + slot.lower + ",") != std::string::npos;
}

// Detaches mounts at `path` until its mount is `base`; false if it never is.
// Detached, not unmounted: a process still holding one (a spared process's
// cwd or open file) keeps its old view, the path gets the new one.
bool DetachAbove(const std::string& path, uint64_t base) {
  for (int i = 0; i < kMaxStacked; ++i) {
    if (MountId(path) == base) return true;
    if (::umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0) return false;
  }
  return MountId(path) == base;
}

// Paths go into the mount options unquoted; overlayfs splits on ',' and ':'.
bool OptionSafe(const std::string& path) {
  return path.find_first_of(",:\\ \t\n") == std::string::npos;
}

Status MountFresh(OverlaySlot& slot) {
  if (!DetachAbove(slot.dir, slot.base_tmp_mnt)) {
    return PosixError(errno, "cannot unmount the old upper layer", slot.dir);
  }
  if (::mount("tmpfs", slot.dir.c_str(), "tmpfs", 0, "mode=0700") != 0) {
    return PosixError(errno, "cannot mount a tmpfs for the upper layer at", slot.dir);
  }
  std::string upper = Upper(slot);
  std::string work = slot.dir + "/work";
  // The overlay's root takes the upper dir's mode and owner: the path's own.
  if (::mkdir(upper.c_str(), 0700) != 0 ||
      ::chown(upper.c_str(), slot.root_uid, slot.root_gid) != 0 ||
      ::chmod(upper.c_str(), slot.root_mode & 07777) != 0 || ::mkdir(work.c_str(), 0700) != 0) {
    return PosixError(errno, "cannot make the upper layer in", slot.dir);
  }
  std::string options = "lowerdir=" + slot.lower + ",upperdir=" + upper + ",workdir=" + work;
  if (::mount("overlay", slot.live.c_str(), "overlay", 0, options.c_str()) != 0) {
    return PosixError(errno, "cannot mount the overlay (" + options + ") at", slot.live);
  }
  struct statfs fs;
  slot.inodes_at_mount = ::statfs(slot.dir.c_str(), &fs) == 0 ? fs.f_files - fs.f_ffree : 0;
  return Status::Ok();
}

}  // namespace

void DetachedLayers::Release(std::vector<DetachedLayers> layers, int64_t generation) {
  if (layers.empty()) return;
  auto drop = [layers = std::move(layers), generation]() mutable {
    for (DetachedLayers& l : layers) {
      auto started = std::chrono::steady_clock::now();
      l.top_.reset();
      l.tmp_.reset();
      Log(LogLevel::kInfo, "reset overlay released",
          json::Object()
              .Set("generation", generation)
              .Set("entries", l.entries_)
              .Set("bytes", l.bytes_)
              .Set("duration_ms", std::chrono::duration<double, std::milli>(
                                      std::chrono::steady_clock::now() - started)
                                      .count()));
    }
  };
  try {
    std::thread(std::move(drop)).detach();
  } catch (const std::system_error&) {
    // No thread to be had: the layers were moved into `drop`, which the
    // failed constructor destroyed, dropping them here.
  }
}

std::string OverlayUnavailable() {
  if (::geteuid() != 0) return "the daemon is not root";
  Result<std::string> fs = ReadFileToString("/proc/filesystems", 1 << 16);
  if (!fs.ok() || fs->find("\toverlay\n") == std::string::npos) {
    return "the kernel has no overlayfs (/proc/filesystems)";
  }
  return "";
}

void DetachStaleOverlay(const std::string& live, const std::string& dir) {
  OverlaySlot slot{live, "", dir};
  for (const MountLine& m : MountTable()) {
    bool ours = m.fstype == "overlay" && m.point == live &&
                m.super_options.find(",upperdir=" + Upper(slot) + ",") != std::string::npos;
    if (ours) {
      DetachAbove(live, m.parent);
      DetachAbove(dir, MountId(Parent(dir)));
    }
  }
}

Status OpenOverlay(OverlaySlot& slot) {
  for (const std::string* p : {&slot.live, &slot.lower, &slot.dir}) {
    if (!OptionSafe(*p)) {
      return Status::InvalidRequest("the path " + *p +
                                    " holds , : \\ or white space, which overlayfs options cannot");
    }
  }
  if (::mkdir(slot.dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return PosixError(errno, "cannot create", slot.dir);
  }
  slot.base_tmp_mnt = MountId(Parent(slot.dir));
  uint64_t top = MountId(slot.live);
  for (const MountLine& m : MountTable()) {
    if (m.id == top && IsOurs(m, slot)) {
      // An earlier start's overlay (an upgrade in place, a restart): the
      // tenant's files stay until the next reset, as without overlays.
      slot.base_mnt = m.parent;
      slot.inodes_at_mount = 4;  // a fresh mount's: the tmpfs root, upper, work, work/work
      // (The path's own root lies hidden beneath: the upper dir's, as the
      // earlier start made it unless the tenant changed it.)
      struct stat root;
      if (::stat(Upper(slot).c_str(), &root) != 0) {
        return PosixError(errno, "cannot stat", Upper(slot));
      }
      slot.root_mode = root.st_mode;
      slot.root_uid = root.st_uid;
      slot.root_gid = root.st_gid;
      return Status::Ok();
    }
  }
  struct stat root;
  if (::stat(slot.live.c_str(), &root) != 0) return PosixError(errno, "cannot stat", slot.live);
  slot.root_mode = root.st_mode;
  slot.root_uid = root.st_uid;
  slot.root_gid = root.st_gid;
  slot.base_mnt = top;
  Status s = MountFresh(slot);
  if (!s.ok()) DetachAbove(slot.dir, slot.base_tmp_mnt);
  return s;
}

OverlaySwap SwapOverlay(OverlaySlot& slot) {
  OverlaySwap out;
  struct statfs fs;
  if (::statfs(slot.dir.c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC) {
    uint64_t used = fs.f_files - fs.f_ffree;
    out.removed_entries =
        used > slot.inodes_at_mount ? static_cast<int64_t>(used - slot.inodes_at_mount) : 0;
    out.removed_bytes = static_cast<int64_t>((fs.f_blocks - fs.f_bfree) * fs.f_bsize);
  }
  int old_top = ::open(slot.live.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  int old_tmp = ::open(slot.dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  bool detached = DetachAbove(slot.live, slot.base_mnt);
  int err = errno;
  Status s = detached ? MountFresh(slot) : Status::Ok();
  out.old = DetachedLayers(old_top, old_tmp, out.removed_entries, out.removed_bytes);
  if (!detached) {
    out.remaining.push_back(
        {"path", slot.live,
         std::string("cannot unmount the tenant's overlay: ") + std::strerror(err)});
    return out;
  }
  if (!s.ok()) out.remaining.push_back({"path", slot.live, s.message()});
  return out;
}

std::vector<ResetRemaining> OverlayLeft(const OverlaySlot& slot) {
  std::vector<ResetRemaining> out;
  uint64_t top = MountId(slot.live);
  bool found = false;
  for (const MountLine& m : MountTable()) {
    if (m.id != top) continue;
    found = true;
    if (!IsOurs(m, slot) || m.parent != slot.base_mnt) {
      out.push_back({"path", slot.live,
                     "the top mount here is not the reset's overlay (" + m.fstype + " mount " +
                         std::to_string(m.id) + " on " + std::to_string(m.parent) + ")"});
    }
  }
  if (!found) out.push_back({"path", slot.live, "its mount is not in /proc/self/mountinfo"});
  DIR* d = ::opendir(Upper(slot).c_str());
  if (!d) {
    out.push_back({"path", Upper(slot), std::string("cannot open: ") + std::strerror(errno)});
    return out;
  }
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    out.push_back({"path", slot.live + "/" + e->d_name, "left in the overlay's upper layer"});
  }
  ::closedir(d);
  return out;
}

}  // namespace agentd
