// TarReader: libarchive's streaming reader behind a small interface. This
// file and tar_writer.cc are the only ones that include archive.h.
//
// Formats: tar in all its dialects (v7, ustar, pax, GNU); compression:
// none, gzip or zstd, detected from the first bytes. Nothing else is
// enabled (no *_all() calls), which keeps the static binary small and the
// attack surface to what the protocol promises.
//
// The reader pulls its input from a ByteSource on the calling thread.
// Limits: libarchive refuses pax and GNU long-name headers over 1 MiB; a
// zstd stream may make the decoder allocate up to its default window limit
// (128 MiB); gzip needs 32 KiB. Not thread-safe.
#pragma once

#include <time.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agentd/protocol/status.h"
#include "agentd/trees/byte_stream.h"

namespace agentd {

struct TarMember {
  enum class Kind { kFile, kDir, kSymlink, kHardlink, kCharDevice, kBlockDevice, kFifo, kSocket };

  std::string name;  // raw bytes, as in the archive
  Kind kind = Kind::kFile;
  uint64_t size = 0;  // declared data size (regular files)
  uint32_t mode = 0;  // permission bits, 07777
  int64_t uid = 0;
  int64_t gid = 0;
  std::optional<struct timespec> mtime;  // absent when the archive has none
  std::string link;                      // symlink target, or the earlier member a hard link names
};

class TarReader {
 public:
  explicit TarReader(ByteSource& source);
  ~TarReader();
  TarReader(const TarReader&) = delete;
  TarReader& operator=(const TarReader&) = delete;

  // The next member's header: false at the end of the archive. A malformed
  // or truncated archive is 400 invalid_archive (with `reason`); an error
  // of the source (the client went away) is passed through.
  Result<bool> Next(TarMember* member);
  // Hands the current member's data to `sink` block by block, with each
  // block's offset in the file (offsets jump over the holes of a sparse
  // member). At most the declared size arrives.
  Status ReadData(const std::function<Status(uint64_t offset, std::string_view data)>& sink);

  // Compressed bytes consumed so far (for logs).
  uint64_t consumed() const { return consumed_; }

 private:
  friend struct TarReaderAccess;  // libarchive's read callback
  struct Archive;
  Status Failure(std::string_view during);

  ByteSource& source_;
  std::unique_ptr<Archive> archive_;
  Status source_error_;
  uint64_t consumed_ = 0;
  bool opened_ = false;
};

}  // namespace agentd
