"""The arm64 agentd (packaging/build-release --arch arm64: a static cross
build) is a static AArch64 binary and passes the conformance suite, run by
the host's agentd-conformance against it under qemu-user (qemu-aarch64-static,
called directly: no binfmt_misc). Its children (/bin/sh and the rest) are
the host's programs and run natively.

The binary is $AGENTD_ARM64_BIN (CTest builds it first, tests/CMakeLists.txt),
else out/release/agentd-arm64. What qemu-user cannot emulate is named below,
each with the reason; every other check must pass."""

import os
import shutil
import signal
import struct
import subprocess
import tempfile
import unittest

from lib.agentd_test import Daemon
from lib.guests import CONFORMANCE_DAEMON_ARGS, REPO, SuiteRun, all_checks

ARM64_BIN = os.environ.get("AGENTD_ARM64_BIN",
                           os.path.join(REPO, "out", "release", "agentd-arm64"))
QEMU = "qemu-aarch64-static"

EM_AARCH64 = 183
PT_DYNAMIC, PT_INTERP = 2, 3
DT_NEEDED = 1

# qemu-user 7.2 (Debian 12) and the daemon under it:
# - prctl(PR_SET_CHILD_SUBREAPER) is EINVAL, so the daemon runs as PID 1 of
#   a PID namespace of its own (unshare), where it needs no subreaper;
# - clone(CLONE_VM) without CLONE_THREAD is EINVAL, so the exec holder
#   cannot start: --exec-holder off;
# - CLONE_VM | CLONE_VFORK is run as a plain fork, so a spawn failure's
#   errno, which the child writes into the daemon's memory, never reaches
#   the daemon: the exit code (127, 126) is right, the reason is missing.
QEMU_DAEMON_ARGS = ("--exec-holder", "off")
SPAWN_REASON_CHECK = "exec: spawn failures exit 127 and 126 with the reason"
QEMU_FAILURES = {SPAWN_REASON_CHECK: "the reason is in error and stderr"}
# Checks the suite skips against this daemon, with the reason it prints:
# qemu-user has no seccomp, bpf or fsopen system call.
NO_SECCOMP = "this kernel has no seccomp support"
QEMU_SKIPS = {
    "hostile: a restricted exec has no capability, no_new_privs and a filter": NO_SECCOMP,
    "hostile: a restricted exec cannot write the read-only paths": NO_SECCOMP,
    "hostile: a restricted child cannot signal, trace or read the daemon": NO_SECCOMP,
    "hostile: a restricted child inherits no descriptor beyond its three streams": NO_SECCOMP,
    "hostile: a restricted child cannot read another exec's output": NO_SECCOMP,
    "hostile: what a restricted exec leaves running ends when it is acked": NO_SECCOMP,
    "hostile: a killed restricted exec leaves nothing running": NO_SECCOMP,
    "hostile: an exec under egress none cannot connect out, and it is counted":
        "cannot create a BPF map: Function not implemented",
    "limits: a disk limit ends a runaway writer and leaves the guest's disk alone":
        "fsopen tmpfs: Function not implemented",
    # The upgrade re-executes the daemon's own binary, which the host kernel
    # cannot run without binfmt_misc; the suite skips it without a command.
    "upgrade: running execs survive an upgrade in place": "pass --upgrade-command",
}
ABSENT_RUNTIME_CHECK = "run: a runtime the guest lacks is runtime_unavailable"
TS_CONTEXT_CHECK = "run: a ts context keeps a declaration between two runs"


def elf_facts(path):
    """(machine, has PT_INTERP, DT_NEEDED count) of a 64-bit little-endian ELF."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not a 64-bit LE ELF"
    machine = struct.unpack_from("<H", data, 18)[0]
    phoff = struct.unpack_from("<Q", data, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    interp, needed = False, 0
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize)
        interp |= p_type == PT_INTERP
        if p_type == PT_DYNAMIC:
            for at in range(p_offset, p_offset + p_filesz, 16):
                tag = struct.unpack_from("<q", data, at)[0]
                needed += tag == DT_NEEDED
                if tag == 0:
                    break
    return machine, interp, needed


class NamespacedDaemon(Daemon):
    """A daemon run as PID 1 of a PID namespace by unshare --fork, which
    does not pass SIGTERM on: stop() sends it to unshare's child, the
    emulator running the daemon, and waits for unshare, which exits with
    the daemon's status."""

    def stop(self, timeout=10):
        if self.proc is not None and self.proc.poll() is None:
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                for child in f.read().split():
                    os.kill(int(child), signal.SIGTERM)
        return super().stop(timeout)


