// exec and start: run a remote command, attached or detached.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <asio.hpp>

#include "agentd/client/nothrow.h"
#include "commands.h"
#include "exec_format.h"
#include "exit_codes.h"

namespace agentd::cli {
namespace {

using client::kNothrow;
constexpr size_t kStdinChunk = 64 * 1024;

// Copies local input (a file or our stdin) to the exec's stdin by offset.
asio::awaitable<void> PumpStdin(client::AsyncClient& c, std::string id, int fd) {
  struct stat st;
  bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  std::unique_ptr<asio::posix::stream_descriptor> async_in;
  if (!regular)
    async_in = std::make_unique<asio::posix::stream_descriptor>(c.executor(), ::dup(fd));
  std::vector<char> buf(kStdinChunk);
  uint64_t offset = 0;
  for (;;) {
    size_t n = 0;
    if (regular) {
      ssize_t r = ::read(fd, buf.data(), buf.size());
      n = r > 0 ? static_cast<size_t>(r) : 0;
    } else {
      auto [ec, got] = co_await async_in->async_read_some(asio::buffer(buf), kNothrow);
      n = ec ? 0 : got;
    }
    std::string chunk(buf.data(), n);
    Result<uint64_t> next = co_await c.WriteStdin(id, offset, std::move(chunk), n == 0);
    if (!next.ok() || n == 0) co_return;  // stdin closed remotely, or our input ended
    offset = *next;
  }
}

}  // namespace

int CmdExec(Context& ctx) {
  Result<ExecStartRequest> req = StartRequestFromArgs(ctx.args());
  if (!req.ok()) return ctx.out().UsageError(req.status().message());
  int stdin_fd = -1;
  if (std::optional<std::string> source = ctx.args().Get("stdin")) {
    stdin_fd = *source == "-" ? STDIN_FILENO : ::open(source->c_str(), O_RDONLY | O_CLOEXEC);
    if (stdin_fd < 0) return ctx.out().UsageError("cannot read --stdin " + *source);
    req->stdin_stream = true;
  }
  std::string id = ctx.args().Get("id").value_or(client::MintExecId("agentctl"));
  if (ctx.args().Has("tty")) {
    if (stdin_fd >= 0) return ctx.out().UsageError("--tty reads the terminal; drop --stdin");
    return RunExecOnTty(ctx, std::move(*req), std::move(id));
  }
  bool json = ctx.out().json();

  asio::io_context io;
  client::AsyncClient c(io.get_executor(), ctx.client_options());
  asio::signal_set signals(io, SIGINT, SIGTERM);
  int interrupts = 0;
  bool started = false;
  Result<ExecInfo> final;
  bool streamed = false;  // the stream saw the exit: a late kill has nothing to end
  // A kill asked for by an interrupt that the daemon refused or never got:
  // the remote process may still run, so agentctl says so and fails rather
  // than keep streaming as if it had ended.
  auto kill_failed = [&](const Status& s) {
    if (streamed) return;
    final = Status::Error(s.code(), "interrupted, but killing exec \"" + id +
                                        "\" failed (it may still run): " + s.message());
    signals.cancel();
    io.stop();
  };
  std::function<void()> arm;
  arm = [&] {
    signals.async_wait([&](const asio::error_code& ec, int) {
      if (ec) return;
      // First interrupt: TERM to the remote process group (KILL after the
      // grace); another: KILL now. The stream goes on and reports the end.
      KillRequest kill;
      kill.signal = ++interrupts == 1 ? "TERM" : "KILL";
      kill.grace_sec = 5;
      if (started) {
        c.AsyncKillExec(id, kill, [&](Result<ExecInfo> killed) {
          if (!killed.ok()) kill_failed(killed.status());
        });
      }
      arm();
    });
  };
  arm();

  std::string out_text, err_text;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        Result<ExecInfo> info = co_await c.StartExec(id, *req);
        if (!info.ok()) {
          final = info.status();
          signals.cancel();
          co_return;
        }
        started = true;
        if (interrupts > 0) {
          // Interrupted before the start answered: the kill it asked for.
          KillRequest kill;
          Result<ExecInfo> killed = co_await c.KillExec(id, kill);
          if (!killed.ok()) {
            kill_failed(killed.status());
            co_return;
          }
        }
        if (stdin_fd >= 0) asio::co_spawn(io, PumpStdin(c, id, stdin_fd), asio::detached);
        client::StreamCallbacks cb;
        cb.on_stdout = [&](uint64_t, std::string_view b) {
          json ? void(out_text.append(b)) : WriteAllTo(STDOUT_FILENO, b);
        };
        cb.on_stderr = [&](uint64_t, std::string_view b) {
          json ? void(err_text.append(b)) : WriteAllTo(STDERR_FILENO, b);
        };
        final = co_await c.Stream(id, {}, cb);
        streamed = true;
        if (final.ok()) {
          Result<ExecInfo> acked = co_await c.AckExec(id);
          if (acked.ok()) final->acked = true;
        }
        signals.cancel();
        io.stop();  // a stdin pump may still wait on our input
      },
      asio::detached);
  io.run();
  if (!final.ok()) return ctx.out().Fail(final.status());
  int status = RemoteExitStatus(*final);
  if (json) {
    json::Object result = EncodeExecInfoObject(*final);
    result.Set("stdout", out_text);
    result.Set("stderr", err_text);
    ctx.out().Succeed(result, "");
  }
  return status;
}

int CmdStart(Context& ctx) {
  Result<ExecStartRequest> req = StartRequestFromArgs(ctx.args());
  if (!req.ok()) return ctx.out().UsageError(req.status().message());
  if (std::optional<std::string> source = ctx.args().Get("stdin")) {
    // Detached: the whole input goes with the start request.
    int fd = *source == "-" ? STDIN_FILENO : ::open(source->c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ctx.out().UsageError("cannot read --stdin " + *source);
    std::string data;
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0) data.append(buf, static_cast<size_t>(n));
    req->stdin_data = std::move(data);
    req->stdin_was_b64 = true;
  }
  if (ctx.args().Has("stdin-stream")) req->stdin_stream = true;
  std::string id = ctx.args().Get("id").value_or(client::MintExecId("agentctl"));
  Result<ExecInfo> info = ctx.client().StartExec(id, *req);
  if (!info.ok()) return ctx.out().Fail(info.status());
  return ctx.out().Succeed(EncodeExecInfo(*info), info->id);
}

}  // namespace agentd::cli
