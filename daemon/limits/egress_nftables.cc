#include "limits/egress_nftables.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "agentd/protocol/time_format.h"
#include "agentd/trees/posix_error.h"
#include "limits/egress_guard.h"
#include "sys/read_file.h"

namespace agentd {
namespace {

constexpr const char* kTable = "agentd";
// Elements never expire while an exec can run; the remaining time answers
// when the element was made. 3650 days in ms.
constexpr uint64_t kElementTimeoutMs = 3650ULL * 24 * 3600 * 1000;
// Per set; the answer holds at most kMaxEgressDestinations in all.
constexpr uint32_t kSetSize = 1024;
constexpr size_t kMessageRoom = 4096;  // every message built here is smaller
constexpr size_t kDumpBuffer = 64 * 1024;

// nft's type ids, so `nft list ruleset` shows the sets' keys by name:
// ipv4_addr (7) or ipv6_addr (8) . inet_service (13) . inet_proto (12).
constexpr uint32_t KeyType(uint32_t addr_type) { return ((addr_type << 6 | 13) << 6) | 12; }

struct Family {
  const char* tag;        // "4" or "6"
  uint32_t addr_len;      // 4 or 16
  uint32_t daddr_offset;  // in the network header
  uint32_t port_reg;      // the 32-bit register after the address
  uint32_t key_type;
};
constexpr Family kV4{"4", 4, 16, NFT_REG32_01, KeyType(7)};
constexpr Family kV6{"6", 16, 24, NFT_REG32_04, KeyType(8)};

Status NftError(int err, const std::string& what) {
  return Status::Error(ErrorCode::kLimitUnsupported,
                       "nftables refused " + what + ": " + std::strerror(err))
      .With("field", std::string("egress"));
}

// One nf_tables transaction: messages laid out after a batch begin, sent
// at once, each acknowledged.
class Batch {
 public:
  Batch() : buf_(kMessageRoom * 4) { Finish(nftnl_batch_begin(Room(), seq_++)); }
  // `name`: the object, named in an error.
  struct nlmsghdr* Begin(uint16_t type, uint16_t flags, const std::string& name) {
    ++messages_;
    names_.push_back(name);
    return nftnl_nlmsg_build_hdr(Room(), type, NFPROTO_INET, flags | NLM_F_ACK, seq_++);
  }
  void Finish(struct nlmsghdr* nlh) { len_ += NLMSG_ALIGN(nlh->nlmsg_len); }
  Status Send(struct mnl_socket* nl, const std::string& what);

 private:
  char* Room() {
    if (buf_.size() - len_ < kMessageRoom) buf_.resize(buf_.size() * 2);
    return buf_.data() + len_;
  }
  std::vector<char> buf_;
  size_t len_ = 0;
  uint32_t seq_ = 1;
  size_t messages_ = 0;
  std::vector<std::string> names_;  // of message seq 2, 3, ...
};

struct SocketCloser {
  void operator()(struct mnl_socket* s) const { mnl_socket_close(s); }
};
using Socket = std::unique_ptr<struct mnl_socket, SocketCloser>;

Result<Socket> OpenSocket() {
  Socket nl(mnl_socket_open(NETLINK_NETFILTER));
  if (!nl) return NftError(errno, "a netlink socket");
  if (mnl_socket_bind(nl.get(), 0, MNL_SOCKET_AUTOPID) < 0) {
    return NftError(errno, "a netlink bind");
  }
  int fd = mnl_socket_get_fd(nl.get());
  int on = 1;
  // Errors answer with the failed message's header only; a large batch
  // goes in one transaction (SO_SNDBUFFORCE: CAP_NET_ADMIN, which nf_tables
  // needs anyway).
  ::setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof(on));
  int size = 4 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
  return nl;
}

Status Batch::Send(struct mnl_socket* nl, const std::string& what) {
  Finish(nftnl_batch_end(Room(), seq_++));
  if (mnl_socket_sendto(nl, buf_.data(), len_) < 0) return NftError(errno, what);
  // nfnetlink handles the batch inside sendto: every answer is queued now.
  std::vector<char> answer(kDumpBuffer);
  int first_error = 0;
  std::string failed;
  for (size_t acks = 0; acks < messages_;) {
    ssize_t n = ::recv(mnl_socket_get_fd(nl), answer.data(), answer.size(), MSG_DONTWAIT);
    if (n <= 0 && first_error != 0) break;  // an aborted batch answers no more
    if (n <= 0) return NftError(n < 0 ? errno : EPROTO, what + " (missing acknowledgements)");
    int left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<struct nlmsghdr*>(answer.data()); mnl_nlmsg_ok(h, left);
         h = mnl_nlmsg_next(h, &left)) {
      if (h->nlmsg_type != NLMSG_ERROR) continue;
      ++acks;
      auto* err = static_cast<struct nlmsgerr*>(mnl_nlmsg_get_payload(h));
      if (err->error != 0 && first_error == 0) {
        first_error = -err->error;
        size_t i = err->msg.nlmsg_seq - 2;  // seq 1 is the batch's begin
        if (i < names_.size()) failed = names_[i];
      }
    }
  }
  if (first_error != 0) return NftError(first_error, what + " (at " + failed + ")");
  return Status::Ok();
}

