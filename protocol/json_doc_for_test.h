// For the protocol's unit tests: a JSON document from text that must parse
// (the test case fails where it does not).
#pragma once

#include <catch2/catch.hpp>

#include "agentd/protocol/json.h"

namespace agentd {

inline json::Value Doc(const char* text) {
  auto v = json::Parse(text);
  REQUIRE(v.ok());
  return *v;
}

}  // namespace agentd
