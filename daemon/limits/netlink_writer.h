// Netlink messages with (nested) attributes, laid out one after another in
// one buffer as the kernel reads them (<linux/netlink.h>): the part of
// netlink the nftables egress rung (limits/nft_messages.h) sends. Integers
// are written as the caller gives them; nf_tables wants big-endian ones,
// which PutBe32/PutBe64 write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace agentd {

class NetlinkWriter {
 public:
  // Starts a message: its header and `header_len` bytes of the family's
  // own header (nfgenmsg for nfnetlink). Returns the message's offset, for
  // EndMessage.
  size_t BeginMessage(uint16_t type, uint16_t flags, uint32_t seq, const void* header,
                      size_t header_len);
  void EndMessage(size_t message);

  void Put(uint16_t type, const void* data, size_t len);
  void PutBe32(uint16_t type, uint32_t host);
  void PutBe64(uint16_t type, uint64_t host);
  void PutU8(uint16_t type, uint8_t v) { Put(type, &v, 1); }
  void PutString(uint16_t type, const std::string& s) { Put(type, s.c_str(), s.size() + 1); }
  // A nested attribute: its offset, for EndNest.
  size_t BeginNest(uint16_t type);
  void EndNest(size_t nest);

  const std::vector<uint8_t>& bytes() const { return buf_; }

 private:
  void Pad();
  std::vector<uint8_t> buf_;
};

}  // namespace agentd
