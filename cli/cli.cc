// Argument parsing, help and dispatch for agentctl, all driven by the
// command table (commands.cc).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "command.h"
#include "exit_codes.h"

namespace agentd::cli {

std::optional<std::string> ParsedArgs::Get(std::string_view name) const {
  auto it = flags.find(name);
  if (it == flags.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> ParsedArgs::All(std::string_view name) const {
  auto it = flags.find(name);
  return it == flags.end() ? std::vector<std::string>{} : it->second;
}

const std::vector<FlagSpec>& GlobalFlags() {
  static const std::vector<FlagSpec> flags = {
      {"url", "URL", "daemon URL: http://HOST:PORT, unix:/path or vsock:CID:PORT (env AGENTD_URL)"},
      {"token", "TOKEN", "bearer token (env AGENTD_TOKEN)"},
      {"token-file", "FILE", "read the bearer token from FILE (env AGENTD_TOKEN_FILE)"},
      {"timeout", "SECONDS", "deadline for each request to the daemon"},
      {"json", "", "print exactly one JSON envelope on stdout"},
      {"help", "", "show help"},
  };
  return flags;
}

client::ClientOptions Context::client_options() const {
  client::ClientOptions o;
  o.url = globals_.url;
  o.token = globals_.token;
  if (globals_.timeout_sec > 0) {
    o.request_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(globals_.timeout_sec * 1000));
    o.connect_timeout = std::min(o.connect_timeout, o.request_timeout);
  }
  return o;
}

client::Client& Context::client() {
  if (!client_) client_ = std::make_unique<client::Client>(client_options());
  return *client_;
}

Result<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidRequest("cannot read token file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token = ss.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  return token;
}

namespace {

const Command* FindCommand(std::string_view name) {
  for (const Command& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

const FlagSpec* FindFlag(const std::vector<FlagSpec>& specs, std::string_view name) {
  for (const FlagSpec& f : specs) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string FlagLine(const FlagSpec& f) {
  std::string left = "  --" + std::string(f.name);
  if (!f.metavar.empty()) left += " " + std::string(f.metavar);
  if (left.size() < 28)
    left.resize(28, ' ');
  else
    left += "\n" + std::string(28, ' ');
  return left + std::string(f.help) + (f.repeatable ? " (repeatable)" : "") + "\n";
}

std::string GlobalHelp() {
  std::string text =
      "agentctl: drive an agentd guest from the command line.\n\n"
      "usage: agentctl [GLOBAL FLAGS] COMMAND [FLAGS] [ARGS]\n\ncommands:\n";
  for (const Command& c : Commands()) {
    std::string left = "  " + std::string(c.name);
    left.resize(14, ' ');
    text += left + std::string(c.summary) + "\n";
  }
  text += "\nglobal flags:\n";
  for (const FlagSpec& f : GlobalFlags()) text += FlagLine(f);
  text +=
      "\n'agentctl COMMAND --help' describes a command; 'agentctl manifest' lists everything "
      "as JSON.\n";
  return text;
}

std::string CommandHelp(const Command& c) {
  std::string text = "usage: agentctl " + std::string(c.name);
  if (!c.flags.empty()) text += " [FLAGS]";
  if (!c.args.empty()) text += " " + std::string(c.args);
  text += "\n\n" + std::string(c.summary) + "\n";
  if (!c.flags.empty()) {
    text += "\nflags:\n";
    for (const FlagSpec& f : c.flags) text += FlagLine(f);
  }
  return text;
}

}  // namespace

int RunCli(int argc, char** argv) {
  // --json decides the shape of every later error, so find it first.
  bool json_mode = false;
  for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i) {
    if (std::string_view(argv[i]) == "--json") json_mode = true;
  }
  Output out(json_mode);
  GlobalOptions globals;
  globals.json = json_mode;
  ParsedArgs args;
  const Command* command = nullptr;
  bool help = false;
  std::optional<std::string> token, token_file, url, timeout;

  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) args.positional.emplace_back(argv[i]);
      break;
    }
    if (arg == "-h") {
      help = true;
      continue;
    }
    if (!arg.starts_with("--") || arg.size() == 2) {
      if (!command) {
        command = FindCommand(arg);
        if (!command) return out.UsageError("unknown command '" + std::string(arg) + "'");
      } else {
        args.positional.emplace_back(arg);
      }
      continue;
    }
    std::string_view name = arg.substr(2);
    std::optional<std::string> value;
    if (size_t eq = name.find('='); eq != std::string_view::npos) {
      value = std::string(name.substr(eq + 1));
      name = name.substr(0, eq);
    }
    // After the command name its own flags win over a global of the same
    // name (exec --timeout is the remote timeout; the global one comes first).
    const FlagSpec* spec = command ? FindFlag(command->flags, name) : nullptr;
    bool global = false;
    if (!spec) {
      spec = FindFlag(GlobalFlags(), name);
      global = spec != nullptr;
    }
    if (!spec) {
      return out.UsageError("unknown flag --" + std::string(name) +
                            (command ? " for '" + std::string(command->name) + "'" : ""));
    }
    if (spec->metavar.empty()) {
      if (value) return out.UsageError("--" + std::string(name) + " takes no value");
      value = "";
    } else if (!value) {
      if (i + 1 >= argc)
        return out.UsageError("--" + std::string(name) + " needs " + std::string(spec->metavar));
      value = argv[++i];
    }
    if (global) {
      if (name == "url") url = value;
      if (name == "token") token = value;
      if (name == "token-file") token_file = value;
      if (name == "timeout") timeout = value;
      if (name == "help") help = true;
      continue;
    }
    if (!spec->repeatable && args.Has(name)) {
      return out.UsageError("--" + std::string(name) + " given twice");
    }
    args.flags[std::string(name)].push_back(*value);
  }

  if (help || !command) {
    if (!command && !help) return out.UsageError("no command given");
    std::string text = command ? CommandHelp(*command) : GlobalHelp();
    std::fputs(text.c_str(), stdout);
    return kExitOk;
  }
  if (args.positional.size() < command->min_positional ||
      args.positional.size() > command->max_positional) {
    return out.UsageError(
        "'" + std::string(command->name) + "' expects " +
        (command->args.empty() ? std::string("no arguments") : std::string(command->args)));
  }

  const char* env_url = std::getenv("AGENTD_URL");
  globals.url = url ? *url : (env_url ? env_url : "http://127.0.0.1:7700");
  const char* env_token_file = std::getenv("AGENTD_TOKEN_FILE");
  if (!token_file && env_token_file && *env_token_file) token_file = env_token_file;
  if (token) {
    globals.token = *token;
    globals.token_on_command_line = true;
  } else if (token_file) {
    Result<std::string> t = ReadTokenFile(*token_file);
    if (!t.ok()) return out.Fail(t.status(), kExitUsage);
    globals.token = *t;
  } else if (const char* env_token = std::getenv("AGENTD_TOKEN")) {
    globals.token = env_token;
  }
  if (timeout) {
    char* end = nullptr;
    globals.timeout_sec = std::strtod(timeout->c_str(), &end);
    if (end == timeout->c_str() || *end != '\0' || globals.timeout_sec <= 0) {
      return out.UsageError("--timeout needs a positive number of seconds");
    }
  }
  Context ctx(std::move(globals), std::move(args), out);
  return command->run(ctx);
}

}  // namespace agentd::cli
