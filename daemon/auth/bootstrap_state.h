// BootstrapState: the bearer token and the launch environment.
//
// First writer wins: the first valid bootstrap sets both; a repeat with the
// same token is a replay that changes nothing; another token is refused.
// A daemon given --token-file starts bootstrapped with that token and an
// empty launch environment. The token lives only here, in daemon memory; it
// is never copied into a child's environment, argv or a file. Used only on
// the io thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agentd/protocol/bootstrap.h"
#include "agentd/protocol/status.h"

namespace agentd {

// Compares in time that depends only on the length of `expected`, never on
// where the first difference is.
bool ConstantTimeEquals(std::string_view given, std::string_view expected);

// The token of an "Authorization: Bearer <token>" value; nullopt when the
// header is missing or another scheme.
std::optional<std::string_view> BearerToken(const std::string* authorization);

class BootstrapState {
 public:
  enum class Outcome { kAccepted, kReplayed, kConflict };

  bool bootstrapped() const { return token_.has_value(); }
  Outcome Bootstrap(const BootstrapRequest& request);
  void SetToken(std::string token) { token_ = std::move(token); }

  // Checks an Authorization header value: 401 not_bootstrapped before any
  // bootstrap, 401 unauthorized when missing, malformed or wrong.
  Status Authorize(const std::string* authorization) const;

  const EnvList& launch_env() const { return launch_env_; }
  // The current token (empty before bootstrap), for a reset to remember
  // whose reset it was (docs/PROTOCOL.md, "Reuse").
  const std::string& token() const { return token_ ? *token_ : kNone; }

  // A guest reset: forget the token and the launch env (bootstrap opens
  // again), or replace both with the next tenant's in one step.
  void Reopen();
  void Install(BootstrapRequest next);

 private:
  static inline const std::string kNone;
  std::optional<std::string> token_;
  EnvList launch_env_;
};

}  // namespace agentd

namespace agentd {

// Reads a token file (trailing whitespace trimmed; the same rules as a
// bootstrap token). Warns in the log when the file is readable by others.
Result<std::string> ReadTokenFile(const std::string& path);

}  // namespace agentd
