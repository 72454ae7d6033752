// The client's SSE decoder: any bytes, fed whole and split at a point the
// input chooses, must give the same events (the decoder is incremental).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/sse.h"

namespace {

std::vector<agentd::SseEvent> Decode(std::string_view bytes, size_t split, bool* ok) {
  std::vector<agentd::SseEvent> events;
  agentd::SseDecoder decoder([&events](agentd::SseEvent&& e) { events.push_back(std::move(e)); });
  *ok = decoder.Feed(bytes.substr(0, split)) && decoder.Feed(bytes.substr(split));
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t split = bytes.empty() ? 0 : data[0] % (bytes.size() + 1);
  bool whole_ok = false;
  bool split_ok = false;
  std::vector<agentd::SseEvent> whole = Decode(bytes, bytes.size(), &whole_ok);
  std::vector<agentd::SseEvent> parts = Decode(bytes, split, &split_ok);
  if (whole_ok != split_ok || whole.size() != parts.size()) std::abort();
  for (size_t i = 0; i < whole.size(); ++i) {
    if (whole[i].event != parts[i].event || whole[i].data != parts[i].data ||
        whole[i].id != parts[i].id) {
      std::abort();
    }
  }
  return 0;
}
