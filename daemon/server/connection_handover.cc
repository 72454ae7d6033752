// An upgrade in place carries every connection that waits for a request
// (docs/OPERATIONS.md, "Upgrading"): a fresh one not yet read, an idle
// keep-alive one, or one whose request head has partly arrived. Its
// socket and the head bytes read so far go to the next binary, which
// parses them again and serves the connection on; the client never sees
// the execve. A connection inside a request is not carried (it closes).
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "agentd/protocol/base64.h"
#include "agentd/trees/posix_error.h"
#include "server/http_server.h"

namespace agentd {

void HttpServer::SetHandingOver(bool on) {
  handing_over_ = on;
  if (!on) return;
  for (const auto& [id, weak] : connections_) {
    if (std::shared_ptr<Connection> conn = weak.lock()) conn->StopFirstRead();
  }
}

bool HttpServer::FirstReadsSettled() const {
  for (const auto& [id, weak] : connections_) {
    std::shared_ptr<Connection> conn = weak.lock();
    if (conn && conn->first_read_in_flight()) return false;
  }
  return true;
}

json::Array HttpServer::HandOverWaiting(std::vector<int>& fds) const {
  json::Array out;
  for (const auto& [id, weak] : connections_) {
    std::shared_ptr<Connection> conn = weak.lock();
    std::optional<std::string_view> head = conn ? conn->WaitingHead() : std::nullopt;
    if (!head) continue;
    int fd = conn->socket().native_handle();
    fds.push_back(fd);
    json::Array listed;
    listed.emplace_back(fd);
    out.push_back(json::Object()
                      .Set("kind", "connection")
                      .Set("fds", std::move(listed))
                      .Set("fd", fd)
                      .Set("head_b64", Base64Encode(*head)));
  }
  return out;
}

Status HttpServer::AdoptConnection(const json::Value& entry) {
  const json::Value* fd_value = entry.Find("fd");
  const json::Value* head_b64 = entry.Find("head_b64");
  if (!fd_value || !fd_value->is_int() || !head_b64 || !head_b64->is_string()) {
    return Status::InvalidRequest("a handed-over connection is malformed");
  }
  std::optional<std::string> head = Base64Decode(head_b64->as_string());
  if (!head || head->size() > Connection::kReadBufferBytes) {
    return Status::InvalidRequest("a handed-over connection's head is malformed");
  }
  // The same flags as the binary that accepted it: the bound holds unless
  // the connections were counted differently there.
  if (connections_.size() >= limits_.max_connections) {
    return Status::Error(ErrorCode::kTooManyConnections, "no room for a handed-over connection")
        .With("limit", limits_.max_connections);
  }
  int fd = static_cast<int>(fd_value->as_int());
  std::optional<StreamProtocol> protocol = InheritedSocketProtocol(fd);
  if (!protocol) return PosixError(errno, "a handed-over connection's descriptor is not a socket");
  Socket socket(io_);
  asio::error_code ec;
  socket.assign(*protocol, fd, ec);
  if (ec) return PosixError(ec.value(), "cannot take over a connection");
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // inherited open for the one execve only
  uint64_t id = next_id_++;
  auto conn = std::make_shared<Connection>(std::move(socket), limits_, handler_, *this, id);
  conn->Preload(*head);
  connections_.emplace(id, conn);
  conn->Start();
  return Status::Ok();
}

}  // namespace agentd
