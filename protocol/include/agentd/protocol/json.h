// A JSON value: the in-memory form of every request and response body.
//
// Parse() is the only entry point from bytes (it uses simdjson and rejects
// invalid UTF-8, depth beyond kMaxJsonDepth, and trailing garbage); the
// writer functions turn a Value back into bytes. Values are plain data: not
// thread-safe to mutate concurrently, safe to read from several threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace agentd {
template <typename T>
class Result;
}

namespace agentd::json {

// Deeper documents are refused as invalid_json: no request needs more.
inline constexpr size_t kMaxJsonDepth = 64;

class Value;
struct Member;
using Array = std::vector<Value>;

// An object keeps its members in insertion order (for readable output);
// lookups are linear, which is right for the small objects of this protocol.
class Object {
 public:
  // Special members are defined below, once Member is complete (clang
  // instantiates them eagerly).
  Object();
  ~Object();
  Object(const Object&);
  Object(Object&&) noexcept;
  Object& operator=(const Object&);
  Object& operator=(Object&&) noexcept;

  const Value* Find(std::string_view key) const;
  Value* Find(std::string_view key);
  // Replaces an existing member or appends a new one; returns *this.
  Object& Set(std::string key, Value value);
  bool Erase(std::string_view key);
  const std::vector<Member>& members() const { return members_; }
  size_t size() const;
  bool empty() const;

 private:
  std::vector<Member> members_;
};

class Value {
 public:
  enum class Type { kNull, kBool, kInt, kDouble, kString, kArray, kObject };

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool b) : v_(b) {}
  Value(int i) : v_(static_cast<int64_t>(i)) {}
  Value(unsigned u) : v_(static_cast<int64_t>(u)) {}
  Value(long i) : v_(static_cast<int64_t>(i)) {}
  Value(long long i) : v_(static_cast<int64_t>(i)) {}
  // Values above INT64_MAX become doubles (JSON has one number type).
  Value(unsigned long u);
  Value(unsigned long long u) : Value(static_cast<unsigned long>(u)) {}
  Value(double d) : v_(d) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(Array a) : v_(std::move(a)) {}
  Value(Object o) : v_(std::move(o)) {}

  Type type() const { return static_cast<Type>(v_.index()); }
  bool is_null() const { return type() == Type::kNull; }
  bool is_bool() const { return type() == Type::kBool; }
  bool is_int() const { return type() == Type::kInt; }
  bool is_number() const { return is_int() || type() == Type::kDouble; }
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }

  // Accessors require the matching type (checked with is_*() first).
  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_double() const;  // also converts an integer
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const Array& as_array() const { return std::get<Array>(v_); }
  Array& as_array() { return std::get<Array>(v_); }
  const Object& as_object() const { return std::get<Object>(v_); }
  Object& as_object() { return std::get<Object>(v_); }

  // Member lookup on an object; nullptr when absent or not an object.
  const Value* Find(std::string_view key) const;

  friend bool operator==(const Value& a, const Value& b);

 private:
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> v_;
};

struct Member {
  std::string key;
  Value value;
};

inline Object::Object() = default;
inline Object::~Object() = default;
inline Object::Object(const Object&) = default;
inline Object::Object(Object&&) noexcept = default;
inline Object& Object::operator=(const Object&) = default;
inline Object& Object::operator=(Object&&) noexcept = default;
inline size_t Object::size() const { return members_.size(); }
inline bool Object::empty() const { return members_.empty(); }

// Parses one JSON document. Errors are invalid_json with the byte offset.
Result<Value> Parse(std::string_view text);

// Compact serialization. Strings are written as valid UTF-8: control
// characters are escaped as \u00XX and every invalid byte sequence is
// replaced with U+FFFD (documented in docs/PROTOCOL.md, "JSON").
std::string Serialize(const Value& value);
void AppendSerialized(std::string& out, const Value& value);
// Length of the valid UTF-8 sequence starting at s[i], or 0 when invalid
// (overlong forms, surrogates and code points above U+10FFFF are invalid):
// Serialize writes one U+FFFD for each byte where this is 0.
size_t Utf8SequenceLength(std::string_view s, size_t i);
// Appends `s` as a quoted, escaped JSON string.
void AppendQuoted(std::string& out, std::string_view s);

// Serialization with object keys sorted: two documents with the same JSON
// meaning (whatever their key order or whitespace) have the same canonical
// form. Used to decide whether a retried request is "identical".
std::string Canonical(const Value& value);

}  // namespace agentd::json
