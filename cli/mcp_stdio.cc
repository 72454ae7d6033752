#include "mcp_stdio.h"

#include <unistd.h>

#include <cerrno>
#include <thread>

#include "exec_format.h"

namespace agentd::cli::mcp {
namespace {

// A bigger line is refused as a parse error (and skipped to its newline):
// the bound on what a client can make this process hold.
constexpr size_t kMaxLineBytes = 64u << 20;

class StdoutPeer : public Peer {
 public:
  // Called on the session's executor only: lines never interleave.
  void Send(std::string message) override {
    message += '\n';
    WriteAllTo(STDOUT_FILENO, message);
  }
};

// Reads stdin on its own thread (a blocking read works for pipes, files
// and terminals alike) and posts each line to the session's executor.
void ReadLines(asio::io_context& io, const std::function<void(std::string)>& on_line) {
  std::string line;
  bool skipping = false;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::string_view chunk(buf, static_cast<size_t>(n));
    while (!chunk.empty()) {
      size_t nl = chunk.find('\n');
      std::string_view part = chunk.substr(0, nl);
      if (!skipping) line.append(part);
      if (line.size() > kMaxLineBytes) {
        line.clear();
        skipping = true;
        asio::post(io, [on_line] { on_line(std::string()); });
      }
      if (nl == std::string_view::npos) break;
      chunk.remove_prefix(nl + 1);
      if (!skipping) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) asio::post(io, [on_line, l = std::move(line)] { on_line(l); });
      }
      line.clear();
      skipping = false;
    }
  }
  asio::post(io, [&io] { io.stop(); });
}

}  // namespace

int ServeStdio(const client::ClientOptions& client_options, McpOptions options) {
  asio::io_context io;
  client::AsyncClient client(io.get_executor(), client_options);
  auto session = std::make_shared<McpSession>(client, options);
  auto peer = std::make_shared<StdoutPeer>();
  auto on_line = [session, peer](std::string line) {
    if (line.empty()) {
      peer->Send(ErrorMessage(
          nullptr, kParseError,
          "parse error: a message longer than " + std::to_string(kMaxLineBytes) + " bytes"));
      return;
    }
    session->Handle(line, peer);
  };
  auto guard = asio::make_work_guard(io);
  std::thread reader([&io, on_line] { ReadLines(io, on_line); });
  io.run();
  reader.join();
  return 0;
}

}  // namespace agentd::cli::mcp