// Dumps (GETSETELEM, GETRULE): every answer message to `parse` until DONE.
template <typename Build>
Status Dump(struct mnl_socket* nl, uint16_t type, Build&& build, const std::string& what,
            int (*parse)(const struct nlmsghdr*, void*), void* data) {
  std::vector<char> buf(kDumpBuffer);
  uint32_t seq = static_cast<uint32_t>(::time(nullptr));
  struct nlmsghdr* nlh =
      nftnl_nlmsg_build_hdr(buf.data(), type, NFPROTO_INET, NLM_F_DUMP | NLM_F_ACK, seq);
  build(nlh);
  if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) return NftError(errno, what);
  uint32_t portid = mnl_socket_get_portid(nl);
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(nl, buf.data(), buf.size());
    if (n < 0) return NftError(errno, what);
    int ret = mnl_cb_run(buf.data(), static_cast<size_t>(n), seq, portid, parse, data);
    if (ret < 0) return NftError(errno, what);
    if (ret == MNL_CB_STOP) return Status::Ok();
  }
}

// Expressions of one rule.
class Rule {
 public:
  Rule(const std::string& chain) : r_(nftnl_rule_alloc()) {
    nftnl_rule_set_str(r_, NFTNL_RULE_TABLE, kTable);
    nftnl_rule_set_str(r_, NFTNL_RULE_CHAIN, chain.c_str());
    nftnl_rule_set_u32(r_, NFTNL_RULE_FAMILY, NFPROTO_INET);
  }
  ~Rule() { nftnl_rule_free(r_); }
  Rule(const Rule&) = delete;
  Rule& operator=(const Rule&) = delete;

