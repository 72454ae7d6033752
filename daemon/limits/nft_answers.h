// Reading nf_tables dump answers (<linux/netfilter/nf_tables.h>): the
// elements of a set with their counters, and the counter a rule starts
// with. Only what the nftables egress rung
// (limits/egress_nftables.h) reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "limits/netlink_reader.h"

namespace agentd {

struct NftElement {
  std::vector<uint8_t> key;
  uint64_t expiration_ms = 0;  // left until it times out
  uint64_t packets = 0;        // its counter
  // Its last use: not in the answer; the rung fills it in from the same
  // key's element in a plain set refreshed on every use (no "last"
  // expression: Debian 12's nft 1.0.6 crashes listing one).
  bool last_set = false;
  uint64_t last_ago_ms = 0;
};

// A NEWSETELEM message's payload (nfgenmsg and attributes): appends its
// elements. False when malformed.
bool ParseSetElements(NetlinkSpan payload, std::vector<NftElement>* out);

// A NEWRULE message's payload: adds the packets of its first expression
// when that is a counter. False when malformed.
bool AddFirstCounter(NetlinkSpan payload, uint64_t* packets);

// A NEWCHAIN message's payload: its name when it is in `table`, else "".
// False when malformed.
bool ChainOfTable(NetlinkSpan payload, const std::string& table, std::string* name);

}  // namespace agentd
