// Checks of the front door: health, bootstrap, auth, HTTP hygiene
// (docs/PROTOCOL.md, "Transport", "Errors", "Limits", "Auth and bootstrap",
// "Health").
#include "checks.h"

namespace agentd::conformance {
namespace {

int StatusOf(const std::string& raw) {
  // "HTTP/1.1 431 ..." -> 431
  if (raw.size() < 12 || raw.compare(0, 5, "HTTP/") != 0) return 0;
  return std::atoi(raw.c_str() + 9);
}

std::string Authorized(CheckContext& ctx) {
  return "Authorization: Bearer " + ctx.options().token + "\r\n";
}

void HealthHasEveryField(CheckContext& ctx) {
  HealthResponse h = ExpectOk(ctx.client().Health(), "GET /v1/health");
  Expect(h.status == "ok", "status is \"" + h.status + "\", not \"ok\"");
  Expect(h.protocol == 1, "protocol is " + std::to_string(h.protocol));
  Expect(h.bootstrapped, "a daemon reached with a token reports bootstrapped");
  Expect(!h.version.empty(), "version is empty");
  Expect(h.uptime_ms >= 0 && h.execs >= 0, "uptime_ms and execs are non-negative");
}

void HealthNeedsNoToken(CheckContext& ctx) {
  client::ClientOptions o = ctx.options();
  o.token.clear();
  client::Client anonymous(o);
  ExpectOk(anonymous.Health(), "GET /v1/health without a token");
}

void BootstrapReplaysWithSameToken(CheckContext& ctx) {
  BootstrapResponse r = ExpectOk(ctx.client().Bootstrap({ctx.options().token, {{"IGNORED", "1"}}}),
                                 "bootstrap with the same token");
  Expect(r.replayed, "a repeat with the same token answers replayed: true");
}

void BootstrapRefusesAnotherToken(CheckContext& ctx) {
  auto other = ctx.NewClient();
  ExpectError(other->Bootstrap({ctx.options().token + "-other", {}}),
              ErrorCode::kAlreadyBootstrapped, "bootstrap with another token");
  // The original token still works.
  ExpectOk(ctx.client().Health(), "health after the refused bootstrap");
}

void BootstrapBudgetIs4096RawBytes(CheckContext& ctx) {
  std::string prefix = "{\"token\":\"" + ctx.options().token + "\",\"env\":{\"K\":\"";
  std::string suffix = "\"}}";
  std::string body = prefix + std::string(4097 - prefix.size() - suffix.size(), 'x') + suffix;
  std::string raw = ctx.RawExchange(
      "POST /v1/bootstrap HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
      "Content-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body,
      std::chrono::seconds(5));
  Expect(StatusOf(raw) == 413,
         "a 4097-byte bootstrap body answers 413, got " + std::to_string(StatusOf(raw)));
  Expect(raw.find("\"payload_too_large\"") != std::string::npos, "code payload_too_large");
  Expect(raw.find("\"env_bytes\"") != std::string::npos, "the refusal names the env's share");
}

void MissingTokenIsUnauthorized(CheckContext& ctx) {
  std::string raw = ctx.RawExchange(
      "GET /v1/execs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", std::chrono::seconds(5));
  Expect(StatusOf(raw) == 401, "no token answers 401, got " + std::to_string(StatusOf(raw)));
  Expect(raw.find("\"unauthorized\"") != std::string::npos, "code unauthorized");
}

void WrongTokenIsUnauthorized(CheckContext& ctx) {
  std::string raw =
      ctx.RawExchange("GET /v1/execs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong-" +
                          ctx.options().token + "\r\nConnection: close\r\n\r\n",
                      std::chrono::seconds(5));
  Expect(StatusOf(raw) == 401, "a wrong token answers 401, got " + std::to_string(StatusOf(raw)));
  Expect(raw.find("\"unauthorized\"") != std::string::npos, "code unauthorized");
}

void UnknownRouteIs404Json(CheckContext& ctx) {
  std::string raw = ctx.RawExchange("GET /v1/no-such-route HTTP/1.1\r\nHost: x\r\n" +
                                        Authorized(ctx) + "Connection: close\r\n\r\n",
                                    std::chrono::seconds(5));
  Expect(StatusOf(raw) == 404, "an unknown route answers 404");
  Expect(raw.find("{\"error\":{\"code\":") != std::string::npos, "with the JSON error shape");
}

void WrongMethodIs405WithAllow(CheckContext& ctx) {
  std::string raw = ctx.RawExchange(
      "DELETE /v1/health HTTP/1.1\r\nHost: x\r\n" + Authorized(ctx) + "Connection: close\r\n\r\n",
      std::chrono::seconds(5));
  Expect(StatusOf(raw) == 405, "a wrong method answers 405");
  Expect(raw.find("\r\nAllow: ") != std::string::npos, "with an Allow header");
}

void OversizedHeaderIs431(CheckContext& ctx) {
  std::string raw = ctx.RawExchange(
      "GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(70000, 'a') + "\r\n\r\n",
      std::chrono::seconds(5));
  Expect(StatusOf(raw) == 431, "a 70 KB header answers 431, got " + std::to_string(StatusOf(raw)));
}

void MalformedRequestIs400(CheckContext& ctx) {
  std::string raw = ctx.RawExchange("G@T / HTTP/1.1\r\n\r\n", std::chrono::seconds(5));
  Expect(StatusOf(raw) == 400, "a malformed request line answers 400");
}

void PipelinedRequestsAnswerInOrder(CheckContext& ctx) {
  std::string req =
      "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /v1/no-such-route HTTP/1.1\r\nHost: x\r\n" +
      Authorized(ctx) +
      "\r\n"
      "DELETE /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  std::string raw = ctx.RawExchange(req, std::chrono::seconds(5));
  size_t a = raw.find("HTTP/1.1 200");
  size_t b = raw.find("HTTP/1.1 404");
  size_t c = raw.find("HTTP/1.1 405");
  Expect(
      a != std::string::npos && b != std::string::npos && c != std::string::npos && a < b && b < c,
      "three pipelined requests are answered 200, 404, 405 in order");
}

void KeepAliveServesManyRequests(CheckContext& ctx) {
  std::string req;
  for (int i = 0; i < 100; ++i) req += "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n";
  req += "GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  std::string raw = ctx.RawExchange(req, std::chrono::seconds(10));
  size_t count = 0;
  for (size_t p = raw.find("HTTP/1.1 200"); p != std::string::npos;
       p = raw.find("HTTP/1.1 200", p + 1)) {
    ++count;
  }
  Expect(count == 101, "101 requests on one connection got " + std::to_string(count) + " answers");
}

}  // namespace

void AddFrontDoorChecks(std::vector<Check>& checks) {
  checks.push_back({"health", "health answers every contract field", HealthHasEveryField});
  checks.push_back({"health", "health needs no token", HealthNeedsNoToken});
  checks.push_back(
      {"bootstrap", "a repeat with the same token is a replay", BootstrapReplaysWithSameToken});
  checks.push_back({"bootstrap", "another token is refused with already_bootstrapped",
                    BootstrapRefusesAnotherToken});
  checks.push_back({"bootstrap",
                    "the budget is 4096 raw bytes and the refusal names the env's share",
                    BootstrapBudgetIs4096RawBytes});
  checks.push_back({"auth", "a missing token is 401 unauthorized", MissingTokenIsUnauthorized});
  checks.push_back({"auth", "a wrong token is 401 unauthorized", WrongTokenIsUnauthorized});
  checks.push_back(
      {"http", "an unknown route is 404 with the JSON error shape", UnknownRouteIs404Json});
  checks.push_back(
      {"http", "a wrong method is 405 with an Allow header", WrongMethodIs405WithAllow});
  checks.push_back({"http", "an oversized header is 431", OversizedHeaderIs431});
  checks.push_back({"http", "a malformed request line is 400", MalformedRequestIs400});
  checks.push_back(
      {"http", "pipelined requests are answered in order", PipelinedRequestsAnswerInOrder});
  checks.push_back(
      {"http", "one keep-alive connection serves a hundred requests", KeepAliveServesManyRequests});
}

}  // namespace agentd::conformance
