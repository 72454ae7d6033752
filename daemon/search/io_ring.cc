#include "search/io_ring.h"

#include <linux/io_uring.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace agentd {
namespace {

int Setup(unsigned entries, io_uring_params* p) {
  return static_cast<int>(::syscall(__NR_io_uring_setup, entries, p));
}

int Enter(int fd, unsigned submit, unsigned wait) {
  return static_cast<int>(
      ::syscall(__NR_io_uring_enter, fd, submit, wait, IORING_ENTER_GETEVENTS, nullptr, 0));
}

// Whether the kernel offers every operation IoRing queues.
bool OffersOps(int fd) {
  constexpr unsigned kOps = 256;
  std::vector<char> mem(sizeof(io_uring_probe) + kOps * sizeof(io_uring_probe_op), 0);
  auto* probe = reinterpret_cast<io_uring_probe*>(mem.data());
  if (::syscall(__NR_io_uring_register, fd, IORING_REGISTER_PROBE, probe, kOps) < 0) return false;
  for (unsigned op : {IORING_OP_OPENAT, IORING_OP_STATX, IORING_OP_READ, IORING_OP_CLOSE}) {
    if (op > probe->last_op || !(probe->ops[op].flags & IO_URING_OP_SUPPORTED)) return false;
  }
  return true;
}

void* Map(int fd, size_t bytes, off_t what) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, what);
  return p == MAP_FAILED ? nullptr : p;
}

template <typename T>
T* At(void* base, uint32_t off) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + off);
}

}  // namespace

std::unique_ptr<IoRing> IoRing::Create(unsigned entries) {
  io_uring_params p;
  std::memset(&p, 0, sizeof(p));
  int fd = Setup(entries, &p);  // the kernel makes it close-on-exec
  if (fd < 0) return nullptr;
  std::unique_ptr<IoRing> r(new IoRing());
  r->fd_ = fd;
  if (!OffersOps(fd)) return nullptr;
  r->entries_ = p.sq_entries;
  r->sq_map_bytes_ = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  r->cq_map_bytes_ = p.cq_off.cqes + p.cq_entries * sizeof(io_uring_cqe);
  if (p.features & IORING_FEAT_SINGLE_MMAP) {
    r->sq_map_bytes_ = r->cq_map_bytes_ = std::max(r->sq_map_bytes_, r->cq_map_bytes_);
    r->sq_map_ = Map(fd, r->sq_map_bytes_, IORING_OFF_SQ_RING);
    r->cq_map_ = r->sq_map_;
  } else {
    r->sq_map_ = Map(fd, r->sq_map_bytes_, IORING_OFF_SQ_RING);
    r->cq_map_ = Map(fd, r->cq_map_bytes_, IORING_OFF_CQ_RING);
  }
  r->sqe_map_bytes_ = p.sq_entries * sizeof(io_uring_sqe);
  r->sqe_map_ = Map(fd, r->sqe_map_bytes_, IORING_OFF_SQES);
  if (!r->sq_map_ || !r->cq_map_ || !r->sqe_map_) return nullptr;
  r->sq_tail_ = At<unsigned>(r->sq_map_, p.sq_off.tail);
  r->sq_mask_ = *At<unsigned>(r->sq_map_, p.sq_off.ring_mask);
  r->sq_array_ = At<unsigned>(r->sq_map_, p.sq_off.array);
  r->cq_head_ = At<unsigned>(r->cq_map_, p.cq_off.head);
  r->cq_tail_ = At<unsigned>(r->cq_map_, p.cq_off.tail);
  r->cq_mask_ = *At<unsigned>(r->cq_map_, p.cq_off.ring_mask);
  r->cqes_ = At<io_uring_cqe>(r->cq_map_, p.cq_off.cqes);
  r->sqes_ = static_cast<io_uring_sqe*>(r->sqe_map_);
  return r;
}

IoRing::~IoRing() {
  if (sqe_map_) ::munmap(sqe_map_, sqe_map_bytes_);
  if (cq_map_ && cq_map_ != sq_map_) ::munmap(cq_map_, cq_map_bytes_);
  if (sq_map_) ::munmap(sq_map_, sq_map_bytes_);
  if (fd_ >= 0) ::close(fd_);
}

io_uring_sqe* IoRing::Next(uint8_t opcode, int fd, uint32_t tag) {
  // Only this thread writes the tail; the kernel reads it at submission.
  unsigned tail = *sq_tail_;
  unsigned index = tail & sq_mask_;
  io_uring_sqe* sqe = &sqes_[index];
  std::memset(sqe, 0, sizeof(*sqe));
  sqe->opcode = opcode;
  sqe->fd = fd;
  sqe->user_data = tag;
  sq_array_[index] = index;
  __atomic_store_n(sq_tail_, tail + 1, __ATOMIC_RELEASE);
  ++queued_;
  return sqe;
}

void IoRing::OpenAt(int dir_fd, const char* name, int flags, uint32_t tag) {
  io_uring_sqe* sqe = Next(IORING_OP_OPENAT, dir_fd, tag);
  sqe->addr = reinterpret_cast<uint64_t>(name);
  sqe->open_flags = static_cast<uint32_t>(flags);
}

void IoRing::Statx(int fd, unsigned mask, struct statx* out, uint32_t tag) {
  static const char kEmpty[] = "";
  io_uring_sqe* sqe = Next(IORING_OP_STATX, fd, tag);
  sqe->addr = reinterpret_cast<uint64_t>(kEmpty);
  sqe->len = mask;
  sqe->statx_flags = AT_EMPTY_PATH;
  sqe->addr2 = reinterpret_cast<uint64_t>(out);
}

void IoRing::Read(int fd, void* to, uint32_t len, uint64_t offset, uint32_t tag) {
  io_uring_sqe* sqe = Next(IORING_OP_READ, fd, tag);
  sqe->addr = reinterpret_cast<uint64_t>(to);
  sqe->len = len;
  sqe->off = offset;
}

void IoRing::Close(int fd, uint32_t tag) { Next(IORING_OP_CLOSE, fd, tag); }

bool IoRing::Run(int32_t* results) {
  unsigned to_submit = queued_;
  const unsigned want = queued_;
  unsigned seen = 0;
  queued_ = 0;
  while (seen < want) {
    int n = Enter(fd_, to_submit, want - seen);
    if (n >= 0) {
      to_submit -= std::min(static_cast<unsigned>(n), to_submit);
    } else if (errno == EAGAIN || errno == EBUSY) {
      ::sched_yield();  // the kernel is short of memory or completions: reap, retry
    } else if (errno != EINTR) {
      return false;
    }
    unsigned head = *cq_head_;
    unsigned tail = __atomic_load_n(cq_tail_, __ATOMIC_ACQUIRE);
    for (; head != tail; ++head) {
      const io_uring_cqe& c = cqes_[head & cq_mask_];
      results[c.user_data] = c.res;
      ++seen;
    }
    __atomic_store_n(cq_head_, head, __ATOMIC_RELEASE);
  }
  return true;
}

}  // namespace agentd
