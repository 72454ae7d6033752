// Artifacts of a code run (docs/PROTOCOL.md, "Run code", "artifacts"): the
// files a run created or modified under the `artifacts_dir` it named,
// answered by path, media type, size and SHA-256, never by content.
// Shared by the daemon and the clients. No I/O; plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agentd/protocol/json.h"
#include "agentd/protocol/limits.h"
#include "agentd/protocol/status.h"

namespace agentd {

// At most this many artifacts in one answer ("artifacts" bound).
inline constexpr size_t kMaxArtifacts = 100;
// Bytes hashed for one answer; past it an artifact has no sha256
// ("artifact_hash_bytes" bound).
inline constexpr uint64_t kArtifactHashBudgetBytes = 256ull << 20;
inline constexpr size_t kMaxArtifactsDirBytes = 1024;

struct Artifact {
  std::string path;        // relative to the run's cwd, artifacts_dir first
  std::string media_type;  // sniffed from the content
  uint64_t bytes = 0;
  std::optional<std::string> sha256;  // lowercase hex; absent past the hash budget
  bool operator==(const Artifact&) const = default;
};

struct ArtifactList {
  std::vector<Artifact> items;  // sorted by path
  bool truncated = false;       // some were left out: `bound` says why
  std::optional<LimitHit> bound;
  bool operator==(const ArtifactList&) const = default;
};

// An artifacts_dir is relative to the run's cwd and stays below it: not
// empty, not absolute, no ".." component, no NUL, at most
// kMaxArtifactsDirBytes. 400 invalid_request naming `field`.
Status ValidateArtifactsDir(const std::string& dir, std::string_view field = "artifacts_dir");

// Sets "artifacts", "artifacts_truncated" and "artifacts_bound" on `o`.
void SetArtifacts(json::Object& o, const ArtifactList& list);
// The members SetArtifacts wrote, when "artifacts" is present; lenient
// with members it does not know.
std::optional<ArtifactList> DecodeArtifacts(const json::Value& doc);

}  // namespace agentd
