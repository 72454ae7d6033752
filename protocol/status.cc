#include "agentd/protocol/status.h"

#include <array>

namespace agentd {
namespace {

struct CodeInfo {
  ErrorCode code;
  std::string_view name;
  int http;
};

constexpr CodeInfo kCodes[] = {
    {ErrorCode::kOk, "ok", 200},
#define AGENTD_ERROR_CODE(name, wire, http) {ErrorCode::name, wire, http},
#include "agentd/protocol/error_codes.def"
#undef AGENTD_ERROR_CODE
};

const CodeInfo& Info(ErrorCode code) {
  size_t i = static_cast<size_t>(code);
  return i < std::size(kCodes) ? kCodes[i] : kCodes[static_cast<size_t>(ErrorCode::kInternal)];
}

}  // namespace

std::string_view ErrorCodeName(ErrorCode code) { return Info(code).name; }

std::optional<ErrorCode> ErrorCodeFromName(std::string_view name) {
  for (const CodeInfo& info : kCodes) {
    if (info.name == name) return info.code;
  }
  return std::nullopt;
}

int HttpStatusFor(ErrorCode code) { return Info(code).http; }

std::vector<ErrorCode> AllErrorCodes() {
  std::vector<ErrorCode> codes;
  for (const CodeInfo& info : kCodes) {
    if (info.code != ErrorCode::kOk) codes.push_back(info.code);
  }
  return codes;
}

Status Status::Error(ErrorCode code, std::string message) {
  Status s;
  s.code_ = code;
  s.message_ = std::move(message);
  return s;
}

Status& Status::With(std::string key, json::Value value) & {
  details_.Set(std::move(key), std::move(value));
  return *this;
}

Status&& Status::With(std::string key, json::Value value) && {
  details_.Set(std::move(key), std::move(value));
  return std::move(*this);
}

Status& Status::WithHttpStatus(int status) & {
  http_status_ = status;
  return *this;
}

Status&& Status::WithHttpStatus(int status) && {
  http_status_ = status;
  return std::move(*this);
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(code_name());
  out += ": ";
  out += message_;
  return out;
}

json::Value ErrorBody(const Status& status) {
  json::Object error;
  error.Set("code", std::string(status.code_name()));
  error.Set("message", status.message());
  for (const json::Member& m : status.details().members()) {
    if (m.key != "code" && m.key != "message") error.Set(m.key, m.value);
  }
  json::Object body;
  body.Set("error", std::move(error));
  return body;
}

Status StatusFromErrorBody(int http_status, std::string_view body) {
  Result<json::Value> parsed = json::Parse(body);
  const json::Value* error = parsed.ok() ? parsed->Find("error") : nullptr;
  const json::Value* code = error ? error->Find("code") : nullptr;
  const json::Value* message = error ? error->Find("message") : nullptr;
  if (!code || !code->is_string()) {
    return Status::Error(
               ErrorCode::kProtocolError,
               "daemon answered HTTP " + std::to_string(http_status) + " without a JSON error body")
        .With("http_status", http_status)
        .WithHttpStatus(http_status);
  }
  // A code this client does not know yet still reaches the caller by name.
  std::optional<ErrorCode> known = ErrorCodeFromName(code->as_string());
  Status s = Status::Error(known.value_or(ErrorCode::kProtocolError),
                           message && message->is_string() ? message->as_string() : "");
  for (const json::Member& m : error->as_object().members()) {
    if (m.key != "message") s.With(m.key, m.value);
  }
  return std::move(s).WithHttpStatus(http_status);
}

}  // namespace agentd
