// Reading what the kernel answers on a netlink socket (<linux/netlink.h>):
// the messages of one recv, their attributes, acknowledgements. Every
// length is checked against the bytes received; a malformed answer is a
// false, never a read past them.
#pragma once

#include <linux/netlink.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace agentd {

struct NetlinkSpan {
  const uint8_t* data = nullptr;
  size_t len = 0;
};

// The attributes of one level, by type (flags masked off); a type past the
// table's end is skipped (nothing read here has one).
class NetlinkAttrs {
 public:
  static constexpr size_t kMaxType = 24;
  // False when an attribute's length runs past `len`.
  bool Parse(NetlinkSpan in);
  bool Has(uint16_t type) const { return type < kMaxType && at_[type].data != nullptr; }
  NetlinkSpan Get(uint16_t type) const { return type < kMaxType ? at_[type] : NetlinkSpan{}; }
  // 0 when absent or too short.
  uint32_t Be32(uint16_t type) const;
  uint64_t Be64(uint16_t type) const;
  std::string String(uint16_t type) const;  // up to its NUL

 private:
  std::array<NetlinkSpan, kMaxType> at_{};
};

// Calls f(type, span) for each attribute of one level (a list's
// NFTA_LIST_ELEM after NFTA_LIST_ELEM too); false when one runs past the end.
template <typename F>
bool ForEachAttr(NetlinkSpan in, F&& f) {
  size_t off = 0;
  while (in.len - off >= NLA_HDRLEN) {
    const auto* a = reinterpret_cast<const struct nlattr*>(in.data + off);
    if (a->nla_len < NLA_HDRLEN || a->nla_len > in.len - off) return false;
    f(static_cast<uint16_t>(a->nla_type & NLA_TYPE_MASK),
      NetlinkSpan{in.data + off + NLA_HDRLEN, a->nla_len - size_t{NLA_HDRLEN}});
    off += NLA_ALIGN(a->nla_len);
    if (off > in.len) break;
  }
  return true;
}

// Calls f(header, payload) for each message of one recv; false when one
// runs past the end.
template <typename F>
bool ForEachMessage(NetlinkSpan in, F&& f) {
  size_t off = 0;
  while (in.len - off >= NLMSG_HDRLEN) {
    const auto* h = reinterpret_cast<const struct nlmsghdr*>(in.data + off);
    if (h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len > in.len - off) return false;
    f(*h, NetlinkSpan{in.data + off + NLMSG_HDRLEN, h->nlmsg_len - size_t{NLMSG_HDRLEN}});
    off += NLMSG_ALIGN(h->nlmsg_len);
    if (off > in.len) break;
  }
  return true;
}

// An NLMSG_ERROR's payload: the errno (positive, 0 for an acknowledgement)
// and the sequence number of the message it answers. False when short.
struct NetlinkAck {
  int error = 0;
  uint32_t seq = 0;
};
bool ParseAck(NetlinkSpan payload, NetlinkAck* out);

}  // namespace agentd
