// agentd-conformance: checks every clause of docs/PROTOCOL.md against a live
// daemon. Usage:
//   agentd-conformance --url URL --token-file F [--filter PATTERN] [--junit out.xml]
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "suite.h"

namespace {

int Usage(const char* why) {
  std::fprintf(stderr,
               "agentd-conformance: %s\n"
               "usage: agentd-conformance --url URL (--token-file F | --token T)\n"
               "                          [--filter PATTERN] [--junit FILE] [--scratch-root DIR]\n"
               "                          [--small-fs GUEST_DIR] [--list]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace agentd::conformance;
  SuiteOptions options;
  options.client.url.clear();
  bool list = false;
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
    } else if (arg == "--url" && (v = value("--url"))) {
      options.client.url = v;
    } else if (arg == "--token" && (v = value("--token"))) {
      options.client.token = v;
    } else if (arg == "--token-file" && (v = value("--token-file"))) {
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
    } else if (arg == "--junit" && (v = value("--junit"))) {
      options.junit_path = v;
    } else if (arg == "--small-fs" && (v = value("--small-fs"))) {
      options.small_fs = v;
    } else if (arg == "--scratch-root" && (v = value("--scratch-root"))) {
      options.scratch_root = v;
    } else if (arg == "--help" || arg == "-h") {
      Usage("checks an agentd guest against the published protocol");
      return 0;
    } else {
      return Usage(("unknown or incomplete argument " + arg).c_str());
    }
  }
  if (list) {
    for (const Check& c : AllChecks()) std::printf("%s: %s\n", c.area.c_str(), c.name.c_str());
    return 0;
  }
  if (options.client.url.empty()) return Usage("--url is required");
  if (options.client.token.empty()) return Usage("--token-file or --token is required");
  return Suite(options).Run();
}
