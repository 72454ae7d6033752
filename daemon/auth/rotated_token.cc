#include "auth/rotated_token.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "agentd/protocol/bootstrap.h"
#include "agentd/protocol/json.h"
#include "agentd/trees/posix_error.h"
#include "log/log.h"
#include "sys/read_file.h"

namespace agentd {
namespace {

constexpr char kMagic[] = "agentd-rotated-token 1";

// "<dev> <ino> <size> <mtime s> <mtime ns>" of the file `path` names
// (symlinks followed: a Secret volume's file is a link into its current
// data directory, and an update moves the link); empty when it cannot be
// read.
std::string IdentityOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "";
  char buf[128];
  std::snprintf(buf, sizeof(buf), "%llu %llu %lld %lld %ld",
                static_cast<unsigned long long>(st.st_dev),
                static_cast<unsigned long long>(st.st_ino), static_cast<long long>(st.st_size),
                static_cast<long long>(st.st_mtim.tv_sec), static_cast<long>(st.st_mtim.tv_nsec));
  return buf;
}

}  // namespace

std::string RotatedTokenPath(const std::string& state_dir) { return state_dir + "/rotated-token"; }

Result<std::string> RotatedTokenRecord(const std::string& token_file, std::string_view token) {
  std::string identity = IdentityOf(token_file);
  if (identity.empty()) return PosixError(errno, "cannot stat token file", token_file);
  std::string record = std::string(kMagic) + "\n" + token_file + "\n" + identity + "\n";
  record.append(token);
  record += "\n";
  return record;
}

Status KeepRotatedToken(const std::string& state_dir, const std::string& token_file,
                        std::string_view token) {
  Result<std::string> record = RotatedTokenRecord(token_file, token);
  if (!record.ok()) return record.status();
  return WriteFileAtomically(RotatedTokenPath(state_dir), *record);
}

void ForgetRotatedToken(const std::string& state_dir) {
  ::unlink(RotatedTokenPath(state_dir).c_str());
}

std::optional<std::string> LoadRotatedToken(const std::string& state_dir,
                                            const std::string& token_file) {
  Result<std::string> record = ReadFileToString(RotatedTokenPath(state_dir), 1 << 16);
  if (!record.ok()) return std::nullopt;
  // magic, path, identity, token: four lines.
  std::string_view rest = *record;
  std::string_view lines[4];
  for (std::string_view& line : lines) {
    size_t end = rest.find('\n');
    if (end == std::string_view::npos) break;
    line = rest.substr(0, end);
    rest.remove_prefix(end + 1);
  }
  std::string why;
  if (lines[0] != kMagic || !rest.empty()) {
    why = "the record is not one this daemon wrote";
  } else if (lines[1] != token_file) {
    why = "the record is for another token file";
  } else if (lines[2] != IdentityOf(token_file)) {
    why = "the token file changed since the token was kept: the file's token wins";
  } else if (!DecodeBootstrapRequest(json::Object().Set("token", std::string(lines[3]))).ok()) {
    why = "the kept token is not a valid token";
  }
  if (!why.empty()) {
    Log(LogLevel::kInfo, "rotated token not used",
        json::Object().Set("token_file", token_file).Set("why", why));
    ForgetRotatedToken(state_dir);
    return std::nullopt;
  }
  Log(LogLevel::kInfo, "the token a reset rotated to is in force (the token file cannot hold it)",
      json::Object().Set("token_file", token_file));
  return std::string(lines[3]);
}

}  // namespace agentd
