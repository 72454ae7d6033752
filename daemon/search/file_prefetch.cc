#include "search/file_prefetch.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace agentd {
namespace {

// O_NONBLOCK: a FIFO swapped in since the listing must not hang us.
constexpr int kOpenFlags = O_RDONLY | O_NONBLOCK;
// A file read whole is scanned as one block.
static_assert(kPrefetchBytes <= kSearchReadBytes);

}  // namespace

FilePrefetch::FilePrefetch(const TreeWalk& walk, bool use_ring) : walk_(walk) {
  // A window's closes and the next window's opens go in one submission.
  if (use_ring) ring_ = IoRing::Create(2 * kPrefetchFiles);
  if (ring_) buf_.reset(new char[kPrefetchBytes]);
}

FilePrefetch::~FilePrefetch() = default;  // the window's descriptors close

void FilePrefetch::DropRing() {
  ring_.reset();
  slots_.clear();
  serial_ = 0;
}

bool FilePrefetch::Prepare(const FileBatch& batch, size_t from) {
  int32_t res[2 * kPrefetchFiles];
  const size_t n = std::min(kPrefetchFiles, batch.size() - from);
  uint32_t tag = static_cast<uint32_t>(n);  // closes after the opens' tags
  for (Slot& s : slots_) {
    if (s.fd) ring_->Close(s.fd.release(), tag++);
  }
  slots_.clear();
  slots_.resize(n);
  serial_ = batch.serial();
  first_ = from;
  for (size_t k = 0; k < n; ++k) {
    res[k] = -ECANCELED;
    size_t i = from + k;
    if (batch.followed(i)) {
      // Through the confined root (openat2), as the plain path does.
      slots_[k].fd =
          walk_.OpenListed(batch.dir_fd(), batch.name(i), batch.walk_path(i), true, kOpenFlags);
    } else {
      ring_->OpenAt(batch.dir_fd(), batch.name(i), kOpenFlags | O_NOFOLLOW | O_CLOEXEC,
                    static_cast<uint32_t>(k));
    }
  }
  bool ok = ring_->Run(res);
  for (size_t k = 0; k < n; ++k) {
    if (!batch.followed(from + k) && res[k] >= 0) slots_[k].fd = UniqueFd(res[k]);
  }
  if (!ok) {
    DropRing();  // the descriptors known are closed; the files take the plain path
    return false;
  }

  struct statx stx[kPrefetchFiles];
  for (size_t k = 0; k < n; ++k) {
    res[k] = -ECANCELED;
    if (slots_[k].fd) {
      ring_->Statx(slots_[k].fd.get(), STATX_TYPE | STATX_SIZE, &stx[k], static_cast<uint32_t>(k));
    }
  }
  if (!ring_->Run(res)) {
    DropRing();
    return false;
  }
  size_t used = 0;
  for (size_t k = 0; k < n; ++k) {
    Slot& s = slots_[k];
    if (!s.fd) continue;
    constexpr unsigned kWant = STATX_TYPE | STATX_SIZE;
    if (res[k] == 0 && (stx[k].stx_mask & kWant) == kWant) {
      s.regular = S_ISREG(stx[k].stx_mode);
      s.size = static_cast<off_t>(stx[k].stx_size);
    } else {
      // A kernel whose ring statx refuses an empty path: the plain call.
      struct stat st;
      if (::fstat(s.fd.get(), &st) != 0) continue;
      s.regular = S_ISREG(st.st_mode);
      s.size = st.st_size;
    }
    res[k] = -ECANCELED;
    // One byte more than the size: a read that fills it found a file that
    // grew, which the scanner reads again.
    if (s.regular && s.size >= 0 && static_cast<size_t>(s.size) < kPrefetchBytes - used) {
      s.content_at = used;
      ring_->Read(s.fd.get(), buf_.get() + used, static_cast<uint32_t>(s.size + 1), 0,
                  static_cast<uint32_t>(k));
      used += static_cast<size_t>(s.size) + 1;
      s.have_content = true;
    }
  }
  if (ring_->queued() > 0 && !ring_->Run(res)) {
    DropRing();
    return false;
  }
  for (size_t k = 0; k < n; ++k) {
    Slot& s = slots_[k];
    if (s.have_content) s.have_content = res[k] == s.size;
  }
  return true;
}

bool FilePrefetch::Scan(FileScanner& scanner, const FileBatch& batch, size_t i, ScanSink& sink) {
  if (ring_ && (batch.serial() != serial_ || i < first_ || i >= first_ + slots_.size())) {
    Prepare(batch, i);
  }
  if (!ring_) {
    UniqueFd fd = walk_.OpenListed(batch.dir_fd(), batch.name(i), batch.walk_path(i),
                                   batch.followed(i), kOpenFlags);
    return ScanOpenedFile(scanner, fd, batch.path(i), sink);
  }
  Slot& s = slots_[i - first_];
  if (!s.fd || !s.regular) return sink.Unreadable(1);
  std::string_view content(buf_.get() + s.content_at, static_cast<size_t>(s.size));
  from_ring_ += s.have_content;
  return ScanRegularFile(scanner, s.fd.get(), s.size, batch.path(i), sink,
                         s.have_content ? &content : nullptr);
}

}  // namespace agentd
