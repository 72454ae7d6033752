#include "reuse/reset_ledger.h"

#include <algorithm>

#include "auth/bootstrap_state.h"

namespace agentd {

std::shared_ptr<ResetLedger::Entry> ResetLedger::Find(std::string_view reset_id) const {
  for (const auto& e : entries_) {
    if (e->reset_id == reset_id) return e;
  }
  return nullptr;
}

std::shared_ptr<ResetLedger::Entry> ResetLedger::Begin(std::string reset_id, std::string token) {
  auto e = std::make_shared<Entry>();
  e->reset_id = std::move(reset_id);
  e->token = std::move(token);
  entries_.push_back(e);
  // Only finished entries are forgotten: a running reset's retries must
  // find it.
  while (entries_.size() > kMaxEntries && entries_.front()->report) entries_.pop_front();
  return e;
}

void ResetLedger::Forget(const std::shared_ptr<Entry>& entry) {
  entries_.erase(std::remove(entries_.begin(), entries_.end(), entry), entries_.end());
  entry->done.Notify();
}

void ResetLedger::Finish(Entry& entry, ResetReport report) {
  entry.report = std::move(report);
  entry.done.Notify();
}

bool ResetLedger::MayRead(const Entry& entry, std::optional<std::string_view> bearer,
                          bool current_ok) {
  // An empty recorded token (a reset before any bootstrap cannot happen,
  // but be strict) matches nothing.
  bool own = bearer && !entry.token.empty() && ConstantTimeEquals(*bearer, entry.token);
  return own || current_ok;
}

}  // namespace agentd
