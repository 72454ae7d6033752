// TagCache: a bounded map from a file's identity to its content tag, the
// least recently used entry dropped first (fs/file_tags.h uses it).
//
// An identity names one version of one file as the kernel describes it:
// device, inode, size, and the modification and change times to the
// nanosecond. Any write through any path changes the size or a time, so a
// cached tag is never handed out for different content (file_tags.h says
// when a tag may be cached at all, given coarse timestamps).
//
// Not thread-safe: FileTags guards it with its own mutex.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace agentd {

struct FileIdentity {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;

  static FileIdentity Of(const struct stat& st);
  friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};

class TagCache {
 public:
  explicit TagCache(size_t capacity) : capacity_(capacity) {}

  // The tag stored for `id`, which becomes the most recently used.
  std::optional<std::string> Find(const FileIdentity& id);
  // Stores (or refreshes) `tag` for `id`, dropping the least recently used
  // entry beyond the capacity.
  void Store(const FileIdentity& id, std::string tag);
  size_t size() const { return index_.size(); }

 private:
  struct Hash {
    size_t operator()(const FileIdentity& id) const;
  };
  using Entry = std::pair<FileIdentity, std::string>;

  size_t capacity_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<FileIdentity, std::list<Entry>::iterator, Hash> index_;
};

}  // namespace agentd
