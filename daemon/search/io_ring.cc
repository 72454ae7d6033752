#include "search/io_ring.h"

#include <liburing.h>

#include <sched.h>

#include <cerrno>
#include <memory>

namespace agentd {
namespace {

// Whether the kernel offers every operation IoRing queues.
bool OffersOps(io_uring* ring) {
  io_uring_probe* probe = io_uring_get_probe_ring(ring);
  if (!probe) return false;
  bool all = true;
  for (int op : {IORING_OP_OPENAT, IORING_OP_STATX, IORING_OP_READ, IORING_OP_CLOSE}) {
    all = all && io_uring_opcode_supported(probe, op);
  }
  io_uring_free_probe(probe);
  return all;
}

}  // namespace

std::unique_ptr<IoRing> IoRing::Create(unsigned entries) {
  std::unique_ptr<IoRing> r(new IoRing());
  r->ring_ = std::make_unique<io_uring>();
  // The kernel makes the ring's descriptor close-on-exec.
  if (io_uring_queue_init(entries, r->ring_.get(), 0) < 0) return nullptr;
  r->initialized_ = true;
  if (!OffersOps(r->ring_.get())) return nullptr;
  r->entries_ = r->ring_->sq.ring_entries;
  return r;
}

IoRing::~IoRing() {
  if (initialized_) io_uring_queue_exit(ring_.get());
}

io_uring_sqe* IoRing::Next(uint32_t tag) {
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  if (sqe) {
    io_uring_sqe_set_data64(sqe, tag);
    ++queued_;
  }
  return sqe;
}

void IoRing::OpenAt(int dir_fd, const char* name, int flags, uint32_t tag) {
  if (io_uring_sqe* sqe = Next(tag)) io_uring_prep_openat(sqe, dir_fd, name, flags, 0);
}

void IoRing::Statx(int fd, unsigned mask, struct statx* out, uint32_t tag) {
  if (io_uring_sqe* sqe = Next(tag)) io_uring_prep_statx(sqe, fd, "", AT_EMPTY_PATH, mask, out);
}

void IoRing::Read(int fd, void* to, uint32_t len, uint64_t offset, uint32_t tag) {
  if (io_uring_sqe* sqe = Next(tag)) io_uring_prep_read(sqe, fd, to, len, offset);
}

void IoRing::Close(int fd, uint32_t tag) {
  if (io_uring_sqe* sqe = Next(tag)) io_uring_prep_close(sqe, fd);
}

bool IoRing::Run(int32_t* results) {
  const unsigned want = queued_;
  unsigned seen = 0;
  queued_ = 0;
  while (seen < want) {
    int n = io_uring_submit_and_wait(ring_.get(), want - seen);
    if (n < 0 && n != -EINTR && n != -EAGAIN && n != -EBUSY) return false;
    // -EAGAIN/-EBUSY: the kernel is short of memory or completion room;
    // reaping below makes room, and the next call submits the rest.
    if (n == -EAGAIN || n == -EBUSY) ::sched_yield();
    unsigned head;
    unsigned reaped = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(ring_.get(), head, cqe) {
      results[io_uring_cqe_get_data64(cqe)] = cqe->res;
      ++reaped;
    }
    io_uring_cq_advance(ring_.get(), reaped);
    seen += reaped;
  }
  return true;
}

}  // namespace agentd
