// RequestParser: agentctl mcp's seam around llhttp (request mode; the only
// cli file that includes llhttp). Feed() bytes until a whole request is
// parsed; heads and bodies are bounded so a client cannot make the server
// hold more than kMaxHeadBytes + max_body. Not thread-safe; one per
// connection.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agentd/protocol/status.h"

namespace agentd::cli::mcp {

struct HttpRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  bool keep_alive = true;
  const std::string* Header(std::string_view lower_name) const;
};

class RequestParser {
 public:
  explicit RequestParser(size_t max_body);
  ~RequestParser();
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  // Consumes bytes up to the end of one request; answers how many. After
  // complete() take the request with Take(), which readies the next one.
  Result<size_t> Feed(std::string_view data);
  bool complete() const;
  HttpRequest Take();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace agentd::cli::mcp
