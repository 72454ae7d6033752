// ResponseParser: the client's seam around llhttp (response mode; the only
// client file that includes llhttp). Feed() reports the head, body spans
// (pointing into the fed bytes) and the end of the message; Finish() tells
// it the peer closed, which ends a body delimited by connection close.
// Not thread-safe; one per connection.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agentd/protocol/status.h"

namespace agentd::client {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct ResponseHead {
  int status = 0;
  Headers headers;  // names lower-cased
  bool keep_alive = true;
  std::optional<uint64_t> content_length;
  const std::string* Header(std::string_view lower_name) const;
};

class ResponseParser {
 public:
  ResponseParser();
  ~ResponseParser();
  ResponseParser(const ResponseParser&) = delete;
  ResponseParser& operator=(const ResponseParser&) = delete;

  struct Progress {
    size_t consumed = 0;
    bool head_complete = false;
    bool message_complete = false;
    bool upgraded = false;  // 101: the rest of the bytes are not HTTP
    std::vector<std::string_view> body;
  };

  // Starts a new response; `head_request` means the response has no body.
  void Reset(bool head_request);
  Result<Progress> Feed(std::string_view data);
  // The peer closed: completes a close-delimited body, else an error.
  Result<Progress> Finish();

  const ResponseHead& head() const { return head_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ResponseHead head_;
};

}  // namespace agentd::client
