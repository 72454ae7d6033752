// Uses only the installed headers: health, then a tree upload and download.
#include <agentd/client/client.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer URL TOKEN\n");
    return 2;
  }
  agentd::client::ClientOptions options;
  options.url = argv[1];
  options.token = argv[2];
  agentd::client::Client client(options);
  auto health = client.Health();
  if (!health.ok()) {
    std::fprintf(stderr, "health: %s\n", health.status().ToString().c_str());
    return 1;
  }
  std::printf("protocol=%lld bootstrapped=%s\n", static_cast<long long>(health->protocol),
              health->bootstrapped ? "true" : "false");
  return 0;
}
