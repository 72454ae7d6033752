#include "run/context_table.h"

#include <algorithm>

#include "log/log.h"

namespace agentd {

void ContextTable::ForgetEarlierGenerations() {
  for (auto it = contexts_.begin(); it != contexts_.end();) {
    if (it->second->generation() != engine_.generation()) {
      forgotten_generation_ = engine_.generation();
      it->second->RemoveNote();
      it = contexts_.erase(it);
    } else {
      ++it;
    }
  }
}

int64_t ContextTable::Live() const {
  int64_t n = 0;
  for (const auto& [id, c] : contexts_) n += c->ended() ? 0 : 1;
  return n;
}

void ContextTable::TrimEnded() {
  std::vector<std::map<std::string, std::shared_ptr<CodeContext>>::iterator> ended;
  for (auto it = contexts_.begin(); it != contexts_.end(); ++it) {
    if (it->second->ended()) ended.push_back(it);
  }
  if (static_cast<int64_t>(ended.size()) <= max_contexts_) return;
  std::sort(ended.begin(), ended.end(), [](const auto& a, const auto& b) {
    return a->second->Info().created_at < b->second->Info().created_at;
  });
  for (size_t i = 0; i + max_contexts_ < ended.size(); ++i) {
    ended[i]->second->RemoveNote();
    contexts_.erase(ended[i]);
  }
}

asio::awaitable<Result<ContextTable::Created>> ContextTable::Create(ContextCreateRequest request) {
  ForgetEarlierGenerations();
  if (auto it = contexts_.find(request.id); it != contexts_.end()) {
    std::shared_ptr<CodeContext> existing = it->second;
    if (existing->fingerprint() != ContextFingerprint(request)) {
      co_return Status::Error(
          ErrorCode::kContextIdConflict,
          "context \"" + request.id + "\" exists with a different create request")
          .With("id", request.id);
    }
    co_return Created{existing->Info(), false};
  }
  if (Live() >= max_contexts_) {
    co_return Status::Error(ErrorCode::kTooManyContexts,
                            "the daemon holds " + std::to_string(Live()) +
                                " live contexts (--max-contexts " + std::to_string(max_contexts_) +
                                "); delete one first")
        .With("limit", max_contexts_)
        .With("live", Live());
  }
  auto context = std::make_shared<CodeContext>(engine_, blocking_, options_, std::move(request));
  std::string id = context->request().id;
  contexts_[id] = context;
  Status started = co_await context->Start();
  if (!started.ok()) {
    if (auto it = contexts_.find(id); it != contexts_.end() && it->second == context) {
      contexts_.erase(it);
    }
    co_await context->End("failed");
    co_return started;
  }
  context->SaveNote();
  TrimEnded();
  co_return Created{context->Info(), true};
}

Result<std::shared_ptr<CodeContext>> ContextTable::Find(const std::string& id) {
  ForgetEarlierGenerations();
  if (auto it = contexts_.find(id); it != contexts_.end()) return it->second;
  Status s = Status::Error(ErrorCode::kContextNotFound, "no context \"" + id + "\"");
  if (forgotten_generation_ > 0 && forgotten_generation_ == engine_.generation()) {
    s = Status::Error(ErrorCode::kContextNotFound,
                      "no context \"" + id + "\" in generation " +
                          std::to_string(engine_.generation()) +
                          " (the guest was reset; earlier contexts are gone)");
    s.With("generation", engine_.generation());
  }
  s.With("id", id);
  return s;
}

asio::awaitable<Result<ContextInfo>> ContextTable::Reset(const std::string& id) {
  Result<std::shared_ptr<CodeContext>> found = Find(id);
  if (!found.ok()) co_return found.status();
  std::shared_ptr<CodeContext> old = *found;
  ContextCreateRequest request = old->request();
  co_await old->End("reset");
  auto fresh = std::make_shared<CodeContext>(engine_, blocking_, options_, std::move(request));
  contexts_[id] = fresh;
  Status started = co_await fresh->Start();
  fresh->SaveNote();  // ended ("failed") if it did not start
  if (!started.ok()) co_return started;
  co_return fresh->Info();
}

asio::awaitable<Result<ContextInfo>> ContextTable::Delete(const std::string& id) {
  Result<std::shared_ptr<CodeContext>> found = Find(id);
  if (!found.ok()) co_return found.status();
  std::shared_ptr<CodeContext> context = *found;
  contexts_.erase(id);
  co_await context->End("deleted");
  context->RemoveNote();
  co_return context->Info();
}

std::shared_ptr<CodeContext> ContextTable::TakeBackHeld(const ContextNote& note) {
  // Its interpreter's record came back running from its holder
  // (exec/exec_held.cc), with the channel the holder kept.
  if (note.exec.empty() || note.info.state == "ended") return nullptr;
  Result<ExecView> exec = engine_.Find(note.exec);
  if (!exec.ok() || exec->finished() || exec->Info().pid != note.info.pid) return nullptr;
  UniqueFd channel = engine_.TakeChannel(*exec);
  if (!channel) return nullptr;
  Log(LogLevel::kInfo, "context taken back from its interpreter's holder",
      json::Object()
          .Set("id", note.request.id)
          .Set("exec", exec->id())
          .Set("run_in_progress", note.run_in_progress));
  return CodeContext::TakeBack(engine_, blocking_, options_, note, *exec, std::move(channel));
}

void ContextTable::TakeBackLost() {
  std::vector<std::string> claimed;                                       // interpreters' exec ids
  for (const auto& [id, c] : contexts_) claimed.push_back(c->exec_id());  // an upgrade's
  if (!options_.context_notes_dir.empty()) {
    for (ContextNote& note : ReadContextNotes(options_.context_notes_dir)) {
      if (contexts_.count(note.info.id)) continue;  // an upgrade handed it over: it lives on
      std::string id = note.info.id;
      if (std::shared_ptr<CodeContext> back = TakeBackHeld(note)) {
        claimed.push_back(back->exec_id());
        contexts_[id] = std::move(back);
        continue;
      }
      EndContextNote(options_.context_notes_dir, note);
      contexts_[id] = CodeContext::Lost(engine_, blocking_, options_, std::move(note));
    }
  }
  // Interpreters no context took back (its note lost, or its context
  // ended): ended and forgotten.
  engine_.DiscardUnclaimedInternal(claimed);
  TrimEnded();
}

std::vector<ContextInfo> ContextTable::List() {
  ForgetEarlierGenerations();
  std::vector<ContextInfo> out;
  for (const auto& [id, c] : contexts_) out.push_back(c->Info());
  return out;
}

}  // namespace agentd
