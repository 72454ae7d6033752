#include "fs/file_tags.h"

#include <nettle/sha2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <functional>
#include <memory>

#include "agentd/trees/posix_error.h"

namespace agentd {
namespace {

constexpr size_t kHashBlockBytes = 256 * 1024;

std::string TagOfDigest(const uint8_t* digest) {
  static const char kHex[] = "0123456789abcdef";
  std::string tag = "\"sha256:";
  for (size_t i = 0; i < SHA256_DIGEST_SIZE; ++i) {
    tag += kHex[digest[i] >> 4];
    tag += kHex[digest[i] & 15];
  }
  tag += '"';
  return tag;
}

// SHA-256 of every byte of `fd` from offset 0 to its end, read with pread
// (the descriptor's offset is left alone for the caller).
Result<std::string> HashToEnd(int fd, const std::string& display) {
  sha256_ctx ctx;
  sha256_init(&ctx);
  std::unique_ptr<uint8_t[]> buf(new uint8_t[kHashBlockBytes]);
  off_t off = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buf.get(), kHashBlockBytes, off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return PosixError(errno, "cannot read", display);
    }
    if (n == 0) break;
    sha256_update(&ctx, static_cast<size_t>(n), buf.get());
    off += n;
  }
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, SHA256_DIGEST_SIZE, digest);
  return TagOfDigest(digest);
}

int64_t NowNs() {
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace

TagHasher::TagHasher() : ctx_(std::make_unique<sha256_ctx>()) { sha256_init(ctx_.get()); }
TagHasher::~TagHasher() = default;
TagHasher::TagHasher(TagHasher&&) noexcept = default;
TagHasher& TagHasher::operator=(TagHasher&&) noexcept = default;

void TagHasher::Update(std::string_view bytes) {
  sha256_update(ctx_.get(), bytes.size(), reinterpret_cast<const uint8_t*>(bytes.data()));
}

std::string TagHasher::Finish() {
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(ctx_.get(), SHA256_DIGEST_SIZE, digest);
  return TagOfDigest(digest);
}

std::string FileTags::OfBytes(std::string_view bytes) {
  TagHasher h;
  h.Update(bytes);
  return h.Finish();
}

Result<std::string> FileTags::Of(int fd, const std::string& display) {
  for (int attempt = 0; attempt < kFileTagAttempts; ++attempt) {
    struct stat before;
    if (::fstat(fd, &before) != 0) return PosixError(errno, "cannot stat", display);
    FileIdentity id = FileIdentity::Of(before);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (std::optional<std::string> hit = cache_.Find(id)) return *hit;
      ++hashed_;
    }
    int64_t started = NowNs();
    Result<std::string> tag = HashToEnd(fd, display);
    if (!tag.ok()) return tag.status();
    struct stat after;
    if (::fstat(fd, &after) != 0) return PosixError(errno, "cannot stat", display);
    if (!(FileIdentity::Of(after) == id)) continue;  // written while hashed
    if (id.ctime_ns + settle_.count() < started) {
      std::lock_guard<std::mutex> lock(mu_);
      cache_.Store(id, *tag);
    }
    return tag;
  }
  return Status::Error(ErrorCode::kIoError, display + " kept changing while its ETag was computed")
      .With("path", display)
      .With("attempts", kFileTagAttempts);
}

size_t FileTags::Stripe(int dir_fd, std::string_view leaf) const {
  struct stat st {};
  ::fstat(dir_fd, &st);  // a failure leaves zeros: still one stable stripe per leaf
  size_t h = std::hash<std::string_view>()(leaf);
  h ^= std::hash<uint64_t>()(static_cast<uint64_t>(st.st_ino)) + 0x9e3779b97f4a7c15ull + (h << 6);
  h ^= std::hash<uint64_t>()(static_cast<uint64_t>(st.st_dev)) + (h >> 2);
  return h % kStripes;
}

std::unique_lock<std::mutex> FileTags::Lock(int dir_fd, std::string_view leaf) {
  return std::unique_lock<std::mutex>(entry_locks_[Stripe(dir_fd, leaf)]);
}

std::pair<std::unique_lock<std::mutex>, std::unique_lock<std::mutex>> FileTags::LockPair(
    int dir_a, std::string_view leaf_a, int dir_b, std::string_view leaf_b) {
  size_t a = Stripe(dir_a, leaf_a);
  size_t b = Stripe(dir_b, leaf_b);
  if (a == b) {
    return {std::unique_lock<std::mutex>(entry_locks_[a]), std::unique_lock<std::mutex>()};
  }
  if (a > b) std::swap(a, b);
  std::unique_lock<std::mutex> first(entry_locks_[a]);
  std::unique_lock<std::mutex> second(entry_locks_[b]);
  return {std::move(first), std::move(second)};
}

uint64_t FileTags::hashed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hashed_;
}

}  // namespace agentd
