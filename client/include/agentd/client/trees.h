// Tree transfer types (docs/CLIENT.md, "Trees").
#pragma once

#include <cstdint>

namespace agentd::client {

enum class TarCompression { kNone, kGzip, kZstd };

struct TreeStats {
  uint64_t entries = 0;  // archive members written or extracted
  uint64_t bytes = 0;    // file content bytes
};

}  // namespace agentd::client
