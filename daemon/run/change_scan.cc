#include "run/change_scan.h"

#include <chrono>
#include <functional>
#include <optional>

#include "metrics/daemon_metrics.h"
#include "sys/awaitable.h"

namespace agentd {
namespace {

using SteadyClock = std::chrono::steady_clock;

double ScanSeconds(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

struct Scanned {
  std::optional<TreeSnapshot> snapshot;
};

// The blocking work of one scan, for RunBlocking (a plain function: the
// lambda is built outside any coroutine frame).
std::function<Scanned()> MakeScan(const std::string& root, const ScanOptions& options,
                                  std::shared_ptr<TreeSnapshot> before) {
  return [root, options, before]() {
    Result<TreeSnapshot> s = ScanTree(root, options, before.get());
    Scanned out;
    if (s.ok()) out.snapshot = std::move(*s);
    return out;
  };
}

ScanOptions ToScanOptions(const ChangeScanOptions& o) {
  ScanOptions options;
  options.max_entries = o.max_entries;
  options.max_time = std::chrono::milliseconds(o.max_ms);
  options.exclude = o.exclude;
  return options;
}

}  // namespace

ChangeScan::ChangeScan(asio::thread_pool& blocking, std::string cwd, ChangeScanOptions options)
    : blocking_(blocking),
      cwd_(std::move(cwd)),
      options_(options),
      scan_root_(cwd_.find_first_not_of('/') == std::string::npos) {}

asio::awaitable<void> ChangeScan::Before() {
  before_.reset();
  if (!options_.enabled || scan_root_) co_return;
  auto t0 = SteadyClock::now();
  std::function<Scanned()> scan = MakeScan(cwd_, ToScanOptions(options_), nullptr);
  Scanned scanned = co_await RunBlocking(blocking_, std::move(scan));
  metrics::Daemon().run_phase.With({"scan_before"}).Observe(ScanSeconds(t0));
  if (scanned.snapshot) before_ = std::make_shared<TreeSnapshot>(std::move(*scanned.snapshot));
}

asio::awaitable<TreeDiff> ChangeScan::After() {
  TreeDiff diff;
  if (options_.enabled && scan_root_) {
    diff.truncated = true;
    diff.bound = LimitHit{"not_scanned", 0, "entries"};
  }
  if (!before_) co_return diff;
  auto t0 = SteadyClock::now();
  std::function<Scanned()> scan = MakeScan(cwd_, ToScanOptions(options_), before_);
  Scanned after = co_await RunBlocking(blocking_, std::move(scan));
  metrics::Daemon().run_phase.With({"scan_after"}).Observe(ScanSeconds(t0));
  if (after.snapshot) {
    diff = DiffTrees(*before_, *after.snapshot, options_.changed_files_max);
  } else {
    diff.truncated = true;  // the directory went away
  }
  co_return diff;
}

}  // namespace agentd
