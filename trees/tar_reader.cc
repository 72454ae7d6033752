#include "agentd/trees/tar_reader.h"

#include <archive.h>
#include <archive_entry.h>

namespace agentd {

struct TarReader::Archive {
  archive* a = nullptr;
  ~Archive() {
    if (a) archive_read_free(a);
  }
};

// libarchive's read callback reaches the reader's internals through this.
struct TarReaderAccess {
  static la_ssize_t Read(TarReader* r, const void** buffer) {
    Result<std::string_view> chunk = r->source_.Read();
    if (!chunk.ok()) {
      r->source_error_ = chunk.status();
      return -1;
    }
    *buffer = chunk->data();
    r->consumed_ += chunk->size();
    return static_cast<la_ssize_t>(chunk->size());
  }
};

namespace {

la_ssize_t ReadCallback(archive*, void* client, const void** buffer) {
  return TarReaderAccess::Read(static_cast<TarReader*>(client), buffer);
}

TarMember::Kind KindOf(archive_entry* e) {
  if (archive_entry_hardlink(e) != nullptr) return TarMember::Kind::kHardlink;
  switch (archive_entry_filetype(e)) {
    case AE_IFDIR:
      return TarMember::Kind::kDir;
    case AE_IFLNK:
      return TarMember::Kind::kSymlink;
    case AE_IFCHR:
      return TarMember::Kind::kCharDevice;
    case AE_IFBLK:
      return TarMember::Kind::kBlockDevice;
    case AE_IFIFO:
      return TarMember::Kind::kFifo;
    case AE_IFSOCK:
      return TarMember::Kind::kSocket;
    default:
      return TarMember::Kind::kFile;
  }
}

}  // namespace

TarReader::TarReader(ByteSource& source) : source_(source), archive_(new Archive) {
  archive_->a = archive_read_new();
  archive_read_support_format_tar(archive_->a);
  archive_read_support_filter_gzip(archive_->a);
  archive_read_support_filter_zstd(archive_->a);
}

TarReader::~TarReader() = default;

Status TarReader::Failure(std::string_view during) {
  if (!source_error_.ok()) return source_error_;
  const char* why = archive_error_string(archive_->a);
  std::string reason = why ? why : "unknown error";
  return Status::Error(ErrorCode::kInvalidArchive, "the archive is malformed or truncated (" +
                                                       std::string(during) + "): " + reason)
      .With("reason", reason);
}

Result<bool> TarReader::Next(TarMember* m) {
  archive* a = archive_->a;
  if (!opened_) {
    opened_ = true;
    if (archive_read_open(a, this, nullptr, ReadCallback, nullptr) != ARCHIVE_OK) {
      return Failure("opening");
    }
  }
  archive_entry* e = nullptr;
  int r = archive_read_next_header(a, &e);
  if (r == ARCHIVE_EOF) return false;
  // ARCHIVE_WARN: typically a name that is not valid in the (C) locale;
  // the raw bytes are still there, and they are what we want.
  if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return Failure("reading a header");
  const char* name = archive_entry_pathname(e);
  if (!name) return Failure("decoding a member name");
  m->name = name;
  m->kind = KindOf(e);
  m->size = archive_entry_size_is_set(e) && archive_entry_size(e) > 0
                ? static_cast<uint64_t>(archive_entry_size(e))
                : 0;
  m->mode = archive_entry_perm(e) & 07777;
  m->uid = archive_entry_uid(e);
  m->gid = archive_entry_gid(e);
  m->mtime.reset();
  if (archive_entry_mtime_is_set(e)) {
    m->mtime = timespec{archive_entry_mtime(e), archive_entry_mtime_nsec(e)};
  }
  const char* link =
      m->kind == TarMember::Kind::kHardlink ? archive_entry_hardlink(e) : archive_entry_symlink(e);
  m->link = link ? link : "";
  return true;
}

Status TarReader::ReadData(
    const std::function<Status(uint64_t offset, std::string_view data)>& sink) {
  archive* a = archive_->a;
  for (;;) {
    const void* buf = nullptr;
    size_t size = 0;
    la_int64_t offset = 0;
    int r = archive_read_data_block(a, &buf, &size, &offset);
    if (r == ARCHIVE_EOF) return Status::Ok();
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return Failure("reading member data");
    if (size == 0) continue;
    AGENTD_RETURN_IF_ERROR(
        sink(static_cast<uint64_t>(offset), std::string_view(static_cast<const char*>(buf), size)));
  }
}

}  // namespace agentd
