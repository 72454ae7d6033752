// FileTags: the ETags of regular files (docs/PROTOCOL.md, "ETags and
// preconditions"), and the lock that makes "check the tag, then replace"
// one step among the daemon's own writers.
//
// A tag is "\"sha256:<64 hex digits>\"": a strong validator, the SHA-256
// of every byte of the file (nettle, which uses the CPU's SHA extensions
// where it has them; docs/BUILDING.md). It is computed when asked for and
// kept in a bounded TagCache under the file's identity (device, inode,
// size, mtime and ctime in ns), so stat'ing an unchanged file again costs
// one fstat.
//
// Racing writers: the bytes hashed are the bytes read through the caller's
// descriptor, and the file's identity is taken before and after; a file
// that changed meanwhile is hashed again. File times are coarse (a clock
// tick), so a write landing in the same tick as the hash could leave the
// identity unchanged: a tag is therefore cached only once the file's
// ctime lies `settle` before the hash began (git's "racily clean" rule),
// and until then every ask hashes anew. What this does NOT guarantee: a
// process writing the file in place (not by rename) after the tag was
// taken changes the bytes a reader then gets; the daemon's own writes
// replace files by rename, so a reader's descriptor keeps its content.
//
// Thread-safe; blocking (call on a pool).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "agentd/protocol/status.h"
#include "fs/tag_cache.h"

struct sha256_ctx;  // nettle's, kept out of this header

namespace agentd {

// The tag of bytes fed in pieces (a write hashes what it writes).
class TagHasher {
 public:
  TagHasher();
  ~TagHasher();
  TagHasher(TagHasher&&) noexcept;
  TagHasher& operator=(TagHasher&&) noexcept;

  void Update(std::string_view bytes);
  std::string Finish();  // once

 private:
  std::unique_ptr<sha256_ctx> ctx_;
};

inline constexpr size_t kFileTagCacheEntries = 4096;
// How long after its last change a file's tag may be cached.
inline constexpr std::chrono::nanoseconds kFileTagSettle = std::chrono::seconds(2);
// Hashes of a file that keeps changing before the tag is given up.
inline constexpr int kFileTagAttempts = 3;

class FileTags {
 public:
  explicit FileTags(size_t capacity = kFileTagCacheEntries,
                    std::chrono::nanoseconds settle = kFileTagSettle)
      : cache_(capacity), settle_(settle) {}

  // The tag of the regular file open at `fd` (readable), as it is now.
  // A file still changing after kFileTagAttempts hashes is io_error
  // naming `display` and the attempts.
  Result<std::string> Of(int fd, const std::string& display);

  // The tag of `bytes` (what the edit route read and is about to change).
  static std::string OfBytes(std::string_view bytes);

  // Serializes the daemon's checks and replaces of one directory entry:
  // the entry `leaf` of directory `dir_fd` (its device and inode). Two
  // entries share a lock now and then (the locks are striped); never hold
  // one while taking another except through LockPair.
  std::unique_lock<std::mutex> Lock(int dir_fd, std::string_view leaf);
  // Both entries' locks in a fixed order (one when they share a stripe).
  std::pair<std::unique_lock<std::mutex>, std::unique_lock<std::mutex>> LockPair(
      int dir_a, std::string_view leaf_a, int dir_b, std::string_view leaf_b);

  // Files hashed so far (cache misses); for tests.
  uint64_t hashed() const;

 private:
  size_t Stripe(int dir_fd, std::string_view leaf) const;

  static constexpr size_t kStripes = 64;
  mutable std::mutex mu_;  // guards cache_ and hashed_
  TagCache cache_;
  uint64_t hashed_ = 0;
  std::chrono::nanoseconds settle_;
  std::array<std::mutex, kStripes> entry_locks_;
};

}  // namespace agentd
