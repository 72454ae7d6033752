// Files and trees: request and response bodies of the /v1/fs routes
// (docs/PROTOCOL.md, "Files"), plus the small grammars those routes share
// (octal modes, line ranges, HTTP byte ranges). No I/O: the daemon and the
// client library both use these.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

namespace agentd {

// The stat object. `mode` holds the permission bits with setuid, setgid
// and sticky (mask 07777); on the wire it is a four-digit octal string.
struct FileStat {
  enum class Type { kFile, kDir, kSymlink, kOther };

  std::string path;
  Type type = Type::kOther;
  uint64_t size = 0;
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::chrono::system_clock::time_point mtime;
  std::optional<std::string> target;  // symlinks only; null otherwise
  // The content's ETag (docs/PROTOCOL.md, "ETags"): regular files, on stat
  // and on the answers of writes and edits; absent elsewhere.
  std::optional<std::string> etag;
};

std::string_view FileTypeName(FileStat::Type type);
json::Value EncodeFileStat(const FileStat& st);
Result<FileStat> DecodeFileStat(const json::Value& doc);

struct ListResponse {
  std::vector<FileStat> entries;
};
json::Value EncodeListResponse(const ListResponse& list);
Result<ListResponse> DecodeListResponse(const json::Value& doc);

inline constexpr uint32_t kDefaultDirMode = 0755;
inline constexpr uint32_t kDefaultFileMode = 0644;

struct MkdirRequest {
  std::string path;
  uint32_t mode = kDefaultDirMode;
  bool parents = false;
  std::optional<std::string> user;   // name or numeric uid
  std::optional<std::string> group;  // name or numeric gid
};
Result<MkdirRequest> DecodeMkdirRequest(const json::Value& doc);
json::Value EncodeMkdirRequest(const MkdirRequest& req);

struct RenameRequest {
  std::string from;
  std::string to;
  bool overwrite = true;  // false: an existing `to` is 409 already_exists
};
Result<RenameRequest> DecodeRenameRequest(const json::Value& doc);
json::Value EncodeRenameRequest(const RenameRequest& req);

// The answer of DELETE /v1/fs: how many entries went away.
struct DeleteResponse {
  std::string path;
  uint64_t removed = 0;
};
json::Value EncodeDeleteResponse(const DeleteResponse& r);
Result<DeleteResponse> DecodeDeleteResponse(const json::Value& doc);

struct RealpathResponse {
  std::string path;
};
json::Value EncodeRealpathResponse(const RealpathResponse& r);
Result<RealpathResponse> DecodeRealpathResponse(const json::Value& doc);

// The answer of PUT /v1/fs/tar: members accepted and file bytes written.
struct TarUploadResponse {
  uint64_t entries = 0;
  uint64_t bytes = 0;
};
json::Value EncodeTarUploadResponse(const TarUploadResponse& r);
Result<TarUploadResponse> DecodeTarUploadResponse(const json::Value& doc);

// "0755", "755", "4755": one to four octal digits, at most 07777. Errors
// are invalid_request naming `field`.
Result<uint32_t> ParseMode(std::string_view text, std::string_view field);
std::string FormatMode(uint32_t mode);  // always four digits: "0755"

// start_line / end_line of GET /v1/fs/file: 1-based and inclusive; an
// absent end reads through EOF. start < 1 or end < start is 400
// invalid_range.
struct LineRange {
  uint64_t start = 1;
  std::optional<uint64_t> end;
};
Result<LineRange> ParseLineRange(const std::string* start, const std::string* end);

// One "Range: bytes=..." header against a file of `size` bytes.
struct ByteRange {
  enum class Kind {
    kNone,           // no usable single range: answer the whole file (200)
    kSatisfiable,    // answer [first, last] with 206
    kUnsatisfiable,  // answer 416 range_not_satisfiable
  };
  Kind kind = Kind::kNone;
  uint64_t first = 0;
  uint64_t last = 0;  // inclusive
};
// A header that is malformed or names several ranges is ignored (kNone),
// as RFC 9110 allows.
ByteRange ParseByteRange(std::string_view header, uint64_t size);

}  // namespace agentd
