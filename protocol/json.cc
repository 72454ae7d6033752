// JSON value model and writer. Parsing lives in json_parse.cc (simdjson).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "agentd/protocol/json.h"

namespace agentd::json {

const Value* Object::Find(std::string_view key) const {
  for (const Member& m : members_) {
    if (m.key == key) return &m.value;
  }
  return nullptr;
}

Value* Object::Find(std::string_view key) {
  for (Member& m : members_) {
    if (m.key == key) return &m.value;
  }
  return nullptr;
}

Object& Object::Set(std::string key, Value value) {
  if (Value* existing = Find(key)) {
    *existing = std::move(value);
  } else {
    members_.push_back(Member{std::move(key), std::move(value)});
  }
  return *this;
}

bool Object::Erase(std::string_view key) {
  auto it =
      std::find_if(members_.begin(), members_.end(), [&](const Member& m) { return m.key == key; });
  if (it == members_.end()) return false;
  members_.erase(it);
  return true;
}

Value::Value(unsigned long u) {
  if (u > static_cast<unsigned long>(std::numeric_limits<int64_t>::max())) {
    v_ = static_cast<double>(u);
  } else {
    v_ = static_cast<int64_t>(u);
  }
}

double Value::as_double() const {
  if (is_int()) return static_cast<double>(as_int());
  return std::get<double>(v_);
}

const Value* Value::Find(std::string_view key) const {
  return is_object() ? as_object().Find(key) : nullptr;
}

bool operator==(const Value& a, const Value& b) { return Canonical(a) == Canonical(b); }

size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t len;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return len;
}

namespace {

void AppendNumber(std::string& out, double d) {
  if (!std::isfinite(d)) {  // JSON has no NaN or infinity
    out += "null";
    return;
  }
  // The shortest of 15 or 17 significant digits that reads back as `d`.
  // Not std::to_chars: its floating-point half brings libstdc++'s Ryu
  // tables for every float type, 125 KiB of the static daemon.
  char buf[32];
  int n = std::snprintf(buf, sizeof(buf), "%.15g", d);
  if (std::strtod(buf, nullptr) != d) n = std::snprintf(buf, sizeof(buf), "%.17g", d);
  out.append(buf, static_cast<size_t>(n));
}

void AppendValue(std::string& out, const Value& v, bool sorted) {
  switch (v.type()) {
    case Value::Type::kNull:
      out += "null";
      return;
    case Value::Type::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Type::kInt: {
      char buf[24];
      auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v.as_int());
      out.append(buf, end);
      return;
    }
    case Value::Type::kDouble:
      AppendNumber(out, v.as_double());
      return;
    case Value::Type::kString:
      AppendQuoted(out, v.as_string());
      return;
    case Value::Type::kArray: {
      out += '[';
      bool first = true;
      for (const Value& item : v.as_array()) {
        if (!first) out += ',';
        first = false;
        AppendValue(out, item, sorted);
      }
      out += ']';
      return;
    }
    case Value::Type::kObject: {
      out += '{';
      bool first = true;
      auto member = [&](const Member& m) {
        if (!first) out += ',';
        first = false;
        AppendQuoted(out, m.key);
        out += ':';
        AppendValue(out, m.value, sorted);
      };
      if (!sorted) {
        for (const Member& m : v.as_object().members()) member(m);
      } else {
        std::vector<const Member*> members;
        for (const Member& m : v.as_object().members()) members.push_back(&m);
        std::sort(members.begin(), members.end(),
                  [](const Member* a, const Member* b) { return a->key < b->key; });
        for (const Member* m : members) member(*m);
      }
      out += '}';
      return;
    }
  }
}

}  // namespace

namespace {

// Printable ASCII other than the two characters JSON escapes.
bool IsPlainAscii(unsigned char c) { return c >= 0x20 && c < 0x7F && c != '"' && c != '\\'; }

}  // namespace

void AppendQuoted(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.reserve(out.size() + s.size() + 2);
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    // The common case, a run of printable ASCII that needs no escape, is
    // appended whole rather than a byte at a time.
    size_t run = i;
    while (run < s.size() && IsPlainAscii(static_cast<unsigned char>(s[run]))) ++run;
    if (run > i) {
      out.append(s.data() + i, run - i);
      i = run;
      continue;
    }
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t len = Utf8SequenceLength(s, i);
      if (len == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD for each invalid byte
        ++i;
      } else {
        out.append(s.substr(i, len));
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

void AppendSerialized(std::string& out, const Value& value) { AppendValue(out, value, false); }

std::string Serialize(const Value& value) {
  std::string out;
  AppendValue(out, value, false);
  return out;
}

std::string Canonical(const Value& value) {
  std::string out;
  AppendValue(out, value, true);
  return out;
}

}  // namespace agentd::json
