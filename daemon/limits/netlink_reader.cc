#include "limits/netlink_reader.h"

#include <endian.h>

#include <cstring>

namespace agentd {

bool NetlinkAttrs::Parse(NetlinkSpan in) {
  at_ = {};
  return ForEachAttr(in, [this](uint16_t type, NetlinkSpan s) {
    if (type < kMaxType) at_[type] = s;
  });
}

uint32_t NetlinkAttrs::Be32(uint16_t type) const {
  NetlinkSpan s = Get(type);
  uint32_t v = 0;
  if (s.len < sizeof(v)) return 0;
  std::memcpy(&v, s.data, sizeof(v));
  return be32toh(v);
}

uint64_t NetlinkAttrs::Be64(uint16_t type) const {
  NetlinkSpan s = Get(type);
  uint64_t v = 0;
  if (s.len < sizeof(v)) return 0;
  std::memcpy(&v, s.data, sizeof(v));
  return be64toh(v);
}

std::string NetlinkAttrs::String(uint16_t type) const {
  NetlinkSpan s = Get(type);
  const auto* p = reinterpret_cast<const char*>(s.data);
  return s.data == nullptr ? std::string() : std::string(p, strnlen(p, s.len));
}

bool ParseAck(NetlinkSpan payload, NetlinkAck* out) {
  struct nlmsgerr e;
  // With NETLINK_CAP_ACK the failed message comes back as its header only.
  if (payload.len < sizeof(e)) return false;
  std::memcpy(&e, payload.data, sizeof(e));
  out->error = -e.error;
  out->seq = e.msg.nlmsg_seq;
  return true;
}

}  // namespace agentd
