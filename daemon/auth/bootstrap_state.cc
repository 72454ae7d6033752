#include "auth/bootstrap_state.h"

#include <strings.h>

namespace agentd {

bool ConstantTimeEquals(std::string_view given, std::string_view expected) {
  // Walk the whole expected token whatever was given, so timing reveals
  // neither a matching prefix nor (beyond "not equal") the given length.
  volatile unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff = diff | static_cast<unsigned char>(g ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

BootstrapState::Outcome BootstrapState::Bootstrap(const BootstrapRequest& request) {
  if (token_) {
    return ConstantTimeEquals(request.token, *token_) ? Outcome::kReplayed : Outcome::kConflict;
  }
  token_ = request.token;
  launch_env_ = request.env;
  return Outcome::kAccepted;
}

std::optional<std::string_view> BearerToken(const std::string* authorization) {
  static constexpr std::string_view kScheme = "Bearer ";
  if (!authorization || authorization->size() < kScheme.size() ||
      strncasecmp(authorization->c_str(), kScheme.data(), kScheme.size()) != 0) {
    return std::nullopt;
  }
  std::string_view given = std::string_view(*authorization).substr(kScheme.size());
  while (!given.empty() && given.front() == ' ') given.remove_prefix(1);
  return given;
}

void BootstrapState::Reopen() {
  token_.reset();
  launch_env_.clear();
}

void BootstrapState::Install(BootstrapRequest next) {
  token_ = std::move(next.token);
  launch_env_ = std::move(next.env);
}

Status BootstrapState::Authorize(const std::string* authorization) const {
  if (!token_) {
    return Status::Error(ErrorCode::kNotBootstrapped,
                         "the daemon has not been bootstrapped; POST /v1/bootstrap first");
  }
  std::optional<std::string_view> given = BearerToken(authorization);
  if (!given) return Status::Error(ErrorCode::kUnauthorized, "missing bearer token");
  if (!ConstantTimeEquals(*given, *token_)) {
    return Status::Error(ErrorCode::kUnauthorized, "wrong bearer token");
  }
  return Status::Ok();
}

}  // namespace agentd

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"
#include "log/log.h"

namespace agentd {

Result<std::string> ReadTokenFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) return PosixError(errno, "cannot open token file", path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return PosixError(errno, "cannot stat token file", path);
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    Log(LogLevel::kWarn, "token file is accessible to group or others; make it 0600",
        json::Object().Set("path", path));
  }
  std::string token;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof(buf))) > 0) {
    token.append(buf, static_cast<size_t>(n));
    if (token.size() > kMaxTokenBytes + 64) break;
  }
  if (n < 0) return PosixError(errno, "cannot read token file", path);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  Result<BootstrapRequest> check = DecodeBootstrapRequest(json::Object().Set("token", token));
  if (!check.ok()) {
    return Status::InvalidRequest("token file " + path + ": " + check.status().message());
  }
  return token;
}

}  // namespace agentd
