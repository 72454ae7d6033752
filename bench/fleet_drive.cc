// Drives a fleet of guests from one host process with the C++ AsyncClient:
// one io_context on one thread for every guest, one AsyncClient (its own
// connection pool) per guest, no lock anywhere on the path. Used by the
// 64-guest test (tests/test_fleet_drive.py) and bench/fleet.
//
//   fleet_drive TARGETS MODE [--runs N] [--concurrency C] [--bytes B]
//
// TARGETS has one `URL TOKEN-FILE` per line (agentd-conformance --targets).
// Modes, each printing one JSON object on stdout:
//   check       per guest: a run whose output names the guest, a file
//               written and read back byte for byte, N runs of `true`
//   rate        N runs of `true` per guest, C at a time per guest: the
//               aggregate rate and the per-run p50/p99 across guests
//   throughput  per guest one run printing B bytes: summed output bytes/s
// "max_guests_in_flight" is the most guests with a call in flight at one
// moment: the proof that they were driven at once, not in turn.
// Exit status 0 when every guest did all its work, 1 otherwise.
#include <agentd/client/async_client.h>

#include <algorithm>
#include <asio.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using agentd::ExecStartRequest;
using agentd::client::AsyncClient;

struct Guest {
  std::string url;
  std::unique_ptr<AsyncClient> client;
  int index = 0;
  int in_flight = 0;
  int64_t runs_ok = 0;
  uint64_t stdout_bytes = 0;
  std::string error;  // the first failure
};

struct Fleet {
  std::vector<Guest> guests;
  std::vector<double> latencies_ms;
  int guests_in_flight = 0;
  int max_guests_in_flight = 0;

  void Begin(Guest& g) {
    if (g.in_flight++ == 0) {
      max_guests_in_flight = std::max(max_guests_in_flight, ++guests_in_flight);
    }
  }
  void End(Guest& g) {
    if (--g.in_flight == 0) --guests_in_flight;
  }
};

