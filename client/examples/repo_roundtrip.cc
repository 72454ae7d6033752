// Upload a local repository into a guest, run its tests there, and bring
// the results directory back, with modes, symlinks and empty directories
// intact.
//
//   repo_roundtrip URL TOKEN LOCAL_REPO LOCAL_RESULTS
#include <agentd/client/client.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s URL TOKEN LOCAL_REPO LOCAL_RESULTS\n", argv[0]);
    return 2;
  }
  agentd::client::Client client({.url = argv[1], .token = argv[2]});
  auto up = client.UploadDir(argv[3], "/workspace/repo", agentd::client::TarCompression::kGzip);
  if (!up.ok()) {
    std::fprintf(stderr, "upload: %s\n", up.status().ToString().c_str());
    return 1;
  }
  std::printf("uploaded %llu entries\n", static_cast<unsigned long long>(up->entries));
  agentd::ExecStartRequest tests;
  tests.command = "mkdir -p results && (ls -la > results/listing.txt; echo done > results/status)";
  tests.cwd = "/workspace/repo";
  auto run = client.Run(tests);
  if (!run.ok() || run->exit_code != 0) {
    std::fprintf(stderr, "tests did not run cleanly\n");
    return 1;
  }
  auto down = client.DownloadDir("/workspace/repo/results", argv[4]);
  if (!down.ok()) {
    std::fprintf(stderr, "download: %s\n", down.status().ToString().c_str());
    return 1;
  }
  std::printf("downloaded %llu entries into %s\n", static_cast<unsigned long long>(down->entries),
              argv[4]);
  return 0;
}
