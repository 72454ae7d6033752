#include "server/response.h"

#include <charconv>
#include <cstring>

#include "log/log.h"
#include "server/connection.h"

namespace agentd {

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 206:
      return "Partial Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 416:
      return "Range Not Satisfiable";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 507:
      return "Insufficient Storage";
    default:
      return "Unknown";
  }
}

std::string Response::Head(int status, std::string_view content_type,
                           std::optional<uint64_t> length, const Headers& extra) {
  std::string head = "HTTP/1.1 ";
  head += std::to_string(status);
  head += ' ';
  head += ReasonPhrase(status);
  head += "\r\nServer: agentd\r\n";
  if (!content_type.empty()) {
    head += "Content-Type: ";
    head += content_type;
    head += "\r\n";
  }
  if (length) {
    head += "Content-Length: ";
    head += std::to_string(*length);
    head += "\r\n";
  } else if (status != 101) {
    head += "Transfer-Encoding: chunked\r\n";
  }
  for (const auto& [name, value] : extra) {
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  if (close_after_) head += "Connection: close\r\n";
  head += "\r\n";
  return head;
}

asio::awaitable<Status> Response::Begin(int status, std::string_view content_type,
                                        std::optional<uint64_t> content_length,
                                        const Headers& extra) {
  if (started_) co_return Status::Internal("response already started");
  started_ = true;
  status_ = status;
  chunked_ = !content_length && status != 101 && !head_only_;
  std::string head = Head(status, content_type, content_length, extra);
  co_return co_await conn_.WriteAll(asio::buffer(head));
}

asio::awaitable<Status> Response::Write(std::string_view bytes) {
  if (bytes.empty() || head_only_) co_return Status::Ok();
  body_bytes_ += bytes.size();
  if (!chunked_) co_return co_await conn_.WriteAll(asio::buffer(bytes));
  char size_line[24];
  char* begin = ChunkLine(size_line, bytes.size());
  std::vector<asio::const_buffer> buffers{
      asio::buffer(begin, static_cast<size_t>(size_line + sizeof(size_line) - begin)),
      asio::buffer(bytes), asio::buffer("\r\n", 2)};
  co_return co_await conn_.WriteAll(std::move(buffers));
}

char* Response::ChunkLine(char (&line)[24], uint64_t size) {
  // Written from the back: the owed end of the previous chunk goes first.
  char hex[16];
  auto [hex_end, ec] = std::to_chars(hex, hex + sizeof(hex), size, 16);
  size_t hex_len = static_cast<size_t>(hex_end - hex);
  char* begin = line + sizeof(line) - 2 - hex_len;
  std::memcpy(begin, hex, hex_len);
  std::memcpy(line + sizeof(line) - 2, "\r\n", 2);
  if (crlf_owed_) {
    begin -= 2;
    std::memcpy(begin, "\r\n", 2);
    crlf_owed_ = false;
  }
  return begin;
}

asio::awaitable<Status> Response::WriteFromFile(int fd, uint64_t offset, uint64_t length) {
  if (length == 0 || head_only_) co_return Status::Ok();
  body_bytes_ += length;
  if (!chunked_) co_return co_await conn_.SendFile({}, fd, offset, length);
  char size_line[24];
  AGENTD_CO_RETURN_IF_ERROR(
      co_await conn_.SendFile(OpenChunk(size_line, length), fd, offset, length));
  co_return Status::Ok();
}

asio::awaitable<Status> Response::WriteFromPipe(int pipe_fd, uint64_t length) {
  if (length == 0 || head_only_) co_return Status::Ok();
  body_bytes_ += length;
  if (!chunked_) co_return co_await conn_.SendPipe({}, pipe_fd, length);
  char size_line[24];
  AGENTD_CO_RETURN_IF_ERROR(co_await conn_.SendPipe(OpenChunk(size_line, length), pipe_fd, length));
  co_return Status::Ok();
}

std::string_view Response::OpenChunk(char (&line)[24], uint64_t length) {
  char* begin = ChunkLine(line, length);
  // The chunk's closing CRLF goes out with whatever comes next (the next
  // chunk's size line, the last chunk, or Flush before a wait), not as a
  // two-byte segment of its own.
  crlf_owed_ = true;
  return {begin, static_cast<size_t>(line + sizeof(line) - begin)};
}

asio::awaitable<Status> Response::Flush() {
  if (!crlf_owed_) co_return Status::Ok();
  crlf_owed_ = false;
  co_return co_await conn_.WriteAll(asio::buffer("\r\n", 2));
}

asio::awaitable<void> Response::End() {
  if (finished_) co_return;
  Status ended = Status::Ok();
  if (chunked_) {
    std::string_view last = crlf_owed_ ? "\r\n0\r\n\r\n" : "0\r\n\r\n";
    crlf_owed_ = false;
    ended = co_await conn_.WriteAll(asio::buffer(last));
  }
  finished_ = ended.ok();
}

asio::awaitable<Status> Response::SwitchProtocols(std::string_view protocol) {
  if (started_) co_return Status::Internal("response already started");
  started_ = true;
  finished_ = true;
  close_after_ = true;
  status_ = 101;
  std::string head = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ";
  head += protocol;
  head += "\r\n\r\n";
  co_return co_await conn_.WriteAll(asio::buffer(head));
}

asio::awaitable<void> Response::Send(int status, std::string_view content_type,
                                     std::string_view body, const Headers& extra) {
  if (started_) {
    // A handler bug, not the client's doing: the first answer stands.
    Log(LogLevel::kError, "a second answer to one request was dropped",
        json::Object().Set("status", status).Set("first_status", status_));
    co_return;
  }
  started_ = true;
  status_ = status;
  std::string head = Head(status, content_type, body.size(), extra);
  std::vector<asio::const_buffer> buffers{asio::buffer(head)};
  if (!head_only_) {
    body_bytes_ = body.size();
    buffers.push_back(asio::buffer(body));
  }
  Status sent = co_await conn_.WriteAll(std::move(buffers));
  finished_ = sent.ok();
}

asio::awaitable<void> Response::SendJson(int status, const json::Value& body,
                                         const Headers& extra) {
  std::string text = json::Serialize(body);
  text += '\n';
  co_await Send(status, "application/json", text, extra);
}

asio::awaitable<void> Response::SendError(const Status& error, const Headers& extra) {
  Headers headers = extra;
  if (error.http_status() == 401) headers.emplace_back("WWW-Authenticate", "Bearer");
  int status = error.http_status() ? error.http_status() : 500;
  co_await SendJson(status, ErrorBody(error), headers);
}

}  // namespace agentd