  Rule& Meta(uint32_t key, uint32_t dreg = NFT_REG_1) {
    nftnl_expr* e = Add("meta");
    nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
    nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, dreg);
    return *this;
  }
  Rule& Cmp(uint32_t op, const void* data, uint32_t len) {
    nftnl_expr* e = Add("cmp");
    nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
    nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
    return *this;
  }
  Rule& Proto(uint32_t op, uint8_t proto) { return Meta(NFT_META_L4PROTO).Cmp(op, &proto, 1); }
  Rule& Payload(uint32_t base, uint32_t offset, uint32_t len, uint32_t dreg = NFT_REG_1) {
    nftnl_expr* e = Add("payload");
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, dreg);
    return *this;
  }
  Rule& Mask(const uint8_t* mask, uint32_t len) {
    static constexpr uint8_t kZero[16] = {};
    nftnl_expr* e = Add("bitwise");
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
    nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len);
    nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, kZero, len);
    return *this;
  }
  Rule& Socket(uint32_t level) {
    nftnl_expr* e = Add("socket");
    nftnl_expr_set_u32(e, NFTNL_EXPR_SOCKET_KEY, NFT_SOCKET_CGROUPV2);
    nftnl_expr_set_u32(e, NFTNL_EXPR_SOCKET_LEVEL, level);
    nftnl_expr_set_u32(e, NFTNL_EXPR_SOCKET_DREG, NFT_REG_1);
    return *this;
  }
  // A 32-bit register's zero: the port of a packet that has none.
  Rule& Zero(uint32_t dreg) {
    uint32_t zero = 0;
    nftnl_expr* e = Add("immediate");
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, dreg);
    nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &zero, sizeof(zero));
    return *this;
  }
  // Adds (destination . port . protocol), loaded by the caller from
  // NFT_REG_1 on, to `set` with a counter and a last-use time; an element
  // that exists counts one more. A full set breaks the rule.
  Rule& Count(const std::string& set) {
    nftnl_expr* e = Add("dynset");
    nftnl_expr_set_u32(e, NFTNL_EXPR_DYNSET_SREG_KEY, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_DYNSET_OP, NFT_DYNSET_OP_ADD);
    nftnl_expr_set_str(e, NFTNL_EXPR_DYNSET_SET_NAME, set.c_str());
    nftnl_expr_add_expr(e, NFTNL_EXPR_DYNSET_EXPRESSIONS, nftnl_expr_alloc("counter"));
    nftnl_expr_add_expr(e, NFTNL_EXPR_DYNSET_EXPRESSIONS, nftnl_expr_alloc("last"));
    nftnl_expr_set_u32(e, NFTNL_EXPR_DYNSET_FLAGS, NFT_DYNSET_F_EXPR);  // more than one
    return *this;
  }
  Rule& Counter() {
    Add("counter");
    return *this;
  }
  Rule& Reset() {
    nftnl_expr* e = Add("reject");
    nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, NFT_REJECT_TCP_RST);
    nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, 0);
    return *this;
  }
  Rule& Verdict(int verdict, const std::string& chain = {}) {
    nftnl_expr* e = Add("immediate");
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, static_cast<uint32_t>(verdict));
    if (!chain.empty()) nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, chain.c_str());
    return *this;
  }
  void AddTo(Batch& b) {
    struct nlmsghdr* nlh =
        b.Begin(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND,
                std::string("a rule of ") + nftnl_rule_get_str(r_, NFTNL_RULE_CHAIN));
    nftnl_rule_nlmsg_build_payload(nlh, r_);
    b.Finish(nlh);
  }

 private:
  nftnl_expr* Add(const char* name) {
    nftnl_expr* e = nftnl_expr_alloc(name);
    nftnl_rule_add_expr(r_, e);
    return e;
  }
  nftnl_rule* r_;
};

void AddTable(Batch& b) {
  nftnl_table* t = nftnl_table_alloc();
  nftnl_table_set_str(t, NFTNL_TABLE_NAME, kTable);
  nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
  struct nlmsghdr* nlh = b.Begin(NFT_MSG_NEWTABLE, NLM_F_CREATE, "table");  // shared: no NLM_F_EXCL
  nftnl_table_nlmsg_build_payload(nlh, t);
  b.Finish(nlh);
  nftnl_table_free(t);
}

void AddChain(Batch& b, const std::string& name, bool output_hook) {
  nftnl_chain* c = nftnl_chain_alloc();
  nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, kTable);
  nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name.c_str());
  nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, NFPROTO_INET);
  if (output_hook) {
    nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, "filter");
    nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
    nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, 0);
    nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
  }
  struct nlmsghdr* nlh = b.Begin(NFT_MSG_NEWCHAIN, NLM_F_CREATE | NLM_F_EXCL, "chain " + name);
  nftnl_chain_nlmsg_build_payload(nlh, c);
  b.Finish(nlh);
  nftnl_chain_free(c);
}

void AddSet(Batch& b, const std::string& name, const Family& f, uint32_t id) {
  nftnl_set* s = nftnl_set_alloc();
  nftnl_set_set_str(s, NFTNL_SET_TABLE, kTable);
  nftnl_set_set_str(s, NFTNL_SET_NAME, name.c_str());
  nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
  nftnl_set_set_u32(s, NFTNL_SET_ID, id);
  nftnl_set_set_u32(s, NFTNL_SET_KEY_LEN, f.addr_len + 8);  // port and protocol: a register each
  nftnl_set_set_u32(s, NFTNL_SET_KEY_TYPE, f.key_type);
  // NFT_SET_EXPR: its elements carry the expressions (two need the flag).
  nftnl_set_set_u32(s, NFTNL_SET_FLAGS, NFT_SET_EVAL | NFT_SET_TIMEOUT | NFT_SET_EXPR);
  nftnl_set_set_u64(s, NFTNL_SET_TIMEOUT, kElementTimeoutMs);
  nftnl_set_set_u32(s, NFTNL_SET_DESC_SIZE, kSetSize);
  nftnl_set_add_expr(s, nftnl_expr_alloc("counter"));
  nftnl_set_add_expr(s, nftnl_expr_alloc("last"));
  struct nlmsghdr* nlh = b.Begin(NFT_MSG_NEWSET, NLM_F_CREATE | NLM_F_EXCL, "set " + name);
  nftnl_set_nlmsg_build_payload(nlh, s);
  b.Finish(nlh);
  nftnl_set_free(s);
}

