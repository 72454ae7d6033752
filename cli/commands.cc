// The command table.
#include "commands.h"

namespace agentd::cli {

namespace {

// Flags shared by exec and start.
std::vector<FlagSpec> StartFlags(bool attached) {
  std::vector<FlagSpec> flags = {
      {"env", "K=V", "set a variable for the command", true},
      {"unset", "K", "remove a variable from the command's environment", true},
      {"user", "USER", "run as this user (name or uid); HOME, USER, LOGNAME follow"},
      {"group", "GROUP", "run with this group (name or gid)"},
      {"profile", "P", "restricted or unrestricted (default: the daemon's --default-profile)"},
      {"network", "none", "none: only loopback, in a network namespace of its own"},
      {"cwd", "DIR", "working directory"},
      {"timeout", "SECONDS", "remote timeout: TERM, grace, KILL; exit 124"},
      {"kill-grace", "SECONDS", "grace between TERM and KILL (default 5)"},
      {"shell", "CMD", "run CMD with /bin/sh -c instead of -- CMD ARGS"},
      {"id", "ID", "exec id to use (default: a fresh one)"},
  };
  flags.push_back({"stdin", "FILE|-",
                   attached ? "stream FILE (or - for this stdin) to the command"
                            : "send FILE (or - for this stdin) as the command's input"});
  if (attached)
    flags.push_back({"tty", "", "run on a remote terminal driven by this one (raw mode, resize)"});
  if (!attached)
    flags.push_back({"stdin-stream", "", "accept stdin later through 'agentctl stdin'"});
  return flags;
}

}  // namespace

const std::vector<Command>& Commands() {
  // clang-format off
  static const std::vector<Command> commands = {
      {"health", "", "show the daemon's health (no token needed)", {}, 0, 0, &CmdHealth},
      {"bootstrap", "", "set the bearer token (--token) and launch environment of a fresh daemon",
       {{"env", "K=V", "launch environment variable", true}}, 0, 0, &CmdBootstrap},
      {"reset", "", "return the guest to a clean state for the next tenant, or quarantine it",
       {{"next-token-file", "F", "install the token in F for the next tenant (else bootstrap reopens)"},
        {"env", "K=V", "the next tenant's launch environment (with --next-token-file)", true},
        {"id", "RESET_ID", "reset id (default: a fresh one); a retry with it answers the report"}},
       0, 0, &CmdReset},
      {"exec", "-- CMD [ARGS...]",
       "run a command to completion, streaming its output; exits with its exit code",
       StartFlags(true), 0, SIZE_MAX, &CmdExec},
      {"start", "-- CMD [ARGS...]", "start a command detached and print its exec id",
       StartFlags(false), 0, SIZE_MAX, &CmdStart},
      {"poll", "ID", "show an exec and, with cursors, its output (read-only)",
       {{"stdout-from", "N", "stdout byte cursor"},
        {"stderr-from", "N", "stderr byte cursor"},
        {"max-bytes", "N", "bytes per stream"},
        {"wait-ms", "MS", "long poll: wait for new output or an exit"}},
       1, 1, &CmdPoll},
      {"logs", "ID", "print an exec's retained output; --follow streams until it exits",
       {{"follow", "", "stream until the exec exits, resuming after lost connections"},
        {"stdout-from", "N", "start stdout at this byte"},
        {"stderr-from", "N", "start stderr at this byte"}},
       1, 1, &CmdLogs},
      {"wait", "ID | port N | path P | output ID PATTERN",
       "wait for an exec to exit (exits with its exit code), a guest port to listen, a path to "
       "exist (or be --gone), or an exec's output to match PATTERN (exit 1: not by --for)",
       {{"for", "SECONDS", "give up after this long (default a day)"},
        {"gone", "", "path: wait until it no longer exists"},
        {"stream", "S", "output: stdout (default) or stderr"},
        {"cursor", "N", "output: the byte offset a match may start at (default 0)"}},
       1, 3, &CmdWait},
      {"ack", "ID", "mark an exited exec as read (released after the TTL)", {}, 1, 1, &CmdAck},
      {"kill", "ID", "signal an exec's process group; KILL follows after the grace",
       {{"signal", "SIG", "signal name (default TERM)"},
        {"grace", "SECONDS", "seconds before KILL (default 5)"}},
       1, 1, &CmdKill},
      {"ps", "", "list exec records", {}, 0, 0, &CmdPs},
      {"watch", "PATH", "print changes under a guest directory as they happen",
       {{"recursive", "", "follow subdirectories, new ones included"},
        {"count", "N", "stop after N events"},
        {"for", "SECONDS", "stop after this long"}},
       1, 1, &CmdWatch},
      {"ports", "", "list TCP ports listening in the guest", {}, 0, 0, &CmdPorts},
      {"forward", "LOCAL:REMOTE", "listen on a local port and tunnel each connection to a guest port",
       {{"bind", "ADDR", "local address to listen on (default 127.0.0.1)"}},
       1, 1, &CmdForward},
      {"stdin", "ID [FILE|-]", "send bytes to a streamed-stdin exec at an offset",
       {{"offset", "N", "stdin offset of the first byte (default 0)"},
        {"eof", "", "close the exec's stdin after these bytes"}},
       1, 2, &CmdStdin},
      {"run", "CODE", "run code to completion (POST /v1/run): output, summary, changed files",
       {{"runtime", "R", "shell (default), python or ts"},
        {"cwd", "DIR", "working directory (default: the daemon's --workdir)"},
        {"timeout", "SECONDS", "wall-clock limit (clamped to 300)"},
        {"memory-mb", "N", "memory limit, MiB"},
        {"pids", "N", "process limit"},
        {"cpu-sec", "N", "CPU time limit, seconds"},
        {"file-size-mb", "N", "file size limit, MiB"},
        {"profile", "P", "restricted or unrestricted (default: the daemon's --default-profile)"},
        {"network", "none", "none: only loopback, in a network namespace of its own"},
        {"no-scan", "", "do not report changed files"},
        {"result-marker", "TEXT", "stdout lines starting with TEXT carry the result (default "
                                  "__AGENTD_RESULT__; empty: off)"}},
       1, 1, &CmdRun},
      {"cat", "PATH", "print a guest file, or some of its lines or bytes",
       {{"lines", "A:B", "lines A to B, 1-based and inclusive (either may be empty)"},
        {"bytes", "A:B", "bytes A to B, 0-based and inclusive (B may be empty)"}},
       1, 1, &CmdCat},
      {"put", "PATH [FILE|-]", "write a guest file from FILE or stdin, atomically",
       {{"mode", "MODE", "exact octal mode, e.g. 0755"},
        {"parents", "", "create missing directories"},
        {"user", "USER", "owner (name or uid)"},
        {"group", "GROUP", "group (name or gid)"},
        {"if-match", "ETAG", "replace only this version of the file (from stat or cat --json)"},
        {"if-none-match", "", "create only: refuse if PATH exists"}},
       1, 2, &CmdPut},
      {"edit", "PATH", "replace exact text or line ranges in a guest file, all or none",
       {{"old", "TEXT", "text to replace; must occur exactly --count times (repeatable)", true},
        {"new", "TEXT", "replacement for the matching --old (repeatable)", true},
        {"count", "N", "occurrences of the matching --old (default 1; repeatable)", true},
        {"lines", "A:B", "replace lines A to B, 1-based inclusive; B = A-1 inserts (repeatable)",
         true},
        {"text", "TEXT", "replacement for the matching --lines (repeatable)", true},
        {"if-match", "ETAG", "edit only this version of the file"}},
       1, 1, &CmdEdit},
      {"stat", "PATH", "describe a guest path (a symlink itself unless --follow)",
       {{"follow", "", "describe what a symlink points to"}}, 1, 1, &CmdStat},
      {"ls", "[DIR]", "list a guest directory", {}, 0, 1, &CmdLs},
      {"mkdir", "DIR", "create a guest directory",
       {{"parents", "", "create missing parents; an existing directory is fine"},
        {"mode", "MODE", "exact octal mode (default 0755)"}},
       1, 1, &CmdMkdir},
      {"mv", "FROM TO", "rename a guest path",
       {{"no-clobber", "", "refuse to replace an existing TO"},
        {"if-match", "ETAG", "move only this version of FROM"},
        {"if-none-match", "", "refuse if TO exists"}},
       2, 2, &CmdMv},
      {"rm", "PATH", "remove a guest path (a symlink, never its target)",
       {{"recursive", "", "remove a directory and everything below it"},
        {"if-match", "ETAG", "remove only this version of the file"}},
       1, 1, &CmdRm},
      {"grep", "PATTERN [PATH]", "search guest files for a regular expression (exit 1: no match)",
       {{"fixed", "", "PATTERN is a literal string"},
        {"ignore-case", "", "match without regard to case"},
        {"glob", "GLOB", "only files matching GLOB (repeatable)", true},
        {"exclude", "GLOB", "skip files and directories matching GLOB (repeatable)", true},
        {"hidden", "", "also search names starting with ."},
        {"no-ignore", "", "do not read .gitignore, .ignore or .git/info/exclude"},
        {"follow", "", "follow symlinks (never out of the daemon's root)"},
        {"context", "N", "N lines before and after each match"},
        {"max-results", "N", "stop after N matches (default 1000)"},
        {"timeout-ms", "N", "stop after N milliseconds (default 30000)"}},
       1, 2, &CmdGrep},
      {"glob", "PATTERN [DIR]", "list guest paths matching a pattern (*, ?, [...], **, {a,b})",
       {{"exclude", "GLOB", "skip files and directories matching GLOB (repeatable)", true},
        {"hidden", "", "also names starting with ."},
        {"no-ignore", "", "do not read .gitignore, .ignore or .git/info/exclude"},
        {"follow", "", "follow symlinks (never out of the daemon's root)"},
        {"max-results", "N", "at most N paths, the first in order (default 1000)"},
        {"timeout-ms", "N", "stop after N milliseconds (default 30000)"}},
       1, 2, &CmdGlob},
      {"cp", "SRC DST", "copy files or directories between host and guest (guest:/path)",
       {{"parents", "", "create missing guest directories for a file"}}, 2, 2, &CmdCp},
      {"mcp", "", "serve MCP (stdio, or Streamable HTTP with --listen): tools that drive this "
       "guest for a model",
       {{"max-result-bytes", "N", "cut every tool result to N bytes, naming the cut (default 65536)"},
        {"listen", "HOST:PORT", "serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio "
         "(PORT alone: 127.0.0.1)"},
        {"allow-origin", "ORIGIN", "with --listen: also accept browser requests from ORIGIN", true},
        {"http-token-file", "FILE", "with --listen: clients must send this bearer token (needed "
         "off loopback)"}},
       0, 0, &CmdMcp},
      {"manifest", "", "list every command, flag, exit code and error code as JSON", {}, 0, 0,
       &CmdManifest},
      {"version", "", "show agentctl's version and the daemon's", {}, 0, 0, &CmdVersion},
  };
  // clang-format on
  return commands;
}

}  // namespace agentd::cli
