#include <catch2/catch.hpp>

#include "agentd/protocol/base64.h"

using namespace agentd;

TEST_CASE("base64 matches RFC 4648 test vectors", "[base64]") {
  const char* plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
  const char* coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
  for (int i = 0; i < 7; ++i) {
    CHECK(Base64Encode(plain[i]) == coded[i]);
    CHECK(Base64Decode(coded[i]) == std::string(plain[i]));
  }
}

TEST_CASE("base64 round-trips every byte value", "[base64]") {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n = 0; n <= all.size(); n += 37) {
    std::string part = all.substr(0, n);
    CHECK(Base64Decode(Base64Encode(part)) == part);
  }
}

TEST_CASE("base64 refuses malformed input", "[base64]") {
  for (const char* bad :
       {"Zg=", "Z===", "Zg==Zg==", "Zm9v!", "Zm=v", "====", "Z=gg", "Zm9v\nZm9v", "Zm9vZ!9v"}) {
    INFO(bad);
    CHECK_FALSE(Base64Decode(bad).has_value());
  }
}
