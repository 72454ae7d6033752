// The exception of a run (docs/PROTOCOL.md, "Run code", "exception"): what
// a python run raised, as its driver reports it, so a model can act on
// type, line and source line without reading a traceback. Shared by the
// daemon (which decodes the driver's report with these bounds) and the
// clients. No I/O; plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

namespace agentd {

// Bounds of one exception (the daemon cuts what a driver reports to these).
inline constexpr size_t kExceptionMaxFrames = 30;
inline constexpr size_t kExceptionMaxKeys = 50;
inline constexpr size_t kExceptionMaxMessageBytes = 2000;
inline constexpr size_t kExceptionMaxLineBytes = 240;
inline constexpr size_t kExceptionMaxPathBytes = 300;

// One frame of the caller's own code: the code itself (file "<string>")
// or a file outside the interpreter's installation.
struct ExceptionFrame {
  std::string file;
  int64_t line = 0;
  std::string function;
  std::optional<std::string> source_line;
  bool operator==(const ExceptionFrame&) const = default;
};

struct RunException {
  std::string type;     // "KeyError", "json.decoder.JSONDecodeError"
  std::string message;  // str() of the exception ("'amount'")
  // Where it happened in the caller's code: the innermost caller frame, or
  // a syntax error's own position (with `column`).
  std::optional<std::string> file;
  std::optional<int64_t> line;
  std::optional<int64_t> column;
  std::optional<std::string> source_line;
  std::vector<ExceptionFrame> frames;  // outermost first, at most kExceptionMaxFrames
  int64_t omitted_frames = 0;          // interpreter and library frames, and any cut
  // A KeyError on a mapping: its keys (at most kExceptionMaxKeys) and count.
  std::optional<std::vector<std::string>> keys_present;
  std::optional<int64_t> keys_total;
  bool operator==(const RunException&) const = default;
};

json::Value EncodeRunException(const RunException& e);
// Lenient with members it does not know, strict with types; cuts strings
// and lists to the bounds above. Errors are protocol_error.
Result<RunException> DecodeRunException(const json::Value& doc);

// "KeyError: 'amount' at line 4: total += row[\"amount\"]" (the summary's
// error part); "SyntaxError: ... at line 1, column 5: x = (", "... at
// helper.py line 3: ..." for a frame outside the code itself.
std::string ExceptionSummaryLine(const RunException& e);

}  // namespace agentd