// Deletes one object by name; DELRULE with a chain and no handle flushes it.
void Delete(Batch& b, uint16_t type, const std::string& name) {
  struct nlmsghdr* nlh = b.Begin(type, 0, name);
  if (type == NFT_MSG_DELSET) {
    nftnl_set* s = nftnl_set_alloc();
    nftnl_set_set_str(s, NFTNL_SET_TABLE, kTable);
    nftnl_set_set_str(s, NFTNL_SET_NAME, name.c_str());
    nftnl_set_nlmsg_build_payload(nlh, s);
    nftnl_set_free(s);
  } else if (type == NFT_MSG_DELRULE) {
    nftnl_rule* r = nftnl_rule_alloc();
    nftnl_rule_set_str(r, NFTNL_RULE_TABLE, kTable);
    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, name.c_str());
    nftnl_rule_nlmsg_build_payload(nlh, r);
    nftnl_rule_free(r);
  } else {
    nftnl_chain* c = nftnl_chain_alloc();
    nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, kTable);
    nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name.c_str());
    nftnl_chain_nlmsg_build_payload(nlh, c);
    nftnl_chain_free(c);
  }
  b.Finish(nlh);
}

// The counting chains: xNa4 (allowed, accept) or xNr4 (refused).
void AddVerdictChain(Batch& b, const std::string& id, const Family& f, bool allow) {
  std::string chain = "x" + id + (allow ? "a" : "r") + f.tag;
  std::string set = "s" + id + (allow ? "a" : "r") + f.tag;
  auto verdict = [&](Rule& r, uint8_t proto) {
    if (allow) {
      r.Verdict(NF_ACCEPT);
    } else if (proto == IPPROTO_TCP) {
      r.Reset();
    } else {
      r.Verdict(NF_DROP);
    }
  };
  auto key = [&](Rule& r, bool port) {
    r.Payload(NFT_PAYLOAD_NETWORK_HEADER, f.daddr_offset, f.addr_len);
    if (port) {
      r.Payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, f.port_reg);
    } else {
      r.Zero(f.port_reg);
    }
    r.Meta(NFT_META_L4PROTO, f.port_reg + 1);
  };
  {  // TCP other than a SYN (a flow already let through, or refused): no count
    Rule r(chain);
    uint8_t syn_ack = 0x12, syn = 0x02;
    r.Proto(NFT_CMP_EQ, IPPROTO_TCP).Payload(NFT_PAYLOAD_TRANSPORT_HEADER, 13, 1);
    r.Mask(&syn_ack, 1).Cmp(NFT_CMP_NEQ, &syn, 1);
    verdict(r, IPPROTO_TCP);
    r.AddTo(b);
  }
  for (uint8_t proto : {IPPROTO_TCP, IPPROTO_UDP}) {
    Rule r(chain);
    r.Proto(NFT_CMP_EQ, proto);
    key(r, true);
    r.Count(set);
    verdict(r, proto);
    r.AddTo(b);
  }
  {  // ICMP, raw: by address, port 0
    Rule r(chain);
    r.Proto(NFT_CMP_NEQ, IPPROTO_TCP).Cmp(NFT_CMP_NEQ, "\x11", 1);
    key(r, false);
    r.Count(set);
    verdict(r, 0);
    r.AddTo(b);
  }
  // Here only when the set is full: the overflow rule (a chain's only rule
  // that starts with a counter), then the verdict.
  Rule(chain).Counter().AddTo(b);
  if (allow) {
    Rule(chain).Verdict(NF_ACCEPT).AddTo(b);
  } else {
    Rule tcp(chain);
    tcp.Proto(NFT_CMP_EQ, IPPROTO_TCP).Reset();
    tcp.AddTo(b);
    Rule(chain).Verdict(NF_DROP).AddTo(b);
  }
}

