#include "agentd/trees/random_name.h"

#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <ctime>

namespace agentd {

std::string RandomName(const std::string& prefix) {
  static std::atomic<uint64_t> counter{0};
  uint64_t bits = 0;
  if (::getrandom(&bits, sizeof(bits), GRND_NONBLOCK) != sizeof(bits)) {
    bits = (static_cast<uint64_t>(::getpid()) << 32) ^ counter.fetch_add(1) ^
           static_cast<uint64_t>(::time(nullptr));
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out = prefix;
  for (int i = 0; i < 16; ++i) out += kHex[(bits >> (i * 4)) & 15];
  return out;
}

}  // namespace agentd
