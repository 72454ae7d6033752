#include "limits/bpf_program.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agentd/trees/posix_error.h"

namespace agentd::bpf {
namespace {

long Sys(int cmd, union bpf_attr* attr) { return ::syscall(__NR_bpf, cmd, attr, sizeof(*attr)); }

// BPF_PROG_LOAD answers EAGAIN when the verifier was interrupted (a signal
// to the loading thread, seen under ThreadSanitizer's signal handling), so
// it is tried again a few times, as libbpf does.
constexpr int kProgLoadAttempts = 5;

long LoadProgram(union bpf_attr* attr) {
  long fd = -1;
  for (int i = 0; i < kProgLoadAttempts; ++i) {
    fd = Sys(BPF_PROG_LOAD, attr);
    if (fd >= 0 || errno != EAGAIN) break;
  }
  return fd;
}

uint64_t Ptr(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

// Enough for the verifier's account of a program this size.
constexpr size_t kLogBytes = 64 * 1024;

}  // namespace

void Assembler::Emit(uint8_t code, int dst, int src, int16_t off, int32_t imm) {
  struct bpf_insn i = {};
  i.code = code;
  i.dst_reg = static_cast<uint8_t>(dst) & 0xf;
  i.src_reg = static_cast<uint8_t>(src) & 0xf;
  i.off = off;
  i.imm = imm;
  code_.push_back(i);
}

void Assembler::LoadMapFd(int dst, int map_fd) {
  Emit(BPF_LD | BPF_DW | BPF_IMM, dst, BPF_PSEUDO_MAP_FD, 0, map_fd);
  Emit(0, 0, 0, 0, 0);  // the upper half of the 64-bit immediate
}

void Assembler::Aim(Label& to) { to.jumps.push_back(code_.size() - 1); }

void Assembler::JumpImm(int op, int dst, int32_t imm, Label& to) {
  Emit(static_cast<uint8_t>(BPF_JMP | op | BPF_K), dst, 0, 0, imm);
  Aim(to);
}

void Assembler::JumpReg(int op, int dst, int src, Label& to) {
  Emit(static_cast<uint8_t>(BPF_JMP | op | BPF_X), dst, src, 0, 0);
  Aim(to);
}

void Assembler::Jump(Label& to) {
  Emit(BPF_JMP | BPF_JA, 0, 0, 0, 0);
  Aim(to);
}

void Assembler::Bind(Label& l) {
  l.at = static_cast<int>(code_.size());
  for (size_t j : l.jumps) code_[j].off = static_cast<int16_t>(l.at - static_cast<int>(j) - 1);
}

Result<UniqueFd> CreateMap(uint32_t type, uint32_t key_size, uint32_t value_size,
                           uint32_t max_entries, uint32_t flags) {
  union bpf_attr attr = {};
  attr.map_type = type;
  attr.key_size = key_size;
  attr.value_size = value_size;
  attr.max_entries = max_entries;
  attr.map_flags = flags;
  long fd = Sys(BPF_MAP_CREATE, &attr);
  if (fd < 0) return PosixError(errno, "cannot create a BPF map");
  return UniqueFd(static_cast<int>(fd));
}

Result<UniqueFd> LoadProgram(uint32_t type, uint32_t attach_type,
                             const std::vector<struct bpf_insn>& code) {
  static const char kLicense[] = "MIT";
  std::string log(kLogBytes, '\0');
  union bpf_attr attr = {};
  attr.prog_type = type;
  attr.expected_attach_type = attach_type;
  attr.insns = Ptr(code.data());
  attr.insn_cnt = static_cast<uint32_t>(code.size());
  attr.license = Ptr(kLicense);
  long fd = LoadProgram(&attr);
  if (fd >= 0) return UniqueFd(static_cast<int>(fd));
  int err = errno;
  if (err != EACCES && err != EINVAL) return PosixError(err, "cannot load a BPF program");
  // Again with the verifier's log, only to say why (a log costs time).
  attr.log_level = 1;
  attr.log_buf = Ptr(log.data());
  attr.log_size = static_cast<uint32_t>(log.size());
  fd = LoadProgram(&attr);
  if (fd >= 0) return UniqueFd(static_cast<int>(fd));
  log.resize(::strnlen(log.data(), log.size()));
  if (log.size() > 2000) log = "..." + log.substr(log.size() - 2000);
  return Status::Error(
      ErrorCode::kLimitUnsupported,
      "the kernel refused a BPF program (" + std::string(std::strerror(err)) + "): " + log);
}

Status Attach(int cgroup_fd, int prog_fd, uint32_t attach_type) {
  union bpf_attr attr = {};
  attr.target_fd = static_cast<uint32_t>(cgroup_fd);
  attr.attach_bpf_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = attach_type;
  attr.attach_flags = 0;
  if (Sys(BPF_PROG_ATTACH, &attr) != 0) {
    return PosixError(errno, "cannot attach a BPF program to the exec's cgroup");
  }
  return Status::Ok();
}

Status UpdateElement(int map_fd, const void* key, const void* value) {
  union bpf_attr attr = {};
  attr.map_fd = static_cast<uint32_t>(map_fd);
  attr.key = Ptr(key);
  attr.value = Ptr(value);
  attr.flags = BPF_ANY;
  if (Sys(BPF_MAP_UPDATE_ELEM, &attr) != 0) return PosixError(errno, "cannot fill a BPF map");
  return Status::Ok();
}

bool NextKey(int map_fd, const void* key, void* next) {
  union bpf_attr attr = {};
  attr.map_fd = static_cast<uint32_t>(map_fd);
  attr.key = Ptr(key);
  attr.next_key = Ptr(next);
  return Sys(BPF_MAP_GET_NEXT_KEY, &attr) == 0;
}

bool LookupElement(int map_fd, const void* key, void* value) {
  union bpf_attr attr = {};
  attr.map_fd = static_cast<uint32_t>(map_fd);
  attr.key = Ptr(key);
  attr.value = Ptr(value);
  return Sys(BPF_MAP_LOOKUP_ELEM, &attr) == 0;
}

bool TakeElement(int map_fd, const void* key, void* value) {
  union bpf_attr attr = {};
  attr.map_fd = static_cast<uint32_t>(map_fd);
  attr.key = Ptr(key);
  attr.value = Ptr(value);
  if (Sys(BPF_MAP_LOOKUP_AND_DELETE_ELEM, &attr) == 0) return true;
  if (!LookupElement(map_fd, key, value)) return false;
  attr.value = 0;
  return Sys(BPF_MAP_DELETE_ELEM, &attr) == 0;
}

}  // namespace agentd::bpf
