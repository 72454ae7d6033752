// Response: how a route handler answers.
//
// Either one complete answer (Send, SendJson, SendError) or a stream: Begin
// once, then Write / WriteFromFile any number of times, then End. Without a
// content length the body is sent chunked. Each write completes only when
// the bytes are in the kernel, so at most one write is in flight and a slow
// reader pauses its producer (bounded memory). A stream's write failures
// (the client went away, the write deadline passed) come back as a Status
// the producer must stop on ([[nodiscard]]: ignoring one fails the build).
//
// A complete answer and End are the handler's last word, so they return
// nothing: a handler has nothing left to do either way. A send that fails
// means the peer is gone, which the connection sees itself (it closes
// rather than read another request, and finished() stays false for an
// answer that never went out), and a client that lost an answer asks again
// (every route is retry-safe: idempotent exec ids, replayed bootstrap and
// reset). Used only on the connection's strand.
#pragma once

#include <asio/awaitable.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

namespace agentd {

class Connection;
using Headers = std::vector<std::pair<std::string, std::string>>;

class Response {
 public:
  Response(Connection& conn, bool head_only) : conn_(conn), head_only_(head_only) {}

  asio::awaitable<void> Send(int status, std::string_view content_type, std::string_view body,
                             const Headers& extra = {});
  asio::awaitable<void> SendJson(int status, const json::Value& body, const Headers& extra = {});
  // The error shape of docs/PROTOCOL.md, with the status the code maps to.
  asio::awaitable<void> SendError(const Status& error, const Headers& extra = {});

  asio::awaitable<Status> Begin(int status, std::string_view content_type,
                                std::optional<uint64_t> content_length, const Headers& extra = {});
  asio::awaitable<Status> Write(std::string_view bytes);
  // Sends `length` bytes of `fd` from `offset` with sendfile (no copy
  // through user space). In a chunked stream the chunk's closing CRLF is
  // owed until the next write, End or Flush.
  asio::awaitable<Status> WriteFromFile(int fd, uint64_t offset, uint64_t length);
  // The same from the next `length` bytes of a pipe that holds them
  // (splice).
  asio::awaitable<Status> WriteFromPipe(int pipe_fd, uint64_t length);
  // Sends what a chunked stream owes (the last chunk's CRLF), so that a
  // client that waits for whole chunks has them: before a stream waits.
  asio::awaitable<Status> Flush();
  bool flush_owed() const { return crlf_owed_; }
  // Ends a stream (its last chunk).
  asio::awaitable<void> End();
  // Answers "101 Switching Protocols" to `protocol` (Upgrade: protocol).
  // The response is then complete and the connection is the route's to
  // relay (Connection::TakeOver); it closes when the route returns.
  asio::awaitable<Status> SwitchProtocols(std::string_view protocol);

  // Asks for the connection to close after this response.
  void CloseAfter() { close_after_ = true; }
  // A probe's answer (a 200 health): its request line is logged at debug,
  // not info, when it succeeds. Probes poll every few seconds per guest,
  // and a line each buried the log (and cost a write per request).
  void MarkRoutine() { routine_ = true; }
  bool routine() const { return routine_; }
  bool close_after() const { return close_after_; }
  bool started() const { return started_; }
  // A stream begun without a length: its body goes out in chunks (not for HEAD).
  bool chunked() const { return chunked_; }
  bool finished() const { return finished_; }
  int status() const { return status_; }
  uint64_t body_bytes() const { return body_bytes_; }

 private:
  std::string Head(int status, std::string_view content_type, std::optional<uint64_t> length,
                   const Headers& extra);

  // Fills the back of `line` with "[CRLF owed]HEX CRLF"; returns its start.
  char* ChunkLine(char (&line)[24], uint64_t size);
  // The framing ahead of a chunk of `length` bytes that is sent next; its
  // closing CRLF is owed from then on.
  std::string_view OpenChunk(char (&line)[24], uint64_t length);

  Connection& conn_;
  bool head_only_;
  bool started_ = false;
  bool finished_ = false;
  bool chunked_ = false;
  bool close_after_ = false;
  bool routine_ = false;
  bool crlf_owed_ = false;
  int status_ = 0;
  uint64_t body_bytes_ = 0;
};

// The reason phrase of an HTTP status ("Not Found").
std::string_view ReasonPhrase(int status);

}  // namespace agentd