// The policy's rule as an IPv4 one: its address inside ::ffff:0:0/96, or a
// prefix shorter than 96 bits that holds that range (then any IPv4).
bool AsV4(const EgressRule& r, uint8_t net[4], int* bits) {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (r.prefix >= 96) {
    if (std::memcmp(r.addr.data(), kMapped, 12) != 0) return false;
    std::memcpy(net, r.addr.data() + 12, 4);
    *bits = r.prefix - 96;
    return true;
  }
  for (int i = 0; i < 12; ++i) {
    int keep = std::clamp(r.prefix - i * 8, 0, 8);
    uint8_t mask = static_cast<uint8_t>(keep == 0 ? 0 : (0xff << (8 - keep)) & 0xff);
    if ((kMapped[i] & mask) != r.addr[i]) return false;
  }
  std::memset(net, 0, 4);
  *bits = 0;
  return true;
}

void AddPolicyRule(Batch& b, const std::string& id, const Family& f, const uint8_t* net, int bits,
                   const EgressRule& rule) {
  std::string target = "x" + id + (rule.allow ? "a" : "r") + f.tag;
  for (uint8_t proto : {IPPROTO_TCP, IPPROTO_UDP}) {
    Rule r("x" + id + "p" + f.tag);
    if (bits > 0) {
      uint8_t mask[16] = {};
      for (int i = 0; i < bits; ++i) mask[i / 8] |= static_cast<uint8_t>(0x80 >> (i % 8));
      r.Payload(NFT_PAYLOAD_NETWORK_HEADER, f.daddr_offset, f.addr_len);
      if (bits < static_cast<int>(f.addr_len * 8)) r.Mask(mask, f.addr_len);
      r.Cmp(NFT_CMP_EQ, net, f.addr_len);
    }
    if (rule.port != 0) {
      uint16_t port = htons(rule.port);
      r.Proto(NFT_CMP_EQ, proto).Payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2);
      r.Cmp(NFT_CMP_EQ, &port, 2);
    }
    r.Verdict(NFT_GOTO, target);
    r.AddTo(b);
    if (rule.port == 0) break;  // a rule for any port: any protocol, once
  }
}

Result<uint64_t> CgroupId(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return PosixError(errno, "cannot stat cgroup", dir);
  return static_cast<uint64_t>(st.st_ino);  // a cgroup2 directory's inode is its id
}

const char* kKinds[] = {"a4", "a6", "r4", "r6"};

void DeleteAll(Batch& b, const std::string& id) {
  std::vector<std::string> chains = {"x" + id, "x" + id + "p4", "x" + id + "p6"};
  for (const char* k : kKinds) chains.push_back("x" + id + k);
  for (const std::string& c : chains) Delete(b, NFT_MSG_DELRULE, c);
  for (const std::string& c : chains) Delete(b, NFT_MSG_DELCHAIN, c);
  for (const char* k : kKinds) Delete(b, NFT_MSG_DELSET, "s" + id + k);
}

struct ElemRead {
  EgressReport* r;
  std::map<std::string, uint64_t>* taken;
  bool take;
  bool v6;
  bool allowed;
  int64_t now_ms;
  int64_t since_ms;  // the last take: the earliest a taken-again element's first attempt can be
};

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string WallText(int64_t ms) {
  return FormatRfc3339(std::chrono::system_clock::time_point(std::chrono::milliseconds(ms)));
}

struct ElemExprs {
  uint64_t packets = 0;
  uint64_t last_ago_ms = 0;
  bool last_set = false;
};

int ReadElemExpr(struct nftnl_expr* e, void* data) {
  auto* x = static_cast<ElemExprs*>(data);
  const char* name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);
  if (name && std::strcmp(name, "counter") == 0) {
    x->packets = nftnl_expr_get_u64(e, NFTNL_EXPR_CTR_PACKETS);
  } else if (name && std::strcmp(name, "last") == 0) {
    x->last_set = nftnl_expr_get_u32(e, NFTNL_EXPR_LAST_SET) != 0;
    x->last_ago_ms = nftnl_expr_get_u64(e, NFTNL_EXPR_LAST_MSECS);
  }
  return 0;
}

