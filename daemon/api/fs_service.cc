#include "api/fs_service.h"

#include <unistd.h>

#include <climits>

#include "sys/posix_error.h"

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
  return std::unique_ptr<FsService>(new FsService(PathPolicy(dir), std::move(*root)));
}

FsService::~FsService() { Shutdown(); }

void FsService::Shutdown() {
  channels_.CloseAll();
  jobs_.join();
}

}  // namespace agentd
