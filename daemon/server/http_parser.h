// RequestParser: the seam around llhttp (the only file that includes it).
//
// Feed() parses bytes and reports what they completed: the request head,
// body spans, the end of the message, or an error. Parsing pauses at the
// end of each message so pipelined requests are handled strictly one after
// another; Feed() then returns how many bytes it consumed and the rest
// belongs to the next request. Body spans point into the caller's buffer
// and stay valid as long as those bytes do. Not thread-safe; one per
// connection.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agentd/protocol/status.h"

namespace agentd {

struct RequestHead {
  std::string method;
  std::string target;  // raw request target, e.g. /v1/fs/file?path=%2Fx
  int http_major = 1;
  int http_minor = 1;
  // Header names are lower-cased; values as sent (leading/trailing space
  // trimmed by the parser).
  std::vector<std::pair<std::string, std::string>> headers;
  bool keep_alive = true;
  bool upgrade = false;
  bool chunked = false;
  std::optional<uint64_t> content_length;

  const std::string* Header(std::string_view lower_name) const;
};

class RequestParser {
 public:
  RequestParser(size_t max_header_bytes, size_t max_header_count);
  ~RequestParser();
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  struct Progress {
    size_t consumed = 0;
    bool head_complete = false;     // set once per message, on the Feed that completed it
    bool message_complete = false;  // the message ended; the rest is the next request
    std::vector<std::string_view> body;
  };

  // Parses `data`. On a malformed request returns the Status to answer with
  // (400 invalid_request, 431 headers_too_large, ...); the connection must
  // then be closed.
  Result<Progress> Feed(std::string_view data);

  // Readies the parser for the next message after message_complete.
  void NextMessage();

  // The head of the current message (valid after head_complete).
  RequestHead& head() { return head_; }
  // Inside a Content-Length body: the bytes of it still to be fed
  // (nullopt for a chunked body or outside a body).
  std::optional<uint64_t> BodyLeft() const;
  bool in_message() const { return in_message_; }

 private:
  struct Impl;
  friend struct Impl;
  std::unique_ptr<Impl> impl_;
  RequestHead head_;
  bool in_message_ = false;
};

}  // namespace agentd
