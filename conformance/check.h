// The conformance suite's vocabulary: a Check is one clause of
// docs/PROTOCOL.md, named as a sentence and grouped by area, that passes or
// fails against a live daemon. Checks are plain functions registered in a
// table (registry.cc); they speak only to the daemon, through the client
// library, and keep their scratch files under the suite's scratch directory.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/client/client.h"

namespace agentd::conformance {

// Thrown by Expect* helpers; carries the one-line reason a check failed.
struct CheckFailure {
  std::string reason;
};

// Thrown when a check cannot run against this guest (say, it offers no
// small filesystem for disk-pressure checks); reported as skipped.
struct CheckSkipped {
  std::string reason;
};

class Suite;

// What a check receives: a connected client, the daemon's URL and token,
// and a scratch directory in the guest that is removed at the end.
class CheckContext {
 public:
  CheckContext(Suite& suite, client::Client& client) : suite_(suite), client_(client) {}
  client::Client& client() { return client_; }
  // A fresh client with the same URL and token (a "restarted harness").
  std::unique_ptr<client::Client> NewClient() const;
  // Sends raw bytes on a new connection and returns everything the daemon
  // sends back until it closes or `wait` passes (for HTTP hygiene checks).
  std::string RawExchange(std::string_view bytes, std::chrono::milliseconds wait) const;
  const client::ClientOptions& options() const { return client_.options(); }
  // Guest path for scratch files of this check: <scratch>/<check-number>/<name>.
  // The check's directory is created on first use.
  std::string Scratch(std::string_view name);
  // A fresh exec id unique to this run.
  std::string NewId(std::string_view tag) const;
  Suite& suite() { return suite_; }
  void set_scratch_dir(std::string dir) { scratch_dir_ = std::move(dir); }

 private:
  Suite& suite_;
  client::Client& client_;
  std::string scratch_dir_;
  bool scratch_made_ = false;
};

struct Check {
  std::string area;  // "exec", "files", ...
  std::string name;  // a sentence: "a retried start with the same id runs once"
  std::function<void(CheckContext&)> run;
};

void Expect(bool condition, std::string reason);

// A shell-mode start request, run as `user` when one is named.
ExecStartRequest Sh(std::string command, std::string user = {});
// Unwraps a Result or fails the check with the call's status.
template <typename T>
T ExpectOk(Result<T> r, std::string_view what) {
  if (!r.ok()) throw CheckFailure{std::string(what) + " failed: " + r.status().ToString()};
  return std::move(r).value();
}
void ExpectOk(const Status& s, std::string_view what);
// Expects a failure with a given stable code (and HTTP status when given).
// Returns the error for checks that look at its details.
template <typename T>
Status ExpectErrorStatus(const Result<T>& r, ErrorCode code, std::string_view what) {
  if (r.ok())
    throw CheckFailure{std::string(what) + " succeeded; expected " +
                       std::string(ErrorCodeName(code))};
  if (r.status().code() != code) {
    throw CheckFailure{std::string(what) + " failed with " + r.status().ToString() + "; expected " +
                       std::string(ErrorCodeName(code))};
  }
  return r.status();
}
template <typename T>
void ExpectError(const Result<T>& r, ErrorCode code, std::string_view what) {
  (void)ExpectErrorStatus(r, code, what);
}

// Every check of the suite, in order.
const std::vector<Check>& AllChecks();

}  // namespace agentd::conformance
