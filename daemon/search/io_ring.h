// IoRing: a small io_uring (through liburing, Debian's liburing-dev,
// linked statically; docs/BUILDING.md) for the search's per-file calls. A search of many small
// files makes four calls per file (open, stat, read, close), and on this kind of guest each system
// call's entry and exit costs more than the work it does; through a ring, one io_uring_enter
// carries one step for a whole window of files (docs/BENCHMARKS.md, "Search": 0.28 s of CPU for
// 100,000 files against 0.68 s by system calls).
//
// Requests are queued, then Run submits them all and waits for every
// completion. The ring is made only where the kernel offers every
// operation used (IORING_REGISTER_PROBE); Create answers null otherwise
// (io_uring disabled by sysctl or seccomp, an old kernel), and the caller
// makes the calls itself. One ring per thread.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <memory>

struct statx;
struct io_uring;
struct io_uring_sqe;

namespace agentd {

class IoRing {
 public:
  // At most `entries` requests per Run (rounded up to a power of two by
  // the kernel). Null when the kernel refuses or lacks an operation.
  static std::unique_ptr<IoRing> Create(unsigned entries);
  ~IoRing();
  IoRing(const IoRing&) = delete;
  IoRing& operator=(const IoRing&) = delete;

  unsigned capacity() const { return entries_; }
  unsigned queued() const { return queued_; }

  // Each queues one request whose result Run reports under `tag`
  // (< capacity()). At most capacity() requests may be queued.
  void OpenAt(int dir_fd, const char* name, int flags, uint32_t tag);
  void Statx(int fd, unsigned mask, struct statx* out, uint32_t tag);  // of the open file
  void Read(int fd, void* to, uint32_t len, uint64_t offset, uint32_t tag);
  void Close(int fd, uint32_t tag);

  // Submits what is queued and waits for all of it: results[tag] gets
  // each request's result (as the system call's: >= 0, or -errno). False
  // when the ring itself failed: the results not reported are left as the
  // caller set them, and the ring must not be used again.
  bool Run(int32_t* results);

 private:
  IoRing() = default;
  // The next submission entry, tagged; null only when more than
  // capacity() were queued (a caller's error).
  ::io_uring_sqe* Next(uint32_t tag);

  std::unique_ptr<::io_uring> ring_;
  bool initialized_ = false;  // io_uring_queue_init succeeded: exit it
  unsigned entries_ = 0;
  unsigned queued_ = 0;
};

}  // namespace agentd