int ReadElem(struct nftnl_set_elem* e, void* data) {
  auto* rd = static_cast<ElemRead*>(data);
  uint32_t len = 0;
  auto* key = static_cast<const uint8_t*>(nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len));
  uint32_t addr_len = rd->v6 ? 16 : 4;
  if (!key || len < addr_len + 5) return 0;
  ElemExprs x;
  nftnl_set_elem_expr_foreach(e, ReadElemExpr, &x);
  char text[INET6_ADDRSTRLEN] = "";
  ::inet_ntop(rd->v6 ? AF_INET6 : AF_INET, key, text, sizeof(text));
  uint16_t port = static_cast<uint16_t>(key[addr_len] << 8 | key[addr_len + 1]);
  uint8_t proto = key[addr_len + 4];
  std::string id = std::string(rd->allowed ? "a" : "r") + text + "/" + std::to_string(port) + "/" +
                   std::to_string(proto);
  auto seen = rd->taken->find(id);
  uint64_t before = seen == rd->taken->end() ? 0 : seen->second;
  if (x.packets <= before) return 0;  // nothing since the last take
  if (rd->take) (*rd->taken)[id] = x.packets;
  uint64_t expiration =
      std::min(nftnl_set_elem_get_u64(e, NFTNL_SET_ELEM_EXPIRATION), kElementTimeoutMs);
  int64_t made = rd->now_ms - static_cast<int64_t>(kElementTimeoutMs - expiration);
  EgressDestination d;
  d.family = rd->v6 ? "ipv6" : "ipv4";
  d.protocol = IpProtocolName(proto);
  d.address = text;
  d.port = port;
  d.verdict = rd->allowed ? "allowed" : "refused";
  d.count = static_cast<int64_t>(x.packets - before);
  int64_t last = x.last_set ? rd->now_ms - static_cast<int64_t>(x.last_ago_ms) : made;
  d.first_at = WallText(before > 0 ? std::max(rd->since_ms, made) : made);
  d.last_at = WallText(std::max(last, made));
  (rd->allowed ? rd->r->allowed : rd->r->refused) += d.count;
  rd->r->destinations.push_back(std::move(d));
  return 0;
}

int ParseElems(const struct nlmsghdr* nlh, void* data) {
  nftnl_set* s = static_cast<nftnl_set*>(data);
  return nftnl_set_elems_nlmsg_parse(nlh, s) < 0 ? MNL_CB_ERROR : MNL_CB_OK;
}

int FirstCounter(struct nftnl_expr* e, void* data) {
  auto* out = static_cast<std::pair<bool, uint64_t>*>(data);
  if (!out->first) return -1;  // only the first expression
  out->first = false;
  const char* name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);
  if (name && std::strcmp(name, "counter") == 0) {
    out->second += nftnl_expr_get_u64(e, NFTNL_EXPR_CTR_PACKETS);
  }
  return -1;
}

int ParseOverflow(const struct nlmsghdr* nlh, void* data) {
  nftnl_rule* r = nftnl_rule_alloc();
  if (nftnl_rule_nlmsg_parse(nlh, r) < 0) {
    nftnl_rule_free(r);
    return MNL_CB_ERROR;
  }
  std::pair<bool, uint64_t> first{true, 0};
  nftnl_expr_foreach(r, FirstCounter, &first);
  *static_cast<uint64_t*>(data) += first.second;
  nftnl_rule_free(r);
  return MNL_CB_OK;
}

bool Populated(const std::string& dir) {
  Result<std::string> events = ReadFileToString(dir + "/cgroup.events", 4096);
  return events.ok() && events->find("populated 1") != std::string::npos;
}

}  // namespace

