// SHA-256 (FIPS 180-4), for fingerprints: a fixed-size digest that stands
// for a document of any size. Pure; any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace agentd {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view bytes);
  std::array<uint8_t, 32> Finish();

 private:
  void Block(const uint8_t* p);

  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// Lower-case hex of the SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

}  // namespace agentd
