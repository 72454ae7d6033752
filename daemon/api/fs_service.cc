#include "api/fs_service.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "agentd/trees/posix_error.h"
#include "log/log.h"

namespace agentd {

Result<std::unique_ptr<FsService>> FsService::Create(const DaemonConfig& config) {
  std::string dir = config.fs_root.empty() ? "/" : config.fs_root;
  if (dir.front() != '/') {
    char cwd[PATH_MAX];
    if (!::getcwd(cwd, sizeof(cwd))) return PosixError(errno, "cannot read the working directory");
    dir = std::string(cwd) + "/" + dir;
  }
  ConfinedRoot::Mode mode =
      config.fs_root.empty() ? ConfinedRoot::Mode::kInRoot : ConfinedRoot::Mode::kBeneath;
  Result<ConfinedRoot> root = ConfinedRoot::Open(dir, mode);
  if (!root.ok()) return root.status();
  // Test seam: run the resolution walk that stands in for openat2 on older
  // kernels, so the integration tests can cover it on this one.
  if (const char* walk = std::getenv("AGENTD_TEST_RESOLVE_WALK"); walk && *walk == '1') {
    root->set_use_openat2(false);
  }
  if (!root->uses_openat2()) {
    Log(LogLevel::kWarn, "openat2 unavailable: paths are resolved by a component walk");
  }
  return std::unique_ptr<FsService>(new FsService(PathPolicy(dir), std::move(*root)));
}

FsService::~FsService() { Shutdown(); }

asio::thread_pool& FsService::jobs() {
  if (!jobs_) jobs_ = std::make_unique<asio::thread_pool>(kFsJobThreads);
  return *jobs_;
}

void FsService::Shutdown() {
  channels_.CloseAll();
  // After the io loop: a pool not started by now never will be.
  if (jobs_) jobs_->join();
}

}  // namespace agentd
