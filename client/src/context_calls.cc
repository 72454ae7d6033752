#include "context_calls.h"

#include <algorithm>

#include "agentd/client/exec.h"
#include "agentd/protocol/percent.h"

namespace agentd::client {
namespace {

std::string ContextPath(const std::string& id) {
  return "/v1/contexts/" + PercentEncode(id, /*keep_slash=*/false);
}

Result<ContextInfo> DecodeOne(const json::Value& doc) { return DecodeContextInfo(doc); }

Result<std::vector<ContextInfo>> DecodeList(const json::Value& doc) {
  const json::Value* list = doc.Find("contexts");
  if (!list || !list->is_array()) {
    return Status::Error(ErrorCode::kProtocolError, "the context list lacks \"contexts\"");
  }
  std::vector<ContextInfo> out;
  for (const json::Value& v : list->as_array()) {
    Result<ContextInfo> c = DecodeContextInfo(v);
    if (!c.ok()) return c.status();
    out.push_back(std::move(*c));
  }
  return out;
}

}  // namespace

asio::awaitable<Result<ContextInfo>> CreateContextCall(Transport& t, ContextCreateRequest request) {
  HttpRequest req;
  req.method = "POST";
  req.target = "/v1/contexts";
  req.content_type = "application/json";
  req.body = json::Serialize(EncodeContextCreateRequest(request));
  req.idempotent = true;  // the same id and request answer the same context
  co_return DecodeAnswer<ContextInfo>(co_await t.Call(req), &DecodeOne);
}

asio::awaitable<Result<RunResponse>> RunInContextCall(Transport& t, std::string id,
                                                      ContextRunRequest request) {
  // A run id makes the call safe to retry: a retry replays the answer.
  if (!request.run_id) request.run_id = MintExecId("run");
  HttpRequest req;
  req.method = "POST";
  req.target = ContextPath(id) + "/run";
  req.content_type = "application/json";
  req.body = json::Serialize(EncodeContextRunRequest(request));
  req.idempotent = true;
  int64_t timeout =
      std::min<int64_t>(request.timeout_sec.value_or(kMaxRunTimeoutSec), kMaxRunTimeoutSec);
  req.extra_wait = std::chrono::seconds(timeout + 30);
  co_return DecodeAnswer<RunResponse>(co_await t.Call(req), &DecodeRunResponse);
}

asio::awaitable<Result<ContextInfo>> ContextCall(Transport& t, std::string method, std::string id,
                                                 std::string suffix) {
  HttpRequest req;
  req.idempotent = method == "GET";
  req.method = std::move(method);
  req.target = ContextPath(id) + suffix;
  co_return DecodeAnswer<ContextInfo>(co_await t.Call(req), &DecodeOne);
}

asio::awaitable<Result<std::vector<ContextInfo>>> ListContextsCall(Transport& t) {
  HttpRequest req;
  req.target = "/v1/contexts";
  req.idempotent = true;
  co_return DecodeAnswer<std::vector<ContextInfo>>(co_await t.Call(req), &DecodeList);
}

}  // namespace agentd::client
