// The exception of a run (docs/PROTOCOL.md, "Run code", "exception").
#include "agentd/protocol/run_exception.h"

#include <algorithm>

#include "agentd/protocol/run.h"

namespace agentd {
namespace {

json::Value Opt(const std::optional<std::string>& s) { return s ? json::Value(*s) : json::Value(); }
json::Value Opt(const std::optional<int64_t>& n) { return n ? json::Value(*n) : json::Value(); }

// A string member cut to `max` bytes on a UTF-8 boundary; absent, null or
// not a string: nullopt.
std::optional<std::string> Text(const json::Value& doc, std::string_view key, size_t max) {
  const json::Value* v = doc.Find(key);
  if (!v || !v->is_string()) return std::nullopt;
  const std::string& s = v->as_string();
  if (s.size() <= max) return s;
  return std::string(Utf8Head(s, max - 3)) + "...";
}

std::optional<int64_t> Int(const json::Value& doc, std::string_view key) {
  const json::Value* v = doc.Find(key);
  if (!v || !v->is_int()) return std::nullopt;
  return v->as_int();
}

}  // namespace

json::Value EncodeRunException(const RunException& e) {
  json::Array frames;
  for (const ExceptionFrame& f : e.frames) {
    frames.emplace_back(json::Object()
                            .Set("file", f.file)
                            .Set("line", f.line)
                            .Set("function", f.function)
                            .Set("source_line", Opt(f.source_line)));
  }
  json::Object o;
  o.Set("type", e.type);
  o.Set("message", e.message);
  o.Set("file", Opt(e.file));
  o.Set("line", Opt(e.line));
  o.Set("column", Opt(e.column));
  o.Set("source_line", Opt(e.source_line));
  o.Set("frames", std::move(frames));
  o.Set("omitted_frames", e.omitted_frames);
  if (e.keys_present) {
    json::Array keys;
    for (const std::string& k : *e.keys_present) keys.emplace_back(k);
    o.Set("keys_present", std::move(keys));
    o.Set("keys_total", Opt(e.keys_total));
  }
  return o;
}

Result<RunException> DecodeRunException(const json::Value& doc) {
  std::optional<std::string> type = Text(doc, "type", kExceptionMaxLineBytes);
  if (!doc.is_object() || !type || type->empty()) {
    return Status::Error(ErrorCode::kProtocolError, "exception lacks \"type\"");
  }
  RunException e;
  e.type = std::move(*type);
  e.message = Text(doc, "message", kExceptionMaxMessageBytes).value_or("");
  e.file = Text(doc, "file", kExceptionMaxPathBytes);
  e.line = Int(doc, "line");
  e.column = Int(doc, "column");
  e.source_line = Text(doc, "source_line", kExceptionMaxLineBytes);
  e.omitted_frames = std::max<int64_t>(0, Int(doc, "omitted_frames").value_or(0));
  if (const json::Value* frames = doc.Find("frames"); frames && frames->is_array()) {
    for (const json::Value& f : frames->as_array()) {
      if (!f.is_object()) continue;
      if (e.frames.size() == kExceptionMaxFrames) {
        ++e.omitted_frames;
        continue;
      }
      ExceptionFrame frame;
      frame.file = Text(f, "file", kExceptionMaxPathBytes).value_or("");
      frame.line = Int(f, "line").value_or(0);
      frame.function = Text(f, "function", kExceptionMaxLineBytes).value_or("");
      frame.source_line = Text(f, "source_line", kExceptionMaxLineBytes);
      e.frames.push_back(std::move(frame));
    }
  }
  if (const json::Value* keys = doc.Find("keys_present"); keys && keys->is_array()) {
    e.keys_present.emplace();
    for (const json::Value& k : keys->as_array()) {
      if (!k.is_string() || e.keys_present->size() == kExceptionMaxKeys) continue;
      const std::string& s = k.as_string();
      e.keys_present->push_back(s.size() <= kExceptionMaxLineBytes
                                    ? s
                                    : std::string(Utf8Head(s, kExceptionMaxLineBytes)));
    }
    e.keys_total = Int(doc, "keys_total");
  }
  return e;
}

std::string ExceptionSummaryLine(const RunException& e) {
  std::string out = e.type + (e.message.empty() ? "" : ": " + e.message);
  if (e.line) {
    // The code itself: "<string>" (python3 -c) or "[eval]" (bun -e).
    bool in_code = !e.file || *e.file == "<string>" || *e.file == "[eval]";
    out += in_code ? " at line " : " at " + *e.file + " line ";
    out += std::to_string(*e.line);
    if (e.column) out += ", column " + std::to_string(*e.column);
    if (e.source_line && !e.source_line->empty()) out += ": " + *e.source_line;
  }
  // One line, like the stderr line it replaces (a multi-line message too).
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return LastErrorLine(out);
}

}  // namespace agentd
