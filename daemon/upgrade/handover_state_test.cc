#include "upgrade/handover_state.h"

#include <catch2/catch.hpp>

using namespace agentd;

// Named, not anonymous: the unit tests are built in unity batches.
namespace handover_state_test {

HandoverState WithOneContext() {
  HandoverState s;
  s.from_version = "test";
  s.listeners = {3};
  s.secrets_fd = 4;
  s.contexts.emplace_back(json::Object().Set("channel_fd", 5));
  return s;
}

// The format the file says (DecodeHandover keeps what it read, not this).
int64_t FormatOf(const std::string& text) {
  Result<json::Value> doc = json::Parse(text);
  const json::Value* f = doc.ok() ? doc->Find("format") : nullptr;
  return f && f->is_int() ? f->as_int() : -1;
}

}  // namespace handover_state_test

using handover_state_test::FormatOf;

TEST_CASE("a handover with contexts is format 4 and reads back") {
  std::string text = EncodeHandover(handover_state_test::WithOneContext());
  CHECK(FormatOf(text) == 4);
  Result<HandoverState> back = DecodeHandover(text);
  REQUIRE(back.ok());
  CHECK(back->contexts.size() == 1);
  HandoverState plain = handover_state_test::WithOneContext();
  plain.contexts.clear();
  std::string first = EncodeHandover(plain);
  CHECK(FormatOf(first) == 1);  // the lowest that holds it
  CHECK(DecodeHandover(first).ok());
}

TEST_CASE("a format 3 handover, contexts as their own fields, is refused naming the format") {
  std::string text = EncodeHandover(handover_state_test::WithOneContext());
  size_t at = text.find("\"format\":4");
  REQUIRE(at != std::string::npos);
  text.replace(at, 10, "\"format\":3");
  Result<HandoverState> back = DecodeHandover(text);
  REQUIRE_FALSE(back.ok());
  CHECK(back.status().code() == ErrorCode::kInvalidRequest);
  CHECK(back.status().message().find("format 3") != std::string::npos);
}
