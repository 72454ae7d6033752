// The nftables rung of egress policy (docs/SECURITY.md, "Egress"): where
// cgroup-BPF cannot be attached, the same table of rules
// (limits/egress_rules.h) as nf_tables chains in the guest's own network
// namespace, sent as nf_tables netlink requests (limits/nft_messages.h).
//
// Everything lives in the table "inet agentd", shared by every daemon of
// the namespace; one exec owns the objects named after its cgroup's id N:
//
//   xN     base chain on the output hook: packets whose socket belongs to
//          the exec's cgroup ("socket cgroupv2 level L N") go to xNp4/xNp6
//   xNp4   the policy's rules for IPv4, most specific first (an IPv4-mapped
//          rule of the table is an IPv4 rule here: the kernel sends a
//          connect to ::ffff:a.b.c.d as an IPv4 packet), then "refused"
//   xNp6   the same for IPv6
//   xNa4, xNa6   allowed: count, accept
//   xNr4, xNr6   refused: count, then TCP gets a reset (connect fails with
//                ECONNREFUSED), everything else is dropped (the send fails
//                with EPERM)
//   sNa4, sNa6, sNr4, sNr6   the counts: dynamic sets keyed by
//          (destination, port, protocol) whose elements carry a counter
//          and a "last" timestamp; their creation time comes from the
//          set's fixed element timeout (a first attempt's element expires
//          kElementTimeout after it)
//
// What is counted: a TCP SYN (a connect attempt, and its retransmissions),
// every UDP datagram, every packet of another protocol (ICMP, raw) with
// port 0; attempts past a set's bound count in its chain's overflow rule.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agentd/protocol/egress.h"
#include "agentd/protocol/status.h"
#include "limits/egress_rules.h"

namespace agentd {

class NftEgress {
 public:
  NftEgress(const NftEgress&) = delete;
  NftEgress& operator=(const NftEgress&) = delete;
  // Removes the exec's chains and sets, unless processes of the cgroup
  // remain (they stay policed; docs/SECURITY.md says what that leaves).
  ~NftEgress();

  // `level`: the depth of `cgroup_dir` below the cgroup2 root (the
  // hierarchy's, not a cgroup namespace's).
  static Result<std::unique_ptr<NftEgress>> Install(const std::vector<EgressRule>& table,
                                                    const std::string& cgroup_dir, int level);
  // A restarted daemon's hold on the chains a predecessor installed.
  static Result<std::unique_ptr<NftEgress>> Adopt(const std::string& cgroup_dir);

  // The counts so far; `take`: only those since the last take (the counts
  // stay in the kernel, the daemon remembers what it handed out).
  Status Collect(EgressReport& r, bool take);

 private:
  NftEgress() = default;
  std::string cgroup_dir_;
  std::string id_;  // the cgroup's id, in decimal
  std::map<std::string, uint64_t> taken_;
  uint64_t overflow_taken_ = 0;
  int64_t taken_at_ms_ = 0;  // wall clock of the last take
};

// Installs a policy refusing UDP to 127.0.0.1:9 on `probe_dir`, sends one
// datagram there from a child in that cgroup and checks that it failed
// with EPERM and was counted: the whole rung, end to end. "" when it
// works, else why not.
std::string ProbeNftEgress(const std::string& probe_dir, int level);

// An exec whose processes outlived it (its rules stayed, policing them):
// its directory is removed, and its rules with it, by the first sweep
// after its last process is gone.
void LingerNftEgress(const std::string& cgroup_dir);

// Removes what provably polices nothing: the lingering directories now
// empty, every exec's chains and sets in "inet agentd" whose cgroup no
// longer exists (this daemon's, a dead daemon's, or another's: a gone
// cgroup's rules match no socket), then the table if nothing is left in
// it (NLM_F_NONREC: the kernel refuses while any daemon has objects
// there). At start-up (EgressHost::Open, which names the cgroup2 mount),
// after each exec's removal and at shutdown.
void SweepNftEgress(const std::string& cgroup_mount = {});

}  // namespace agentd
