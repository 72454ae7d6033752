#include "limits/egress_nftables.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
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
#include <map>
#include <mutex>

#include "agentd/protocol/time_format.h"
#include "agentd/trees/posix_error.h"
#include "limits/egress_guard.h"
#include "limits/nft_answers.h"
#include "limits/nft_messages.h"
#include "limits/nft_socket.h"
#include "sys/read_file.h"

namespace agentd {
namespace {

constexpr const char* kTable = "agentd";
// Elements never expire while an exec can run; the remaining time answers
// when the element was made. 3650 days in ms.
constexpr uint64_t kElementTimeoutMs = 3650ULL * 24 * 3600 * 1000;
// Per set; the answer holds at most kMaxEgressDestinations in all.
constexpr uint32_t kSetSize = 1024;

// nft's type ids, so nft can name the sets' keys: ipv4_addr (7) or
// ipv6_addr (8) . inet_service (13) . inet_proto (12).
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

void AddSet(NftBatch& b, const std::string& name, const Family& f, uint32_t id, bool counted) {
  NftBatch::SetSpec s;
  s.name = name;
  s.counted = counted;
  s.id = id;
  s.key_type = f.key_type;
  s.key_len = f.addr_len + 8;  // port and protocol: a register each
  s.timeout_ms = kElementTimeoutMs;
  s.size = kSetSize;
  b.NewSet(s);
}

NftRule& Proto(NftRule& r, uint32_t op, uint8_t proto) {
  return r.Meta(NFT_META_L4PROTO, NFT_REG_1).Cmp(op, &proto, 1);
}

// The counting chains: xNa4 (allowed, accept) or xNr4 (refused). Each
// destination is an element of two sets: sNa4 counts it and its time left
// answers when it was first seen; lNa4's, restarted at each attempt, when
// it was last seen. (Not one set with a "last" expression: nft 1.0.6
// crashes listing a ruleset that holds one.) lNa4 fills no sooner than
// sNa4: the same keys, in the same order.
void AddVerdictChain(NftBatch& b, const std::string& id, const Family& f, bool allow) {
  std::string chain = "x" + id + (allow ? "a" : "r") + f.tag;
  std::string set = "s" + id + (allow ? "a" : "r") + f.tag;
  std::string last = "l" + id + (allow ? "a" : "r") + f.tag;
  auto verdict = [&](NftRule& r, uint8_t proto) {
    if (allow) {
      r.Verdict(NF_ACCEPT);
    } else if (proto == IPPROTO_TCP) {
      r.RejectTcpReset();
    } else {
      r.Verdict(NF_DROP);
    }
    r.Done();
  };
  auto key = [&](NftRule& r, bool port) {
    r.Payload(NFT_PAYLOAD_NETWORK_HEADER, f.daddr_offset, f.addr_len, NFT_REG_1);
    if (port) {
      r.Payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, f.port_reg);
    } else {
      uint32_t zero = 0;  // a 32-bit register's zero: the port of a packet that has none
      r.Immediate(f.port_reg, &zero, sizeof(zero));
    }
    r.Meta(NFT_META_L4PROTO, f.port_reg + 1);
  };
  {  // TCP other than a SYN (a flow already let through, or refused): no count
    NftRule r = b.Rule(chain);
    uint8_t syn_ack = 0x12, syn = 0x02;
    Proto(r, NFT_CMP_EQ, IPPROTO_TCP).Payload(NFT_PAYLOAD_TRANSPORT_HEADER, 13, 1, NFT_REG_1);
    r.Mask(&syn_ack, 1).Cmp(NFT_CMP_NEQ, &syn, 1);
    verdict(r, IPPROTO_TCP);
  }
  for (uint8_t proto : {IPPROTO_TCP, IPPROTO_UDP}) {
    NftRule r = b.Rule(chain);
    Proto(r, NFT_CMP_EQ, proto);
    key(r, true);
    r.DynsetAdd(set).DynsetUpdate(last);  // a full set breaks the rule
    verdict(r, proto);
  }
  {  // ICMP, raw: by address, port 0
    NftRule r = b.Rule(chain);
    Proto(r, NFT_CMP_NEQ, IPPROTO_TCP).Cmp(NFT_CMP_NEQ, "\x11", 1);
    key(r, false);
    r.DynsetAdd(set).DynsetUpdate(last);
    verdict(r, 0);
  }
  // Here only when the set is full: the overflow rule (a chain's only rule
  // that starts with a counter), then the verdict.
  b.Rule(chain).Counter().Done();
  if (allow) {
    b.Rule(chain).Verdict(NF_ACCEPT).Done();
  } else {
    NftRule tcp = b.Rule(chain);
    Proto(tcp, NFT_CMP_EQ, IPPROTO_TCP).RejectTcpReset().Done();
    b.Rule(chain).Verdict(NF_DROP).Done();
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

void AddPolicyRule(NftBatch& b, const std::string& id, const Family& f, const uint8_t* net,
                   int bits, const EgressRule& rule) {
  std::string target = "x" + id + (rule.allow ? "a" : "r") + f.tag;
  for (uint8_t proto : {IPPROTO_TCP, IPPROTO_UDP}) {
    NftRule r = b.Rule("x" + id + "p" + f.tag);
    if (bits > 0) {
      uint8_t mask[16] = {};
      for (int i = 0; i < bits; ++i) mask[i / 8] |= static_cast<uint8_t>(0x80 >> (i % 8));
      r.Payload(NFT_PAYLOAD_NETWORK_HEADER, f.daddr_offset, f.addr_len, NFT_REG_1);
      if (bits < static_cast<int>(f.addr_len * 8)) r.Mask(mask, f.addr_len);
      r.Cmp(NFT_CMP_EQ, net, f.addr_len);
    }
    if (rule.port != 0) {
      uint16_t port = htons(rule.port);
      Proto(r, NFT_CMP_EQ, proto).Payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, NFT_REG_1);
      r.Cmp(NFT_CMP_EQ, &port, 2);
    }
    r.Verdict(NFT_GOTO, target).Done();
    if (rule.port == 0) break;  // a rule for any port: any protocol, once
  }
}

Result<uint64_t> CgroupId(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return PosixError(errno, "cannot stat cgroup", dir);
  return static_cast<uint64_t>(st.st_ino);  // a cgroup2 directory's inode is its id
}

const char* kKinds[] = {"a4", "a6", "r4", "r6"};

void DeleteAll(NftBatch& b, const std::string& id) {
  std::vector<std::string> chains = {"x" + id, "x" + id + "p4", "x" + id + "p6"};
  for (const char* k : kKinds) chains.push_back("x" + id + k);
  for (const std::string& c : chains) b.FlushChain(c);
  for (const std::string& c : chains) b.DeleteChain(c);
  for (const char* k : kKinds) {
    b.DeleteSet("s" + id + k);
    b.DeleteSet("l" + id + k);
  }
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

// Each counted element's last attempt: the time its key's element in the
// "l" set has run since its last restart.
void LastSeen(const std::vector<NftElement>& seen, std::vector<NftElement>* elems) {
  std::map<std::vector<uint8_t>, uint64_t> left;
  for (const NftElement& e : seen) left[e.key] = std::min(e.expiration_ms, kElementTimeoutMs);
  for (NftElement& e : *elems) {
    auto l = left.find(e.key);
    if (l == left.end()) continue;
    e.last_set = true;
    e.last_ago_ms = kElementTimeoutMs - l->second;
  }
}

void ReadElem(const NftElement& e, ElemRead* rd) {
  uint32_t addr_len = rd->v6 ? 16 : 4;
  if (e.key.size() < addr_len + 5) return;
  const uint8_t* key = e.key.data();
  char text[INET6_ADDRSTRLEN] = "";
  ::inet_ntop(rd->v6 ? AF_INET6 : AF_INET, key, text, sizeof(text));
  uint16_t port = static_cast<uint16_t>(key[addr_len] << 8 | key[addr_len + 1]);
  uint8_t proto = key[addr_len + 4];
  std::string id = std::string(rd->allowed ? "a" : "r") + text + "/" + std::to_string(port) + "/" +
                   std::to_string(proto);
  auto seen = rd->taken->find(id);
  uint64_t before = seen == rd->taken->end() ? 0 : seen->second;
  if (e.packets <= before) return;  // nothing since the last take
  if (rd->take) (*rd->taken)[id] = e.packets;
  uint64_t expiration = std::min(e.expiration_ms, kElementTimeoutMs);
  int64_t made = rd->now_ms - static_cast<int64_t>(kElementTimeoutMs - expiration);
  EgressDestination d;
  d.family = rd->v6 ? "ipv6" : "ipv4";
  d.protocol = IpProtocolName(proto);
  d.address = text;
  d.port = port;
  d.verdict = rd->allowed ? "allowed" : "refused";
  d.count = static_cast<int64_t>(e.packets - before);
  int64_t last = e.last_set ? rd->now_ms - static_cast<int64_t>(e.last_ago_ms) : made;
  d.first_at = WallText(before > 0 ? std::max(rd->since_ms, made) : made);
  d.last_at = WallText(std::max(last, made));
  (rd->allowed ? rd->r->allowed : rd->r->refused) += d.count;
  rd->r->destinations.push_back(std::move(d));
}

bool Populated(const std::string& dir) {
  Result<std::string> events = ReadFileToString(dir + "/cgroup.events", 4096);
  return events.ok() && events->find("populated 1") != std::string::npos;
}

// True only when the kernel says no cgroup has id `id` any more (ESTALE):
// its rules can match no socket, whichever daemon made them, and ids are
// never reused. Any other answer (no CAP_DAC_READ_SEARCH, ...) proves
// nothing.
bool CgroupGone(int mount_fd, uint64_t id) {
  constexpr int kFileidKernfs = 0xfe;  // a kernfs node's 64-bit id (the cgroup's)
  union {
    struct file_handle h;
    unsigned char room[sizeof(struct file_handle) + sizeof(uint64_t)];
  } fh = {};
  fh.h.handle_bytes = sizeof(id);
  fh.h.handle_type = kFileidKernfs;
  std::memcpy(fh.room + sizeof(struct file_handle), &id, sizeof(id));
  int fd = ::open_by_handle_at(mount_fd, &fh.h, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) ::close(fd);
  return fd < 0 && errno == ESTALE;
}

// What the sweep knows: the cgroup2 mount (from EgressHost::Open) and the
// directories of execs whose processes outlived them, whose rules stay
// until those processes are gone (then the directory goes, and its id).
struct Sweep {
  std::mutex mu;
  std::string mount;
  std::vector<std::string> lingering;
};
constexpr size_t kMaxLingering = 4096;
constexpr size_t kMaxSweptChains = 65536;

Sweep& TheSweep() {
  static Sweep* s = new Sweep();  // never destroyed: a guard may end after main
  return *s;
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
  NftSocket nl;
  AGENTD_RETURN_IF_ERROR(nl.Open());

  // Most specific first: the first rule that matches is the one the BPF
  // rung's lookup picks (limits/egress_rules.h, EgressAllows).
  std::vector<EgressRule> sorted = table;
  std::stable_sort(sorted.begin(), sorted.end(), [](const EgressRule& a, const EgressRule& b) {
    if (a.prefix != b.prefix) return a.prefix > b.prefix;
    return (a.port != 0) > (b.port != 0);
  });

  NftBatch b(kTable);
  b.NewTable();
  uint32_t set_id = 1;
  for (const Family* f : {&kV4, &kV6}) {
    for (bool allow : {true, false}) {
      AddSet(b, "s" + id + (allow ? "a" : "r") + f->tag, *f, set_id++, true);
      AddSet(b, "l" + id + (allow ? "a" : "r") + f->tag, *f, set_id++, false);
      b.NewChain("x" + id + (allow ? "a" : "r") + f->tag);
      AddVerdictChain(b, id, *f, allow);
    }
    std::string policy = "x" + id + "p" + f->tag;
    b.NewChain(policy);
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
    b.Rule(policy).Verdict(NFT_GOTO, "x" + id + "r" + f->tag).Done();  // no rule: refused
  }
  b.NewChain("x" + id, NF_INET_LOCAL_OUT);
  for (const Family* f : {&kV4, &kV6}) {
    uint8_t nfproto = f == &kV4 ? NFPROTO_IPV4 : NFPROTO_IPV6;
    NftRule r = b.Rule("x" + id);
    r.SocketCgroup(static_cast<uint32_t>(level)).Cmp(NFT_CMP_EQ, &*cgid, sizeof(uint64_t));
    r.Meta(NFT_META_NFPROTO, NFT_REG_1).Cmp(NFT_CMP_EQ, &nfproto, 1);
    r.Verdict(NFT_GOTO, "x" + id + "p" + f->tag).Done();
  }
  AGENTD_RETURN_IF_ERROR(nl.Send(b, "the exec's egress chains"));
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
  NftSocket nl;
  if (!nl.Open().ok()) return;
  NftBatch b(kTable);
  DeleteAll(b, id_);
  (void)nl.Send(b, "the removal of the exec's egress chains");
  SweepNftEgress();
}

void LingerNftEgress(const std::string& cgroup_dir) {
  Sweep& s = TheSweep();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.lingering.size() < kMaxLingering) s.lingering.push_back(cgroup_dir);
}

void SweepNftEgress(const std::string& cgroup_mount) {
  Sweep& s = TheSweep();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!cgroup_mount.empty()) s.mount = cgroup_mount;
  if (s.mount.empty()) return;
  // An outlived exec's directory, empty now: removed, its rules below.
  std::erase_if(s.lingering, [](const std::string& dir) {
    return !Populated(dir) && (::rmdir(dir.c_str()) == 0 || errno == ENOENT);
  });
  NftSocket nl;
  if (!nl.Open().ok()) return;
  std::vector<uint64_t> ids;
  Status listed = nl.Dump(NftDumpChains(1), "a read of the chains", [&](NetlinkSpan m) {
    std::string name;
    if (!ChainOfTable(m, kTable, &name)) return false;
    // An exec's base chain: "x" and the cgroup's id in decimal.
    bool base = name.size() > 1 && name.size() <= 21 && name[0] == 'x' &&
                name.find_first_not_of("0123456789", 1) == std::string::npos;
    if (base && ids.size() < kMaxSweptChains) ids.push_back(std::stoull(name.substr(1)));
    return true;
  });
  if (!listed.ok()) return;
  int mount_fd = ::open(s.mount.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (mount_fd < 0) return;
  for (uint64_t id : ids) {
    if (!CgroupGone(mount_fd, id)) continue;
    NftBatch b(kTable);
    DeleteAll(b, std::to_string(id));
    (void)nl.Send(b, "the removal of a gone cgroup's egress chains");
  }
  ::close(mount_fd);
  // Refused (EBUSY) while any daemon's exec has objects there.
  NftBatch b(kTable);
  b.DeleteTableIfEmpty();
  (void)nl.Send(b, "the removal of the empty table");
}

Status NftEgress::Collect(EgressReport& r, bool take) {
  r.accounting = true;
  r.max_destinations = kMaxEgressDestinations;
  r.destinations.clear();
  r.attempts = r.allowed = r.refused = r.overflow = 0;
  NftSocket nl;
  AGENTD_RETURN_IF_ERROR(nl.Open());
  int64_t now = WallMs();
  uint32_t seq = 1;
  for (const char* kind : kKinds) {
    std::vector<NftElement> elems, seen;
    for (const char* prefix : {"s", "l"}) {
      std::string set = prefix + id_ + kind;
      AGENTD_RETURN_IF_ERROR(nl.Dump(
          NftDumpSetElements(kTable, set, seq++), "a read of set " + set,
          [&](NetlinkSpan m) { return ParseSetElements(m, *prefix == 's' ? &elems : &seen); }));
    }
    LastSeen(seen, &elems);
    ElemRead rd{&r, &taken_, take, kind[1] == '6', kind[0] == 'a', now, taken_at_ms_};
    for (const NftElement& e : elems) ReadElem(e, &rd);
    uint64_t overflow = 0;
    std::string chain = "x" + id_ + kind;
    AGENTD_RETURN_IF_ERROR(nl.Dump(NftDumpRules(kTable, chain, seq++), "a read of chain " + chain,
                                   [&](NetlinkSpan m) { return AddFirstCounter(m, &overflow); }));
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
