#include "limits/egress_guard.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>

#include "agentd/protocol/time_format.h"
#include "agentd/trees/posix_error.h"
#include "limits/bpf_program.h"
#include "limits/cgroup_info.h"
#if AGENTD_EGRESS_NFTABLES
#include "limits/egress_nftables.h"
#endif
#include "sys/read_file.h"

namespace agentd {
namespace {

// The rules map: an LPM trie. Its key is {prefixlen, 2 zero bytes, port
// (network order, 0: any), 16 address bytes}: the port precedes the
// address, so a lookup for port P matches only rules for port P, and a
// second lookup with port 0 finds the rules for any port.
struct RuleKey {
  uint32_t prefixlen;
  uint8_t pad[2];
  uint8_t port[2];
  uint8_t addr[16];
};
struct RuleValue {
  uint32_t allow;
  uint32_t prefix;  // of the address alone, to compare the two lookups
};
// The accounting map's key and value.
struct AccountKey {
  uint8_t family;
  uint8_t protocol;
  uint8_t verdict;
  uint8_t type;
  uint8_t port[2];  // network order
  uint8_t socket;   // 1: a refused socket() (no destination), from sock_create
  uint8_t pad;
  uint8_t addr[16];  // IPv4 as IPv4-mapped
};
struct AccountValue {
  uint64_t count;
  uint64_t first_ns;  // CLOCK_MONOTONIC (bpf_ktime_get_ns)
  uint64_t last_ns;
};
static_assert(sizeof(RuleKey) == 24 && sizeof(AccountKey) == 24);

constexpr uint32_t kMaxRules = 512;
constexpr int kFp = BPF_REG_10;
// Stack slots of the programs (below the frame pointer).
constexpr int16_t kRuleKey = -24;
constexpr int16_t kAccountKey = -48;
constexpr int16_t kAccountValue = -72;
constexpr int16_t kOverflowKey = -76;

struct Maps {
  int rules;
  int accounts;
  int overflow;
};

// A stack slot's field: `base` (negative) plus a field offset.
constexpr int16_t At(int16_t base, size_t offset) {
  return static_cast<int16_t>(base + static_cast<int>(offset));
}

void StackPtr(bpf::Assembler& a, int reg, int16_t off) {
  a.Mov(reg, kFp);
  a.AddImm(reg, off);
}

void CountHit(bpf::Assembler& a) {  // r0: the value; r9: now
  a.MovImm(BPF_REG_1, 1);
  a.AtomicAdd64(BPF_REG_0, offsetof(AccountValue, count), BPF_REG_1);
  a.Store(BPF_DW, BPF_REG_0, offsetof(AccountValue, last_ns), BPF_REG_9);
}

// Counts the attempt whose key is at kAccountKey: a new entry, else one more
// on the entry, else (the map is full) one more overflow.
void EmitAccount(bpf::Assembler& a, const Maps& m) {
  bpf::Label insert, overflow, done;
  a.Call(BPF_FUNC_ktime_get_ns);
  a.Mov(BPF_REG_9, BPF_REG_0);
  a.LoadMapFd(BPF_REG_1, m.accounts);
  StackPtr(a, BPF_REG_2, kAccountKey);
  a.Call(BPF_FUNC_map_lookup_elem);
  a.JumpImm(BPF_JEQ, BPF_REG_0, 0, insert);
  CountHit(a);
  a.Jump(done);
  a.Bind(insert);
  a.StoreImm(BPF_DW, kFp, At(kAccountValue, offsetof(AccountValue, count)), 1);
  a.Store(BPF_DW, kFp, At(kAccountValue, offsetof(AccountValue, first_ns)), BPF_REG_9);
  a.Store(BPF_DW, kFp, At(kAccountValue, offsetof(AccountValue, last_ns)), BPF_REG_9);
  a.LoadMapFd(BPF_REG_1, m.accounts);
  StackPtr(a, BPF_REG_2, kAccountKey);
  StackPtr(a, BPF_REG_3, kAccountValue);
  a.MovImm(BPF_REG_4, BPF_NOEXIST);
  a.Call(BPF_FUNC_map_update_elem);
  a.JumpImm(BPF_JEQ, BPF_REG_0, 0, done);
  // Another CPU inserted it first (EEXIST), or the map is full (E2BIG).
  a.LoadMapFd(BPF_REG_1, m.accounts);
  StackPtr(a, BPF_REG_2, kAccountKey);
  a.Call(BPF_FUNC_map_lookup_elem);
  a.JumpImm(BPF_JEQ, BPF_REG_0, 0, overflow);
  CountHit(a);
  a.Jump(done);
  a.Bind(overflow);
  a.StoreImm(BPF_W, kFp, kOverflowKey, 0);
  a.LoadMapFd(BPF_REG_1, m.overflow);
  StackPtr(a, BPF_REG_2, kOverflowKey);
  a.Call(BPF_FUNC_map_lookup_elem);
  a.JumpImm(BPF_JEQ, BPF_REG_0, 0, done);
  a.MovImm(BPF_REG_1, 1);
  a.AtomicAdd64(BPF_REG_0, 0, BPF_REG_1);
  a.Bind(done);
}

void LookupRules(bpf::Assembler& a, const Maps& m) {
  a.LoadMapFd(BPF_REG_1, m.rules);
  StackPtr(a, BPF_REG_2, kRuleKey);
  a.Call(BPF_FUNC_map_lookup_elem);
}

// connect4/6 and sendmsg4/6: r7 = verdict of the most specific rule.
std::vector<struct bpf_insn> SockAddrProgram(bool v6, const Maps& m) {
  using Ctx = struct bpf_sock_addr;
  bpf::Assembler a;
  a.Mov(BPF_REG_6, BPF_REG_1);
  a.StoreImm(BPF_W, kFp, At(kRuleKey, offsetof(RuleKey, prefixlen)), 32 + 128);
  a.StoreImm(BPF_H, kFp, At(kRuleKey, offsetof(RuleKey, pad)), 0);
  a.Load(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(Ctx, user_port));
  a.Store(BPF_H, kFp, At(kRuleKey, offsetof(RuleKey, port)), BPF_REG_2);
  constexpr int16_t kAddr = At(kRuleKey, offsetof(RuleKey, addr));
  if (v6) {
    for (int i = 0; i < 4; ++i) {
      a.Load(BPF_W, BPF_REG_2, BPF_REG_6, static_cast<int16_t>(offsetof(Ctx, user_ip6) + 4 * i));
      a.Store(BPF_W, kFp, static_cast<int16_t>(kAddr + 4 * i), BPF_REG_2);
    }
  } else {
    a.StoreImm(BPF_DW, kFp, kAddr, 0);
    a.StoreImm(BPF_W, kFp, kAddr + 8, static_cast<int32_t>(0xffff0000u));  // 00 00 ff ff
    a.Load(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(Ctx, user_ip4));
    a.Store(BPF_W, kFp, kAddr + 12, BPF_REG_2);
  }
  bpf::Label any_port, decided;
  a.MovImm(BPF_REG_7, 0);   // no rule: refused
  a.MovImm(BPF_REG_8, -1);  // the prefix of the port's rule; -1: none
  LookupRules(a, m);
  a.JumpImm(BPF_JEQ, BPF_REG_0, 0, any_port);
  a.Load(BPF_W, BPF_REG_7, BPF_REG_0, offsetof(RuleValue, allow));
  a.Load(BPF_W, BPF_REG_8, BPF_REG_0, offsetof(RuleValue, prefix));
  a.Bind(any_port);
  a.StoreImm(BPF_H, kFp, At(kRuleKey, offsetof(RuleKey, port)), 0);
  LookupRules(a, m);
  a.JumpImm(BPF_JEQ, BPF_REG_0, 0, decided);
  a.Load(BPF_W, BPF_REG_3, BPF_REG_0, offsetof(RuleValue, prefix));
  a.JumpReg(BPF_JSGE, BPF_REG_8, BPF_REG_3, decided);  // the port's rule is as specific
  a.Load(BPF_W, BPF_REG_7, BPF_REG_0, offsetof(RuleValue, allow));
  a.Bind(decided);
  a.AndImm(BPF_REG_7, 1);  // the verifier wants 0 or 1

  constexpr int16_t k = kAccountKey;
  a.Load(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(Ctx, user_family));
  a.Store(BPF_B, kFp, At(k, offsetof(AccountKey, family)), BPF_REG_2);
  a.Load(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(Ctx, protocol));
  a.Store(BPF_B, kFp, At(k, offsetof(AccountKey, protocol)), BPF_REG_2);
  a.Store(BPF_B, kFp, At(k, offsetof(AccountKey, verdict)), BPF_REG_7);
  a.Load(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(Ctx, type));
  a.Store(BPF_B, kFp, At(k, offsetof(AccountKey, type)), BPF_REG_2);
  a.Load(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(Ctx, user_port));
  a.Store(BPF_H, kFp, At(k, offsetof(AccountKey, port)), BPF_REG_2);
  a.StoreImm(BPF_H, kFp, At(k, offsetof(AccountKey, socket)), 0);  // and pad
  a.Load(BPF_DW, BPF_REG_2, kFp, kAddr);
  a.Store(BPF_DW, kFp, At(k, offsetof(AccountKey, addr)), BPF_REG_2);
  a.Load(BPF_DW, BPF_REG_2, kFp, kAddr + 8);
  a.Store(BPF_DW, kFp, At(k, offsetof(AccountKey, addr) + 8), BPF_REG_2);
  EmitAccount(a, m);
  a.Mov(BPF_REG_0, BPF_REG_7);
  a.Exit();
  return a.code();
}

// sock_create: refuses raw sockets and ICMP datagram ("ping") sockets,
// which reach any address without a connect or a UDP send.
std::vector<struct bpf_insn> SockCreateProgram(const Maps& m) {
  using Ctx = struct bpf_sock;
  bpf::Assembler a;
  bpf::Label refuse, out;
  a.Mov(BPF_REG_6, BPF_REG_1);
  a.MovImm(BPF_REG_7, 1);
  a.Load(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(Ctx, type));
  a.JumpImm(BPF_JEQ, BPF_REG_2, SOCK_RAW, refuse);
  a.JumpImm(BPF_JNE, BPF_REG_2, SOCK_DGRAM, out);
  a.Load(BPF_W, BPF_REG_3, BPF_REG_6, offsetof(Ctx, protocol));
  a.JumpImm(BPF_JEQ, BPF_REG_3, IPPROTO_ICMP, refuse);
  a.JumpImm(BPF_JEQ, BPF_REG_3, IPPROTO_ICMPV6, refuse);
  a.Jump(out);
  a.Bind(refuse);
  a.MovImm(BPF_REG_7, 0);
  constexpr int16_t k = kAccountKey;
  for (int16_t off = 0; off < 24; off += 8) a.StoreImm(BPF_DW, kFp, k + off, 0);
  a.StoreImm(BPF_B, kFp, At(k, offsetof(AccountKey, socket)), 1);
  a.Load(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(Ctx, family));
  a.Store(BPF_B, kFp, At(k, offsetof(AccountKey, family)), BPF_REG_2);
  a.Load(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(Ctx, protocol));
  a.Store(BPF_B, kFp, At(k, offsetof(AccountKey, protocol)), BPF_REG_2);
  a.Load(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(Ctx, type));
  a.Store(BPF_B, kFp, At(k, offsetof(AccountKey, type)), BPF_REG_2);
  EmitAccount(a, m);
  a.Bind(out);
  a.Mov(BPF_REG_0, BPF_REG_7);
  a.Exit();
  return a.code();
}

Status FillRules(int map, const std::vector<EgressRule>& table) {
  for (const EgressRule& r : table) {
    RuleKey k = {};
    k.prefixlen = static_cast<uint32_t>(32 + r.prefix);
    k.port[0] = static_cast<uint8_t>(r.port >> 8);
    k.port[1] = static_cast<uint8_t>(r.port & 0xff);
    std::memcpy(k.addr, r.addr.data(), 16);
    RuleValue v = {r.allow ? 1U : 0U, static_cast<uint32_t>(r.prefix)};
    AGENTD_RETURN_IF_ERROR(bpf::UpdateElement(map, &k, &v));
  }
  return Status::Ok();
}

std::string ProtocolName(const AccountKey& k) {
  return k.type == SOCK_RAW ? "raw" : IpProtocolName(k.protocol);
}

std::string AddressText(const AccountKey& k) {
  if (k.socket) return "";
  char text[INET6_ADDRSTRLEN] = "";
  if (k.family == AF_INET) {
    ::inet_ntop(AF_INET, k.addr + 12, text, sizeof(text));
  } else {
    ::inet_ntop(AF_INET6, k.addr, text, sizeof(text));
  }
  return text;
}

std::string WallTime(uint64_t mono_ns) {
  struct timespec now;
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  int64_t now_ns = static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
  auto ago = std::chrono::nanoseconds(now_ns - static_cast<int64_t>(mono_ns));
  return FormatRfc3339(std::chrono::system_clock::now() -
                       std::chrono::duration_cast<std::chrono::system_clock::duration>(ago));
}

}  // namespace

EgressGuard::~EgressGuard() {
  bool nft = nft_ != nullptr;
  nft_.reset();  // removes its rules, unless processes remain
  accounts_.reset();
  overflow_.reset();
  // EBUSY while processes of the exec remain: they stay policed (the
  // programs live as long as the directory), and the host removes it later.
  if (!own_dir_) return;
  if (::rmdir(dir_.c_str()) != 0) {
#if AGENTD_EGRESS_NFTABLES
    if (nft && errno == EBUSY) LingerNftEgress(dir_);  // nftables rules outlive the directory
#else
    (void)nft;
#endif
    return;
  }
  if (!adopted_) return;
  // The predecessor's base ("agentd-egress-<pid>"), once its last exec is gone.
  std::string base = dir_.substr(0, dir_.rfind('/'));
  if (base.find("agentd-egress-", base.rfind('/') + 1) == base.rfind('/') + 1) {
    ::rmdir(base.c_str());
  }
}

Result<std::unique_ptr<EgressGuard>> EgressGuard::Attach(const std::vector<EgressRule>& table,
                                                         const std::string& cgroup_dir,
                                                         bool own_dir, bool police_sockets,
                                                         int nft_level) {
  auto g = std::make_unique<EgressGuard>();
  g->dir_ = cgroup_dir;
  g->own_dir_ = own_dir;
  // The same bound for both rungs: a policy does not depend on which holds it.
  if (table.size() > kMaxRules) {
    return Status::InvalidRequest("the egress policy has too many rules")
        .With("field", std::string("egress"))
        .With("max_rules", static_cast<int64_t>(kMaxRules));
  }
  if (nft_level >= 0) {
#if AGENTD_EGRESS_NFTABLES
    Result<std::unique_ptr<NftEgress>> n = NftEgress::Install(table, cgroup_dir, nft_level);
    if (!n.ok()) return n.status();
    g->nft_.reset(n->release());
    if (own_dir) {
      std::string procs = cgroup_dir + "/cgroup.procs";
      g->procs_ = UniqueFd(::open(procs.c_str(), O_WRONLY | O_CLOEXEC));
      if (!g->procs_) return PosixError(errno, "cannot open", procs);
    }
    return g;
#else
    return Status::Internal("this agentd was built without the nftables rung");
#endif
  }
  Result<UniqueFd> rules = bpf::CreateMap(BPF_MAP_TYPE_LPM_TRIE, sizeof(RuleKey), sizeof(RuleValue),
                                          kMaxRules, BPF_F_NO_PREALLOC);
  if (!rules.ok()) return rules.status();
  Result<UniqueFd> accounts =
      bpf::CreateMap(BPF_MAP_TYPE_HASH, sizeof(AccountKey), sizeof(AccountValue),
                     static_cast<uint32_t>(kMaxEgressDestinations), BPF_F_NO_PREALLOC);
  if (!accounts.ok()) return accounts.status();
  Result<UniqueFd> overflow =
      bpf::CreateMap(BPF_MAP_TYPE_ARRAY, sizeof(uint32_t), sizeof(uint64_t), 1, 0);
  if (!overflow.ok()) return overflow.status();
  AGENTD_RETURN_IF_ERROR(FillRules(rules->get(), table));
  Maps m{rules->get(), accounts->get(), overflow->get()};

  UniqueFd dir(::open(cgroup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return PosixError(errno, "cannot open the exec's cgroup", cgroup_dir);
  struct Hook {
    bool v6;
    uint32_t attach;
  };
  for (Hook h : {Hook{false, BPF_CGROUP_INET4_CONNECT}, Hook{true, BPF_CGROUP_INET6_CONNECT},
                 Hook{false, BPF_CGROUP_UDP4_SENDMSG}, Hook{true, BPF_CGROUP_UDP6_SENDMSG}}) {
    Result<UniqueFd> prog =
        bpf::LoadProgram(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, h.attach, SockAddrProgram(h.v6, m));
    if (!prog.ok()) return prog.status();
    AGENTD_RETURN_IF_ERROR(bpf::Attach(dir.get(), prog->get(), h.attach));
  }
  if (police_sockets) {
    Result<UniqueFd> prog = bpf::LoadProgram(BPF_PROG_TYPE_CGROUP_SOCK, BPF_CGROUP_INET_SOCK_CREATE,
                                             SockCreateProgram(m));
    if (!prog.ok()) return prog.status();
    AGENTD_RETURN_IF_ERROR(bpf::Attach(dir.get(), prog->get(), BPF_CGROUP_INET_SOCK_CREATE));
  }
  if (own_dir) {
    std::string procs = cgroup_dir + "/cgroup.procs";
    g->procs_ = UniqueFd(::open(procs.c_str(), O_WRONLY | O_CLOEXEC));
    if (!g->procs_) return PosixError(errno, "cannot open", procs);
  }
  g->accounts_ = std::move(*accounts);
  g->overflow_ = std::move(*overflow);
  return g;
}

void EgressGuard::Collect(EgressReport& r, bool take) const {
#if AGENTD_EGRESS_NFTABLES
  if (nft_) {
    if (Status s = nft_->Collect(r, take); !s.ok()) {
      r.incomplete = EgressIncomplete{FormatRfc3339(std::chrono::system_clock::now()),
                                      "the nftables counts cannot be read: " + s.message()};
    }
    return;
  }
#endif
  r.accounting = true;
  r.max_destinations = kMaxEgressDestinations;
  r.destinations.clear();
  r.attempts = r.allowed = r.refused = 0;
  AccountKey key{};
  AccountKey next{};
  bool first = true;
  // Bounded by the map's own bound, whatever happens to it meanwhile.
  for (int64_t n = 0; n < kMaxEgressDestinations; ++n) {
    // Taking, the first key is always the next one (the last was removed).
    if (!bpf::NextKey(accounts_.get(), first || take ? nullptr : &key, &next)) break;
    first = false;
    key = next;
    AccountValue v{};
    if (take ? !bpf::TakeElement(accounts_.get(), &key, &v)
             : !bpf::LookupElement(accounts_.get(), &key, &v)) {
      if (take) break;  // else it would be the first key again
      continue;
    }
    EgressDestination d;
    d.family = key.family == AF_INET ? "ipv4" : "ipv6";
    d.protocol = ProtocolName(key);
    d.address = AddressText(key);
    d.port = (key.port[0] << 8) | key.port[1];
    d.verdict = key.verdict ? "allowed" : "refused";
    d.count = static_cast<int64_t>(v.count);
    d.first_at = WallTime(v.first_ns);
    d.last_at = WallTime(v.last_ns);
    (key.verdict ? r.allowed : r.refused) += d.count;
    r.destinations.push_back(std::move(d));
  }
  uint32_t zero = 0;
  uint64_t overflow = 0;
  if (bpf::LookupElement(overflow_.get(), &zero, &overflow)) {
    r.overflow = static_cast<int64_t>(overflow);
    uint64_t none = 0;
    if (take && overflow) (void)bpf::UpdateElement(overflow_.get(), &zero, &none);
  }
  r.attempts = r.allowed + r.refused + r.overflow;
}

const char* EgressHost::enforcer_name() const {
  switch (enforcer_) {
    case EgressEnforcer::kBpf:
      return "bpf";
    case EgressEnforcer::kNftables:
      return "nftables";
    default:
      return "";
  }
}

int EgressHost::NftLevel(const std::string& dir) const {
  if (enforcer_ != EgressEnforcer::kNftables) return -1;
  // The depth below the mount: the directories are made below it (0, which
  // NftEgress::Install refuses, for one that is not).
  if (dir.compare(0, mount_.size(), mount_) != 0 || dir.size() <= mount_.size() ||
      dir[mount_.size()] != '/') {
    return 0;
  }
  int level = 0;
  bool in_name = false;
  for (size_t i = mount_.size(); i < dir.size(); ++i) {
    if (dir[i] != '/' && !in_name) ++level;
    in_name = dir[i] != '/';
  }
  return level;
}

#if !AGENTD_EGRESS_NFTABLES
void NftEgressDeleter::operator()(NftEgress*) const {}  // nothing makes one
#endif

void EgressHost::Open(const std::string& enforcer) {
  Result<std::string> mountinfo = ReadFileToString("/proc/self/mountinfo", 1 << 20);
  Result<std::string> own = ReadFileToString("/proc/self/cgroup", 1 << 16);
  if (!mountinfo.ok() || !own.ok()) {
    why_ = "cannot read /proc/self/mountinfo or /proc/self/cgroup";
    return;
  }
  std::string mount;
  for (const CgroupMount& m : ParseCgroupMounts(*mountinfo)) {
    if (m.v2 && mount.empty()) mount = m.mount_point;
  }
  std::string path;
  bool member = false;
  for (const ProcCgroup& c : ParseProcCgroup(*own)) {
    if (c.hierarchy == 0 && c.controllers.empty()) {
      path = c.path;
      member = true;
    }
  }
  if (mount.empty() || !member) {
    why_ = "no cgroup2 hierarchy is mounted (cgroup-BPF egress hooks need one)";
    return;
  }
  base_ = JoinPath(JoinPath(mount, path), "agentd-egress-" + std::to_string(::getpid()));
  if (::mkdir(base_.c_str(), 0755) != 0 && errno != EEXIST) {
    why_ = "cannot create " + base_ + " (" + std::strerror(errno) + ")";
    return;
  }
  Result<std::string> probe = MakeNamedDir("probe");
  if (!probe.ok()) {
    why_ = probe.status().message();
    return;
  }
  mount_ = mount;
  std::string bpf_why;
  if (enforcer != "nftables") {
    EgressPolicy none;
    none.mode = "none";
    Result<std::vector<EgressRule>> table = BuildEgressTable(none, {});
    Result<std::unique_ptr<EgressGuard>> g =
        table.ok() ? EgressGuard::Attach(*table, *probe, /*own_dir=*/false, true)
                   : Result<std::unique_ptr<EgressGuard>>(table.status());
    if (g.ok()) {
      enforcer_ = EgressEnforcer::kBpf;
      g->reset();
      ::rmdir(probe->c_str());
      return;
    }
    bpf_why = "cannot attach cgroup-BPF programs: " + g.status().message();
    // The programs stay attached to the probe directory until it goes.
    ::rmdir(probe->c_str());
    if (enforcer == "bpf") {
      why_ = bpf_why;
      return;
    }
    probe = MakeNamedDir("probe");
    if (!probe.ok()) {
      why_ = bpf_why + "; " + probe.status().message();
      return;
    }
  }
#if AGENTD_EGRESS_NFTABLES
  enforcer_ = EgressEnforcer::kNftables;
  std::string nft_why = ProbeNftEgress(*probe, NftLevel(*probe));
  ::rmdir(probe->c_str());
  if (nft_why.empty()) {
    SweepNftEgress(mount_);  // a dead daemon's leftovers
    return;
  }
  enforcer_ = EgressEnforcer::kNone;
  nft_why = "nftables: " + nft_why;
#else
  ::rmdir(probe->c_str());
  std::string nft_why = "nftables: this agentd was built without it (AGENTD_EGRESS_NFTABLES=OFF)";
#endif
  why_ = bpf_why.empty() ? nft_why : bpf_why + "; " + nft_why;
}

void EgressHost::Close() {
#if AGENTD_EGRESS_NFTABLES
  if (enforcer_ == EgressEnforcer::kNftables) SweepNftEgress();
#endif
  if (!base_.empty()) ::rmdir(base_.c_str());
}

Result<std::string> EgressHost::MakeDir(uint64_t seq, const std::string& parent) const {
  return MakeNamedDir("e" + std::to_string(seq), parent);
}

Result<std::string> EgressHost::MakeNamedDir(const std::string& name,
                                             const std::string& parent) const {
  std::string dir = (parent.empty() ? base_ : parent) + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0) return PosixError(errno, "cannot create cgroup", dir);
  return dir;
}

std::string IpProtocolName(int protocol) {
  switch (protocol) {
    case IPPROTO_TCP:
      return "tcp";
    case IPPROTO_UDP:
      return "udp";
    case IPPROTO_ICMP:
      return "icmp";
    case IPPROTO_ICMPV6:
      return "icmpv6";
    default:
      return std::to_string(protocol);
  }
}

}  // namespace agentd
