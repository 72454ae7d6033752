// Reading what the kernel answers: acknowledgements and errors, a set's
// elements with their counters, a rule's leading counter; and refusing
// answers whose lengths run past the bytes received.
#include "limits/nft_answers.h"

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "limits/netlink_writer.h"

using namespace agentd;

namespace {

NetlinkSpan Span(const std::vector<uint8_t>& v) { return {v.data(), v.size()}; }

// The payload of the only message in `w`.
NetlinkSpan Payload(const NetlinkWriter& w) {
  const std::vector<uint8_t>& b = w.bytes();
  return {b.data() + NLMSG_HDRLEN, b.size() - NLMSG_HDRLEN};
}

void Expr(NetlinkWriter& w, const char* name, uint16_t a1, uint64_t v1, uint16_t a2, uint64_t v2,
          bool a1_is_32) {
  size_t elem = w.BeginNest(NFTA_LIST_ELEM);
  w.PutString(NFTA_EXPR_NAME, name);
  size_t data = w.BeginNest(NFTA_EXPR_DATA);
  if (a1_is_32) {
    w.PutBe32(a1, static_cast<uint32_t>(v1));
  } else {
    w.PutBe64(a1, v1);
  }
  w.PutBe64(a2, v2);
  w.EndNest(data);
  w.EndNest(elem);
}

// A NEWSETELEM answer as the kernel dumps the rung's sets: the key
// (address, port, protocol in 32-bit registers), the expiration, the
// counter, and a second expression the reader skips, in
// NFTA_SET_ELEM_EXPRESSIONS.
NetlinkWriter SetDump(uint64_t packets) {
  NetlinkWriter w;
  struct nfgenmsg g = {NFPROTO_INET, NFNETLINK_V0, 0};
  size_t m =
      w.BeginMessage(NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWSETELEM, NLM_F_MULTI, 5, &g, sizeof(g));
  w.PutString(NFTA_SET_ELEM_LIST_TABLE, "agentd");
  w.PutString(NFTA_SET_ELEM_LIST_SET, "s7r4");
  size_t list = w.BeginNest(NFTA_SET_ELEM_LIST_ELEMENTS);
  size_t elem = w.BeginNest(NFTA_LIST_ELEM);
  size_t key = w.BeginNest(NFTA_SET_ELEM_KEY);
  const uint8_t k[12] = {169, 254, 169, 254, 0, 80, 0, 0, 6, 0, 0, 0};
  w.Put(NFTA_DATA_VALUE, k, sizeof(k));
  w.EndNest(key);
  w.PutBe64(NFTA_SET_ELEM_TIMEOUT, 1000000);
  w.PutBe64(NFTA_SET_ELEM_EXPIRATION, 999000);
  size_t exprs = w.BeginNest(NFTA_SET_ELEM_EXPRESSIONS);
  Expr(w, "counter", NFTA_COUNTER_BYTES, 120, NFTA_COUNTER_PACKETS, packets, false);
  Expr(w, "limit", NFTA_LIMIT_TYPE, 0, NFTA_LIMIT_RATE, 5, true);
  w.EndNest(exprs);
  w.EndNest(elem);
  w.EndNest(list);
  w.EndMessage(m);
  return w;
}

}  // namespace

TEST_CASE("nft answers: an error names the errno and the request's sequence number", "[nft]") {
  // NLMSG_ERROR with NETLINK_CAP_ACK: nlmsgerr { error -ENOENT, the
  // failed request's header (seq 4) }.
  std::vector<uint8_t> ack(sizeof(struct nlmsgerr), 0);
  int error = -ENOENT;
  std::memcpy(ack.data(), &error, sizeof(error));
  uint32_t seq = 4;
  std::memcpy(ack.data() + sizeof(int) + offsetof(struct nlmsghdr, nlmsg_seq), &seq, sizeof(seq));
  NetlinkAck a;
  REQUIRE(ParseAck(Span(ack), &a));
  CHECK(a.error == ENOENT);
  CHECK(a.seq == 4);
  ack.pop_back();  // short: no answer
  CHECK_FALSE(ParseAck(Span(ack), &a));
}

