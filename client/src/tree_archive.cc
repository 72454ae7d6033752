#include "tree_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace agentd::client {
namespace {

struct ArchiveCloser {
  void operator()(archive* a) const { archive_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveCloser>;
struct EntryCloser {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};
using EntryPtr = std::unique_ptr<archive_entry, EntryCloser>;
struct ResolverCloser {
  void operator()(archive_entry_linkresolver* r) const { archive_entry_linkresolver_free(r); }
};

Status ArchiveError(archive* a, std::string_view what) {
  const char* msg = archive_error_string(a);
  return Status::Error(ErrorCode::kIoError,
                       std::string(what) + ": " + (msg ? msg : "libarchive error"));
}

// A member name is safe when it is relative and no component is "..".
bool SafeMemberName(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  size_t i = 0;
  while (i <= name.size()) {
    size_t end = name.find('/', i);
    if (end == std::string_view::npos) end = name.size();
    if (name.substr(i, end - i) == "..") return false;
    i = end + 1;
  }
  return true;
}

// `name` without empty and "." components ("a//./b/" is "a/b").
std::string Normalized(std::string_view name) {
  std::string out;
  size_t i = 0;
  while (i <= name.size()) {
    size_t end = name.find('/', i);
    if (end == std::string_view::npos) end = name.size();
    std::string_view part = name.substr(i, end - i);
    if (!part.empty() && part != ".") {
      if (!out.empty()) out += '/';
      out += part;
    }
    i = end + 1;
  }
  return out;
}

// The symlinks extracted so far (normalized member names). The stage is a
// fresh private directory, so they are the only symlinks in it: a member
// whose parent path passes through one would be written through it. This
// check replaces libarchive's ARCHIVE_EXTRACT_SECURE_SYMLINKS, which
// lstat()s and opens every component of every member's absolute path
// (about nine system calls per member; most of a large tree's extraction).
class SymlinkGuard {
 public:
  bool Passes(const std::string& name) const {
    for (size_t slash = name.find('/'); slash != std::string::npos;
         slash = name.find('/', slash + 1)) {
      if (links_.count(name.substr(0, slash))) return true;
    }
    return false;
  }
  bool IsLink(const std::string& name) const { return links_.count(name) != 0; }
  // After `name` was extracted: a symlink (or a hard link to one) is
  // remembered; anything else replaced whatever was there.
  void Extracted(const std::string& name, bool is_link) {
    if (is_link) {
      links_.insert(name);
    } else {
      links_.erase(name);
    }
  }

 private:
  std::unordered_set<std::string> links_;
};

Status Unsafe(std::string_view member, std::string_view reason) {
  return Status::Error(ErrorCode::kUnsafePath, "archive member \"" + std::string(member) +
                                                   "\" refused: " + std::string(reason))
      .With("member", std::string(member))
      .With("reason", std::string(reason));
}

// Holes: a file with fewer blocks than its size may have some; it is
// mapped with SEEK_DATA/SEEK_HOLE, and libarchive's pax writer then skips
// the holes of what WriteEntry reads. (libarchive's own detection, turned
// off in WriteTreeTar, opened and seeked every file six times.) A file
// system that cannot tell sends the file whole.
void MapHoles(int fd, const struct stat& st, archive_entry* entry) {
  if (!S_ISREG(st.st_mode) || st.st_blocks * 512 >= st.st_size) return;
  std::vector<std::pair<off_t, off_t>> data;  // offset, length
  off_t pos = 0;
  while (pos < st.st_size) {
    off_t begin = ::lseek(fd, pos, SEEK_DATA);
    if (begin < 0 && errno != ENXIO) return;
    if (begin < 0 || begin >= st.st_size) break;  // a hole to the end
    off_t end = ::lseek(fd, begin, SEEK_HOLE);
    if (end < 0) return;
    end = std::min<off_t>(end, st.st_size);
    data.emplace_back(begin, end - begin);
    pos = end;
  }
  ::lseek(fd, 0, SEEK_SET);
  if (data.size() == 1 && data[0].first == 0 && data[0].second == st.st_size) return;
  if (data.empty()) archive_entry_sparse_add_entry(entry, st.st_size, 0);  // all hole
  for (const auto& [offset, length] : data) archive_entry_sparse_add_entry(entry, offset, length);
}

// `buf` is the archive's one copy buffer: a buffer per file cost a 256 KiB
// mmap, page faults and munmap for each of a tree's small files.
Status WriteEntry(archive* w, archive_entry* entry, const std::string& source,
                  std::vector<char>& buf, TreeStats* stats) {
  bool has_data = archive_entry_filetype(entry) == AE_IFREG && archive_entry_size(entry) > 0;
  int fd = -1;
  if (has_data) {
    fd = ::open(source.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      return Status::Error(ErrorCode::kIoError,
                           "cannot read " + source + ": " + std::strerror(errno));
    }
    struct stat st;
    if (::fstat(fd, &st) == 0) MapHoles(fd, st, entry);
  }
  if (archive_write_header(w, entry) != ARCHIVE_OK) {
    if (fd >= 0) ::close(fd);
    return ArchiveError(w, "writing tar header");
  }
  ++stats->entries;
  if (!has_data) return Status::Ok();
  int64_t left = archive_entry_size(entry);
  Status result;
  while (left > 0) {
    ssize_t n = ::read(fd, buf.data(), static_cast<size_t>(std::min<int64_t>(left, buf.size())));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      result = Status::Error(ErrorCode::kIoError, source + " changed size while being archived");
      break;
    }
    if (archive_write_data(w, buf.data(), static_cast<size_t>(n)) != n) {
      result = ArchiveError(w, "writing tar data");
      break;
    }
    left -= n;
    stats->bytes += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return result;
}

void RemoveTree(int parent, const std::string& name);

// Moves everything staged under `from` into `to`, merging directories and
// replacing anything else; never follows a symlink found in `to`.
Status MergeInto(int from_dir, int to_dir) {
  DIR* d = fdopendir(dup(from_dir));
  if (!d) return Status::Error(ErrorCode::kIoError, "cannot list staging directory");
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  closedir(d);
  for (const std::string& name : names) {
    struct stat src, dst;
    if (fstatat(from_dir, name.c_str(), &src, AT_SYMLINK_NOFOLLOW) != 0) continue;
    bool exists = fstatat(to_dir, name.c_str(), &dst, AT_SYMLINK_NOFOLLOW) == 0;
    if (exists && S_ISDIR(src.st_mode) && S_ISDIR(dst.st_mode)) {
      int sub_from =
          openat(from_dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      int sub_to = openat(to_dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      Status s = (sub_from >= 0 && sub_to >= 0)
                     ? MergeInto(sub_from, sub_to)
                     : Status::Error(ErrorCode::kIoError, "cannot open " + name);
      if (s.ok()) {
        fchmod(sub_to, src.st_mode & 07777);
        timespec times[2] = {src.st_atim, src.st_mtim};
        futimens(sub_to, times);
      }
      if (sub_from >= 0) close(sub_from);
      if (sub_to >= 0) close(sub_to);
      if (!s.ok()) return s;
      continue;
    }
    if (renameat(from_dir, name.c_str(), to_dir, name.c_str()) == 0) continue;
    if (exists && S_ISDIR(dst.st_mode)) {
      // A directory stands where a non-directory goes: tar x replaces it.
      RemoveTree(to_dir, name);
      if (renameat(from_dir, name.c_str(), to_dir, name.c_str()) == 0) continue;
    }
    return Status::Error(ErrorCode::kIoError,
                         "cannot move " + name + " into place: " + std::strerror(errno));
  }
  return Status::Ok();
}

void RemoveTree(int parent, const std::string& name) {
  int fd = openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    if (DIR* d = fdopendir(fd)) {
      std::vector<std::string> names;
      while (dirent* e = readdir(d)) {
        std::string_view n = e->d_name;
        if (n != "." && n != "..") names.emplace_back(n);
      }
      for (const std::string& n : names) {
        if (unlinkat(dirfd(d), n.c_str(), 0) != 0) RemoveTree(dirfd(d), n);
      }
      closedir(d);
    } else {
      close(fd);
    }
  }
  unlinkat(parent, name.c_str(), AT_REMOVEDIR);
}

}  // namespace

Result<TreeStats> WriteTreeTar(const std::string& local_dir, int out_fd,
                               TarCompression compression) {
  ArchivePtr disk(archive_read_disk_new());
  archive_read_disk_set_symlink_physical(disk.get());
  archive_read_disk_set_standard_lookup(disk.get());
  // The tar routes keep data, modes, mtimes, links and holes
  // (docs/PROTOCOL.md, "Fidelity"), never extended attributes, ACLs or file
  // flags: reading those cost four system calls per file for nothing.
  // Holes are mapped by WriteEntry, only for files that can have any.
  archive_read_disk_set_behavior(disk.get(), ARCHIVE_READDISK_NO_XATTR | ARCHIVE_READDISK_NO_ACL |
                                                 ARCHIVE_READDISK_NO_FFLAGS |
                                                 ARCHIVE_READDISK_NO_SPARSE);
  ArchivePtr w(archive_write_new());
  archive_write_set_format_pax_restricted(w.get());
  // Names are bytes: write them untranslated, whatever the host's locale.
  archive_write_set_format_option(w.get(), "pax", "hdrcharset", "BINARY");
  if (compression == TarCompression::kGzip) archive_write_add_filter_gzip(w.get());
  if (compression == TarCompression::kZstd) archive_write_add_filter_zstd(w.get());
  // Whole 256 KiB writes into the pipe, not tar's 10 KiB records, and no
  // padding after the last.
  archive_write_set_bytes_per_block(w.get(), kPipeBlockBytes);
  archive_write_set_bytes_in_last_block(w.get(), 1);
  if (archive_write_open_fd(w.get(), out_fd) != ARCHIVE_OK) return ArchiveError(w.get(), "tar");
  std::string root = local_dir;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (archive_read_disk_open(disk.get(), root.c_str()) != ARCHIVE_OK) {
    return Status::Error(ErrorCode::kNotFound, "cannot read local directory " + root + ": " +
                                                   archive_error_string(disk.get()))
        .With("path", root);
  }
  std::unique_ptr<archive_entry_linkresolver, ResolverCloser> resolver(
      archive_entry_linkresolver_new());
  archive_entry_linkresolver_set_strategy(resolver.get(), archive_format(w.get()));
  TreeStats stats;
  std::vector<char> buf(256 * 1024);
  for (;;) {
    EntryPtr entry(archive_entry_new());
    int r = archive_read_next_header2(disk.get(), entry.get());
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return ArchiveError(disk.get(), "walking " + root);
    archive_read_disk_descend(disk.get());
    std::string path = archive_entry_pathname(entry.get());
    std::string source =
        archive_entry_sourcepath(entry.get()) ? archive_entry_sourcepath(entry.get()) : path;
    if (path == root) continue;  // the directory itself: its contents only
    std::string relative = path.substr(root.size() + (root == "/" ? 0 : 1));
    archive_entry_set_pathname(entry.get(), relative.c_str());
    archive_entry* spare = nullptr;
    archive_entry* e = entry.release();
    archive_entry_linkify(resolver.get(), &e, &spare);
    if (e) {
      Status s = WriteEntry(w.get(), e, source, buf, &stats);
      archive_entry_free(e);
      if (!s.ok()) return s;
    }
    if (spare) archive_entry_free(spare);
  }
  // Entries the resolver held back (hard links of a "new cpio" strategy).
  for (;;) {
    archive_entry* e = nullptr;
    archive_entry* spare = nullptr;
    archive_entry_linkify(resolver.get(), &e, &spare);
    if (!e) break;
    Status s = WriteEntry(
        w.get(), e, archive_entry_sourcepath(e) ? archive_entry_sourcepath(e) : "", buf, &stats);
    archive_entry_free(e);
    if (!s.ok()) return s;
  }
  if (archive_write_close(w.get()) != ARCHIVE_OK) return ArchiveError(w.get(), "finishing tar");
  return stats;
}

Result<TreeStats> ExtractTreeTar(int in_fd, const std::string& local_dir) {
  ::mkdir(local_dir.c_str(), 0755);
  char real[PATH_MAX];
  if (!realpath(local_dir.c_str(), real)) {
    return Status::Error(ErrorCode::kNotFound,
                         "cannot use local directory " + local_dir + ": " + std::strerror(errno))
        .With("path", local_dir);
  }
  std::string root = real;
  std::string stage_name = ".agentd-download-" + std::to_string(std::random_device{}());
  std::string stage = root + "/" + stage_name;
  if (::mkdir(stage.c_str(), 0700) != 0) {
    return Status::Error(ErrorCode::kIoError,
                         "cannot create " + stage + ": " + std::strerror(errno));
  }
  int root_fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  auto cleanup = [&] {
    RemoveTree(root_fd, stage_name);
    ::close(root_fd);
  };

  ArchivePtr r(archive_read_new());
  archive_read_support_format_tar(r.get());
  archive_read_support_filter_gzip(r.get());
  archive_read_support_filter_zstd(r.get());
  ArchivePtr w(archive_write_disk_new());
  archive_write_disk_set_options(
      w.get(), ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_NODOTDOT);
  SymlinkGuard symlinks;  // in place of ARCHIVE_EXTRACT_SECURE_SYMLINKS
  if (archive_read_open_fd(r.get(), in_fd, kPipeBlockBytes) != ARCHIVE_OK) {
    cleanup();
    return Status::Error(ErrorCode::kInvalidArchive, "cannot read the archive");
  }
  TreeStats stats;
  Status result;
  for (;;) {
    archive_entry* entry = nullptr;
    int rc = archive_read_next_header(r.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      result = Status::Error(ErrorCode::kInvalidArchive,
                             std::string("malformed archive: ") + archive_error_string(r.get()));
      break;
    }
    std::string name = archive_entry_pathname(entry) ? archive_entry_pathname(entry) : "";
    while (name.starts_with("./")) name.erase(0, 2);
    if (name.empty() || name == ".") continue;
    if (!SafeMemberName(name)) {
      result = Unsafe(name, "absolute name or \"..\" component");
      break;
    }
    name = Normalized(name);
    if (name.empty()) continue;
    if (symlinks.Passes(name)) {
      result = Unsafe(name, "it would be written through a symlink");
      break;
    }
    mode_t type = archive_entry_filetype(entry);
    // libarchive takes an existing directory as it finds it, following a
    // symlink (without SECURE_SYMLINKS) to set its mode and times: a
    // directory may not reuse a symlink's name. Files and links replace it.
    if (type == AE_IFDIR && symlinks.IsLink(name)) {
      result = Unsafe(name, "a directory over a symlink");
      break;
    }
    bool hardlink = archive_entry_hardlink(entry) != nullptr;
    if (!hardlink && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
      result = Unsafe(name, "device, FIFO and socket entries are refused");
      break;
    }
    bool is_link = !hardlink && type == AE_IFLNK;
    if (const char* link = archive_entry_hardlink(entry)) {
      std::string target = Normalized(link);
      if (!SafeMemberName(link) || target.empty()) {
        result = Unsafe(name, "hard link to outside the tree");
        break;
      }
      if (symlinks.Passes(target)) {
        result = Unsafe(name, "hard link through a symlink");
        break;
      }
      is_link = symlinks.IsLink(target);  // a hard link to a symlink is one too
      archive_entry_set_hardlink(entry, (stage + "/" + target).c_str());
    }
    archive_entry_set_pathname(entry, (stage + "/" + name).c_str());
    if (archive_write_header(w.get(), entry) != ARCHIVE_OK) {
      result = Unsafe(name, archive_error_string(w.get()));
      break;
    }
    const void* block;
    size_t size;
    la_int64_t offset;
    while ((rc = archive_read_data_block(r.get(), &block, &size, &offset)) == ARCHIVE_OK) {
      if (archive_write_data_block(w.get(), block, size, offset) != ARCHIVE_OK) {
        result = ArchiveError(w.get(), "writing " + name);
        break;
      }
      stats.bytes += size;
    }
    if (!result.ok()) break;
    if (rc != ARCHIVE_EOF) {
      result = Status::Error(ErrorCode::kInvalidArchive, "truncated archive at " + name);
      break;
    }
    if (archive_write_finish_entry(w.get()) != ARCHIVE_OK) {
      result = ArchiveError(w.get(), "finishing " + name);
      break;
    }
    symlinks.Extracted(name, is_link);
    ++stats.entries;
  }
  if (result.ok() && archive_write_close(w.get()) != ARCHIVE_OK) {
    result = ArchiveError(w.get(), "finishing extraction");
  }
  if (result.ok()) {
    int stage_fd = openat(root_fd, stage_name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    result = MergeInto(stage_fd, root_fd);
    close(stage_fd);
  }
  cleanup();
  if (!result.ok()) return result;
  return stats;
}

}  // namespace agentd::client
