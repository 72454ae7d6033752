#include "fs/tar_writer.h"

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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
    if (!w->Append(static_cast<const char*>(data), size).ok()) return -1;
    return static_cast<la_ssize_t>(size);
  }
};

namespace {

la_ssize_t WriteCallback(archive*, void* client, const void* data, size_t size) {
  return TarWriterAccess::Write(static_cast<TarWriter*>(client), data, size);
}

// A chunk is sent once it holds kTarChunkBytes; the room past that lets a
// read into the chunk stay large (at least kMinInPlaceRead) without
// flushing short chunks.
constexpr size_t kMinInPlaceRead = 64 * 1024;
constexpr size_t kChunkAlloc = kTarChunkBytes + kMinInPlaceRead;
constexpr size_t kReadBytes = 256 * 1024;  // a compressed archive's reads

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
  chunk_.resize(kChunkAlloc);
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

Status TarWriter::Append(const char* data, size_t size) {
  if (data == chunk_.data() + fill_ && size <= chunk_.size() - fill_) {
    fill_ += size;  // read into place by AddFile
    adopted_ += size;
  } else {
    if (fill_ + size > chunk_.size()) AGENTD_RETURN_IF_ERROR(Flush());
    if (size > chunk_.size()) {  // larger than a chunk (a long extended header): on its own
      Status s = sink_.Write(std::string_view(data, size));
      if (!s.ok()) sink_error_ = s;
      return s;
    }
    std::memmove(chunk_.data() + fill_, data, size);
    fill_ += size;
  }
  if (fill_ >= kTarChunkBytes) return Flush();
  return Status::Ok();
}

Status TarWriter::Flush() {
  if (fill_ == 0) return Status::Ok();
  chunk_.resize(fill_);
  fill_ = 0;
  Status s = sink_.WriteOwned(std::move(chunk_));
  // A buffer the reader is done with, or a new one; its old bytes are
  // overwritten, and only what lies past its old size is zeroed here.
  chunk_ = sink_.TakeBuffer();
  chunk_.resize(kChunkAlloc);
  if (!s.ok()) sink_error_ = s;
  return s;
}

Status TarWriter::Open() {
  archive* a = archive_->a = archive_write_new();
  archive_write_set_format_pax(a);
  if (compression_ == TarCompression::kGzip) {
    archive_write_add_filter_gzip(a);
    // No clock in the gzip header: the same tree gives the same bytes
    // (libarchive stores the time of the write by default).
    archive_write_set_filter_option(a, "gzip", "timestamp", nullptr);
  }
  if (compression_ == TarCompression::kZstd) archive_write_add_filter_zstd(a);
  // Unblocked: every write reaches WriteCallback as it is made (whole
  // 512-byte records), never copied into libarchive's own block buffer
  // first, and nothing pads the end.
  archive_write_set_bytes_per_block(a, 0);
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
  // Uncompressed, the data is read into the chunk where it will be sent
  // (Append adopts it); a compressor reads it from a buffer of its own.
  bool in_place = compression_ == TarCompression::kNone;
  if (!in_place && left > 0 && !read_buf_) read_buf_.reset(new char[kReadBytes]);
  off_t off = 0;
  while (left > 0) {
    char* dst = read_buf_.get();
    size_t want = std::min<uint64_t>(left, kReadBytes);
    if (in_place) {
      if (chunk_.size() - fill_ < kMinInPlaceRead && !Flush().ok()) return sink_error_;
      dst = chunk_.data() + fill_;
      want = std::min<uint64_t>(left, chunk_.size() - fill_);
    }
    ssize_t n = ::pread(fd, dst, want, off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return PosixError(errno, "cannot read", name);
    }
    if (n == 0) break;  // shrank: archive_write_finish_entry pads with zeros
    uint64_t adopted = adopted_;
    if (archive_write_data(a, dst, static_cast<size_t>(n)) < 0) {
      return Failure("writing file data");
    }
    if (in_place && adopted_ - adopted != static_cast<uint64_t>(n)) {
      // libarchive wrote something else in between: never send stale bytes.
      return Status::Internal("the archive writer did not pass file data through");
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
