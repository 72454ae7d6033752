// An exec engine on a private state directory for unit tests: no cgroups
// (rlimit mode), its own io_context, and a helper that runs one coroutine
// to its end. The engine's reaper and timers keep the context busy, so a
// coroutine's completion stops it.
#pragma once

#include <asio.hpp>
#include <optional>
#include <stdexcept>
#include <utility>

#include "auth/bootstrap_state.h"
#include "exec/exec_engine.h"
#include "testing/temp_dir.h"

namespace agentd::testing {

class EngineFixture {
 public:
  EngineFixture() : engine_(io_, blocking_, Options(dir_), bootstrap_) {
    Status s = engine_.Open();
    if (!s.ok()) throw std::runtime_error("engine: " + s.message());
  }
  ~EngineFixture() {
    engine_.Shutdown();
    blocking_.join();
  }

  ExecEngine& engine() { return engine_; }
  asio::thread_pool& blocking() { return blocking_; }
  const TempDir& dir() const { return dir_; }
  // The engine's side of an exec, for tests that check what the engine
  // did to it (the routes see only the view).
  static const ExecRecord& Record(const ExecView& exec) { return *exec.record(); }

  // Runs `work` (an asio::awaitable<T>) on the engine's thread to its end.
  template <typename T>
  T Await(asio::awaitable<T> work) {
    std::optional<T> out;
    asio::co_spawn(io_, std::move(work), [this, &out](std::exception_ptr e, T value) {
      if (e) std::rethrow_exception(e);
      out.emplace(std::move(value));
      io_.stop();
    });
    io_.restart();
    io_.run();
    return std::move(*out);
  }

 private:
  static ExecEngineOptions Options(const TempDir& dir) {
    ExecEngineOptions o;
    o.state_dir = dir / "state";
    o.limits_mode = "rlimit";  // no cgroups in a unit test
    o.reset_cgroup = false;
    // A holder outlives the engine by design (proc/exec_holder.h): one whose
    // exec ended unreported would wait for a daemon forever after the test
    // process exits. Crash survival is tested against the real daemon.
    o.exec_holder = false;
    return o;
  }

  TempDir dir_;
  asio::io_context io_{1};
  asio::thread_pool blocking_{1};
  BootstrapState bootstrap_;
  ExecEngine engine_;
};

}  // namespace agentd::testing
