// agentd-conformance: checks every clause of docs/PROTOCOL.md against a live
// daemon. Usage:
//   agentd-conformance --url URL --token-file F [--filter PATTERN] [--junit out.xml]
//   agentd-conformance --targets FILE [--parallel N] [--filter PATTERN]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fleet.h"
#include "suite.h"

namespace {

constexpr const char* kSynopsis =
    "usage: agentd-conformance --url URL (--token-file F | --token T)\n"
    "                          [--filter PATTERN] [--junit FILE] [--scratch-root DIR]\n"
    "                          [--small-fs GUEST_DIR] [--reuse-path GUEST_DIR\n"
    "                          [--reuse-scratch GUEST_DIR] [--reuse-ipc] [--reuse-quarantine]] "
    "[--list]\n"
    "                          [--upgrade-command GUEST_COMMAND]\n"
    "       agentd-conformance --targets FILE [--parallel N] [--filter PATTERN]\n"
    "                          [--scratch-root DIR] [--small-fs GUEST_DIR]\n";

int Usage(const char* why) {
  std::fprintf(stderr, "agentd-conformance: %s\n%s", why, kSynopsis);
  return 2;
}

// --help: on stdout, and complete enough to be the man page (help2man).
int Help() {
  std::printf(
      "agentd-conformance: checks a live agentd guest against the published protocol.\n\n%s"
      "\n"
      "Runs named checks of every clause of docs/PROTOCOL.md against the daemon at\n"
      "URL, printing PASS, FAIL or SKIP, the name, the time and (for FAIL and SKIP)\n"
      "why, one line per check, then \"N passed, M failed[, K skipped]\".\n"
      "Run it only against a guest you can spare: it runs a fork bomb and a memory\n"
      "hog under limits, fills --small-fs and execs as nobody.\n"
      "\n"
      "Options:\n"
      "  --url URL            http://HOST:PORT, unix:/path/to/socket or vsock:CID:PORT\n"
      "  --token-file FILE    the bearer token the daemon was bootstrapped with\n"
      "  --token TOKEN        the same, on the command line (visible in ps)\n"
      "  --filter PATTERN     run only checks whose \"area: name\" contains PATTERN\n"
      "  --junit FILE         also write JUnit XML, one testcase per check\n"
      "  --scratch-root DIR   guest directory for the suite's scratch files (/tmp)\n"
      "  --small-fs DIR       a guest directory on a small file system, for the\n"
      "                       disk-pressure check (skipped without it)\n"
      "  --reuse-path DIR     a reset path of the guest (--reset-path): runs the\n"
      "                       reuse group last, which resets the guest twice and\n"
      "                       hands it back with the same token (skipped without it)\n"
      "  --reuse-scratch DIR  a scratch dir of the guest (--reset-scratch) the reuse\n"
      "                       group leaves a canary in\n"
      "  --reuse-ipc          the guest sweeps System V IPC (--reset-ipc or PID 1)\n"
      "  --reuse-quarantine   also check that a guest the reset cannot clean (an\n"
      "                       immutable file, chattr +i, in the reset path) is\n"
      "                       quarantined; the guest then needs a restart and\n"
      "                       `chattr -i` of that file (skipped without it)\n"
      "  --upgrade-command CMD  a guest shell command that upgrades the daemon in\n"
      "                       place (e.g. \"agentd --upgrade\"): runs the upgrade\n"
      "                       group, execs started before it must run on after it\n"
      "                       (skipped without it)\n"
      "  --list               print every check as \"area: name\" and exit\n"
      "  --targets FILE       check every guest FILE lists, one \"URL TOKEN-FILE\" a\n"
      "                       line (# comments): a row per guest and a total\n"
      "  --parallel N         with --targets: guests checked at once (8)\n"
      "  -h, --help           print this help and exit\n"
      "\n"
      "Exit status: 0 when nothing failed and something passed; 1 when a check\n"
      "failed or none passed; 2 for a usage error. With --targets: 0 when no guest\n"
      "failed, 1 when one did, 2 for a usage error.\n",
      kSynopsis);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace agentd::conformance;
  SuiteOptions options;
  options.client.url.clear();
  bool list = false;
  std::string targets_path;
  std::string parallel;
  std::vector<std::string> single_only;  // options that name one guest
  std::vector<std::string> shared;       // options every guest of a fleet gets
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) return nullptr;
      (void)name;
      return argv[++i];
    };
    const char* v = nullptr;
    if (arg == "--list") {
      list = true;
    } else if (arg == "--targets" && (v = value("--targets"))) {
      targets_path = v;
    } else if (arg == "--parallel" && (v = value("--parallel"))) {
      parallel = v;
    } else if (arg == "--url" && (v = value("--url"))) {
      options.client.url = v;
      single_only.push_back(arg);
    } else if (arg == "--token" && (v = value("--token"))) {
      options.client.token = v;
      single_only.push_back(arg);
    } else if (arg == "--token-file" && (v = value("--token-file"))) {
      single_only.push_back(arg);
      std::ifstream in(v);
      if (!in) return Usage("cannot read the token file");
      std::stringstream ss;
      ss << in.rdbuf();
      options.client.token = ss.str();
      while (!options.client.token.empty() &&
             (options.client.token.back() == '\n' || options.client.token.back() == ' ')) {
        options.client.token.pop_back();
      }
    } else if (arg == "--filter" && (v = value("--filter"))) {
      options.filter = v;
      shared.insert(shared.end(), {arg, v});
    } else if (arg == "--junit" && (v = value("--junit"))) {
      options.junit_path = v;
      single_only.push_back(arg);
    } else if (arg == "--small-fs" && (v = value("--small-fs"))) {
      options.small_fs = v;
      shared.insert(shared.end(), {arg, v});
    } else if (arg == "--reuse-path" && (v = value("--reuse-path"))) {
      options.reuse_path = v;
      shared.insert(shared.end(), {arg, v});
    } else if (arg == "--reuse-scratch" && (v = value("--reuse-scratch"))) {
      options.reuse_scratch = v;
      shared.insert(shared.end(), {arg, v});
    } else if (arg == "--reuse-ipc") {
      options.reuse_ipc = true;
      shared.push_back(arg);
    } else if (arg == "--upgrade-command" && (v = value("--upgrade-command"))) {
      options.upgrade_command = v;
      shared.insert(shared.end(), {arg, v});
    } else if (arg == "--reuse-quarantine") {
      options.reuse_quarantine = true;
      shared.push_back(arg);
    } else if (arg == "--scratch-root" && (v = value("--scratch-root"))) {
      options.scratch_root = v;
      shared.insert(shared.end(), {arg, v});
    } else if (arg == "--help" || arg == "-h") {
      return Help();
    } else {
      return Usage(("unknown or incomplete argument " + arg).c_str());
    }
  }
  if (!targets_path.empty()) {
    if (list) single_only.push_back("--list");
    if (!single_only.empty()) {
      return Usage(
          (single_only.front() + " names one guest; with --targets each line does").c_str());
    }
    FleetOptions fleet;
    fleet.self = "/proc/self/exe";
    fleet.suite_args = shared;
    if (!parallel.empty()) {
      char* end = nullptr;
      long n = std::strtol(parallel.c_str(), &end, 10);
      if (*end != '\0' || n < 1 || n > 1024) {
        return Usage(
            ("--parallel wants a number from 1 to 1024, got \"" + parallel + "\"").c_str());
      }
      fleet.parallel = static_cast<int>(n);
    }
    std::ifstream in(targets_path);
    if (!in) return Usage(("cannot read the targets file " + targets_path).c_str());
    std::stringstream text;
    text << in.rdbuf();
    agentd::Result<std::vector<Target>> targets = ParseTargets(text.str());
    if (!targets.ok()) return Usage((targets_path + ": " + targets.status().message()).c_str());
    return RunFleet(*targets, fleet);
  }
  if (!parallel.empty()) return Usage("--parallel needs --targets");
  if (list) {
    for (const Check& c : AllChecks()) std::printf("%s: %s\n", c.area.c_str(), c.name.c_str());
    return 0;
  }
  if (options.client.url.empty()) return Usage("--url is required");
  if (options.client.token.empty()) return Usage("--token-file or --token is required");
  return Suite(options).Run();
}
