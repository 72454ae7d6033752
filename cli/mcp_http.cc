#include "mcp_http.h"

#include <cstdio>
#include <deque>
#include <map>
#include <random>

#include "mcp_http_request.h"

namespace agentd::cli::mcp {
namespace {

using asio::ip::tcp;

constexpr size_t kMaxBodyBytes = 64u << 20;
constexpr size_t kMaxSessions = 64;
constexpr std::string_view kPath = "/mcp";

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

std::string NewSessionId() {
  std::random_device rd;
  std::string id;
  for (int i = 0; i < 4; ++i) {
    char part[9];
    std::snprintf(part, sizeof(part), "%08x", static_cast<unsigned>(rd()));
    id += part;
  }
  return id;
}

// Answers queued by the session for one POST, written by its connection.
class HttpPeer : public Peer {
 public:
  explicit HttpPeer(asio::any_io_executor ex) : wake_(ex) {
    wake_.expires_at(asio::steady_timer::time_point::max());
  }
  void Send(std::string message) override {
    queue_.push_back(std::move(message));
    wake_.cancel();
  }
  void Done() override {
    done_ = true;
    wake_.cancel();
  }
  // The next message, or nullopt once Done and drained.
  asio::awaitable<std::optional<std::string>> Next() {
    while (queue_.empty() && !done_) {
      wake_.expires_at(asio::steady_timer::time_point::max());
      asio::error_code ec;
      co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (queue_.empty()) co_return std::nullopt;
    std::string m = std::move(queue_.front());
    queue_.pop_front();
    co_return m;
  }

 private:
  asio::steady_timer wake_;
  std::deque<std::string> queue_;
  bool done_ = false;
};

std::string Reply(int status, std::string_view reason, std::string_view body,
                  std::string_view extra_headers = "", std::string_view type = "text/plain") {
  std::string r = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
  r += "Content-Type: " + std::string(type) + "\r\nContent-Length: " + std::to_string(body.size()) +
       "\r\n" + std::string(extra_headers) + "\r\n";
  return r + std::string(body);
}

bool HostIsLocal(std::string_view host) {
  return host == "localhost" || host == "127.0.0.1" || host == "[::1]";
}

// An Origin of this machine (any port), or one allowed by name.
bool OriginAllowed(const std::string& origin, const HttpOptions& o) {
  for (const std::string& a : o.allowed_origins) {
    if (origin == a) return true;
  }
  for (std::string_view scheme : {"http://", "https://"}) {
    if (!origin.starts_with(scheme)) continue;
    std::string_view host = std::string_view(origin).substr(scheme.size());
    size_t colon = host.rfind(':');
    if (colon != std::string_view::npos && host.find(']', colon) == std::string_view::npos)
      host = host.substr(0, colon);
    return HostIsLocal(host);
  }
  return false;
}

class Server {
 public:
  Server(asio::io_context& io, const client::ClientOptions& copts, McpOptions mopts,
         HttpOptions hopts)
      : client_(io.get_executor(), copts), mcp_(mopts), http_(std::move(hopts)) {}

