#include "reuse/scratch_dirs.h"

#include <fcntl.h>

#include <cerrno>

#include "agentd/trees/dir_entries.h"
#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {
namespace {

Result<UniqueFd> OpenScratch(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return PosixError(errno, "cannot open scratch dir", dir);
  return fd;
}

std::string Child(const std::string& dir, const std::string& name) {
  return dir.ends_with('/') ? dir + name : dir + "/" + name;
}

}  // namespace

ScratchResult EmptyScratchDir(const std::string& dir) {
  ScratchResult result;
  Result<UniqueFd> fd = OpenScratch(dir);
  if (!fd.ok()) {
    result.remaining.push_back({"path", dir, fd.status().message()});
    return result;
  }
  Result<std::vector<DirEntry>> entries = ReadDirEntries(fd->get(), dir);
  if (!entries.ok()) {
    result.remaining.push_back({"path", dir, entries.status().message()});
    return result;
  }
  for (const DirEntry& e : *entries) {
    std::string path = Child(dir, e.name);
    Result<uint64_t> removed = RemoveTree(fd->get(), e.name, path);
    if (removed.ok()) {
      result.removed_entries += static_cast<int64_t>(*removed);
    } else {
      result.remaining.push_back({"path", path, removed.status().message()});
    }
  }
  return result;
}

std::vector<ResetRemaining> ScratchLeft(const std::string& dir) {
  Result<UniqueFd> fd = OpenScratch(dir);
  if (!fd.ok()) return {{"path", dir, fd.status().message()}};
  Result<std::vector<DirEntry>> entries = ReadDirEntries(fd->get(), dir);
  if (!entries.ok()) return {{"path", dir, entries.status().message()}};
  std::vector<ResetRemaining> left;
  for (const DirEntry& e : *entries) {
    left.push_back(
        {"path", Child(dir, e.name), "still in scratch dir " + dir + " after the reset"});
  }
  return left;
}

}  // namespace agentd
