"""Runs a program as if on a kernel without seccomp: installs a filter that
answers seccomp(2) with ENOSYS and prctl(PR_SET_SECCOMP) with EINVAL (what a
kernel built without CONFIG_SECCOMP answers), then execs the program, which
inherits the filter with every descendant.

    python3 no_seccomp.py PROGRAM [ARG...]

Used as Daemon(wrapper=...) to show how agentd behaves where it cannot load
the restricted profile's filter (tests/test_exec_restricted_no_seccomp.py).
Needs CAP_SYS_ADMIN (root): no_new_privs is left unset, so a setuid control
in the test still behaves as on a plain kernel. Every other call is allowed.
"""

import ctypes
import errno
import os
import sys

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
OFF_NR, OFF_ARCH, OFF_ARG0 = 0, 4, 16
# (audit arch, seccomp nr, prctl nr) per machine.
ARCHES = {"x86_64": (0xC000003E, 317, 157), "aarch64": (0xC00000B7, 277, 167)}
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
LD_ABS, JEQ, RET = 0x20, 0x15, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


def program(arch, seccomp_nr, prctl_nr):
    return [
        (LD_ABS, 0, 0, OFF_ARCH),
        (JEQ, 0, 7, arch),                # another ABI: allow (index 9)
        (LD_ABS, 0, 0, OFF_NR),
        (JEQ, 0, 1, seccomp_nr),
        (RET, 0, 0, RET_ERRNO | errno.ENOSYS),
        (JEQ, 0, 3, prctl_nr),
        (LD_ABS, 0, 0, OFF_ARG0),         # the option, low word (little-endian)
        (JEQ, 0, 1, PR_SET_SECCOMP),
        (RET, 0, 0, RET_ERRNO | errno.EINVAL),
        (RET, 0, 0, RET_ALLOW),
    ]


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: no_seccomp.py PROGRAM [ARG...]")
    machine = os.uname().machine
    if machine not in ARCHES:
        sys.exit("no_seccomp.py: no system call numbers for " + machine)
    insns = program(*ARCHES[machine])
    filters = (SockFilter * len(insns))(*[SockFilter(*i) for i in insns])
    prog = SockFprog(len(insns), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                           ctypes.c_ulong]
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        e = ctypes.get_errno()
        sys.exit("no_seccomp.py: cannot install the filter: " + os.strerror(e))
    os.execv(argv[1], argv[1:])


if __name__ == "__main__":
    main(sys.argv)
