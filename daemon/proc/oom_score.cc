#include "proc/oom_score.h"

#include <cstdlib>
#include <string>

#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"
#include "sys/read_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace agentd {

Status SetOwnOomScoreAdj(int value) {
  UniqueFd fd(::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC));
  if (!fd) return PosixError(errno, "cannot open", "/proc/self/oom_score_adj");
  std::string text = std::to_string(value);
  if (::write(fd.get(), text.data(), text.size()) < 0) {
    return PosixError(errno, "cannot write", "/proc/self/oom_score_adj");
  }
  return Status::Ok();
}

std::optional<int> ReadOomScoreAdj(pid_t pid) {
  Result<std::string> text =
      ReadFileToString("/proc/" + std::to_string(pid) + "/oom_score_adj", 64);
  if (!text.ok() || text->empty()) return std::nullopt;
  return std::atoi(text->c_str());
}

}  // namespace agentd
