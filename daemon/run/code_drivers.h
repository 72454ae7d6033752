// Run drivers (docs/PROTOCOL.md, "Run code", "exception"): the one argv a
// python run is spawned with. Instead of `python3 -c CODE` it is
// `python3 -c DRIVER CODE`: the driver compiles CODE with the filename
// "<string>" that `-c` gives it (so every line number is the caller's),
// runs it in __main__ with sys.argv == ["-c"] and no name of its own left
// behind, and prints an uncaught exception through sys.excepthook with
// its own frames removed, so stdout, stderr and the exit status are what
// `python3 -c CODE` gives. The code is never rewritten or quoted.
//
// The exception goes to the daemon on descriptor 3 (a memfd the daemon
// reads after the run): the driver moves it to a close-on-exec descriptor
// >= 64 before the code runs, so the code's own files and its children
// see the usual descriptor table. The report is JSON in the wire shape of
// RunException, at most kRunReportBytes; the daemon decodes it with the
// bounds of protocol/run_exception.h and ignores anything else.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace agentd {

// The driver writes no more than this (and the daemon reads no more).
inline constexpr size_t kRunReportBytes = 48 * 1024;

// {"python3", "-c", DRIVER, code}.
std::vector<std::string> PythonDriverArgv(const std::string& code);
// The driver's text (tests run it directly).
std::string PythonDriverSource();
// The TypeScript run's driver (a bun preload; run/driver_file.h puts it
// on disk) and {"bun", "--preload", PATH, "-e", code}. Same report on
// descriptor 3, same bounds.
std::string TsDriverSource();
std::vector<std::string> TsDriverArgv(const std::string& driver_path, const std::string& code);
// {"python3", "-c", CONTEXT_DRIVER}: a context's interpreter
// (run/code_context.h), which serves cells on descriptor 3 until that
// socket closes. Its exception reports are the run driver's.
std::vector<std::string> PythonContextDriverArgv();
// {"bun", "-e", CONTEXT_DRIVER}: the same for "ts" (cells are TypeScript
// modules that publish their top-level names; same channel and reports).
std::vector<std::string> TsContextDriverArgv();

}  // namespace agentd
