#include "limits/nft_messages.h"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

namespace agentd {
namespace {

uint16_t NftType(uint16_t msg) { return static_cast<uint16_t>(NFNL_SUBSYS_NFTABLES << 8 | msg); }

struct nfgenmsg Inet() {
  return {NFPROTO_INET, NFNETLINK_V0, 0};
}

// An expression without attributes (nft's own encoding: an empty data).
void BareExpr(NetlinkWriter& w, const char* name) {
  size_t elem = w.BeginNest(NFTA_LIST_ELEM);
  w.PutString(NFTA_EXPR_NAME, name);
  w.EndNest(w.BeginNest(NFTA_EXPR_DATA));
  w.EndNest(elem);
}

// The counter every element of a counted set carries. (Not a "last"
// expression: nft 1.0.6 knows none and crashes printing one.)
void CounterList(NetlinkWriter& w, uint16_t list_type) {
  size_t list = w.BeginNest(list_type);
  BareExpr(w, "counter");
  w.EndNest(list);
}

}  // namespace

NftBatch::NftBatch(std::string table) : table_(std::move(table)) {
  struct nfgenmsg g = {AF_UNSPEC, NFNETLINK_V0, htons(NFNL_SUBSYS_NFTABLES)};
  w_.EndMessage(w_.BeginMessage(NFNL_MSG_BATCH_BEGIN, 0, seq_++, &g, sizeof(g)));
}

size_t NftBatch::Begin(uint16_t type, uint16_t flags, std::string name) {
  names_.push_back(std::move(name));
  struct nfgenmsg g = Inet();
  return w_.BeginMessage(NftType(type), static_cast<uint16_t>(flags | NLM_F_ACK), seq_++, &g,
                         sizeof(g));
}

void NftBatch::Names(uint16_t table_attr, uint16_t name_attr, const std::string& name) {
  w_.PutString(table_attr, table_);
  w_.PutString(name_attr, name);
}

void NftBatch::NewTable() {
  size_t m = Begin(NFT_MSG_NEWTABLE, NLM_F_CREATE, "table " + table_);
  w_.PutString(NFTA_TABLE_NAME, table_);
  w_.EndMessage(m);
}

void NftBatch::NewChain(const std::string& name, int hook) {
  size_t m = Begin(NFT_MSG_NEWCHAIN, NLM_F_CREATE | NLM_F_EXCL, "chain " + name);
  Names(NFTA_CHAIN_TABLE, NFTA_CHAIN_NAME, name);
  if (hook >= 0) {
    size_t h = w_.BeginNest(NFTA_CHAIN_HOOK);
    w_.PutBe32(NFTA_HOOK_HOOKNUM, static_cast<uint32_t>(hook));
    w_.PutBe32(NFTA_HOOK_PRIORITY, 0);
    w_.EndNest(h);
    w_.PutBe32(NFTA_CHAIN_POLICY, NF_ACCEPT);
    w_.PutString(NFTA_CHAIN_TYPE, "filter");
  }
  w_.EndMessage(m);
}

void NftBatch::NewSet(const SetSpec& s) {
  size_t m = Begin(NFT_MSG_NEWSET, NLM_F_CREATE | NLM_F_EXCL, "set " + s.name);
  Names(NFTA_SET_TABLE, NFTA_SET_NAME, s.name);
  // NFT_SET_EXPR: its elements carry expressions (a list needs the flag).
  w_.PutBe32(NFTA_SET_FLAGS, NFT_SET_EVAL | NFT_SET_TIMEOUT | (s.counted ? NFT_SET_EXPR : 0));
  w_.PutBe32(NFTA_SET_KEY_TYPE, s.key_type);
  w_.PutBe32(NFTA_SET_KEY_LEN, s.key_len);
  w_.PutBe32(NFTA_SET_ID, s.id);
  size_t desc = w_.BeginNest(NFTA_SET_DESC);
  w_.PutBe32(NFTA_SET_DESC_SIZE, s.size);
  w_.EndNest(desc);
  w_.PutBe64(NFTA_SET_TIMEOUT, s.timeout_ms);
  if (s.counted) CounterList(w_, NFTA_SET_EXPRESSIONS);
  w_.EndMessage(m);
}

NftRule NftBatch::Rule(const std::string& chain) {
  size_t m = Begin(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND, "a rule of " + chain);
  Names(NFTA_RULE_TABLE, NFTA_RULE_CHAIN, chain);
  return NftRule(*this, m, w_.BeginNest(NFTA_RULE_EXPRESSIONS));
}

void NftBatch::FlushChain(const std::string& chain) {
  size_t m = Begin(NFT_MSG_DELRULE, 0, "the rules of " + chain);
  Names(NFTA_RULE_TABLE, NFTA_RULE_CHAIN, chain);
  w_.EndMessage(m);
}

void NftBatch::DeleteChain(const std::string& chain) {
  size_t m = Begin(NFT_MSG_DELCHAIN, 0, "chain " + chain);
  Names(NFTA_CHAIN_TABLE, NFTA_CHAIN_NAME, chain);
  w_.EndMessage(m);
}

void NftBatch::DeleteSet(const std::string& set) {
  size_t m = Begin(NFT_MSG_DELSET, 0, "set " + set);
  Names(NFTA_SET_TABLE, NFTA_SET_NAME, set);
  w_.EndMessage(m);
}

void NftBatch::DeleteTableIfEmpty() {
  size_t m = Begin(NFT_MSG_DELTABLE, NLM_F_NONREC, "table " + table_);
  w_.PutString(NFTA_TABLE_NAME, table_);
  w_.EndMessage(m);
}

const std::vector<uint8_t>& NftBatch::Finish() {
  struct nfgenmsg g = {AF_UNSPEC, NFNETLINK_V0, htons(NFNL_SUBSYS_NFTABLES)};
  w_.EndMessage(w_.BeginMessage(NFNL_MSG_BATCH_END, 0, seq_++, &g, sizeof(g)));
  return w_.bytes();
}

std::string NftBatch::NameOf(uint32_t seq) const {
  return seq >= 2 && seq - 2 < names_.size() ? names_[seq - 2] : "message " + std::to_string(seq);
}

size_t NftRule::BeginExpr(const char* name) {
  elem_ = b_.w_.BeginNest(NFTA_LIST_ELEM);
  b_.w_.PutString(NFTA_EXPR_NAME, name);
  return b_.w_.BeginNest(NFTA_EXPR_DATA);
}

void NftRule::EndExpr(size_t data) {
  b_.w_.EndNest(data);
  b_.w_.EndNest(elem_);
}

void NftRule::Data(uint16_t type, const void* data, uint32_t len) {
  size_t n = b_.w_.BeginNest(type);
  b_.w_.Put(NFTA_DATA_VALUE, data, len);
  b_.w_.EndNest(n);
}

NftRule& NftRule::Meta(uint32_t key, uint32_t dreg) {
  size_t d = BeginExpr("meta");
  b_.w_.PutBe32(NFTA_META_KEY, key);
  b_.w_.PutBe32(NFTA_META_DREG, dreg);
  EndExpr(d);
  return *this;
}

NftRule& NftRule::Cmp(uint32_t op, const void* data, uint32_t len) {
  size_t d = BeginExpr("cmp");
  b_.w_.PutBe32(NFTA_CMP_SREG, NFT_REG_1);
  b_.w_.PutBe32(NFTA_CMP_OP, op);
  Data(NFTA_CMP_DATA, data, len);
  EndExpr(d);
  return *this;
}

NftRule& NftRule::Payload(uint32_t base, uint32_t offset, uint32_t len, uint32_t dreg) {
  size_t d = BeginExpr("payload");
  b_.w_.PutBe32(NFTA_PAYLOAD_DREG, dreg);
  b_.w_.PutBe32(NFTA_PAYLOAD_BASE, base);
  b_.w_.PutBe32(NFTA_PAYLOAD_OFFSET, offset);
  b_.w_.PutBe32(NFTA_PAYLOAD_LEN, len);
  EndExpr(d);
  return *this;
}

NftRule& NftRule::Mask(const uint8_t* mask, uint32_t len) {
  static constexpr uint8_t kZero[16] = {};
  size_t d = BeginExpr("bitwise");
  b_.w_.PutBe32(NFTA_BITWISE_SREG, NFT_REG_1);
  b_.w_.PutBe32(NFTA_BITWISE_DREG, NFT_REG_1);
  b_.w_.PutBe32(NFTA_BITWISE_LEN, len);
  Data(NFTA_BITWISE_MASK, mask, len);
  Data(NFTA_BITWISE_XOR, kZero, len);
  EndExpr(d);
  return *this;
}

NftRule& NftRule::SocketCgroup(uint32_t level) {
  size_t d = BeginExpr("socket");
  b_.w_.PutBe32(NFTA_SOCKET_KEY, NFT_SOCKET_CGROUPV2);
  b_.w_.PutBe32(NFTA_SOCKET_DREG, NFT_REG_1);
  b_.w_.PutBe32(NFTA_SOCKET_LEVEL, level);
  EndExpr(d);
  return *this;
}

NftRule& NftRule::Immediate(uint32_t dreg, const void* data, uint32_t len) {
  size_t d = BeginExpr("immediate");
  b_.w_.PutBe32(NFTA_IMMEDIATE_DREG, dreg);
  Data(NFTA_IMMEDIATE_DATA, data, len);
  EndExpr(d);
  return *this;
}

NftRule& NftRule::DynsetAdd(const std::string& set) {
  size_t d = BeginExpr("dynset");
  b_.w_.PutBe32(NFTA_DYNSET_SREG_KEY, NFT_REG_1);
  b_.w_.PutBe32(NFTA_DYNSET_OP, NFT_DYNSET_OP_ADD);
  b_.w_.PutString(NFTA_DYNSET_SET_NAME, set);
  CounterList(b_.w_, NFTA_DYNSET_EXPRESSIONS);
  b_.w_.PutBe32(NFTA_DYNSET_FLAGS, NFT_DYNSET_F_EXPR);  // a list of expressions
  EndExpr(d);
  return *this;
}

NftRule& NftRule::DynsetUpdate(const std::string& set) {
  size_t d = BeginExpr("dynset");
  b_.w_.PutBe32(NFTA_DYNSET_SREG_KEY, NFT_REG_1);
  b_.w_.PutBe32(NFTA_DYNSET_OP, NFT_DYNSET_OP_UPDATE);
  b_.w_.PutString(NFTA_DYNSET_SET_NAME, set);
  EndExpr(d);
  return *this;
}

NftRule& NftRule::Counter() {
  BareExpr(b_.w_, "counter");
  return *this;
}

NftRule& NftRule::RejectTcpReset() {
  size_t d = BeginExpr("reject");
  b_.w_.PutBe32(NFTA_REJECT_TYPE, NFT_REJECT_TCP_RST);
  b_.w_.PutU8(NFTA_REJECT_ICMP_CODE, 0);
  EndExpr(d);
  return *this;
}

NftRule& NftRule::Verdict(int32_t verdict, const std::string& chain) {
  size_t d = BeginExpr("immediate");
  b_.w_.PutBe32(NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
  size_t data = b_.w_.BeginNest(NFTA_IMMEDIATE_DATA);
  size_t v = b_.w_.BeginNest(NFTA_DATA_VERDICT);
  b_.w_.PutBe32(NFTA_VERDICT_CODE, static_cast<uint32_t>(verdict));
  if (!chain.empty()) b_.w_.PutString(NFTA_VERDICT_CHAIN, chain);
  b_.w_.EndNest(v);
  b_.w_.EndNest(data);
  EndExpr(d);
  return *this;
}

void NftRule::Done() {
  b_.w_.EndNest(list_);
  b_.w_.EndMessage(message_);
}

namespace {

std::vector<uint8_t> DumpRequest(uint16_t type, uint16_t table_attr, uint16_t name_attr,
                                 const std::string& table, const std::string& name, uint32_t seq) {
  NetlinkWriter w;
  struct nfgenmsg g = Inet();
  size_t m = w.BeginMessage(NftType(type), NLM_F_DUMP | NLM_F_ACK, seq, &g, sizeof(g));
  w.PutString(table_attr, table);
  w.PutString(name_attr, name);
  w.EndMessage(m);
  return w.bytes();
}

}  // namespace

std::vector<uint8_t> NftDumpChains(uint32_t seq) {
  NetlinkWriter w;
  struct nfgenmsg g = Inet();
  w.EndMessage(
      w.BeginMessage(NftType(NFT_MSG_GETCHAIN), NLM_F_DUMP | NLM_F_ACK, seq, &g, sizeof(g)));
  return w.bytes();
}

std::vector<uint8_t> NftDumpSetElements(const std::string& table, const std::string& set,
                                        uint32_t seq) {
  return DumpRequest(NFT_MSG_GETSETELEM, NFTA_SET_ELEM_LIST_TABLE, NFTA_SET_ELEM_LIST_SET, table,
                     set, seq);
}

std::vector<uint8_t> NftDumpRules(const std::string& table, const std::string& chain,
                                  uint32_t seq) {
  return DumpRequest(NFT_MSG_GETRULE, NFTA_RULE_TABLE, NFTA_RULE_CHAIN, table, chain, seq);
}

}  // namespace agentd
