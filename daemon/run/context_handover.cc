// Upgrade in place (docs/OPERATIONS.md, "Upgrading") keeps every idle
// context: its interpreter stays the daemon's child (the PID does not
// change), its exec record goes over with the engine's (pipes, cgroup),
// and what only the context knows goes into upgrade.json's "contexts" as
// its note (run/context_notes.h), the one a crash would leave, plus the
// answers kept for retried run_ids and the channel's descriptor. The next
// binary takes it back exactly as after a crash (CodeContext::TakeBack),
// so the 410 run_lost of a run an earlier crash cut goes over too. A run
// in progress, or queued, makes the upgrade wait (upgrade/upgrader.h):
// its answer is being built from a conversation no note describes midway.
#include <fcntl.h>

#include "run/code_context.h"
#include "run/code_context_parts.h"
#include "run/context_table.h"

namespace agentd {

Result<json::Object> CodeContext::HandOver(std::vector<int>& fds) {
  if (busy_ || pumping_ || !queue_.empty()) {
    return Status::Error(
               ErrorCode::kExecRunning,
               "context \"" + request_.id + "\" has a run in progress; retry once it answered")
        .With("id", request_.id);
  }
  engine_.KeepOnUpgrade(*exec_);
  fds.push_back(channel_->native_handle());
  return EncodeContextNote(NoteOf(nullptr, true)).Set("channel_fd", channel_->native_handle());
}

Result<json::Array> ContextTable::HandOver(std::vector<int>& fds) {
  json::Array out;
  size_t mark = fds.size();
  for (const auto& [id, c] : contexts_) {
    // An ended context is forgotten (its interpreter is gone already); a
    // context still starting has no interpreter to hand over yet, and its
    // launching exec refuses the upgrade.
    if (c->ended() || c->generation() != engine_.generation()) continue;
    Result<json::Object> e = c->HandOver(fds);
    if (!e.ok()) {
      fds.resize(mark);
      return e.status();
    }
    out.emplace_back(std::move(*e));
  }
  return out;
}

std::optional<BusyReason> ContextTable::UpgradeBlocker() const {
  for (const auto& [id, c] : contexts_) {
    if (c->ended() || c->generation() != engine_.generation()) continue;
    if (auto since = c->BusySince()) {
      return BusyReason{"context \"" + id + "\" has a run in progress", *since};
    }
  }
  return std::nullopt;
}

std::vector<std::string> ContextTable::Adopt(const json::Array& handed) {
  std::vector<std::string> dropped;
  for (const json::Value& e : handed) {
    // Inherited without close-on-exec for the one execve: closed on the next.
    const json::Value* fd = e.Find("channel_fd");
    UniqueFd channel(fd && fd->is_int() && fd->as_int() >= 0 ? static_cast<int>(fd->as_int()) : -1);
    if (channel) ::fcntl(channel.get(), F_SETFD, FD_CLOEXEC);
    std::optional<ContextNote> note = DecodeContextNote(e);
    Result<ExecView> exec = note ? engine_.Find(note->exec)
                                 : Status::InvalidRequest("a handed-over context is no note");
    if (exec.ok() && !channel)
      exec = Status::InvalidRequest("a handed-over context has no channel");
    if (!exec.ok()) {
      dropped.push_back(exec.status().message());
      continue;
    }
    contexts_[note->request.id] =
        CodeContext::TakeBack(engine_, blocking_, options_, *note, *exec, std::move(channel));
  }
  return dropped;
}

}  // namespace agentd
