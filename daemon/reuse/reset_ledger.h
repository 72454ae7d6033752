// ResetLedger: the resets this daemon ran, by caller-minted reset_id, so a
// retry answers the recorded report instead of resetting the next tenant's
// work (docs/PROTOCOL.md, "Reuse").
//
// Each entry keeps the token that was current when its reset began: that
// retired token may fetch this one report and nothing else. Bounded to the
// latest kMaxEntries resets (an allocator retries within seconds). Memory
// only: a restarted daemon has forgotten them. Used only on the io thread.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "agentd/protocol/reset.h"
#include "exec/change_signal.h"

namespace agentd {

class ResetLedger {
 public:
  static constexpr size_t kMaxEntries = 64;

  struct Entry {
    std::string reset_id;
    std::string token;                  // current when the reset began
    std::optional<ResetReport> report;  // set once the reset ended
    ChangeSignal done;                  // notified when `report` is set
  };

  // The entry of `reset_id`, if remembered.
  std::shared_ptr<Entry> Find(std::string_view reset_id) const;
  // Records a reset that begins now.
  std::shared_ptr<Entry> Begin(std::string reset_id, std::string token);
  // Forgets an entry whose reset was refused before it changed anything.
  void Forget(const std::shared_ptr<Entry>& entry);
  static void Finish(Entry& entry, ResetReport report);
  // Whether `bearer` may read `entry`'s report: its own retired token, or
  // `current_ok` (the caller holds the current token). Constant time in
  // the token's content.
  static bool MayRead(const Entry& entry, std::optional<std::string_view> bearer, bool current_ok);

 private:
  std::deque<std::shared_ptr<Entry>> entries_;  // oldest first
};

}  // namespace agentd
