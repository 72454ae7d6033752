#include "exec/tombstones.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agentd/trees/posix_error.h"
#include "log/log.h"
#include "sys/read_file.h"

namespace agentd {
namespace {

constexpr int64_t kMinuteMs = 60'000;

int64_t TombstoneMs(Tombstones::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

struct Record {
  uint64_t hash;
  int64_t unix_ms;
};

}  // namespace

Tombstones::Tombstones(std::chrono::seconds keep, size_t max_entries)
    : keep_(keep), max_entries_(max_entries) {}

uint64_t Tombstones::Hash(std::string_view id) {
  // FNV-1a, then a splitmix64 finalizer to spread the bits.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : id) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

void Tombstones::Insert(uint64_t hash, int64_t unix_ms) {
  int64_t minute = unix_ms / kMinuteMs;
  // Clocks can step back; a late record joins the newest bucket.
  if (buckets_.empty() || buckets_.back().minute < minute) buckets_.push_back({minute, {}});
  std::vector<uint64_t>& v = buckets_.back().hashes;
  v.insert(std::upper_bound(v.begin(), v.end(), hash), hash);
  ++size_;
  while (size_ > max_entries_ && buckets_.size() > 1) {
    size_ -= buckets_.front().hashes.size();
    Log(LogLevel::kWarn, "released exec ids forgotten early: too many in the last hour",
        json::Object().Set("forgotten", buckets_.front().hashes.size()));
    buckets_.pop_front();
  }
}

void Tombstones::Expire(Clock::time_point now) {
  // A bucket goes when its newest possible entry is older than keep_.
  int64_t cutoff =
      TombstoneMs(now) - std::chrono::duration_cast<std::chrono::milliseconds>(keep_).count();
  while (!buckets_.empty() && (buckets_.front().minute + 1) * kMinuteMs <= cutoff) {
    size_ -= buckets_.front().hashes.size();
    buckets_.pop_front();
  }
}

void Tombstones::Add(std::string_view id, Clock::time_point now) {
  Expire(now);
  Record r{Hash(id), TombstoneMs(now)};
  Insert(r.hash, r.unix_ms);
  if (file_) {
    ssize_t n = ::write(file_.get(), &r, sizeof(r));
    if (n != static_cast<ssize_t>(sizeof(r))) {
      Log(LogLevel::kWarn, "cannot persist a released exec id",
          json::Object().Set("error", std::string(std::strerror(errno))));
    }
  }
}

bool Tombstones::Contains(std::string_view id, Clock::time_point now) {
  Expire(now);
  uint64_t h = Hash(id);
  for (const Bucket& b : buckets_) {
    if (std::binary_search(b.hashes.begin(), b.hashes.end(), h)) return true;
  }
  return false;
}

void Tombstones::Clear() {
  buckets_.clear();
  size_ = 0;
  // O_APPEND: later records start at 0. A file that cannot be truncated
  // only keeps hashes that expire on their own (never the ids themselves).
  if (file_ && ::ftruncate(file_.get(), 0) != 0) {
    Log(LogLevel::kWarn, "cannot empty the released-id file", json::Object().Set("errno", errno));
  }
}

Status Tombstones::Load(const std::string& path, Clock::time_point now) {
  Result<std::string> data = ReadFileToString(path, 64ull << 20);
  std::vector<Record> records;
  if (data.ok()) {
    size_t count = data->size() / sizeof(Record);  // a torn last record is dropped
    records.resize(count);
    // An empty vector's data() may be null, and memcpy from or to null is
    // undefined even for zero bytes (UBSan's first report at restart).
    if (count > 0) std::memcpy(records.data(), data->data(), count * sizeof(Record));
  } else if (data.status().code() != ErrorCode::kNotFound) {
    Log(LogLevel::kWarn, "cannot read released exec ids; starting without them",
        json::Object().Set("error", data.status().message()));
  }
  std::stable_sort(records.begin(), records.end(),
                   [](const Record& a, const Record& b) { return a.unix_ms < b.unix_ms; });
  int64_t cutoff =
      TombstoneMs(now) - std::chrono::duration_cast<std::chrono::milliseconds>(keep_).count();
  std::string kept;
  for (const Record& r : records) {
    if (r.unix_ms < cutoff) continue;
    Insert(r.hash, r.unix_ms);
    kept.append(reinterpret_cast<const char*>(&r), sizeof(r));
  }
  AGENTD_RETURN_IF_ERROR(WriteFileAtomically(path, kept));
  file_.reset(::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  if (!file_) return PosixError(errno, "cannot open", path);
  return Status::Ok();
}

}  // namespace agentd
