// Start a long job detached, and follow its output across harness restarts.
// The only state kept between runs is a small file holding the exec id and
// the two stream cursors; run this program again after killing it and it
// resumes exactly where it stopped: no byte repeated, none lost.
//
//   reattach_long_job URL TOKEN STATE_FILE
#include <agentd/client/client.h>

#include <cstdio>
#include <fstream>

namespace {

struct Saved {
  std::string id;
  agentd::client::StreamCursors cursors;
};

bool Load(const char* path, Saved* s) {
  std::ifstream in(path);
  return static_cast<bool>(in >> s->id >> s->cursors.stdout_next >> s->cursors.stderr_next);
}

void Store(const char* path, const Saved& s) {
  std::string tmp = std::string(path) + ".tmp";
  std::ofstream(tmp) << s.id << ' ' << s.cursors.stdout_next << ' ' << s.cursors.stderr_next
                     << '\n';
  std::rename(tmp.c_str(), path);  // atomic: a crash never leaves half a file
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s URL TOKEN STATE_FILE\n", argv[0]);
    return 2;
  }
  agentd::client::Client client({.url = argv[1], .token = argv[2]});
  Saved saved;
  if (!Load(argv[3], &saved)) {
    saved.id = agentd::client::MintExecId("job");
    Store(argv[3], saved);  // persist the id before starting: a retry reuses it
    agentd::ExecStartRequest request;
    request.command = "for i in $(seq 1 60); do echo step $i; sleep 1; done";
    auto started = client.StartExec(saved.id, request);  // idempotent by id
    if (!started.ok()) {
      std::fprintf(stderr, "start: %s\n", started.status().ToString().c_str());
      return 1;
    }
  }
  agentd::client::StreamCallbacks callbacks;
  callbacks.on_stdout = [](uint64_t, std::string_view bytes) {
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    std::fflush(stdout);
  };
  callbacks.on_cursors = [&](const agentd::client::StreamCursors& c) {
    saved.cursors = c;
    Store(argv[3], saved);
  };
  auto exited = client.Stream(saved.id, saved.cursors, callbacks);
  if (!exited.ok()) {
    std::fprintf(stderr, "stream: %s\n", exited.status().ToString().c_str());
    return 1;
  }
  (void)client.AckExec(saved.id);
  std::remove(argv[3]);
  return static_cast<int>(exited->exit_code.value_or(1));
}
