// POST /v1/fs/edit (docs/PROTOCOL.md, "Edit"): exact text replacements and
// line-range replacements applied to one file atomically. No I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

namespace agentd {

// Bounds of one edit request.
inline constexpr size_t kMaxEditsPerRequest = 256;
// Files larger than this are refused (413 payload_too_large): an edit reads
// the file into memory, and the diff is computed over its lines.
inline constexpr uint64_t kMaxEditFileBytes = 8ull << 20;

struct TextEdit {
  std::string old_text;  // "old" on the wire; not empty
  std::string new_text;  // "new"
  uint64_t count = 1;    // exactly this many occurrences
};

struct LineEdit {
  uint64_t start_line = 1;  // 1-based, inclusive
  uint64_t end_line = 0;    // inclusive; start_line - 1 inserts before start_line
  std::string text;
};

struct EditRequest {
  std::string path;
  std::vector<TextEdit> edits;
  std::vector<LineEdit> line_edits;
  std::optional<std::string> if_match;  // also the If-Match header
};
Result<EditRequest> DecodeEditRequest(const json::Value& doc);
json::Value EncodeEditRequest(const EditRequest& req);

struct EditResponse {
  std::string path;
  std::string etag;  // the new content's
  uint64_t size = 0;
  std::string diff;  // unified diff of the change
};
json::Value EncodeEditResponse(const EditResponse& r);
Result<EditResponse> DecodeEditResponse(const json::Value& doc);

}  // namespace agentd
