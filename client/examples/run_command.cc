// Run one command in a guest and print what it printed and how it ended.
//
//   run_command http://127.0.0.1:7700 "$TOKEN" 'make -j2 && ./test'
#include <agentd/client/client.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s URL TOKEN 'SHELL COMMAND'\n", argv[0]);
    return 2;
  }
  agentd::client::Client client({.url = argv[1], .token = argv[2]});
  agentd::ExecStartRequest request;
  request.command = argv[3];
  request.timeout_sec = 600;  // the daemon kills the whole group after 10 minutes
  auto result = client.Run(request);
  if (!result.ok()) {
    std::fprintf(stderr, "run failed: %s\n", result.status().ToString().c_str());
    return 1;
  }
  std::fwrite(result->stdout_data.data(), 1, result->stdout_data.size(), stdout);
  std::fwrite(result->stderr_data.data(), 1, result->stderr_data.size(), stderr);
  std::fprintf(stderr, "exit %lld in %lld ms%s\n", static_cast<long long>(result->exit_code),
               static_cast<long long>(result->duration_ms),
               result->timed_out ? " (timed out)" : "");
  return static_cast<int>(result->exit_code);
}
