// A few eBPF instructions, assembled by hand, and the raw bpf(2) calls that
// create maps, load programs and attach them to a cgroup. The egress
// programs (limits/egress_programs.h) are a few dozen instructions each;
// writing them with these helpers keeps clang and libbpf out of the daemon
// (no compiler at run time, no library, a few kilobytes of code).
#pragma once

#include <linux/bpf.h>

#include <cstdint>
#include <string>
#include <vector>

#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"

namespace agentd::bpf {

// A forward jump target: bound once, patched into every jump aimed at it.
struct Label {
  int at = -1;
  std::vector<size_t> jumps;
};

class Assembler {
 public:
  void Mov(int dst, int src) { Emit(BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0); }
  void MovImm(int dst, int32_t imm) { Emit(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm); }
  void AddImm(int dst, int32_t imm) { Emit(BPF_ALU64 | BPF_ADD | BPF_K, dst, 0, 0, imm); }
  void AndImm(int dst, int32_t imm) { Emit(BPF_ALU64 | BPF_AND | BPF_K, dst, 0, 0, imm); }
  // size: BPF_B, BPF_H, BPF_W, BPF_DW.
  void Load(int size, int dst, int src, int16_t off) {
    Emit(BPF_LDX | size | BPF_MEM, dst, src, off, 0);
  }
  void Store(int size, int dst, int16_t off, int src) {
    Emit(BPF_STX | size | BPF_MEM, dst, src, off, 0);
  }
  void StoreImm(int size, int dst, int16_t off, int32_t imm) {
    Emit(BPF_ST | size | BPF_MEM, dst, 0, off, imm);
  }
  // *(u64 *)(dst + off) += src, atomically.
  void AtomicAdd64(int dst, int16_t off, int src) {
    Emit(BPF_STX | BPF_DW | BPF_ATOMIC, dst, src, off, BPF_ADD);
  }
  void LoadMapFd(int dst, int map_fd);
  void Call(int helper) { Emit(BPF_JMP | BPF_CALL, 0, 0, 0, helper); }
  void Exit() { Emit(BPF_JMP | BPF_EXIT, 0, 0, 0, 0); }
  // op: BPF_JEQ, BPF_JNE, BPF_JSGE, ...; always forward.
  void JumpImm(int op, int dst, int32_t imm, Label& to);
  void JumpReg(int op, int dst, int src, Label& to);
  void Jump(Label& to);
  void Bind(Label& l);

  // The program; every label used must have been bound.
  const std::vector<struct bpf_insn>& code() const { return code_; }

 private:
  void Emit(uint8_t code, int dst, int src, int16_t off, int32_t imm);
  void Aim(Label& to);
  std::vector<struct bpf_insn> code_;
};

// BPF_MAP_CREATE.
Result<UniqueFd> CreateMap(uint32_t type, uint32_t key_size, uint32_t value_size,
                           uint32_t max_entries, uint32_t flags);
// BPF_PROG_LOAD; a refusal carries the verifier's log in its message.
Result<UniqueFd> LoadProgram(uint32_t type, uint32_t attach_type,
                             const std::vector<struct bpf_insn>& code);
// BPF_PROG_ATTACH without BPF_F_ALLOW_OVERRIDE or BPF_F_ALLOW_MULTI: no
// cgroup beneath can attach a program of the same type that would replace it.
Status Attach(int cgroup_fd, int prog_fd, uint32_t attach_type);
Status UpdateElement(int map_fd, const void* key, const void* value);
// false at the end of the map (ENOENT), or on an error.
bool NextKey(int map_fd, const void* key, void* next);  // key null: the first
bool LookupElement(int map_fd, const void* key, void* value);
// Reads and removes one entry at once (a count the programs add meanwhile
// lands in a new entry, not lost); lookup then delete where the kernel
// (before 5.14) takes the combined call for queues and stacks only.
bool TakeElement(int map_fd, const void* key, void* value);

}  // namespace agentd::bpf
