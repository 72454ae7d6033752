#include "limits/netlink_writer.h"

#include <endian.h>
#include <linux/netlink.h>

#include <cstring>

namespace agentd {

void NetlinkWriter::Pad() { buf_.resize(NLMSG_ALIGN(buf_.size()), 0); }

size_t NetlinkWriter::BeginMessage(uint16_t type, uint16_t flags, uint32_t seq, const void* header,
                                   size_t header_len) {
  Pad();
  size_t at = buf_.size();
  struct nlmsghdr h = {};
  h.nlmsg_type = type;
  h.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | flags);
  h.nlmsg_seq = seq;
  buf_.resize(at + NLMSG_HDRLEN);
  std::memcpy(buf_.data() + at, &h, sizeof(h));
  const auto* p = static_cast<const uint8_t*>(header);
  buf_.insert(buf_.end(), p, p + header_len);
  Pad();
  return at;
}

void NetlinkWriter::EndMessage(size_t message) {
  auto len = static_cast<uint32_t>(buf_.size() - message);
  std::memcpy(buf_.data() + message + offsetof(struct nlmsghdr, nlmsg_len), &len, sizeof(len));
}

void NetlinkWriter::Put(uint16_t type, const void* data, size_t len) {
  struct nlattr a = {};
  a.nla_len = static_cast<uint16_t>(NLA_HDRLEN + len);
  a.nla_type = type;
  size_t at = buf_.size();
  buf_.resize(at + NLA_HDRLEN);
  std::memcpy(buf_.data() + at, &a, sizeof(a));
  const auto* p = static_cast<const uint8_t*>(data);
  buf_.insert(buf_.end(), p, p + len);
  Pad();
}

void NetlinkWriter::PutBe32(uint16_t type, uint32_t host) {
  uint32_t v = htobe32(host);
  Put(type, &v, sizeof(v));
}

void NetlinkWriter::PutBe64(uint16_t type, uint64_t host) {
  uint64_t v = htobe64(host);
  Put(type, &v, sizeof(v));
}

size_t NetlinkWriter::BeginNest(uint16_t type) {
  size_t at = buf_.size();
  Put(static_cast<uint16_t>(type | NLA_F_NESTED), nullptr, 0);
  return at;
}

void NetlinkWriter::EndNest(size_t nest) {
  auto len = static_cast<uint16_t>(buf_.size() - nest);
  std::memcpy(buf_.data() + nest + offsetof(struct nlattr, nla_len), &len, sizeof(len));
}

}  // namespace agentd
