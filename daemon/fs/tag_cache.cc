#include "fs/tag_cache.h"

namespace agentd {
namespace {

int64_t Nanoseconds(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

FileIdentity FileIdentity::Of(const struct stat& st) {
  FileIdentity id;
  id.dev = static_cast<uint64_t>(st.st_dev);
  id.ino = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = Nanoseconds(st.st_mtim);
  id.ctime_ns = Nanoseconds(st.st_ctim);
  return id;
}

size_t TagCache::Hash::operator()(const FileIdentity& id) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the five fields
  for (uint64_t part : {id.dev, id.ino, id.size, static_cast<uint64_t>(id.mtime_ns),
                        static_cast<uint64_t>(id.ctime_ns)}) {
    h = (h ^ part) * 1099511628211ull;
  }
  return static_cast<size_t>(h);
}

std::optional<std::string> TagCache::Find(const FileIdentity& id) {
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->second;
}

void TagCache::Store(const FileIdentity& id, std::string tag) {
  if (capacity_ == 0) return;
  auto it = index_.find(id);
  if (it != index_.end()) {
    it->second->second = std::move(tag);
    order_.splice(order_.begin(), order_, it->second);
    return;
  }
  order_.emplace_front(id, std::move(tag));
  index_.emplace(id, order_.begin());
  if (index_.size() > capacity_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
}

}  // namespace agentd
