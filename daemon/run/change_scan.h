// ChangeScan: the changed files of one code run (docs/PROTOCOL.md, "Run
// code", "changed_files"): Before() snapshots the working directory on the
// blocking pool, After() snapshots it again and compares. The whole guest
// ("/") is not a working directory: it is not scanned and the answer says
// so ("not_scanned"). Used on the io thread; one run at a time.
#pragma once

#include <asio.hpp>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "run/tree_scan.h"

namespace agentd {

struct ChangeScanOptions {
  bool enabled = true;  // the request's scan_changes
  uint64_t max_entries = 250'000;
  int64_t max_ms = 2000;
  uint64_t changed_files_max = 1000;               // entries in one answer
  std::optional<std::pair<dev_t, ino_t>> exclude;  // the daemon's state directory
};

class ChangeScan {
 public:
  ChangeScan(asio::thread_pool& blocking, std::string cwd, ChangeScanOptions options);

  asio::awaitable<void> Before();
  asio::awaitable<TreeDiff> After();

 private:
  asio::thread_pool& blocking_;
  std::string cwd_;
  ChangeScanOptions options_;
  bool scan_root_;
  std::shared_ptr<TreeSnapshot> before_;
};

}  // namespace agentd
