// FsService: what the file and tree routes share (docs/PROTOCOL.md,
// "Files"): the path policy and confined root, a pool for long jobs
// (streamed writes, line scans, tar extraction and creation), and the
// registry of byte channels between those jobs and connections, and the
// files' ETags.
//
// Long jobs get their own pool so that a few multi-GiB uploads cannot
// starve the shared blocking pool that short operations (stat, mkdir,
// exec bookkeeping) use. Its threads start with the first long job, not
// with the daemon: eight thread starts were a third of the daemon's own
// start-up time (docs/ARCHITECTURE.md, "Start-up"). Built in main.cc;
// outlives the server. Shutdown() closes every channel, so jobs blocked on
// one return, and joins the pool.
#pragma once

#include <asio.hpp>
#include <memory>

#include "config/daemon_config.h"
#include "fs/byte_channel.h"
#include "fs/confined_root.h"
#include "fs/file_tags.h"
#include "fs/lexical_path.h"

namespace agentd {

// Threads of the long-job pool: the number of streamed file or tree
// transfers that make progress at once (more wait their turn).
inline constexpr size_t kFsJobThreads = 8;
// Bytes queued between a connection and its job, each way.
inline constexpr size_t kFsChannelBytes = 1 << 20;

class FsService {
 public:
  // Opens the root: --fs-root DIR (which must be a directory) confined
  // beneath it, else "/".
  static Result<std::unique_ptr<FsService>> Create(const DaemonConfig& config);
  ~FsService();

  const PathPolicy& policy() const { return policy_; }
  const ConfinedRoot& root() const { return root_; }
  // Started on the first call. Only the io thread calls it (every route
  // runs there), so no lock.
  asio::thread_pool& jobs();
  ChannelRegistry& channels() { return channels_; }
  // ETags and the entry locks of guarded writes (fs/file_tags.h).
  FileTags& tags() { return tags_; }

  void Shutdown();

 private:
  FsService(PathPolicy policy, ConfinedRoot root)
      : policy_(std::move(policy)), root_(std::move(root)) {}

  PathPolicy policy_;
  ConfinedRoot root_;
  std::unique_ptr<asio::thread_pool> jobs_;
  ChannelRegistry channels_;
  FileTags tags_;
};

}  // namespace agentd
