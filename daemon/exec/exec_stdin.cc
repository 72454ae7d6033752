#include "exec/exec_stdin.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "agentd/trees/posix_error.h"
#include "sys/awaitable.h"

namespace agentd {
namespace {

Status Closed(const ExecRecord& rec) {
  return Status::Error(ErrorCode::kStdinClosed,
                       "stdin of exec \"" + rec.id + "\" is closed (end of input or exited)")
      .With("next", rec.stdin_next);
}

void CloseStdin(ExecRecord& rec) {
  rec.stdin_pipe.reset();
  rec.stdin_closed = true;
  // Streamed stdin under a holder goes through its relay: it closes the
  // command's stdin once it passed on every byte written before this (a
  // PTY's input side only: its master stays, as it did here before).
  if (rec.stdin_stream && rec.holder && rec.holder->is_open()) {
    (void)::send(rec.holder->native_handle(), "E", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
}

// One non-blocking write: bytes taken, 0 when the pipe is full, -1 when the
// reader is gone (EPIPE) or another error.
ssize_t TryWrite(ExecRecord& rec, std::string_view bytes) {
  for (;;) {
    ssize_t n = ::write(rec.stdin_pipe->native_handle(), bytes.data(), bytes.size());
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return 0;
    return -1;
  }
}

}  // namespace

Result<UniqueFd> WholeStdinFile(std::string_view data) {
  UniqueFd fd(::memfd_create("agentd-stdin", MFD_CLOEXEC));
  if (!fd) return PosixError(errno, "cannot create a memfd for the exec's stdin");
  while (!data.empty()) {
    ssize_t n = ::write(fd.get(), data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return PosixError(errno, "cannot write the exec's stdin into its memfd");
    data.remove_prefix(static_cast<size_t>(n));
  }
  return fd;
}

asio::awaitable<void> WriteWholeStdin(std::shared_ptr<ExecRecord> rec, std::string data) {
  std::string_view left = data;
  while (!left.empty() && rec->stdin_pipe) {
    ssize_t n = TryWrite(*rec, left);
    if (n < 0) break;
    if (n > 0) {
      left.remove_prefix(static_cast<size_t>(n));
      rec->stdin_next += static_cast<uint64_t>(n);
      continue;
    }
    auto [ec] = co_await rec->stdin_pipe->async_wait(asio::posix::stream_descriptor::wait_write,
                                                     kUseNothrow);
    if (ec) break;  // closed under us: the process ended
  }
  CloseStdin(*rec);
}

StdinWrite::StdinWrite(std::shared_ptr<ExecRecord> rec, uint64_t offset,
                       std::chrono::milliseconds stall)
    : rec_(std::move(rec)), cursor_(offset), stall_limit_(stall) {
  rec_->stdin_busy = true;
}

StdinWrite::~StdinWrite() {
  rec_->stdin_busy = false;
  rec_->stdin_idle.Notify();
}

asio::awaitable<Result<std::unique_ptr<StdinWrite>>> StdinWrite::Begin(
    std::shared_ptr<ExecRecord> rec, uint64_t offset, std::chrono::milliseconds stall_limit) {
  if (!rec->stdin_stream) {
    co_return Status::Error(ErrorCode::kStdinNotStreamed,
                            "exec \"" + rec->id + "\" was not started with \"stdin_stream\"")
        .With("id", rec->id);
  }
  while (rec->stdin_busy) {
    co_await rec->stdin_idle.Wait(ChangeSignal::Clock::time_point::max());
  }
  if (offset > rec->stdin_next) {
    co_return Status::Error(ErrorCode::kStdinOffsetMismatch,
                            "stdin write starts at " + std::to_string(offset) +
                                " but the process has " + std::to_string(rec->stdin_next) +
                                " bytes")
        .With("expected", rec->stdin_next)
        .With("got", offset);
  }
  co_return std::unique_ptr<StdinWrite>(new StdinWrite(std::move(rec), offset, stall_limit));
}

asio::awaitable<bool> StdinWrite::WaitWritable() {
  // The stall timer cancels the wait; `state` outlives this frame, so a
  // timer handler that runs after the wait ended touches nothing stale.
  struct State {
    bool done = false;
    bool timed_out = false;
  };
  auto state = std::make_shared<State>();
  asio::posix::stream_descriptor* pipe = rec_->stdin_pipe.get();
  asio::steady_timer stall(co_await asio::this_coro::executor, stall_limit_);
  stall.async_wait([rec = rec_, pipe, state](const asio::error_code& ec) {
    if (ec || state->done || rec->stdin_pipe.get() != pipe) return;
    state->timed_out = true;
    asio::error_code ignored;
    pipe->cancel(ignored);
  });
  auto [ec] = co_await pipe->async_wait(asio::posix::stream_descriptor::wait_write, kUseNothrow);
  state->done = true;
  stall.cancel();
  if (ec && state->timed_out) stalled_ = true;
  co_return !ec;
}

asio::awaitable<Status> StdinWrite::Write(std::string_view chunk) {
  ExecRecord& rec = *rec_;
  uint64_t end = cursor_ + chunk.size();
  if (end <= rec.stdin_next || stalled_) {  // a retried prefix, or the rest after a stall
    cursor_ = stalled_ ? cursor_ : end;
    co_return Status::Ok();
  }
  chunk.remove_prefix(static_cast<size_t>(rec.stdin_next - cursor_));
  cursor_ = rec.stdin_next;
  while (!chunk.empty()) {
    if (rec.stdin_closed || !rec.stdin_pipe) co_return Closed(rec);
    ssize_t n = TryWrite(rec, chunk);
    if (n < 0) {
      CloseStdin(rec);  // the process closed its stdin or exited
      co_return Closed(rec);
    }
    if (n > 0) {
      chunk.remove_prefix(static_cast<size_t>(n));
      rec.stdin_next += static_cast<uint64_t>(n);
      cursor_ += static_cast<uint64_t>(n);
      continue;
    }
    bool writable = co_await WaitWritable();
    if (!writable) {
      if (stalled_) co_return Status::Ok();  // answered with the shorter `next`
      co_return Closed(rec);
    }
  }
  co_return Status::Ok();
}

uint64_t StdinWrite::Finish(bool eof) {
  if (eof && !stalled_ && cursor_ >= rec_->stdin_next && !rec_->stdin_closed) CloseStdin(*rec_);
  return rec_->stdin_next;
}

}  // namespace agentd
