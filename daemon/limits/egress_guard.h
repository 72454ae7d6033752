// Egress policy in the kernel (docs/PROTOCOL.md, "Egress";
// docs/SECURITY.md, "Egress"): per exec, a cgroup2 directory with five
// cgroup-BPF programs attached, and the maps they read and write.
//
//   connect4, connect6   TCP connects (and UDP connects)
//   sendmsg4, sendmsg6   UDP datagrams sent with a destination
//   sock_create          raw and ICMP sockets (modes other than "all")
//
// A destination is looked up in an LPM trie of the policy's rules
// (limits/egress_rules.h, IPv4 as IPv4-mapped so every spelling of an
// address meets the same rules); verdict 0 makes the call fail with EPERM
// at once. Every attempt, allowed or refused, is counted in a bounded hash
// map keyed by (family, address, port, protocol, verdict) with its first
// and last time; attempts past the bound only count as overflow.
//
// The programs are attached without BPF_F_ALLOW_OVERRIDE or
// BPF_F_ALLOW_MULTI, so nothing beneath the directory can replace them, and
// the exec's child joins the directory before it executes anything (its
// descendants, double-forked or not, inherit it).
//
// Where cgroup-BPF cannot be attached (no bpf(2), no CAP_BPF or
// CAP_SYS_ADMIN, a seccomp profile that refuses it), the same table is
// enforced by nftables rules that match the exec's cgroup
// (limits/egress_nftables.h); the guard then holds those instead.
//
// EgressHost: the daemon's share: where the directories go (a directory
// "agentd-egress-<pid>" below the daemon's own cgroup2 group) and whether
// this kernel and these privileges can do all of it, found by attaching a
// real policy to a probe directory at start. Thread-safety: Open/Close on
// the main thread; the rest on the io thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agentd/protocol/egress.h"
#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"
#include "limits/egress_rules.h"

namespace agentd {

// The bound of the accounting map (distinct destinations per exec).
inline constexpr int64_t kMaxEgressDestinations = 1024;

class NftEgress;
// Defined with the rung (limits/egress_nftables.cc): a build without it
// never makes one.
struct NftEgressDeleter {
  void operator()(NftEgress* n) const;
};

// Which rung enforces the policies (--egress-enforcer; health's
// limits.egress_enforcer).
enum class EgressEnforcer { kNone, kBpf, kNftables };

class EgressGuard {
 public:
  EgressGuard() = default;
  EgressGuard(const EgressGuard&) = delete;
  EgressGuard& operator=(const EgressGuard&) = delete;
  ~EgressGuard();

  // Loads the programs for `table` and attaches them to `cgroup_dir`.
  // `own_dir`: the directory is the guard's, removed (when empty) with it.
  // `nft_level` >= 0: nftables rules for the cgroup at that depth
  // (EgressHost::NftLevel) instead of the programs.
  static Result<std::unique_ptr<EgressGuard>> Attach(const std::vector<EgressRule>& table,
                                                     const std::string& cgroup_dir, bool own_dir,
                                                     bool police_sockets, int nft_level = -1);

  // A restarted daemon's hold on the programs a predecessor attached to
  // `cgroup_dir` (limits/egress_adopt.cc): their maps, found through the
  // kernel (or its nftables chains, found by the cgroup's id); the counts
  // go on from where they were.
  static Result<std::unique_ptr<EgressGuard>> Adopt(const std::string& cgroup_dir, bool own_dir);

  // The counts so far, into `r` (destinations, totals, overflow).
  void Read(EgressReport& r) const { Collect(r, false); }
  // The counts so far, taken out of the maps: the next Take() or Read()
  // answers only attempts made after this one (a context's runs, one by
  // one). An overflow counted during the call may be lost.
  void Take(EgressReport& r) { Collect(r, true); }
  // Open cgroup.procs of an own directory (-1 otherwise), for the child.
  int procs_fd() const { return procs_.get(); }
  void CloseProcsFd() { procs_.reset(); }
  const std::string& dir() const { return dir_; }
  bool own_dir() const { return own_dir_; }

 private:
  void Collect(EgressReport& r, bool take) const;
  std::string dir_;
  bool own_dir_ = false;
  bool adopted_ = false;  // a predecessor's: its base directory goes with it
  UniqueFd accounts_;
  UniqueFd overflow_;
  UniqueFd procs_;
  std::unique_ptr<NftEgress, NftEgressDeleter> nft_;  // the nftables rung's rules, or null
};

class EgressHost {
 public:
  // Finds the cgroup2 mount and the daemon's group there, makes the base
  // directory and tries each rung `enforcer` allows ("auto": cgroup-BPF,
  // else nftables; "bpf"; "nftables") on a probe directory; why() says
  // what failed, for each rung tried.
  void Open(const std::string& enforcer = "auto");
  // Removes the base directory when every exec directory is gone.
  void Close();
  const std::string& why() const { return why_; }
  bool available() const { return why_.empty(); }
  EgressEnforcer enforcer() const { return enforcer_; }
  // "bpf", "nftables" or "" (none works).
  const char* enforcer_name() const;
  // What EgressGuard::Attach takes as nft_level for `dir`: its depth below
  // the cgroup2 root with the nftables rung, -1 with cgroup-BPF.
  int NftLevel(const std::string& dir) const;
  // A fresh directory for one exec: <parent>/e<seq>, in the tenant
  // generation's group when given (limits/tenant_cgroup.h), else <base>/e<seq>.
  Result<std::string> MakeDir(uint64_t seq, const std::string& parent = {}) const;

 private:
  Result<std::string> MakeNamedDir(const std::string& name, const std::string& parent = {}) const;
  std::string mount_;
  std::string base_;
  std::string why_;
  EgressEnforcer enforcer_ = EgressEnforcer::kNone;
};

// An attempt's protocol as the egress record names it: "tcp", "udp",
// "icmp", "icmpv6", else the IP protocol number. Both rungs use it.
std::string IpProtocolName(int protocol);

}  // namespace agentd
