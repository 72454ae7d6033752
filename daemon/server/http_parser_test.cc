#include <catch2/catch.hpp>

#include "server/http_parser.h"

using namespace agentd;

namespace {

struct Parsed {
  std::vector<RequestHead> heads;
  std::vector<std::string> bodies;
};

// Feeds `wire` in pieces of `step` bytes, the way a socket might deliver
// it, resuming after each message exactly as the connection does.
Parsed FeedInSteps(const std::string& wire, size_t step) {
  RequestParser p(16 * 1024, 100);
  Parsed out;
  std::string pending;
  std::string body;
  size_t pos = 0;
  while (pos < wire.size() || !pending.empty()) {
    if (pos < wire.size()) {
      pending += wire.substr(pos, step);
      pos += step;
    }
    size_t used = 0;
    bool progressed = true;
    while (used < pending.size() && progressed) {
      auto r = p.Feed(std::string_view(pending).substr(used));
      REQUIRE(r.ok());
      progressed = r->consumed > 0 || r->message_complete;
      used += r->consumed;
      for (auto span : r->body) body.append(span);
      if (r->message_complete) {
        out.heads.push_back(p.head());
        out.bodies.push_back(body);
        body.clear();
        p.NextMessage();
      }
    }
    pending.erase(0, used);
    if (pos >= wire.size() && used == 0) break;
  }
  return out;
}

}  // namespace

TEST_CASE("parser yields pipelined requests in order at any split", "[http]") {
  std::string wire =
      "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
      "PUT /v1/fs/file?path=/a HTTP/1.1\r\nContent-Length: 5\r\nX-Mixed-Case: V\r\n\r\nhello"
      "POST /v1/run HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  for (size_t step : {size_t{1}, size_t{2}, size_t{7}, wire.size()}) {
    INFO("step " << step);
    Parsed p = FeedInSteps(wire, step);
    REQUIRE(p.heads.size() == 3);
    CHECK(p.heads[0].method == "GET");
    CHECK(p.heads[0].target == "/v1/health");
    CHECK(p.heads[1].method == "PUT");
    CHECK(p.heads[1].content_length == 5u);
    CHECK(*p.heads[1].Header("x-mixed-case") == "V");
    CHECK(p.bodies[1] == "hello");
    CHECK(p.heads[2].chunked);
    CHECK(p.bodies[2] == "abcde");
  }
}

TEST_CASE("parser refuses oversized heads with headers_too_large", "[http]") {
  RequestParser p(1024, 100);
  std::string wire = "GET / HTTP/1.1\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n";
  auto r = p.Feed(wire);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kHeadersTooLarge);
  CHECK(r.status().details().Find("limit")->as_int() == 1024);
}

TEST_CASE("parser refuses too many header lines", "[http]") {
  RequestParser p(64 * 1024, 10);
  std::string wire = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 20; ++i) wire += "X-" + std::to_string(i) + ": v\r\n";
  wire += "\r\n";
  auto r = p.Feed(wire);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kHeadersTooLarge);
}

TEST_CASE("parser refuses malformed requests with invalid_request", "[http]") {
  for (const char* bad : {"GET\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "G@T / HTTP/1.1\r\n\r\n",
                          "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                          "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
    RequestParser p(16 * 1024, 100);
    auto r = p.Feed(bad);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kInvalidRequest);
  }
}

TEST_CASE("parser reports keep-alive and upgrade", "[http]") {
  RequestParser p(16 * 1024, 100);
  auto r = p.Feed("GET / HTTP/1.0\r\n\r\n");
  REQUIRE(r.ok());
  CHECK_FALSE(p.head().keep_alive);
  RequestParser q(16 * 1024, 100);
  auto u =
      q.Feed("GET /v1/ports/80/connect HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n");
  REQUIRE(u.ok());
  CHECK(q.head().upgrade);
}
