#include "tree_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "agentd/trees/disk_space.h"
#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"

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
  if (compression == TarCompression::kGzip) {
    archive_write_add_filter_gzip(w.get());
    // No clock in the gzip header: the same tree gives the same bytes.
    archive_write_set_filter_option(w.get(), "gzip", "timestamp", nullptr);
  }
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

namespace {

// The pipe's read end as the extraction's source, one block at a time.
class PipeSource : public ByteSource {
 public:
  explicit PipeSource(int fd) : fd_(fd), buf_(kPipeBlockBytes) {}
  Result<std::string_view> Read() override {
    for (;;) {
      ssize_t n = ::read(fd_, buf_.data(), buf_.size());
      if (n >= 0) return std::string_view(buf_.data(), static_cast<size_t>(n));
      if (errno != EINTR) return PosixError(errno, "cannot read the downloaded archive");
    }
  }

 private:
  int fd_;
  std::vector<char> buf_;
};

}  // namespace

Result<TreeStats> ExtractTreeTar(int in_fd, const std::string& local_dir, const TarCaps& caps) {
  PipeSource source(in_fd);
  return ExtractTreeTar(source, local_dir, caps);
}

Result<TreeStats> ExtractTreeTar(ByteSource& source, const std::string& local_dir,
                                 const TarCaps& caps) {
  if (::mkdir(local_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return PosixError(errno, "cannot create local directory", local_dir);
  }
  UniqueFd dir(::open(local_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return PosixError(errno, "cannot open local directory", local_dir);
  ExtractOptions opts;
  opts.caps = caps;  // the host keeps the file's owner: nothing is chowned
  Result<TarUploadResponse> out = ExtractTar(source, dir.get(), local_dir, opts);
  if (!out.ok()) return WithSpaceNumbers(out.status(), dir.get(), 0);
  return TreeStats{out->entries, out->bytes};
}

}  // namespace agentd::client
