// TarWriter: libarchive's writer behind a small interface (with
// tar_reader.cc, the only place that includes archive.h).
//
// Writes POSIX pax (plain ustar headers, plus an extended header where a
// long name, a large size or owner, or an mtime with nanoseconds needs one;
// atime and ctime are not archived) with numeric owners
// only (no user or group names: a static daemon resolves none), hard links
// detected by device and inode (libarchive's link resolver: the first name
// carries the data, later names are links to it), and optional gzip or zstd
// compression at their default levels. Output is gathered into chunks of
// kTarChunkBytes or a little more before it reaches the sink, which takes
// each chunk whole (ByteSink::WriteOwned) and can hand it back for reuse
// (ByteSink::TakeBuffer). Uncompressed, a file's data is read straight into
// the chunk: libarchive (writing unblocked) passes the same bytes back to
// the write callback, which finds them already in place, so file data is
// copied once, by pread. Not thread-safe.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <string>

#include "agentd/protocol/status.h"
#include "agentd/trees/byte_stream.h"

namespace agentd {

enum class TarCompression { kNone, kGzip, kZstd };

inline constexpr size_t kTarChunkBytes = 256 * 1024;

class TarWriter {
 public:
  TarWriter(ByteSink& sink, TarCompression compression);
  ~TarWriter();
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;

  Status Open();
  Status AddDir(const std::string& name, const struct stat& st);
  Status AddSymlink(const std::string& name, const struct stat& st, const std::string& target);
  // The data is read from `fd` (st.st_size bytes; a file that shrank while
  // being read is padded with zeros, one that grew is cut at st_size).
  Status AddFile(const std::string& name, const struct stat& st, int fd);
  // Flushes and writes the end-of-archive blocks.
  Status Close();

 private:
  friend struct TarWriterAccess;  // libarchive's write callback
  struct Archive;
  Status Failure(std::string_view during);
  Status Append(const char* data, size_t size);
  Status Flush();

  ByteSink& sink_;
  TarCompression compression_;
  std::unique_ptr<Archive> archive_;
  std::string chunk_;  // sized kChunkAlloc; the first fill_ bytes are the output
  size_t fill_ = 0;
  uint64_t adopted_ = 0;              // bytes Append found already in place
  std::unique_ptr<char[]> read_buf_;  // compressed archives only
  Status sink_error_;
  bool discard_ = false;  // set while tearing down: late output is dropped
};

}  // namespace agentd