  asio::awaitable<void> Serve(tcp::socket sock) {
    RequestParser parser(kMaxBodyBytes);
    std::string buf(64 * 1024, '\0');
    for (;;) {
      while (!parser.complete()) {
        asio::error_code ec;
        size_t n = co_await sock.async_read_some(asio::buffer(buf),
                                                 asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return;
        std::string_view data(buf.data(), n);
        while (!data.empty()) {
          Result<size_t> used = parser.Feed(data);
          if (!used.ok()) {
            int status = used.status().http_status();
            co_await Write(sock, Reply(status, "Bad Request", used.status().message() + "\n",
                                       "Connection: close\r\n"));
            co_return;
          }
          data.remove_prefix(*used);
          if (parser.complete() && !data.empty()) {
            // Pipelining is not for this endpoint: one request at a time.
            co_await Write(sock, Reply(400, "Bad Request", "one request at a time\n",
                                       "Connection: close\r\n"));
            co_return;
          }
        }
      }
      HttpRequest req = parser.Take();
      bool keep = co_await Respond(sock, req);
      if (!keep || !req.keep_alive) co_return;
    }
  }

 private:
  asio::awaitable<bool> Write(tcp::socket& sock, std::string bytes) {
    asio::error_code ec;
    co_await asio::async_write(sock, asio::buffer(bytes),
                               asio::redirect_error(asio::use_awaitable, ec));
    co_return !ec;
  }

  // Answers one request; false when the connection must close.
  asio::awaitable<bool> Respond(tcp::socket& sock, const HttpRequest& req) {
    std::string_view path = req.target;
    path = path.substr(0, path.find('?'));
    if (const std::string* origin = req.Header("origin"); origin && !OriginAllowed(*origin, http_))
      co_return co_await Write(sock,
                               Reply(403, "Forbidden", "origin not allowed: " + *origin + "\n"));
    if (!http_.token.empty()) {
      const std::string* auth = req.Header("authorization");
      std::string_view given = auth ? std::string_view(*auth) : std::string_view();
      if (!given.starts_with("Bearer ") || !ConstantTimeEquals(given.substr(7), http_.token)) {
        co_return co_await Write(sock, Reply(401, "Unauthorized", "a bearer token is required\n",
                                             "WWW-Authenticate: Bearer\r\n"));
      }
    }
    if (path != kPath)
      co_return co_await Write(sock, Reply(404, "Not Found", "the endpoint is /mcp\n"));
    if (req.method == "DELETE") co_return co_await Delete(sock, req);
    if (req.method != "POST") {
      co_return co_await Write(
          sock, Reply(405, "Method Not Allowed", "POST or DELETE\n", "Allow: POST, DELETE\r\n"));
    }
    co_return co_await Post(sock, req);
  }

  asio::awaitable<bool> Delete(tcp::socket& sock, const HttpRequest& req) {
    const std::string* id = req.Header("mcp-session-id");
    if (!id)
      co_return co_await Write(sock, Reply(400, "Bad Request", "Mcp-Session-Id is required\n"));
    if (!sessions_.erase(*id))
      co_return co_await Write(sock, Reply(404, "Not Found", "no such session\n"));
    co_return co_await Write(sock, Reply(200, "OK", ""));
  }

  asio::awaitable<bool> Post(tcp::socket& sock, const HttpRequest& req) {
    Message peek = ReadMessage(req.body);
    const std::string* id = req.Header("mcp-session-id");
    std::shared_ptr<McpSession> session;
    std::string session_header;
    if (peek.kind == Message::Kind::kRequest && peek.method == "initialize" && !id) {
      if (sessions_.size() >= kMaxSessions) {
        co_return co_await Write(
            sock, Reply(503, "Service Unavailable",
                        "at most " + std::to_string(kMaxSessions) + " sessions; DELETE one\n"));
      }
      std::string sid = NewSessionId();
      session = std::make_shared<McpSession>(client_, mcp_);
      sessions_[sid] = session;
      session_header = "Mcp-Session-Id: " + sid + "\r\n";
    } else if (peek.kind == Message::Kind::kInvalid) {
      // Parse errors need no session: answer them as JSON-RPC says.
      session = std::make_shared<McpSession>(client_, mcp_);
    } else if (!id) {
      co_return co_await Write(sock, Reply(400, "Bad Request", "Mcp-Session-Id is required\n"));
    } else {
      auto it = sessions_.find(*id);
      if (it == sessions_.end())
        co_return co_await Write(sock, Reply(404, "Not Found", "no such session\n"));
      session = it->second;
    }
    if (const std::string* v = req.Header("mcp-protocol-version"); v && session->initialized()) {
      if (*v != session->protocol_version()) {
        co_return co_await Write(sock,
                                 Reply(400, "Bad Request",
                                       "MCP-Protocol-Version " + *v + " is not this session's " +
                                           session->protocol_version() + "\n"));
      }
    }
    auto peer = std::make_shared<HttpPeer>(sock.get_executor());
    if (!session->Handle(req.body, peer))
      co_return co_await Write(sock, Reply(202, "Accepted", "", session_header));
    const std::string* accept = req.Header("accept");
    if (!accept || accept->find("text/event-stream") == std::string::npos) {
      std::string answer;
      while (std::optional<std::string> m = co_await peer->Next()) answer = std::move(*m);
      co_return co_await Write(sock, Reply(200, "OK", answer, session_header, "application/json"));
    }
    // An event stream, closed after the answer (its end is the connection's).
    std::string head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        "Cache-Control: no-cache\r\nConnection: close\r\n" +
        session_header + "\r\n";
    if (!co_await Write(sock, head)) co_return false;
    while (std::optional<std::string> m = co_await peer->Next()) {
      if (!co_await Write(sock, "event: message\ndata: " + *m + "\n\n")) co_return false;
    }
    co_return false;
  }

  client::AsyncClient client_;
  McpOptions mcp_;
  HttpOptions http_;
  std::map<std::string, std::shared_ptr<McpSession>> sessions_;
};

Result<tcp::endpoint> ListenEndpoint(const std::string& listen) {
  std::string host = "127.0.0.1", port = listen;
  if (size_t colon = listen.rfind(':'); colon != std::string::npos) {
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
    if (host.size() > 1 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
    if (host.empty()) host = "127.0.0.1";
  }
  asio::error_code ec;
  asio::ip::address addr = asio::ip::make_address(host, ec);
  char* end = nullptr;
  unsigned long p = std::strtoul(port.c_str(), &end, 10);
  if (ec || port.empty() || *end != '\0' || p > 65535)
    return Status::InvalidRequest("--listen needs HOST:PORT with a numeric address, got " + listen);
  return tcp::endpoint(addr, static_cast<uint16_t>(p));
}

asio::awaitable<void> Accept(tcp::acceptor& acceptor, Server& server) {
  for (;;) {
    asio::error_code ec;
    tcp::socket sock =
        co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (ec == asio::error::operation_aborted) co_return;
      continue;
    }
    asio::co_spawn(acceptor.get_executor(), server.Serve(std::move(sock)), asio::detached);
  }
}

}  // namespace

int ServeHttp(const client::ClientOptions& client_options, McpOptions options, HttpOptions http) {
  Result<tcp::endpoint> ep = ListenEndpoint(http.listen);
  if (!ep.ok()) {
    std::fprintf(stderr, "agentctl: %s\n", ep.status().message().c_str());
    return 2;
  }
  if (!ep->address().is_loopback() && http.token.empty()) {
    std::fprintf(stderr,
                 "agentctl: --listen off loopback needs --http-token-file: anyone who reaches "
                 "the port would drive the guest\n");
    return 2;
  }
  asio::io_context io;
  tcp::acceptor acceptor(io);
  asio::error_code ec;
  acceptor.open(ep->protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(*ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::fprintf(stderr, "agentctl: cannot listen on %s: %s\n", http.listen.c_str(),
                 ec.message().c_str());
    return 1;
  }
  tcp::endpoint bound = acceptor.local_endpoint();
  std::string host = bound.address().to_string();
  if (bound.address().is_v6()) host = "[" + host + "]";
  std::fprintf(stderr, "agentctl: listening on http://%s:%u/mcp\n", host.c_str(),
               static_cast<unsigned>(bound.port()));
  std::fflush(stderr);
  Server server(io, client_options, options, std::move(http));
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const asio::error_code&, int) { io.stop(); });
  asio::co_spawn(io, Accept(acceptor, server), asio::detached);
  io.run();
  return 0;
}

}  // namespace agentd::cli::mcp
