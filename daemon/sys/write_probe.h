// WriteProbe: whether a directory still takes writes, found by writing
// (health's state-directory check, docs/PROTOCOL.md "Health"). A real
// create, write and unlink of a small file, not access(2): a read-only
// remount, a full disk, a directory removed or replaced each fail it with
// their own errno, also for root. A new file each time, so a full disk is
// seen (rewriting an old block would always fit). At most one attempt per
// `interval`; calls in between get the last answer, so a health poll loop
// costs one small write per interval, not one per request.
#pragma once

#include <chrono>
#include <string>

#include "agentd/protocol/status.h"

namespace agentd {

class WriteProbe {
 public:
  WriteProbe(std::string dir, std::chrono::milliseconds interval);
  Status Check();

 private:
  std::string path_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point last_{};
  bool checked_ = false;
  Status last_status_;
};

}  // namespace agentd