// Counts a call in flight on a guest while it lives. (Not a coroutine
// taking the call's awaitable as a parameter: GCC 12 frees such a
// by-value coroutine parameter twice.)
class InFlight {
 public:
  InFlight(Fleet& fleet, Guest& g) : fleet_(fleet), g_(g) { fleet_.Begin(g_); }
  ~InFlight() { Done(); }
  void Done() {
    if (!done_) fleet_.End(g_);
    done_ = true;
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  Fleet& fleet_;
  Guest& g_;
  bool done_ = false;
};

void Fail(Guest& g, const std::string& what) {
  if (g.error.empty()) g.error = what;
}

std::string ReadToken(const std::string& path) {
  std::ifstream f(path);
  std::string token;
  std::getline(f, token);
  return token;
}

ExecStartRequest Argv(std::vector<std::string> argv) {
  ExecStartRequest r;
  r.argv = std::move(argv);
  return r;
}

asio::awaitable<void> RunTrue(Fleet& fleet, Guest& g, int runs) {
  for (int i = 0; i < runs && g.error.empty(); ++i) {
    auto began = Clock::now();
    // Both built first, the options too (not left to the default argument):
    // GCC 12 mishandles a braced list inside a co_await expression.
    ExecStartRequest request = Argv({"true"});
    agentd::client::RunOptions options;
    InFlight r_call(fleet, g);
    auto r = co_await g.client->Run(std::move(request), std::move(options));
    r_call.Done();
    if (!r.ok()) {
      Fail(g, "run true: " + r.status().ToString());
    } else if (r->exit_code != 0) {
      Fail(g, "run true exited " + std::to_string(r->exit_code));
    } else {
      ++g.runs_ok;
      fleet.latencies_ms.push_back(
          std::chrono::duration<double, std::milli>(Clock::now() - began).count());
    }
  }
}

asio::awaitable<void> Check(Fleet& fleet, Guest& g, int runs) {
  std::string name = "guest-" + std::to_string(g.index);
  ExecStartRequest request = Argv({"echo", name});
  agentd::client::RunOptions options;
  InFlight echo_call(fleet, g);
  auto echo = co_await g.client->Run(std::move(request), std::move(options));
  echo_call.Done();
  if (!echo.ok() || echo->stdout_data != name + "\n") {
    Fail(g,
         "echo: " + (echo.ok() ? "printed '" + echo->stdout_data + "'" : echo.status().ToString()));
    co_return;
  }
  // Every byte value, and the guest's name, so a mix-up between guests shows.
  std::string payload = name + ":";
  for (int i = 0; i < 4096; ++i) payload.push_back(static_cast<char>(i % 256));
  std::string path = "/tmp/fleet-drive-" + name;
  InFlight wrote_call(fleet, g);
  agentd::client::WriteOptions write_options;
  auto wrote = co_await g.client->WriteFile(path, payload, write_options);
  wrote_call.Done();
  if (!wrote.ok()) {
    Fail(g, "write: " + wrote.status().ToString());
    co_return;
  }
  InFlight read_call(fleet, g);
  agentd::client::ReadOptions read_options;
  auto read = co_await g.client->ReadFile(path, read_options);
  read_call.Done();
  if (!read.ok() || *read != payload) {
    Fail(g, "read back: " + (read.ok() ? "differs" : read.status().ToString()));
    co_return;
  }
  InFlight removed_call(fleet, g);
  std::optional<std::string> any_version;
  auto removed = co_await g.client->Remove(path, false, any_version);
  removed_call.Done();
  if (!removed.ok()) Fail(g, "remove: " + removed.status().ToString());
  co_await RunTrue(fleet, g, runs);
}

asio::awaitable<void> Throughput(Fleet& fleet, Guest& g, uint64_t bytes) {
  std::string id = agentd::client::MintExecId("tput");
  ExecStartRequest request = Argv({"head", "-c", std::to_string(bytes), "/dev/zero"});
  InFlight started_call(fleet, g);
  auto started = co_await g.client->StartExec(id, std::move(request));
  started_call.Done();
  if (!started.ok()) {
    Fail(g, "start: " + started.status().ToString());
    co_return;
  }
  agentd::client::StreamCallbacks cb;
  cb.on_stdout = [&g](uint64_t, std::string_view b) { g.stdout_bytes += b.size(); };
  agentd::client::StreamCursors from_start;
  InFlight done_call(fleet, g);
  auto done = co_await g.client->Stream(id, from_start, cb);
  done_call.Done();
  if (!done.ok()) Fail(g, "stream: " + done.status().ToString());
  InFlight acked_call(fleet, g);
  auto acked = co_await g.client->AckExec(id);
  acked_call.Done();
  if (!acked.ok()) Fail(g, "ack: " + acked.status().ToString());
  if (g.stdout_bytes != bytes) Fail(g, "got " + std::to_string(g.stdout_bytes) + " bytes");
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s TARGETS check|rate|throughput [--runs N] [--concurrency C] "
                 "[--bytes B]\n",
                 argv[0]);
    return 2;
  }
  std::string mode = argv[2];
  int runs = 20, concurrency = 1;
  uint64_t bytes = 1 << 20;
  for (int i = 3; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--runs") {
      runs = std::atoi(argv[i + 1]);
    } else if (flag == "--concurrency") {
      concurrency = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--bytes") {
      bytes = std::strtoull(argv[i + 1], nullptr, 10);
    } else {
      std::fprintf(stderr, "fleet_drive: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (mode != "check" && mode != "rate" && mode != "throughput") {
    std::fprintf(stderr, "fleet_drive: unknown mode %s\n", mode.c_str());
    return 2;
  }

  asio::io_context io(1);
  Fleet fleet;
  std::ifstream targets(argv[1]);
  std::string url, token_file;
  while (targets >> url >> token_file) {
    Guest g;
    g.url = url;
    g.index = static_cast<int>(fleet.guests.size());
    agentd::client::ClientOptions options;
    options.url = url;
    options.token = ReadToken(token_file);
    options.max_idle_connections = static_cast<size_t>(concurrency);
    g.client = std::make_unique<AsyncClient>(io.get_executor(), std::move(options));
    fleet.guests.push_back(std::move(g));
  }
  if (fleet.guests.empty()) {
    std::fprintf(stderr, "fleet_drive: no targets in %s\n", argv[1]);
    return 2;
  }

  auto began = Clock::now();
  for (Guest& g : fleet.guests) {
    if (mode == "check") {
      asio::co_spawn(io, Check(fleet, g, runs), asio::detached);
    } else if (mode == "rate") {
      for (int c = 0; c < concurrency; ++c) {
        int share = runs / concurrency + (c < runs % concurrency ? 1 : 0);
        asio::co_spawn(io, RunTrue(fleet, g, share), asio::detached);
      }
    } else {
      asio::co_spawn(io, Throughput(fleet, g, bytes), asio::detached);
    }
  }
  io.run();
  double seconds = std::chrono::duration<double>(Clock::now() - began).count();

  int64_t total_runs = 0;
  uint64_t total_bytes = 0;
  int ok = 0;
  std::string failures;
  for (const Guest& g : fleet.guests) {
    total_runs += g.runs_ok;
    total_bytes += g.stdout_bytes;
    if (g.error.empty()) {
      ++ok;
    } else {
      if (!failures.empty()) failures += "; ";
      failures += g.url + ": " + g.error;
    }
  }
  for (char& c : failures) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  std::printf(
      "{\"mode\": \"%s\", \"guests\": %zu, \"ok_guests\": %d, \"max_guests_in_flight\": %d, "
      "\"runs\": %lld, \"seconds\": %.4f, \"runs_per_sec\": %.1f, \"p50_ms\": %.3f, "
      "\"p99_ms\": %.3f, \"stdout_bytes\": %llu, \"stdout_bytes_per_sec\": %.0f, "
      "\"failures\": \"%s\"}\n",
      mode.c_str(), fleet.guests.size(), ok, fleet.max_guests_in_flight,
      static_cast<long long>(total_runs), seconds, static_cast<double>(total_runs) / seconds,
      Percentile(fleet.latencies_ms, 0.50), Percentile(fleet.latencies_ms, 0.99),
      static_cast<unsigned long long>(total_bytes), static_cast<double>(total_bytes) / seconds,
      failures.c_str());
  return ok == static_cast<int>(fleet.guests.size()) ? 0 : 1;
}
