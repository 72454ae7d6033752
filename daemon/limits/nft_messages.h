// nf_tables requests, encoded as the kernel's UAPI describes them
// (<linux/netfilter/nf_tables.h>, <linux/netfilter/nfnetlink.h>): exactly
// what the nftables egress rung (limits/egress_nftables.h) sends, in the
// inet family, in one table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "limits/netlink_writer.h"

namespace agentd {

class NftRule;

// One transaction: batch begin, the requests (each NLM_F_ACK, seq 2, 3,
// ...), batch end. Each request carries a name for errors (NameOf).
class NftBatch {
 public:
  explicit NftBatch(std::string table);

  void NewTable();  // shared by the namespace's daemons: no NLM_F_EXCL
  // A base chain on `hook` when `hook` >= 0 (a filter chain, priority 0,
  // policy accept), else a regular chain.
  void NewChain(const std::string& name, int hook = -1);
  // A dynamic set keyed by `key_len` bytes whose elements time out
  // `timeout_ms` after their creation (or their last update), each with a
  // counter when `counted`.
  struct SetSpec {
    std::string name;
    uint32_t id = 0;  // the set's id in this transaction
    uint32_t key_type = 0;
    uint32_t key_len = 0;
    uint64_t timeout_ms = 0;
    uint32_t size = 0;
    bool counted = true;
  };
  void NewSet(const SetSpec& s);
  // Appends a rule to `chain`: the expressions, then NftRule::Done.
  NftRule Rule(const std::string& chain);
  void FlushChain(const std::string& chain);  // DELRULE without a handle
  void DeleteChain(const std::string& chain);
  void DeleteSet(const std::string& set);
  // NLM_F_NONREC: refused (EBUSY) while the table holds anything.
  void DeleteTableIfEmpty();

  // Ends the batch; the bytes to send.
  const std::vector<uint8_t>& Finish();
  size_t requests() const { return names_.size(); }
  // The request with sequence number `seq`, for an error.
  std::string NameOf(uint32_t seq) const;

 private:
  friend class NftRule;
  size_t Begin(uint16_t type, uint16_t flags, std::string name);
  void Names(uint16_t table_attr, uint16_t name_attr, const std::string& name);
  std::string table_;
  NetlinkWriter w_;
  uint32_t seq_ = 1;
  std::vector<std::string> names_;  // of seq 2, 3, ...
};

// The expressions of one rule, written into its batch as they are named.
// Registers: NFT_REG_1 (16 bytes) unless given.
class NftRule {
 public:
  NftRule& Meta(uint32_t key, uint32_t dreg);
  NftRule& Cmp(uint32_t op, const void* data, uint32_t len);  // on NFT_REG_1
  NftRule& Payload(uint32_t base, uint32_t offset, uint32_t len, uint32_t dreg);
  // NFT_REG_1 = (NFT_REG_1 & mask) ^ 0
  NftRule& Mask(const uint8_t* mask, uint32_t len);
  NftRule& SocketCgroup(uint32_t level);  // the socket's cgroupv2 id at `level`, to NFT_REG_1
  NftRule& Immediate(uint32_t dreg, const void* data, uint32_t len);
  // Adds the key in NFT_REG_1... to `set`, each element with a counter:
  // one more count for an element that exists.
  NftRule& DynsetAdd(const std::string& set);
  // Adds the key to `set` or restarts its element's timeout: the time left
  // answers when it was last seen.
  NftRule& DynsetUpdate(const std::string& set);
  NftRule& Counter();
  NftRule& RejectTcpReset();
  // NF_ACCEPT, NF_DROP, or NFT_GOTO/NFT_JUMP to `chain`.
  NftRule& Verdict(int32_t verdict, const std::string& chain = {});
  void Done();

 private:
  friend class NftBatch;
  NftRule(NftBatch& b, size_t message, size_t list) : b_(b), message_(message), list_(list) {}
  size_t BeginExpr(const char* name);  // the NFTA_EXPR_DATA nest
  void EndExpr(size_t data);
  void Data(uint16_t type, const void* data, uint32_t len);  // a nest of NFTA_DATA_VALUE
  NftBatch& b_;
  size_t message_;
  size_t list_;
  size_t elem_ = 0;
};

// Dump requests, each one message: the elements of a set, the rules of a
// chain.
std::vector<uint8_t> NftDumpSetElements(const std::string& table, const std::string& set,
                                        uint32_t seq);
std::vector<uint8_t> NftDumpRules(const std::string& table, const std::string& chain, uint32_t seq);
// Every chain of the inet family (the kernel filters a chain dump by
// family only).
std::vector<uint8_t> NftDumpChains(uint32_t seq);

}  // namespace agentd