Result<std::unique_ptr<NftEgress>> NftEgress::Install(const std::vector<EgressRule>& table,
                                                      const std::string& cgroup_dir, int level) {
  if (level < 1) {  // the root's id would match every socket, or none
    return Status::Internal("the exec's cgroup " + cgroup_dir +
                            " is not below the cgroup2 mount the daemon found");
  }
  Result<uint64_t> cgid = CgroupId(cgroup_dir);
  if (!cgid.ok()) return cgid.status();
  std::unique_ptr<NftEgress> n(new NftEgress());
  n->cgroup_dir_ = cgroup_dir;
  n->id_ = std::to_string(*cgid);
  const std::string& id = n->id_;
  Result<Socket> nl = OpenSocket();
  if (!nl.ok()) return nl.status();

  // Most specific first: the first rule that matches is the one the BPF
  // rung's lookup picks (limits/egress_rules.h, EgressAllows).
  std::vector<EgressRule> sorted = table;
  std::stable_sort(sorted.begin(), sorted.end(), [](const EgressRule& a, const EgressRule& b) {
    if (a.prefix != b.prefix) return a.prefix > b.prefix;
    return (a.port != 0) > (b.port != 0);
  });

  Batch b;
  AddTable(b);
  uint32_t set_id = 1;
  for (const Family* f : {&kV4, &kV6}) {
    for (bool allow : {true, false}) {
      AddSet(b, "s" + id + (allow ? "a" : "r") + f->tag, *f, set_id++);
      AddChain(b, "x" + id + (allow ? "a" : "r") + f->tag, false);
      AddVerdictChain(b, id, *f, allow);
    }
    std::string policy = "x" + id + "p" + f->tag;
    AddChain(b, policy, false);
    for (const EgressRule& rule : sorted) {
      uint8_t net[16];
      int bits = rule.prefix;
      if (f == &kV4) {
        if (!AsV4(rule, net, &bits)) continue;
      } else {
        std::memcpy(net, rule.addr.data(), 16);
      }
      AddPolicyRule(b, id, *f, net, bits, rule);
    }
    Rule(policy).Verdict(NFT_GOTO, "x" + id + "r" + f->tag).AddTo(b);  // no rule: refused
  }
  AddChain(b, "x" + id, true);
  for (const Family* f : {&kV4, &kV6}) {
    uint8_t nfproto = f == &kV4 ? NFPROTO_IPV4 : NFPROTO_IPV6;
    Rule r("x" + id);
    r.Socket(static_cast<uint32_t>(level)).Cmp(NFT_CMP_EQ, &*cgid, sizeof(uint64_t));
    r.Meta(NFT_META_NFPROTO).Cmp(NFT_CMP_EQ, &nfproto, 1);
    r.Verdict(NFT_GOTO, "x" + id + "p" + f->tag);
    r.AddTo(b);
  }
  AGENTD_RETURN_IF_ERROR(b.Send(nl->get(), "the exec's egress chains"));
  return n;
}

Result<std::unique_ptr<NftEgress>> NftEgress::Adopt(const std::string& cgroup_dir) {
  Result<uint64_t> cgid = CgroupId(cgroup_dir);
  if (!cgid.ok()) return cgid.status();
  std::unique_ptr<NftEgress> n(new NftEgress());
  n->cgroup_dir_ = cgroup_dir;
  n->id_ = std::to_string(*cgid);
  EgressReport probe;
  // Its sets answer, or there is nothing to take over.
  AGENTD_RETURN_IF_ERROR(n->Collect(probe, false));
  return n;
}

void NftEgressDeleter::operator()(NftEgress* n) const { delete n; }

NftEgress::~NftEgress() {
  if (id_.empty() || Populated(cgroup_dir_)) return;
  Result<Socket> nl = OpenSocket();
  if (!nl.ok()) return;
  Batch b;
  DeleteAll(b, id_);
  (void)b.Send(nl->get(), "the removal of the exec's egress chains");
}

