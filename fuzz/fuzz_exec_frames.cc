// The clients' reader of the event stream's binary frames, fed what a
// hostile guest could send: any bytes, whole and split at a point the input
// chooses, must give the same frames and the same verdict (the decoder is
// incremental), and no frame it hands out may be longer than the bounds
// the protocol sets, whatever its header claimed.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/exec_frames.h"

namespace {

struct Seen {
  uint8_t kind;
  uint8_t stream;
  uint64_t offset;
  std::string payload;
  bool operator==(const Seen&) const = default;
};

std::vector<Seen> Decode(std::string_view bytes, size_t split, bool* ok) {
  std::vector<Seen> frames;
  agentd::ExecFrameDecoder decoder;
  auto sink = [&frames](const agentd::ExecFrame& f) {
    if (f.payload.size() > agentd::kMaxExecFramePayloadBytes) std::abort();
    if (f.kind == static_cast<uint8_t>(agentd::ExecFrameKind::kOutput) &&
        f.payload.size() > agentd::kMaxExecFrameOutputBytes) {
      std::abort();
    }
    frames.push_back(Seen{f.kind, f.stream, f.offset, std::string(f.payload)});
  };
  *ok = decoder.Feed(bytes.substr(0, split), sink).ok() &&
        decoder.Feed(bytes.substr(split), sink).ok();
  return frames;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t split = bytes.empty() ? 0 : data[0] % (bytes.size() + 1);
  bool whole_ok = false;
  bool split_ok = false;
  std::vector<Seen> whole = Decode(bytes, bytes.size(), &whole_ok);
  std::vector<Seen> parts = Decode(bytes, split, &split_ok);
  // A refusal comes at the same header either way, after the same frames.
  if (whole_ok != split_ok || whole != parts) std::abort();
  return 0;
}
