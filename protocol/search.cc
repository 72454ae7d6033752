#include "agentd/protocol/search.h"

namespace agentd {
namespace {

Status MalformedSearch(std::string_view what) {
  return Status::Error(ErrorCode::kProtocolError, std::string(what));
}

// Members of an answer: unknown members are ignored (the protocol may add
// some), missing or mistyped required ones fail.
std::optional<uint64_t> U64(const json::Value& doc, std::string_view key) {
  const json::Value* v = doc.Find(key);
  if (!v || !v->is_int() || v->as_int() < 0) return std::nullopt;
  return static_cast<uint64_t>(v->as_int());
}

std::optional<std::string> Str(const json::Value& doc, std::string_view key) {
  const json::Value* v = doc.Find(key);
  if (!v || !v->is_string()) return std::nullopt;
  return v->as_string();
}

std::optional<bool> Flag(const json::Value& doc, std::string_view key) {
  const json::Value* v = doc.Find(key);
  if (!v || !v->is_bool()) return std::nullopt;
  return v->as_bool();
}

// A nullable string: absent or null is nullopt; another type fails.
bool NullableStr(const json::Value& doc, std::string_view key, std::optional<std::string>* out) {
  const json::Value* v = doc.Find(key);
  if (!v || v->is_null()) return true;
  if (!v->is_string()) return false;
  *out = v->as_string();
  return true;
}

bool Strings(const json::Value& doc, std::string_view key, std::vector<std::string>* out) {
  const json::Value* v = doc.Find(key);
  if (!v) return true;
  if (!v->is_array()) return false;
  for (const json::Value& s : v->as_array()) {
    if (!s.is_string()) return false;
    out->push_back(s.as_string());
  }
  return true;
}

json::Array StringArray(const std::vector<std::string>& v) {
  json::Array a;
  for (const std::string& s : v) a.emplace_back(s);
  return a;
}

json::Value Bound(const std::optional<std::string>& b) {
  return b ? json::Value(*b) : json::Value(nullptr);
}

}  // namespace

json::Value EncodeSearchMatch(const SearchMatch& m) {
  json::Object o;
  o.Set("type", "match").Set("path", m.path).Set("line", m.line).Set("column", m.column);
  o.Set("text", m.text).Set("cut", m.cut);
  if (!m.invalid_utf8.empty()) {
    json::Array a;
    for (uint64_t off : m.invalid_utf8) a.emplace_back(off);
    o.Set("invalid_utf8", std::move(a));
  }
  if (!m.before.empty() || !m.after.empty()) {
    o.Set("before", StringArray(m.before)).Set("after", StringArray(m.after));
  }
  return o;
}

json::Value EncodeSearchSummary(const SearchSummary& s) {
  json::Object o;
  o.Set("type", "summary")
      .Set("files_scanned", s.files_scanned)
      .Set("matches", s.matches)
      .Set("binary_skipped", s.binary_skipped)
      .Set("unreadable", s.unreadable)
      .Set("truncated", s.truncated)
      .Set("bound", Bound(s.bound))
      .Set("elapsed_ms", s.elapsed_ms);
  return o;
}

Result<SearchLine> DecodeSearchLine(const json::Value& doc) {
  std::optional<std::string> type = doc.is_object() ? Str(doc, "type") : std::nullopt;
  if (type == "match") {
    SearchMatch m;
    auto path = Str(doc, "path");
    auto line = U64(doc, "line");
    auto column = U64(doc, "column");
    auto text = Str(doc, "text");
    auto cut = Flag(doc, "cut");
    if (!path || !line || !column || !text || !cut) {
      return MalformedSearch("search match lacks a member");
    }
    m.path = std::move(*path);
    m.line = *line;
    m.column = *column;
    m.text = std::move(*text);
    m.cut = *cut;
    if (const json::Value* bad = doc.Find("invalid_utf8")) {
      if (!bad->is_array()) return MalformedSearch("search match has a malformed invalid_utf8");
      for (const json::Value& off : bad->as_array()) {
        if (!off.is_int() || off.as_int() < 0) {
          return MalformedSearch("search match has a malformed invalid_utf8");
        }
        m.invalid_utf8.push_back(static_cast<uint64_t>(off.as_int()));
      }
    }
    if (!Strings(doc, "before", &m.before) || !Strings(doc, "after", &m.after)) {
      return MalformedSearch("search match has malformed context lines");
    }
    return SearchLine(std::move(m));
  }
  if (type == "summary") {
    SearchSummary s;
    auto files = U64(doc, "files_scanned");
    auto matches = U64(doc, "matches");
    auto binary = U64(doc, "binary_skipped");
    auto unreadable = U64(doc, "unreadable");
    auto truncated = Flag(doc, "truncated");
    auto elapsed = U64(doc, "elapsed_ms");
    if (!files || !matches || !binary || !unreadable || !truncated || !elapsed ||
        !NullableStr(doc, "bound", &s.bound)) {
      return MalformedSearch("search summary lacks a member");
    }
    s.files_scanned = *files;
    s.matches = *matches;
    s.binary_skipped = *binary;
    s.unreadable = *unreadable;
    s.truncated = *truncated;
    s.elapsed_ms = *elapsed;
    return SearchLine(s);
  }
  return MalformedSearch("search line is neither a match nor a summary");
}

json::Value EncodeGlobResponse(const GlobResponse& g) {
  json::Array entries;
  entries.reserve(g.entries.size());
  for (const FileStat& st : g.entries) entries.push_back(EncodeFileStat(st));
  json::Object o;
  o.Set("entries", std::move(entries))
      .Set("truncated", g.truncated)
      .Set("bound", Bound(g.bound))
      .Set("elapsed_ms", g.elapsed_ms);
  return o;
}

Result<GlobResponse> DecodeGlobResponse(const json::Value& doc) {
  GlobResponse g;
  const json::Value* entries = doc.is_object() ? doc.Find("entries") : nullptr;
  auto truncated = doc.is_object() ? Flag(doc, "truncated") : std::nullopt;
  auto elapsed = doc.is_object() ? U64(doc, "elapsed_ms") : std::nullopt;
  if (!entries || !entries->is_array() || !truncated || !elapsed ||
      !NullableStr(doc, "bound", &g.bound)) {
    return MalformedSearch("glob answer lacks a member");
  }
  for (const json::Value& e : entries->as_array()) {
    Result<FileStat> st = DecodeFileStat(e);
    if (!st.ok()) return st.status();
    g.entries.push_back(std::move(*st));
  }
  g.truncated = *truncated;
  g.elapsed_ms = *elapsed;
  return g;
}

}  // namespace agentd
