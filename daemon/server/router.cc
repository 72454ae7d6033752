#include "server/router.h"

namespace agentd {
namespace {

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    size_t end = path.find('/', i);
    if (end == std::string_view::npos) end = path.size();
    out.push_back(path.substr(i, end - i));
    i = end;
  }
  return out;
}

bool IsParam(std::string_view segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

}  // namespace

void Router::Add(std::string method, std::string pattern, RequestHandler handler,
                 bool requires_auth) {
  Route route{std::move(method), pattern, {}, std::move(handler), requires_auth};
  for (std::string_view s : SplitPath(pattern)) route.segments.emplace_back(s);
  routes_.push_back(std::move(route));
}

bool Router::Match(const Route& route, const std::vector<std::string_view>& path,
                   std::vector<std::pair<std::string, std::string>>* params) {
  if (route.segments.size() != path.size()) return false;
  params->clear();
  for (size_t i = 0; i < path.size(); ++i) {
    const std::string& seg = route.segments[i];
    if (IsParam(seg)) {
      params->emplace_back(seg.substr(1, seg.size() - 2), std::string(path[i]));
    } else if (seg != path[i]) {
      return false;
    }
  }
  return true;
}

asio::awaitable<void> Router::Dispatch(Request& req, Response& res) const {
  for (const Gate& gate : gates_) {
    if (Status refused = gate(req); !refused.ok()) {
      co_await res.SendError(refused);
      co_return;
    }
  }
  std::vector<std::string_view> path = SplitPath(req.path());
  std::string_view method = req.method() == "HEAD" ? "GET" : std::string_view(req.method());
  std::vector<std::pair<std::string, std::string>> params;
  std::string allowed;
  const Route* found = nullptr;
  bool is_public = false;  // some route of this path answers without a token
  for (const Route& route : routes_) {
    if (!Match(route, path, &params)) continue;
    is_public = is_public || !route.requires_auth;
    if (route.method == method) {
      found = &route;
      break;
    }
    if (allowed.find(route.method) == std::string::npos) {
      if (!allowed.empty()) allowed += ", ";
      allowed += route.method;
    }
  }
  // Only the public paths answer without a token: an unknown path is
  // refused like any other unauthenticated request, so routes cannot be
  // probed without the token.
  if (!is_public && authorizer_) {
    Status auth = authorizer_(req);
    if (!auth.ok()) {
      co_await res.SendError(auth);
      co_return;
    }
  }
  if (!found) {
    if (!allowed.empty()) {
      Headers allow{{"Allow", allowed}};
      co_await res.SendError(
          Status::Error(ErrorCode::kMethodNotAllowed,
                        "method " + req.method() + " is not allowed on " + req.path())
              .With("method", req.method())
              .With("allowed", allowed),
          allow);
    } else {
      co_await res.SendError(Status::Error(ErrorCode::kRouteNotFound, "no route for " + req.path())
                                 .With("path", req.path()));
    }
    co_return;
  }
  req.set_route_pattern(found->pattern);
  req.set_params(std::move(params));
  std::shared_ptr<void> in_flight;
  if (hold_ && RequestHold::Concerns(found->method, found->pattern)) {
    in_flight = co_await hold_->Enter(found->method, found->pattern, req.path());
  }
  co_await found->handler(req, res);
}

std::vector<std::pair<std::string, std::string>> Router::Routes() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Route& r : routes_) out.emplace_back(r.method, r.pattern);
  return out;
}

}  // namespace agentd
