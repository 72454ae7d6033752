// IoRing: a small io_uring (the kernel's submission and completion queues,
// set up with raw system calls; Debian ships no static liburing) for the
// search's per-file calls. A search of many small files makes four calls
// per file (open, stat, read, close), and on this kind of guest each
// system call's entry and exit costs more than the work it does; through
// a ring, one io_uring_enter carries one step for a whole window of files
// (docs/BENCHMARKS.md, "Search": 0.28 s of CPU for 100,000 files against
// 0.68 s by system calls).
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
struct io_uring_sqe;
struct io_uring_cqe;

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
  ::io_uring_sqe* Next(uint8_t opcode, int fd, uint32_t tag);

  int fd_ = -1;
  unsigned entries_ = 0;
  unsigned queued_ = 0;
  void* sq_map_ = nullptr;
  size_t sq_map_bytes_ = 0;
  void* cq_map_ = nullptr;  // == sq_map_ with a single mapping
  size_t cq_map_bytes_ = 0;
  void* sqe_map_ = nullptr;
  size_t sqe_map_bytes_ = 0;
  unsigned* sq_tail_ = nullptr;
  unsigned sq_mask_ = 0;
  unsigned* sq_array_ = nullptr;
  unsigned* cq_head_ = nullptr;
  unsigned* cq_tail_ = nullptr;
  unsigned cq_mask_ = 0;
  ::io_uring_cqe* cqes_ = nullptr;
  ::io_uring_sqe* sqes_ = nullptr;
};

}  // namespace agentd
