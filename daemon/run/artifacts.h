// ArtifactScan: the artifacts of one code run (docs/PROTOCOL.md, "Run
// code", "artifacts"). Before() snapshots the run's artifacts_dir (one
// that does not exist yet counts as empty); After() snapshots it again and
// describes every regular file added or modified: its path relative to
// the run's cwd, size, media type (run/media_type.h, from the content) and
// SHA-256, within kMaxArtifacts entries and kArtifactHashBudgetBytes.
//
// The directory is reached from the cwd one component at a time with
// O_NOFOLLOW (artifacts_dir has no ".." component), and every file below
// it the same way, so code that turns the directory or a file into a
// symlink gets no description of what the link points at: the answer
// names the bound `artifacts_dir` instead (a dir that is not a directory
// below the cwd), never the hash of a file outside.
//
// Used on the io thread; the walks and the hashing run on the blocking pool.
#pragma once

#include <asio.hpp>
#include <memory>
#include <optional>
#include <string>

#include "agentd/protocol/artifacts.h"
#include "run/tree_scan.h"

namespace agentd {

class ArtifactScan {
 public:
  // `dir`: the request's artifacts_dir (validated); none asks for nothing.
  ArtifactScan(asio::thread_pool& blocking, std::string cwd, std::optional<std::string> dir);

  asio::awaitable<void> Before();
  // Absent when no artifacts_dir was asked for.
  asio::awaitable<std::optional<ArtifactList>> After();

 private:
  asio::thread_pool& blocking_;
  std::string cwd_;
  std::optional<std::string> dir_;
  std::shared_ptr<TreeSnapshot> before_;
};

// The blocking halves, for tests: a snapshot of `dir` below `cwd` (an
// empty complete one when it does not exist; an error when it is not a
// directory reached without a symlink), and the description of what
// changed between two snapshots.
Result<TreeSnapshot> SnapshotArtifactsDir(const std::string& cwd, const std::string& dir);
ArtifactList DescribeArtifacts(const std::string& cwd, const std::string& dir,
                               const TreeSnapshot& before, const TreeSnapshot& after);

}  // namespace agentd
