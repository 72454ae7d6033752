// ContextTable: the daemon's stateful contexts by id (docs/PROTOCOL.md,
// "Contexts"): create (idempotent for the same body, 409 for another),
// find, reset, delete, list. At most `max_contexts` live at once (503
// too_many_contexts beyond); an ended context stays listed, with what
// ended it, until it is deleted or reset (the oldest ended ones go first
// beyond `max_contexts` of them). A guest reset (the engine's generation
// moves on) forgets every context of the earlier generation: their
// interpreters were killed with every other exec. After a crash the
// contexts of the dead daemon come back (TakeBackLost): whole where a
// holder kept their interpreter, else ended. Used on the io thread.
#pragma once

#include <asio.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agentd/protocol/context.h"
#include "exec/exec_engine.h"
#include "run/code_context.h"
#include "run/code_run.h"
#include "sys/busy_reason.h"

namespace agentd {

class ContextTable {
 public:
  ContextTable(ExecEngine& engine, asio::thread_pool& blocking, CodeRunOptions options,
               int64_t max_contexts)
      : engine_(engine),
        blocking_(blocking),
        options_(std::move(options)),
        max_contexts_(max_contexts) {}

  struct Created {
    ContextInfo info;
    bool created = false;
  };
  asio::awaitable<Result<Created>> Create(ContextCreateRequest request);
  // 404 context_not_found (saying so when a guest reset forgot it).
  Result<std::shared_ptr<CodeContext>> Find(const std::string& id);
  // A fresh interpreter with the context's settings, in its place.
  asio::awaitable<Result<ContextInfo>> Reset(const std::string& id);
  asio::awaitable<Result<ContextInfo>> Delete(const std::string& id);
  std::vector<ContextInfo> List();
  // Upgrade in place (run/context_handover.cc): every live context, or the
  // refusal of the first with a run in progress; and, in the next binary,
  // those contexts back, returning why any entry was dropped.
  Result<json::Array> HandOver(std::vector<int>& fds);
  std::vector<std::string> Adopt(const json::Array& handed);
  // The first context with a run in progress or queued, for an upgrade
  // that waits for it (upgrade/upgrader.h).
  std::optional<BusyReason> UpgradeBlocker() const;
  // At start, after Adopt(): the contexts of a daemon that crashed, from
  // their notes (run/context_notes.h): taken back whole when their
  // interpreter's holder kept it (run/context_takeback.cc), else listed as
  // ended.
  void TakeBackLost();
  int64_t max_contexts() const { return max_contexts_; }

 private:
  std::shared_ptr<CodeContext> TakeBackHeld(const ContextNote& note);
  void ForgetEarlierGenerations();
  void TrimEnded();
  int64_t Live() const;

  ExecEngine& engine_;
  asio::thread_pool& blocking_;
  const CodeRunOptions options_;
  const int64_t max_contexts_;
  std::map<std::string, std::shared_ptr<CodeContext>> contexts_;
  int64_t forgotten_generation_ = 0;
};

}  // namespace agentd
