#include "fs/tar_writer.h"

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <cerrno>

#include "agentd/trees/posix_error.h"

namespace agentd {

struct TarWriter::Archive {
  archive* a = nullptr;
  archive_entry_linkresolver* links = nullptr;
  ~Archive() {
    if (links) archive_entry_linkresolver_free(links);
    if (a) archive_write_free(a);
  }
};

struct TarWriterAccess {
  static la_ssize_t Write(TarWriter* w, const void* data, size_t size) {
    if (w->discard_) return static_cast<la_ssize_t>(size);
    w->chunk_.append(static_cast<const char*>(data), size);
    if (w->chunk_.size() >= kTarChunkBytes && !w->Flush().ok()) return -1;
    return static_cast<la_ssize_t>(size);
  }
};

namespace {

la_ssize_t WriteCallback(archive*, void* client, const void* data, size_t size) {
  return TarWriterAccess::Write(static_cast<TarWriter*>(client), data, size);
}

constexpr size_t kReadBytes = 256 * 1024;

struct EntryDeleter {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};
using EntryPtr = std::unique_ptr<archive_entry, EntryDeleter>;

EntryPtr MakeEntry(const std::string& name, const struct stat& st) {
  EntryPtr e(archive_entry_new());
  archive_entry_copy_stat(e.get(), &st);
  // Only mtime travels (pax "mtime" with nanoseconds when they are not
  // zero): atime and ctime would add an extended header to every entry.
  archive_entry_unset_atime(e.get());
  archive_entry_unset_ctime(e.get());
  archive_entry_copy_pathname(e.get(), name.c_str());
  return e;
}

}  // namespace

TarWriter::TarWriter(ByteSink& sink, TarCompression compression)
    : sink_(sink), compression_(compression), archive_(new Archive) {
  chunk_.reserve(kTarChunkBytes + 16 * 1024);
}

TarWriter::~TarWriter() {
  // archive_write_free() of an archive that was not closed still writes its
  // end blocks through the callback: drop them, and before chunk_ is gone.
  discard_ = true;
  archive_.reset();
}

Status TarWriter::Failure(std::string_view during) {
  if (!sink_error_.ok()) return sink_error_;
  const char* why = archive_error_string(archive_->a);
  return Status::Error(ErrorCode::kIoError, "cannot write the archive (" + std::string(during) +
                                                "): " + (why ? why : "unknown error"));
}

Status TarWriter::Flush() {
  if (chunk_.empty()) return Status::Ok();
  Status s = sink_.Write(chunk_);
  chunk_.clear();
  if (!s.ok()) sink_error_ = s;
  return s;
}

Status TarWriter::Open() {
  archive* a = archive_->a = archive_write_new();
  archive_write_set_format_pax(a);
  if (compression_ == TarCompression::kGzip) archive_write_add_filter_gzip(a);
  if (compression_ == TarCompression::kZstd) archive_write_add_filter_zstd(a);
  // Data arrives in whole records; pad only the last one to 512 bytes.
  archive_write_set_bytes_in_last_block(a, 1);
  if (archive_write_open(a, this, nullptr, WriteCallback, nullptr) != ARCHIVE_OK) {
    return Failure("opening");
  }
  archive_->links = archive_entry_linkresolver_new();
  archive_entry_linkresolver_set_strategy(archive_->links, archive_format(a));
  return Status::Ok();
}

Status TarWriter::AddDir(const std::string& name, const struct stat& st) {
  EntryPtr e = MakeEntry(name, st);
  int r = archive_write_header(archive_->a, e.get());
  if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return Failure("writing a directory header");
  return Status::Ok();
}

Status TarWriter::AddSymlink(const std::string& name, const struct stat& st,
                             const std::string& target) {
  EntryPtr e = MakeEntry(name, st);
  archive_entry_copy_symlink(e.get(), target.c_str());
  int r = archive_write_header(archive_->a, e.get());
  if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return Failure("writing a symlink header");
  return Status::Ok();
}

Status TarWriter::AddFile(const std::string& name, const struct stat& st, int fd) {
  archive* a = archive_->a;
  archive_entry* entry = MakeEntry(name, st).release();
  archive_entry* spare = nullptr;
  // For tar the resolver never defers: it turns a second name of an inode
  // into a hard link (size 0) and leaves `spare` empty.
  archive_entry_linkify(archive_->links, &entry, &spare);
  EntryPtr owned(entry), owned_spare(spare);
  if (!entry) return Status::Ok();
  int r = archive_write_header(a, entry);
  if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return Failure("writing a file header");
  uint64_t left =
      archive_entry_size_is_set(entry) ? static_cast<uint64_t>(archive_entry_size(entry)) : 0;
  std::unique_ptr<char[]> buf(new char[kReadBytes]);
  off_t off = 0;
  while (left > 0) {
    ssize_t n = ::pread(fd, buf.get(), std::min<uint64_t>(left, kReadBytes), off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return PosixError(errno, "cannot read", name);
    }
    if (n == 0) break;  // shrank: archive_write_finish_entry pads with zeros
    if (archive_write_data(a, buf.get(), static_cast<size_t>(n)) < 0) {
      return Failure("writing file data");
    }
    off += n;
    left -= static_cast<uint64_t>(n);
  }
  if (archive_write_finish_entry(a) != ARCHIVE_OK) return Failure("finishing a file");
  return Status::Ok();
}

Status TarWriter::Close() {
  if (archive_write_close(archive_->a) != ARCHIVE_OK) return Failure("closing");
  return Flush();
}

}  // namespace agentd
