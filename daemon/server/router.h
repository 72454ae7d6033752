// Router: maps (method, path) to a handler.
//
// Patterns are literal segments and {name} parameters
// ("/v1/execs/{id}/stdout"). A path no pattern matches is 404
// route_not_found; a path that matches with another method is 405
// method_not_allowed with an Allow header. HEAD is served by the GET route
// (the response sends no body). Before anything but a public route (one
// added with requires_auth = false) the authorizer decides, also for paths
// no route matches; its refusal is answered as is. Immutable after
// set-up; used only on the io thread.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/connection.h"
#include "server/request_hold.h"

namespace agentd {

class Router {
 public:
  using Authorizer = std::function<Status(const Request&)>;
  // Decides before everything else, for every path (public ones too): a
  // refusal is answered as is (a quarantined guest, docs/PROTOCOL.md "Reuse";
  // a draining daemon, "Health"). Gates are asked in the order added.
  using Gate = std::function<Status(const Request&)>;

  void Add(std::string method, std::string pattern, RequestHandler handler,
           bool requires_auth = true);
  void SetAuthorizer(Authorizer authorizer) { authorizer_ = std::move(authorizer); }
  void AddGate(Gate gate) { gates_.push_back(std::move(gate)); }
  // Asked once a request is authorized and matched, right before its
  // handler: may hold it while an upgrade in place is pending.
  void SetHold(RequestHold* hold) { hold_ = hold; }

  // The RequestHandler the server calls for every request.
  asio::awaitable<void> Dispatch(Request& req, Response& res) const;

  // Every registered (method, pattern), for docs checks and manifests.
  std::vector<std::pair<std::string, std::string>> Routes() const;

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    RequestHandler handler;
    bool requires_auth;
  };
  static bool Match(const Route& route, const std::vector<std::string_view>& path,
                    std::vector<std::pair<std::string, std::string>>* params);

  std::vector<Route> routes_;
  Authorizer authorizer_;
  std::vector<Gate> gates_;
  RequestHold* hold_ = nullptr;
};

}  // namespace agentd