TEST_CASE("nft answers: a set's element with its counter; other expressions are skipped", "[nft]") {
  NetlinkWriter w = SetDump(3);
  std::vector<NftElement> elems;
  REQUIRE(ParseSetElements(Payload(w), &elems));
  REQUIRE(elems.size() == 1);
  CHECK(elems[0].key == std::vector<uint8_t>{169, 254, 169, 254, 0, 80, 0, 0, 6, 0, 0, 0});
  CHECK(elems[0].expiration_ms == 999000);
  CHECK(elems[0].packets == 3);
  CHECK_FALSE(elems[0].last_set);  // the rung's plain set says that, not the answer
}

TEST_CASE("nft answers: messages whose lengths run past the bytes are refused", "[nft]") {
  NetlinkWriter w = SetDump(3);
  std::vector<uint8_t> cut(w.bytes().begin(), w.bytes().end() - 8);
  // The message's own length now runs past the bytes received.
  size_t messages = 0;
  CHECK_FALSE(ForEachMessage(Span(cut), [&](const struct nlmsghdr&, NetlinkSpan) { ++messages; }));
  CHECK(messages == 0);
  // An attribute's length past its message's end: the elements' list.
  std::vector<uint8_t> payload(cut.begin() + NLMSG_HDRLEN, cut.end());
  std::vector<NftElement> elems;
  CHECK_FALSE(ParseSetElements(Span(payload), &elems));
}

TEST_CASE("nft answers: a rule's leading counter is the overflow, others are not", "[nft]") {
  auto rule = [](const char* first) {
    NetlinkWriter w;
    struct nfgenmsg g = {NFPROTO_INET, NFNETLINK_V0, 0};
    size_t m =
        w.BeginMessage(NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWRULE, NLM_F_MULTI, 6, &g, sizeof(g));
    w.PutString(NFTA_RULE_TABLE, "agentd");
    w.PutString(NFTA_RULE_CHAIN, "x7r4");
    size_t list = w.BeginNest(NFTA_RULE_EXPRESSIONS);
    Expr(w, first, NFTA_COUNTER_BYTES, 100, NFTA_COUNTER_PACKETS, 7, false);
    Expr(w, "counter", NFTA_COUNTER_BYTES, 100, NFTA_COUNTER_PACKETS, 1000, false);
    w.EndNest(list);
    w.EndMessage(m);
    return w;
  };
  uint64_t packets = 0;
  NetlinkWriter counter_first = rule("counter");
  REQUIRE(AddFirstCounter(Payload(counter_first), &packets));
  CHECK(packets == 7);
  NetlinkWriter meta_first = rule("meta");
  REQUIRE(AddFirstCounter(Payload(meta_first), &packets));
  CHECK(packets == 7);  // a counter later in a rule is not the overflow
}

TEST_CASE("nft answers: a chain dump names only the chains of the rung's table", "[nft]") {
  auto chain = [](const char* table, const char* name) {
    NetlinkWriter w;
    struct nfgenmsg g = {NFPROTO_INET, NFNETLINK_V0, 0};
    size_t m =
        w.BeginMessage(NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWCHAIN, NLM_F_MULTI, 7, &g, sizeof(g));
    w.PutString(NFTA_CHAIN_TABLE, table);
    w.PutString(NFTA_CHAIN_NAME, name);
    w.PutBe64(NFTA_CHAIN_HANDLE, 3);
    w.EndMessage(m);
    return w;
  };
  std::string name = "unset";
  NetlinkWriter ours = chain("agentd", "x4242");
  REQUIRE(ChainOfTable(Payload(ours), "agentd", &name));
  CHECK(name == "x4242");
  NetlinkWriter theirs = chain("filter", "x4242");
  REQUIRE(ChainOfTable(Payload(theirs), "agentd", &name));
  CHECK(name.empty());
  std::vector<uint8_t> cut(ours.bytes().begin() + NLMSG_HDRLEN, ours.bytes().end() - 4);
  CHECK_FALSE(ChainOfTable(Span(cut), "agentd", &name));
}