def small_tmpfs(test):
    path = tempfile.mkdtemp(prefix="agentd-arm64-small-fs-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", path], check=True)
    test.addCleanup(os.rmdir, path)
    test.addCleanup(subprocess.run, ["umount", path])
    return path


class Arm64BinaryTest(unittest.TestCase):
    def test_it_is_a_static_aarch64_executable(self):
        self.assertTrue(os.path.exists(ARM64_BIN),
                        ARM64_BIN + " is missing: packaging/build-release --arch arm64")
        machine, interp, needed = elf_facts(ARM64_BIN)
        self.assertEqual(machine, EM_AARCH64)
        self.assertFalse(interp, "the arm64 agentd asks for a dynamic loader")
        self.assertEqual(needed, 0, "the arm64 agentd needs shared libraries")
        # The host cannot run it: what passes below ran under emulation.
        self.assertNotEqual(elf_facts(os.path.realpath(shutil.which("sh")))[0], EM_AARCH64)


@unittest.skipUnless(os.geteuid() == 0, "the daemon runs as PID 1 of a PID namespace (root)")
class Arm64ConformanceTest(unittest.TestCase):
    def test_the_suite_passes_under_qemu_user(self):
        self.assertTrue(shutil.which(QEMU), QEMU + " is missing: scripts/install-deps")
        small = small_tmpfs(self)
        work = tempfile.mkdtemp(prefix="agentd-arm64-reuse-path-")
        scratch = tempfile.mkdtemp(prefix="agentd-arm64-reuse-scratch-")
        suite_scratch = tempfile.mkdtemp(prefix="agentd-arm64-conformance-")
        for d in (work, scratch, suite_scratch):
            self.addCleanup(shutil.rmtree, d, True)
        wrapper = ("unshare", "--pid", "--fork", "--mount-proc", "--kill-child", QEMU)
        daemon_args = [*CONFORMANCE_DAEMON_ARGS, *QEMU_DAEMON_ARGS,
                       "--reset-path", work, "--reset-scratch", scratch]
        with NamespacedDaemon(*daemon_args, wrapper=wrapper, binary=ARM64_BIN) as d:
            with tempfile.NamedTemporaryFile("w") as token:
                token.write(d.token + "\n")
                token.flush()
                run = SuiteRun("http://127.0.0.1:%d" % d.port, token.name,
                               "--small-fs", small, "--scratch-root", suite_scratch,
                               "--reuse-path", work, "--reuse-scratch", scratch)
        report = run.summary() + "\n" + run.output
        print("\n%s: %s" % (self.id(), run.summary()))
        self.assertIsNotNone(run.counts, report)
        checks = all_checks()
        self.assertEqual(sorted(run.verdicts), sorted(checks), report)
        failed = run.with_verdict("FAIL")
        self.assertEqual(sorted(failed), sorted(QEMU_FAILURES), report)
        for name, reason in QEMU_FAILURES.items():
            self.assertIn(reason, failed[name], report)
        skipped = run.with_verdict("SKIP")
        expected = dict(QEMU_SKIPS)
        # As in test_conformance_local: the runtimes are the host's.
        if not shutil.which("bun"):
            expected[TS_CONTEXT_CHECK] = "ts"
        if shutil.which("bun") and shutil.which("python3"):
            expected[ABSENT_RUNTIME_CHECK] = "the guest offers every runtime"
        expected["reuse: a guest the reset cannot clean is quarantined and refuses the next "
                 "start"] = "--reuse-quarantine"
        self.assertEqual(sorted(skipped), sorted(expected), report)
        for name, reason in expected.items():
            self.assertIn(reason, skipped[name], report)


if __name__ == "__main__":
    unittest.main()
