// Upgrade in place (docs/OPERATIONS.md, "Upgrading") keeps every idle
// context: its interpreter stays the daemon's child (the PID does not
// change), its exec record goes over with the engine's (pipes, cgroup),
// and what only the context knows goes into upgrade.json's "contexts":
// the create request (runtime, cwd, env, limits, egress), the channel's
// descriptor, where the next cell's output begins, the token nonce and
// sequence, the counters and the answers kept for retried run_ids.
// A run in progress, or queued, refuses the upgrade: its answer is being
// built from a conversation this binary cannot describe midway.
#include <fcntl.h>

#include "run/code_context.h"
#include "run/code_context_parts.h"
#include "run/context_table.h"

namespace agentd {
namespace {

int64_t IntOf(const json::Object& o, std::string_view key) {
  const json::Value* v = o.Find(key);
  return v && v->is_int() ? v->as_int() : -1;
}

std::string StringOf(const json::Object& o, std::string_view key) {
  const json::Value* v = o.Find(key);
  return v && v->is_string() ? v->as_string() : std::string();
}

}  // namespace

Result<json::Object> CodeContext::HandOver(std::vector<int>& fds) {
  if (busy_ || pumping_ || !queue_.empty()) {
    return Status::Error(
               ErrorCode::kExecRunning,
               "context \"" + request_.id + "\" has a run in progress; retry once it answered")
        .With("id", request_.id);
  }
  json::Array replay;
  for (const std::shared_ptr<Pending>& p : replay_) {
    // An idle context's kept answers are all done; only a run's own answer
    // (never an error: those are for ended contexts) is worth replaying.
    if (!p->done || !p->answer.ok() || !p->request.run_id) continue;
    replay.emplace_back(json::Object()
                            .Set("run_id", *p->request.run_id)
                            .Set("digest", p->digest)
                            .Set("answer", *p->answer));
  }
  engine_.KeepOnUpgrade(*exec_);
  fds.push_back(channel_->native_handle());
  return json::Object()
      .Set("request", EncodeContextCreateRequest(request_))
      .Set("exec", exec_->id())
      .Set("channel_fd", channel_->native_handle())
      .Set("cwd", cwd_)
      .Set("nonce", nonce_)
      .Set("created_at_ns",
           static_cast<int64_t>(
               std::chrono::duration_cast<std::chrono::nanoseconds>(created_at_.time_since_epoch())
                   .count()))
      .Set("seq", seq_)
      .Set("runs", runs_)
      .Set("out_at", static_cast<int64_t>(out_at_))
      .Set("err_at", static_cast<int64_t>(err_at_))
      .Set("replay", std::move(replay));
}

Result<std::shared_ptr<CodeContext>> CodeContext::Adopt(ExecEngine& engine,
                                                        asio::thread_pool& blocking,
                                                        const CodeRunOptions& options,
                                                        const json::Object& handed) {
  // Inherited without close-on-exec for the one execve: closed on the next.
  int fd = static_cast<int>(IntOf(handed, "channel_fd"));
  if (fd < 0) return Status::InvalidRequest("a handed-over context has no channel");
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  UniqueFd channel(fd);
  const json::Value* req = handed.Find("request");
  Result<ContextCreateRequest> request =
      req ? DecodeContextCreateRequest(*req) : Status::InvalidRequest("no request");
  if (!request.ok()) return request.status();
  Result<ExecView> exec = engine.Find(StringOf(handed, "exec"));
  if (!exec.ok()) return exec.status();
  auto c = std::make_shared<CodeContext>(engine, blocking, options, std::move(*request));
  c->exec_ = *exec;
  c->channel_ =
      std::make_shared<asio::posix::stream_descriptor>(engine.executor(), channel.release());
  c->cwd_ = StringOf(handed, "cwd");
  c->nonce_ = StringOf(handed, "nonce");
  c->created_at_ = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(IntOf(handed, "created_at_ns"))));
  c->seq_ = std::max<int64_t>(0, IntOf(handed, "seq"));
  c->runs_ = std::max<int64_t>(0, IntOf(handed, "runs"));
  c->out_at_ = static_cast<uint64_t>(std::max<int64_t>(0, IntOf(handed, "out_at")));
  c->err_at_ = static_cast<uint64_t>(std::max<int64_t>(0, IntOf(handed, "err_at")));
  if (const json::Value* r = handed.Find("replay"); r && r->is_array()) {
    for (const json::Value& e : r->as_array()) {
      const json::Value* answer = e.Find("answer");
      if (!answer || !answer->is_object() || !e.is_object()) continue;
      auto p = std::make_shared<Pending>();
      p->request.run_id = StringOf(e.as_object(), "run_id");
      p->digest = StringOf(e.as_object(), "digest");
      p->answer = *answer;
      p->done = true;
      c->replay_.push_back(std::move(p));
    }
  }
  return c;
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
    if (!e.is_object()) continue;
    Result<std::shared_ptr<CodeContext>> c =
        CodeContext::Adopt(engine_, blocking_, options_, e.as_object());
    if (c.ok()) {
      contexts_[(*c)->request().id] = *c;
    } else {
      dropped.push_back(c.status().message());
    }
  }
  return dropped;
}

}  // namespace agentd
