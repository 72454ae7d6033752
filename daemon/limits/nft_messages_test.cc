// nf_tables requests against their layouts checked by hand against
// <linux/netfilter/nf_tables.h> (and, once, byte for byte against what
// libnftnl 1.2.4 builds for the same objects). Netlink headers are in host
// order: the layouts are a little-endian host's.
#include "limits/nft_messages.h"

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <catch2/catch.hpp>

using namespace agentd;

namespace {

// Pairs of hex digits; spaces (and literals' joins) are only for reading.
std::vector<uint8_t> Hex(const std::string& text) {
  std::string digits;
  for (char c : text) {
    if (c != ' ') digits += c;
  }
  REQUIRE(digits.size() % 2 == 0);
  std::vector<uint8_t> out;
  for (size_t i = 0; i < digits.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoul(digits.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// Batch begin (seq 1) and end (seq `end_seq`): NFNL_MSG_BATCH_BEGIN (0x10)
// / END (0x11), NLM_F_REQUEST, nfgenmsg AF_UNSPEC, v0, res_id
// NFNL_SUBSYS_NFTABLES (10) big-endian.
const char* kBegin = "14 00 00 00  10 00 01 00  01 00 00 00  00 00 00 00  00 00 00 0a";
std::string End(int seq) {
  return "14 00 00 00  11 00 01 00  0" + std::to_string(seq) +
         " 00 00 00  00 00 00 00  00 00 00 0a";
}

// A request's header: nlmsghdr (length, type NFNL_SUBSYS_NFTABLES << 8 |
// msg, flags NLM_F_REQUEST | NLM_F_ACK | ..., seq, port 0) and nfgenmsg
// (NFPROTO_INET, v0, res_id 0).
const char* kTableName = "0b 00 01 00  61 67 65 6e 74 64 00 00";  // NFTA_*_TABLE "agentd"

}  // namespace

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
TEST_CASE("nft messages: a table in a batch, byte for byte", "[nft]") {
  NftBatch b("agentd");
  b.NewTable();
  std::string table =
      "20 00 00 00  00 0a  05 04"  // 32 bytes, NEWTABLE, REQUEST|ACK|CREATE (0x405)
      "02 00 00 00  00 00 00 00"   // seq 2, port 0
      "01 00 00 00"                // nfgenmsg: NFPROTO_INET
      + std::string(kTableName);   // NFTA_TABLE_NAME
  CHECK(b.Finish() == Hex(kBegin + table + End(3)));
  CHECK(b.requests() == 1);
  CHECK(b.NameOf(2) == "table agentd");
}

TEST_CASE("nft messages: a base chain on the output hook, byte for byte", "[nft]") {
  NftBatch b("agentd");
  b.NewChain("x7", NF_INET_LOCAL_OUT);
  std::string chain =
      "50 00 00 00  03 0a  05 06"  // 80 bytes, NEWCHAIN, REQUEST|ACK|EXCL|CREATE (0x605)
      "02 00 00 00  00 00 00 00  01 00 00 00" +
      std::string(kTableName) +                // NFTA_CHAIN_TABLE
      "07 00 03 00  78 37 00 00"               // NFTA_CHAIN_NAME "x7"
      "14 00 04 80"                            // NFTA_CHAIN_HOOK, nested
      "  08 00 01 00  00 00 00 03"             //   HOOKNUM NF_INET_LOCAL_OUT
      "  08 00 02 00  00 00 00 00"             //   PRIORITY 0
      "08 00 05 00  00 00 00 01"               // NFTA_CHAIN_POLICY NF_ACCEPT
      "0b 00 07 00  66 69 6c 74 65 72 00 00";  // NFTA_CHAIN_TYPE "filter"
  CHECK(b.Finish() == Hex(kBegin + chain + End(3)));
}

TEST_CASE("nft messages: a rule (meta, cmp, goto), byte for byte", "[nft]") {
  NftBatch b("agentd");
  uint8_t tcp = 6;
  b.Rule("x7")
      .Meta(NFT_META_L4PROTO, NFT_REG_1)
      .Cmp(NFT_CMP_EQ, &tcp, 1)
      .Verdict(NFT_GOTO, "x7p4")
      .Done();
  std::string rule =
      "b8 00 00 00  06 0a  05 0c"  // 184 bytes, NEWRULE, REQUEST|ACK|APPEND|CREATE (0xc05)
      "02 00 00 00  00 00 00 00  01 00 00 00" +
      std::string(kTableName) +                               // NFTA_RULE_TABLE
      "07 00 02 00  78 37 00 00"                              // NFTA_RULE_CHAIN "x7"
      "90 00 04 80"                                           // NFTA_RULE_EXPRESSIONS
      "  24 00 01 80"                                         //   NFTA_LIST_ELEM
      "    09 00 01 00  6d 65 74 61 00 00 00 00"              //     NFTA_EXPR_NAME "meta"
      "    14 00 02 80"                                       //     NFTA_EXPR_DATA
      "      08 00 02 00  00 00 00 10"                        //       META_KEY NFT_META_L4PROTO
      "      08 00 01 00  00 00 00 01"                        //       META_DREG NFT_REG_1
      "  2c 00 01 80"                                         //   NFTA_LIST_ELEM
      "    08 00 01 00  63 6d 70 00"                          //     "cmp"
      "    20 00 02 80"                                       //     NFTA_EXPR_DATA
      "      08 00 01 00  00 00 00 01"                        //       CMP_SREG NFT_REG_1
      "      08 00 02 00  00 00 00 00"                        //       CMP_OP NFT_CMP_EQ
      "      0c 00 03 80"                                     //       CMP_DATA
      "        05 00 01 00  06 00 00 00"                      //         NFTA_DATA_VALUE 6, padded
      "  3c 00 01 80"                                         //   NFTA_LIST_ELEM
      "    0e 00 01 00  69 6d 6d 65 64 69 61 74 65 00 00 00"  // "immediate"
      "    28 00 02 80"                                       //     NFTA_EXPR_DATA
      "      08 00 01 00  00 00 00 00"                   //       IMMEDIATE_DREG NFT_REG_VERDICT
      "      1c 00 02 80"                                //       IMMEDIATE_DATA
      "        18 00 02 80"                              //         NFTA_DATA_VERDICT
      "          08 00 01 00  ff ff ff fc"               //           CODE NFT_GOTO (-4)
      "          09 00 02 00  78 37 70 34 00 00 00 00";  //     CHAIN "x7p4"
  CHECK(b.Finish() == Hex(kBegin + rule + End(3)));
  CHECK(b.NameOf(2) == "a rule of x7");
}

TEST_CASE("nft messages: a dump of a chain's rules", "[nft]") {
  std::string dump =
      "2c 00 00 00  07 0a  05 03"  // 44 bytes, GETRULE, REQUEST|ACK|DUMP (0x305)
      "09 00 00 00  00 00 00 00  01 00 00 00" +
      std::string(kTableName) + "09 00 02 00  78 37 72 34 00 00 00 00";  // "x7r4"
  CHECK(NftDumpRules("agentd", "x7r4", 9) == Hex(dump));
}
#endif

TEST_CASE("nft messages: each request of a batch is named by its sequence number", "[nft]") {
  NftBatch b("agentd");
  b.FlushChain("x1");
  b.DeleteChain("x1");
  b.DeleteSet("s1a4");
  b.DeleteTableIfEmpty();
  CHECK(b.requests() == 4);
  CHECK(b.NameOf(2) == "the rules of x1");
  CHECK(b.NameOf(3) == "chain x1");
  CHECK(b.NameOf(4) == "set s1a4");
  CHECK(b.NameOf(5) == "table agentd");
  CHECK(b.NameOf(1) == "message 1");  // the batch's begin: never answered by name
}