Status NftEgress::Collect(EgressReport& r, bool take) {
  r.accounting = true;
  r.max_destinations = kMaxEgressDestinations;
  r.destinations.clear();
  r.attempts = r.allowed = r.refused = r.overflow = 0;
  Result<Socket> nl = OpenSocket();
  if (!nl.ok()) return nl.status();
  int64_t now = WallMs();
  for (const char* kind : kKinds) {
    std::string name = "s" + id_ + kind;
    nftnl_set* s = nftnl_set_alloc();
    nftnl_set_set_str(s, NFTNL_SET_TABLE, kTable);
    nftnl_set_set_str(s, NFTNL_SET_NAME, name.c_str());
    nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
    Status st = Dump(
        nl->get(), NFT_MSG_GETSETELEM,
        [&](struct nlmsghdr* nlh) { nftnl_set_elems_nlmsg_build_payload(nlh, s); },
        "a read of set " + name, ParseElems, s);
    if (st.ok()) {
      ElemRead rd{&r, &taken_, take, kind[1] == '6', kind[0] == 'a', now, taken_at_ms_};
      nftnl_set_elem_foreach(s, ReadElem, &rd);
    }
    nftnl_set_free(s);
    if (!st.ok()) return st;
    uint64_t overflow = 0;
    std::string chain = "x" + id_ + kind;
    AGENTD_RETURN_IF_ERROR(Dump(
        nl->get(), NFT_MSG_GETRULE,
        [&](struct nlmsghdr* nlh) {
          nftnl_rule* rule = nftnl_rule_alloc();
          nftnl_rule_set_str(rule, NFTNL_RULE_TABLE, kTable);
          nftnl_rule_set_str(rule, NFTNL_RULE_CHAIN, chain.c_str());
          nftnl_rule_set_u32(rule, NFTNL_RULE_FAMILY, NFPROTO_INET);
          nftnl_rule_nlmsg_build_payload(nlh, rule);
          nftnl_rule_free(rule);
        },
        "a read of chain " + chain, ParseOverflow, &overflow));
    r.overflow += static_cast<int64_t>(overflow);
  }
  // The answer's own bound: past it, destinations count as overflow.
  std::stable_sort(
      r.destinations.begin(), r.destinations.end(),
      [](const EgressDestination& a, const EgressDestination& b) { return a.count > b.count; });
  while (r.destinations.size() > static_cast<size_t>(kMaxEgressDestinations)) {
    const EgressDestination& d = r.destinations.back();
    (d.verdict == "allowed" ? r.allowed : r.refused) -= d.count;
    r.overflow += d.count;
    r.destinations.pop_back();
  }
  int64_t overflow_total = r.overflow;
  r.overflow -= static_cast<int64_t>(overflow_taken_);
  if (take) {
    overflow_taken_ = static_cast<uint64_t>(overflow_total);
    taken_at_ms_ = now;
  }
  r.attempts = r.allowed + r.refused + r.overflow;
  return Status::Ok();
}

std::string ProbeNftEgress(const std::string& probe_dir, int level) {
  EgressPolicy none;
  none.mode = "none";
  none.deny = {"127.0.0.1:9"};
  Result<std::vector<EgressRule>> table = BuildEgressTable(none, {});
  if (!table.ok()) return table.status().message();
  Result<std::unique_ptr<NftEgress>> n = NftEgress::Install(*table, probe_dir, level);
  if (!n.ok()) return n.status().message();
  std::string procs = probe_dir + "/cgroup.procs";
  pid_t pid = ::fork();
  if (pid < 0) return std::string("cannot fork the probe: ") + std::strerror(errno);
  if (pid == 0) {  // only system calls from here: the daemon may have threads
    int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(3);
    int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in to = {};
    to.sin_family = AF_INET;
    to.sin_port = htons(9);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ssize_t sent = ::sendto(s, "x", 1, 0, reinterpret_cast<struct sockaddr*>(&to), sizeof(to));
    ::_exit(sent >= 0 ? 4 : errno == EPERM ? 0 : 10 + std::min(errno, 200));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 3) {
    return "the probe could not join its cgroup " + probe_dir;
  }
  if (WEXITSTATUS(status) >= 10) {
    return std::string("the probe's datagram to 127.0.0.1:9 failed before the rules: ") +
           std::strerror(WEXITSTATUS(status) - 10);
  }
  if (WEXITSTATUS(status) != 0) {
    return "a datagram the nftables rules refuse was sent (the socket cgroupv2 match did not see "
           "the probe's cgroup at level " +
           std::to_string(level) + ": a cgroup namespace?)";
  }
  EgressReport r;
  Status st = (*n)->Collect(r, false);
  if (!st.ok()) return st.message();
  if (r.refused != 1) {
    return "the nftables rules refused the probe's datagram but counted " +
           std::to_string(r.refused);
  }
  return "";
}

}  // namespace agentd
