#include "server/http_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "agentd/trees/posix_error.h"
#include "log/log.h"
#include "sys/awaitable.h"

namespace agentd {

HttpServer::HttpServer(asio::io_context& io, ServerLimits limits, RequestHandler handler)
    : io_(io), limits_(limits), handler_(std::move(handler)) {}

HttpServer::~HttpServer() {
  for (const std::string& path : unix_paths_) ::unlink(path.c_str());
}

Status HttpServer::Listen(const ListenAddress& address) {
  StreamProtocol::endpoint endpoint = address.Endpoint();
  auto acceptor = std::make_shared<Acceptor>(io_);
  asio::error_code ec;
  acceptor->open(endpoint.protocol(), ec);
  if (ec) return PosixError(ec.value(), "cannot open a socket for", address.text);
  // Close-on-exec is Asio's default for sockets it creates (SOCK_CLOEXEC).
  if (address.kind == ListenAddress::Kind::kTcp) {
    acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  }
  if (address.kind == ListenAddress::Kind::kUnix) {
    // A stale socket from an earlier run would make bind fail; remove only
    // a socket, never a regular file someone put there.
    struct stat st;
    if (::lstat(address.path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      ::unlink(address.path.c_str());
    }
  }
  acceptor->bind(endpoint, ec);
  if (ec) return PosixError(ec.value(), "cannot listen on", address.text);
  if (address.kind == ListenAddress::Kind::kUnix) {
    ::chmod(address.path.c_str(), 0600);  // before listen: nobody else connects
    unix_paths_.push_back(address.path);
  }
  acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return PosixError(ec.value(), "cannot listen on", address.text);
  Serve(std::move(acceptor), address);
  return Status::Ok();
}

std::vector<int> HttpServer::ListenerFds() const {
  std::vector<int> fds;
  for (const auto& a : acceptors_) fds.push_back(a->native_handle());
  return fds;
}

Status HttpServer::Adopt(const ListenAddress& address, int fd) {
  auto acceptor = std::make_shared<Acceptor>(io_);
  asio::error_code ec;
  acceptor->assign(address.Endpoint().protocol(), fd, ec);
  if (ec) return PosixError(ec.value(), "cannot take over the listener of", address.text);
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // inherited open for the one execve only
  if (address.kind == ListenAddress::Kind::kUnix) unix_paths_.push_back(address.path);
  Serve(std::move(acceptor), address);
  return Status::Ok();
}

void HttpServer::Serve(std::shared_ptr<Acceptor> acceptor, const ListenAddress& address) {
  acceptors_.push_back(acceptor);
  asio::co_spawn(io_, AcceptLoop(acceptor, address), asio::detached);
  json::Object fields;
  fields.Set("address", address.text);
  if (address.kind == ListenAddress::Kind::kTcp) {
    // The bound port, which differs from the one asked for when that was 0.
    asio::ip::tcp::endpoint bound;
    bound.resize(acceptor->local_endpoint().size());
    std::memcpy(bound.data(), acceptor->local_endpoint().data(), bound.size());
    fields.Set("port", bound.port());
  }
  Log(LogLevel::kInfo, "listening", std::move(fields));
}

asio::awaitable<void> HttpServer::AcceptLoop(std::shared_ptr<Acceptor> acceptor,
                                             ListenAddress address) {
  // Accepted by hand, never by an asynchronous accept: a connection Asio
  // accepted ahead sits uncounted until the coroutine resumes, and an
  // upgrade in place between the two would close it unanswered.
  asio::error_code ec;
  acceptor->non_blocking(true, ec);
  for (;;) {
    Socket socket = acceptor->accept(ec);
    if (ec == asio::error::connection_aborted) continue;  // the peer gave up first
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      auto [wait_ec] = co_await acceptor->async_wait(Acceptor::wait_read, kUseNothrow);
      if (wait_ec == asio::error::operation_aborted || !acceptor->is_open()) break;
      continue;
    }
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open()) break;
      // Out of descriptors or memory: log, back off briefly, keep serving.
      Log(LogLevel::kWarn, "accept failed",
          json::Object().Set("address", address.text).Set("error", ec.message()));
      asio::steady_timer pause(io_, std::chrono::milliseconds(50));
      co_await pause.async_wait(kUseNothrow);
      continue;
    }
    if (address.kind == ListenAddress::Kind::kTcp) {
      int one = 1;
      ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    if (connections_.size() >= limits_.max_connections) {
      Refuse(std::move(socket));
      continue;
    }
    uint64_t id = next_id_++;
    auto conn = std::make_shared<Connection>(std::move(socket), limits_, handler_, *this, id);
    connections_.emplace(id, conn);
    if (stopping_) conn->CloseAfterRequest();  // a probe while draining: one answer
    conn->Start();
    // What is ready meanwhile (a closed connection leaving its slot) goes
    // first, as between the completions of asynchronous accepts.
    co_await asio::post(io_, asio::use_awaitable);
  }
}

void HttpServer::Refuse(Socket socket) {
  Status refusal = Status::Error(ErrorCode::kTooManyConnections,
                                 "the daemon already serves " +
                                     std::to_string(connections_.size()) + " connections")
                       .With("limit", limits_.max_connections);
  std::string body = json::Serialize(ErrorBody(refusal));
  std::string reply =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
      "Connection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  // Best effort and never blocking: the refused peer gets what fits.
  ::send(socket.native_handle(), reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  asio::error_code ec;
  socket.close(ec);
  Log(LogLevel::kWarn, "connection refused",
      json::Object().Set("reason", "too_many_connections").Set("limit", limits_.max_connections));
}

void HttpServer::Remove(uint64_t id) {
  connections_.erase(id);
  // The last connection busy at shutdown gone ends the grace period early
  // (those accepted since answer one request each and do not hold it).
  if (draining_.erase(id) && draining_.empty() && grace_timer_) grace_timer_->cancel();
}

void HttpServer::CloseAllBut(const Connection* keep) {
  for (auto& [id, weak] : std::unordered_map(connections_)) {
    if (auto conn = weak.lock(); conn && conn.get() != keep) conn->Close();
  }
}

void HttpServer::StopListening() {
  for (auto& acceptor : acceptors_) {
    asio::error_code ec;
    acceptor->close(ec);
  }
}

void HttpServer::Shutdown(std::chrono::milliseconds grace, std::function<void()> done) {
  stopping_ = true;
  std::vector<std::shared_ptr<Connection>> busy;
  for (auto& [id, weak] : std::unordered_map(connections_)) {
    if (auto conn = weak.lock()) {
      if (conn->idle()) {
        conn->Close();
      } else {
        conn->CloseAfterRequest();
        busy.push_back(conn);
        draining_.insert(id);
      }
    }
  }
  grace_timer_ = std::make_unique<asio::steady_timer>(
      io_, busy.empty() ? std::chrono::milliseconds(0) : grace);
  grace_timer_->async_wait([busy, done = std::move(done)](const asio::error_code&) {
    for (auto& conn : busy) conn->Close();
    done();
  });
}

}  // namespace agentd
