// The command table: every agentctl command is one row, and dispatch,
// usage lines, --help and the manifest all come from these rows.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/client/client.h"
#include "output.h"

namespace agentd::cli {

struct FlagSpec {
  std::string_view name;     // without "--"
  std::string_view metavar;  // empty for a switch
  std::string_view help;
  bool repeatable = false;
};

struct ParsedArgs {
  std::map<std::string, std::vector<std::string>, std::less<>> flags;
  std::vector<std::string> positional;

  bool Has(std::string_view name) const { return flags.find(name) != flags.end(); }
  std::optional<std::string> Get(std::string_view name) const;
  std::vector<std::string> All(std::string_view name) const;
};

struct GlobalOptions {
  std::string url;
  std::string token;
  double timeout_sec = 0;  // 0: the client's defaults
  bool json = false;
  bool token_on_command_line = false;  // --token, visible to every user in ps
};

class Context {
 public:
  Context(GlobalOptions globals, ParsedArgs args, Output& out)
      : globals_(std::move(globals)), args_(std::move(args)), out_(out) {}
  const GlobalOptions& globals() const { return globals_; }
  const ParsedArgs& args() const { return args_; }
  Output& out() { return out_; }
  client::ClientOptions client_options() const;
  client::Client& client();

 private:
  GlobalOptions globals_;
  ParsedArgs args_;
  Output& out_;
  std::unique_ptr<client::Client> client_;
};

struct Command {
  std::string_view name;
  std::string_view args;  // positional synopsis, e.g. "PATH" or "-- CMD [ARGS...]"
  std::string_view summary;
  std::vector<FlagSpec> flags;
  size_t min_positional;
  size_t max_positional;  // SIZE_MAX for "any number"
  int (*run)(Context& ctx);
};

const std::vector<Command>& Commands();
const std::vector<FlagSpec>& GlobalFlags();

// A token file's contents without the trailing newline.
Result<std::string> ReadTokenFile(const std::string& path);

// Parses and runs; returns the process exit status.
int RunCli(int argc, char** argv);

}  // namespace agentd::cli
