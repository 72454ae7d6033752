// A restarted daemon takes over the accounting of an exec that outlived
// its predecessor (docs/PROTOCOL.md, "Egress"): the exec's programs are
// still attached to its cgroup2 directory, and they hold their maps, so
// the successor asks the kernel for the connect4 program attached there
// and opens its maps by id. Nothing is pinned, so nothing is left behind
// when the directory goes. Needs CAP_SYS_ADMIN (as attaching did).
#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "agentd/trees/posix_error.h"
#include "limits/egress_guard.h"
#if AGENTD_EGRESS_NFTABLES
#include "limits/egress_nftables.h"
#endif

namespace agentd {
namespace {

long Bpf(int cmd, union bpf_attr* attr) { return ::syscall(__NR_bpf, cmd, attr, sizeof(*attr)); }
uint64_t Ptr(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

bool Info(int fd, void* info, uint32_t size) {
  union bpf_attr a = {};
  a.info.bpf_fd = static_cast<uint32_t>(fd);
  a.info.info_len = size;
  a.info.info = Ptr(info);
  return Bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0;
}

}  // namespace

Result<std::unique_ptr<EgressGuard>> EgressGuard::Adopt(const std::string& cgroup_dir,
                                                        bool own_dir) {
  UniqueFd dir(::open(cgroup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return PosixError(errno, "cannot open the exec's cgroup", cgroup_dir);
  uint32_t ids[4] = {};
  union bpf_attr q = {};
  q.query.target_fd = static_cast<uint32_t>(dir.get());
  q.query.attach_type = BPF_CGROUP_INET4_CONNECT;
  q.query.prog_ids = Ptr(ids);
  q.query.prog_cnt = 4;
  bool queried = Bpf(BPF_PROG_QUERY, &q) == 0;
  int query_errno = errno;
#if AGENTD_EGRESS_NFTABLES
  // No program there: the predecessor enforced with nftables rules.
  if (!queried || q.query.prog_cnt == 0) {
    Result<std::unique_ptr<NftEgress>> n = NftEgress::Adopt(cgroup_dir);
    if (n.ok()) {
      auto guard = std::make_unique<EgressGuard>();
      guard->nft_.reset(n->release());
      guard->dir_ = cgroup_dir;
      guard->own_dir_ = own_dir;
      guard->adopted_ = true;
      return guard;
    }
    if (queried) return n.status();
  }
#endif
  if (!queried) return PosixError(query_errno, "cannot query the BPF programs of", cgroup_dir);
  if (q.query.prog_cnt != 1) {
    return Status::Internal("the exec's cgroup holds " + std::to_string(q.query.prog_cnt) +
                            " connect4 programs, not its one");
  }
  union bpf_attr g = {};
  g.prog_id = ids[0];
  UniqueFd prog(static_cast<int>(Bpf(BPF_PROG_GET_FD_BY_ID, &g)));
  if (!prog) return PosixError(errno, "cannot open the exec's BPF program");
  uint32_t map_ids[8] = {};
  struct bpf_prog_info pi = {};
  pi.nr_map_ids = 8;
  pi.map_ids = Ptr(map_ids);
  if (!Info(prog.get(), &pi, sizeof(pi))) return PosixError(errno, "cannot read the BPF program");
  auto guard = std::make_unique<EgressGuard>();
  for (uint32_t i = 0; i < pi.nr_map_ids && i < 8; ++i) {
    union bpf_attr m = {};
    m.map_id = map_ids[i];
    UniqueFd map(static_cast<int>(Bpf(BPF_MAP_GET_FD_BY_ID, &m)));
    struct bpf_map_info mi = {};
    if (!map || !Info(map.get(), &mi, sizeof(mi))) continue;
    // Told apart by shape: the accounting hash and the one-slot overflow array.
    if (mi.type == BPF_MAP_TYPE_HASH && mi.key_size == 24 && mi.value_size == 24) {
      guard->accounts_ = std::move(map);
    } else if (mi.type == BPF_MAP_TYPE_ARRAY && mi.max_entries == 1 && mi.value_size == 8) {
      guard->overflow_ = std::move(map);
    }
  }
  if (!guard->accounts_ || !guard->overflow_) {
    return Status::Internal("the exec's BPF program holds no accounting map");
  }
  guard->dir_ = cgroup_dir;
  guard->own_dir_ = own_dir;
  guard->adopted_ = true;
  return guard;
}

}  // namespace agentd
