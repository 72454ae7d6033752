// Status and Result<T>: the one result vocabulary of agentd.
//
// Every fallible call returns a Status (or a Result<T>, a value or a
// Status). A non-ok Status carries a stable ErrorCode that maps one-to-one
// onto a wire error code and HTTP status, a one-sentence human message, and
// details: a JSON object with the real numbers (sizes, limits, the path).
// The daemon turns a Status into an HTTP error in exactly one place; the
// client turns an error body back into the same Status.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "agentd/protocol/json.h"

namespace agentd {

enum class ErrorCode {
  kOk = 0,
#define AGENTD_ERROR_CODE(name, wire, http) name,
#include "agentd/protocol/error_codes.def"
#undef AGENTD_ERROR_CODE
};

// The stable snake_case wire name ("ok" for kOk).
std::string_view ErrorCodeName(ErrorCode code);
std::optional<ErrorCode> ErrorCodeFromName(std::string_view name);
// The HTTP status a daemon answers with; 0 for client-only codes.
int HttpStatusFor(ErrorCode code);
// Every code but kOk, in declaration order (for manifests and docs checks).
std::vector<ErrorCode> AllErrorCodes();

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok

  static Status Ok() { return Status(); }
  static Status Error(ErrorCode code, std::string message);
  static Status InvalidRequest(std::string message) {
    return Error(ErrorCode::kInvalidRequest, std::move(message));
  }
  static Status Internal(std::string message) {
    return Error(ErrorCode::kInternal, std::move(message));
  }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  std::string_view code_name() const { return ErrorCodeName(code_); }
  const std::string& message() const { return message_; }
  const json::Object& details() const { return details_; }
  // The HTTP status this came with (client side) or maps to (daemon side).
  int http_status() const { return http_status_ ? http_status_ : HttpStatusFor(code_); }

  // Adds a detail member ("needed", "available", "path", ...); chainable.
  Status& With(std::string key, json::Value value) &;
  Status&& With(std::string key, json::Value value) &&;
  // Overrides the HTTP status (a client records what the daemon sent).
  Status& WithHttpStatus(int status) &;
  Status&& WithHttpStatus(int status) &&;

  // "code: message" for logs and CLI output.
  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  int http_status_ = 0;
  std::string message_;
  json::Object details_;
};

// The error body of the wire: {"error": {"code", "message", ...details}}.
json::Value ErrorBody(const Status& status);
// Reverse of ErrorBody for a non-2xx answer; an unrecognized body becomes
// protocol_error carrying the HTTP status.
Status StatusFromErrorBody(int http_status, std::string_view body);

template <typename T>
class [[nodiscard]] Result {
 public:
  // A default Result is an internal error; it exists so results can be
  // declared before they are assigned (and Asio can build one on failure).
  Result() : v_(Status::Error(ErrorCode::kInternal, "result was never set")) {}
  Result(T value) : v_(std::move(value)) {}
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }

  bool ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  Status take_status() && { return ok() ? Status() : std::move(std::get<Status>(v_)); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace agentd

// Propagates a non-ok Status from an expression returning Status.
#define AGENTD_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::agentd::Status agentd_status_ = (expr);        \
    if (!agentd_status_.ok()) return agentd_status_; \
  } while (0)

// The same for coroutines.
#define AGENTD_CO_RETURN_IF_ERROR(expr)                 \
  do {                                                  \
    ::agentd::Status agentd_status_ = (expr);           \
    if (!agentd_status_.ok()) co_return agentd_status_; \
  } while (0)
