#include "fs/precondition.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <optional>

#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Status BadHeader(std::string_view header, std::string message) {
  return std::move(Status::InvalidRequest(std::move(message)).With("field", header));
}

// One entity tag of a list: "\"x\"" -> x, W/"x" kept whole, a bare x -> x.
Result<std::string> ParseTag(std::string_view item) {
  bool weak = item.substr(0, 2) == "W/";
  std::string_view body = weak ? item.substr(2) : item;
  if (body.size() >= 2 && body.front() == '"' && body.back() == '"') {
    body = body.substr(1, body.size() - 2);
  }
  if (body.empty() || body.find('"') != std::string_view::npos) {
    return BadHeader("If-Match", "If-Match holds a malformed entity tag");
  }
  for (char c : body) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return BadHeader("If-Match", "If-Match holds a malformed entity tag");
    }
  }
  return weak ? "W/" + std::string(body) : std::string(body);
}

std::string Unquoted(const std::string& tag) {
  if (tag.size() >= 2 && tag.front() == '"' && tag.back() == '"') {
    return tag.substr(1, tag.size() - 2);
  }
  return tag;
}

Status Failed(std::string message, const std::string& display, bool exists,
              const std::optional<std::string>& etag) {
  return std::move(Status::Error(ErrorCode::kPreconditionFailed, std::move(message))
                       .With("path", display)
                       .With("exists", exists)
                       .With("etag", etag ? json::Value(*etag) : json::Value(nullptr)));
}

}  // namespace

Result<Precondition> ParsePrecondition(const std::string* if_match,
                                       const std::string* if_none_match) {
  Precondition pre;
  if (if_none_match) {
    if (Trim(*if_none_match) != "*") {
      return BadHeader("If-None-Match", "only If-None-Match: * is supported (create only)");
    }
    pre.if_none_match = true;
  }
  if (!if_match) return pre;
  std::string_view rest = Trim(*if_match);
  if (rest == "*") {
    pre.if_match.push_back("*");
    return pre;
  }
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = Trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    Result<std::string> tag = ParseTag(item);
    if (!tag.ok()) return tag.status();
    pre.if_match.push_back(std::move(*tag));
  }
  if (pre.if_match.empty()) return BadHeader("If-Match", "If-Match names no entity tag");
  if (pre.if_match.size() > kMaxIfMatchTags) {
    return std::move(BadHeader("If-Match", "If-Match lists too many entity tags")
                         .With("tags", pre.if_match.size())
                         .With("limit", kMaxIfMatchTags));
  }
  return pre;
}

bool IfMatchAccepts(const Precondition& pre, const std::string& tag) {
  std::string bare = Unquoted(tag);
  for (const std::string& t : pre.if_match) {
    if (t == "*" || t == bare) return true;
  }
  return false;
}

Status CheckPrecondition(const Precondition& pre, int dir_fd, const std::string& leaf,
                         FileTags& tags, const std::string& display) {
  if (pre.empty()) return Status::Ok();
  struct stat st;
  bool exists = ::fstatat(dir_fd, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (!exists && errno != ENOENT) return PosixError(errno, "cannot inspect", display);
  std::optional<std::string> etag;
  if (exists && S_ISREG(st.st_mode)) {
    UniqueFd fd(::openat(dir_fd, leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd) {
      if (errno != ENOENT) return PosixError(errno, "cannot open", display);
      exists = false;  // removed since the fstatat
    } else {
      Result<std::string> tag = tags.Of(fd.get(), display);
      if (!tag.ok()) return tag.status();
      etag = std::move(*tag);
    }
  }
  if (pre.if_none_match && exists) {
    return Failed(display + " exists (If-None-Match: * creates only)", display, true, etag);
  }
  if (pre.if_match.empty()) return Status::Ok();
  if (!exists) return Failed(display + " does not exist (If-Match)", display, false, etag);
  bool any = pre.if_match.size() == 1 && pre.if_match[0] == "*";
  if (any) return Status::Ok();
  if (!etag) return Failed(display + " is not a regular file (If-Match)", display, true, etag);
  if (!IfMatchAccepts(pre, *etag)) {
    return Failed(display + " changed: its ETag is now " + *etag, display, true, etag);
  }
  return Status::Ok();
}

}  // namespace agentd
