// TreeGlob: GET /v1/fs/glob's engine (docs/PROTOCOL.md, "Glob"). Walks
// below a directory like search (search/tree_walk.h: same hidden, ignore,
// exclude and symlink rules) and answers the entries whose path relative
// to the start matches one of the patterns (brace sets already expanded),
// sorted by path, at most `max_results` of them: the first in that order.
// Directories no pattern can match inside are not entered.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "agentd/protocol/search.h"
#include "fs/confined_root.h"
#include "fs/lexical_path.h"
#include "search/tree_walk.h"

namespace agentd {

struct GlobOptions {
  WalkOptions walk;
  std::vector<std::string> patterns;
  uint64_t max_results = 1000;
  std::chrono::milliseconds timeout{30000};
};

// True when something below the directory at `dir` (a walk path) could
// match `pattern`: each of dir's components matches the pattern's
// component at its depth, up to a "**" (after which anything may match).
bool GlobCouldMatchBelow(const std::string& pattern, const std::string& dir);

// `display` is the guest path of the start, to which entry paths are
// joined. Only a failure to read the start is an error.
Result<GlobResponse> RunGlob(const ConfinedRoot& root, const RelPath& start,
                             const std::string& display, int start_fd, const GlobOptions& opts);

}  // namespace agentd
