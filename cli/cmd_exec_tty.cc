// exec --tty: a remote command on a pseudo-terminal, driven from ours.
//
// The local terminal goes to raw mode (restored on every way out), so keys
// like Ctrl-C travel as bytes to the remote terminal, whose line
// discipline signals the remote foreground job, exactly as over ssh -t.
// The local size is sent at start and again on each SIGWINCH. Input is
// streamed through the offset-based stdin route (retry-safe); output is
// the PTY's one merged stream.
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <asio.hpp>

#include "agentd/client/nothrow.h"
#include "commands.h"
#include "exec_format.h"
#include "exit_codes.h"

namespace agentd::cli {
namespace {

using client::kNothrow;

// Raw mode on a terminal for as long as it lives.
class RawMode {
 public:
  explicit RawMode(int fd) : fd_(fd) {
    if (!::isatty(fd) || ::tcgetattr(fd, &saved_) != 0) return;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    active_ = ::tcsetattr(fd, TCSANOW, &raw) == 0;
  }
  ~RawMode() {
    if (active_) ::tcsetattr(fd_, TCSANOW, &saved_);
  }
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

// The size of whichever of our standard descriptors is a terminal.
std::pair<int, int> LocalSize() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    winsize ws{};
    if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
      return {ws.ws_row, ws.ws_col};
    }
  }
  return {24, 80};
}

asio::awaitable<void> PumpTerminalInput(client::AsyncClient& c, std::string id) {
  asio::posix::stream_descriptor in(c.executor(), ::dup(STDIN_FILENO));
  std::vector<char> buf(16 * 1024);
  uint64_t offset = 0;
  for (;;) {
    auto [ec, n] = co_await in.async_read_some(asio::buffer(buf), kNothrow);
    if (ec) n = 0;
    Result<uint64_t> next = co_await c.WriteStdin(id, offset, std::string(buf.data(), n), n == 0);
    if (!next.ok() || n == 0) co_return;
    offset = *next;
  }
}

}  // namespace

int RunExecOnTty(Context& ctx, ExecStartRequest req, std::string id) {
  asio::io_context io;
  client::AsyncClient c(io.get_executor(), ctx.client_options());
  // SIGTERM/SIGHUP end the remote command; SIGWINCH resizes it. (SIGINT
  // cannot arrive from a raw terminal; it would come from kill(1).) The
  // handlers exist before the size is read, so no resize falls between.
  asio::signal_set ends(io, SIGTERM, SIGHUP, SIGINT);
  asio::signal_set winch(io, SIGWINCH);
  auto [rows, cols] = LocalSize();
  PtySpec pty;
  pty.rows = rows;
  pty.cols = cols;
  if (const char* term = std::getenv("TERM")) pty.term = term;
  req.pty = pty;
  req.stdin_stream = true;
  bool started = false;
  std::function<void()> arm_end, arm_winch;
  arm_end = [&] {
    ends.async_wait([&](const asio::error_code& ec, int) {
      if (ec) return;
      if (started) c.AsyncKillExec(id, KillRequest{}, [](Result<ExecInfo>) {});
      arm_end();
    });
  };
  arm_winch = [&] {
    winch.async_wait([&](const asio::error_code& ec, int) {
      if (ec) return;
      auto [r, co] = LocalSize();
      if (started) c.AsyncResizeExec(id, r, co, [](Result<ExecInfo>) {});
      arm_winch();
    });
  };
  arm_end();
  arm_winch();

  RawMode raw(STDIN_FILENO);
  Result<ExecInfo> final;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        Result<ExecInfo> info = co_await c.StartExec(id, req);
        if (!info.ok()) {
          final = info.status();
          io.stop();
          co_return;
        }
        started = true;
        // A resize while the start was in flight was not sent: send the
        // size now when it is no longer the one the start carried.
        if (LocalSize() !=
            std::pair<int, int>(static_cast<int>(pty.rows), static_cast<int>(pty.cols))) {
          auto [r, co] = LocalSize();
          c.AsyncResizeExec(id, r, co, [](Result<ExecInfo>) {});
        }
        asio::co_spawn(io, PumpTerminalInput(c, id), asio::detached);
        client::StreamCallbacks cb;
        cb.on_stdout = [](uint64_t, std::string_view b) { WriteAllTo(STDOUT_FILENO, b); };
        cb.on_stderr = [](uint64_t, std::string_view b) { WriteAllTo(STDERR_FILENO, b); };
        final = co_await c.Stream(id, {}, cb);
        if (final.ok()) {
          Result<ExecInfo> acked = co_await c.AckExec(id);
          if (acked.ok()) final->acked = true;
        }
        io.stop();  // the input pump may still wait on our terminal
      },
      asio::detached);
  io.run();
  if (!final.ok()) return ctx.out().Fail(final.status());
  if (ctx.out().json()) ctx.out().Succeed(EncodeExecInfoObject(*final), "");
  return RemoteExitStatus(*final);
}

}  // namespace agentd::cli
