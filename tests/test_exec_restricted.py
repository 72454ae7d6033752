"""The restricted exec profile (docs/SECURITY.md, "Restricted execs"): a
restricted exec runs as the operator's user with no capabilities,
no_new_privs and a seccomp filter that answers EPERM.

Each refusal is checked three ways where the machine allows: the thing
works unrestricted as root (the positive control), it is refused
restricted with EPERM, and the refusal comes from the filter: a probe
whose arguments the kernel would reject with another errno (EFAULT,
EBADF, ESRCH, EINVAL) answers EPERM only under the filter, since the
filter answers before the kernel reads them. The CI runs as root."""

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

from lib.agentd_test import AGENTD_BIN, Daemon, DaemonTestCase, error_code
from lib.exec_util import run
from lib.restricted_checks import (check_setuid_root_binary_gives_nothing,
                                  check_unshare_mount_namespace_refused)

# A Python every user can run (the test's own may live under /root).
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# Raw system calls by number (x86-64), each with arguments the kernel
# rejects on its own with a known errno once past any permission check:
# the filter answers EPERM before that.
PROBE = r"""
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"mount": 165, "unshare": 272, "ptrace": 101, "bpf": 321, "finit_module": 313,
      "init_module": 175, "kexec_load": 246, "perf_event_open": 298, "keyctl": 250,
      "open_by_handle_at": 304, "userfaultfd": 323, "chroot": 161, "pivot_root": 155,
      "setns": 308, "clock_settime": 227, "iopl": 172, "swapon": 167, "reboot": 169}
ARGS = {
    "mount": (1, 1, 1, 0, 0),            # unreadable strings: EFAULT
    "unshare": (0x1,),                   # no such flag: EINVAL
    "ptrace": (0x4206, 0x3fffffff, 0, 0),  # PTRACE_SEIZE of no process: ESRCH
    "bpf": (9999, 0, 0),                 # no such command: EINVAL
    "finit_module": (-1, 0, 0),          # no descriptor: EBADF
    "init_module": (1, 0, 0),            # unreadable image: EFAULT
    "kexec_load": (0, 0, 0, 0xffff0000), # bad flags: EINVAL
    "perf_event_open": (1, 0, -1, -1, 0),  # unreadable attr: EFAULT
    "keyctl": (9999, 0, 0, 0, 0),        # no such operation: EOPNOTSUPP
    "open_by_handle_at": (-1, 1, 0),     # no descriptor: EBADF
    "userfaultfd": (0xfffffff,),         # bad flags: EINVAL
    "chroot": (1,),                      # unreadable path: EFAULT
    "pivot_root": (1, 1),                # unreadable paths: EFAULT
    "setns": (-1, 0),                    # no descriptor: EBADF
    "clock_settime": (9999, 1),          # no such clock: EINVAL
    "iopl": (9,),                        # level > 3: EINVAL
    "swapon": (1, 0),                    # unreadable path: EFAULT
    "reboot": (0, 0, 0, 0),              # bad magic: EINVAL
}
out = {}
for name in sys.argv[1:]:
    args = [ctypes.c_long(a) for a in ARGS[name]]
    rc = libc.syscall(ctypes.c_long(NR[name]), *args)
    out[name] = 0 if rc >= 0 else errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())
print(json.dumps(out))
"""

NOBODY = "nobody"


def status_fields(text):
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


class RestrictedProfileTest(DaemonTestCase):
    """One daemon whose default stays unrestricted; execs choose."""

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (the CI runs as root)")
        if os.uname().machine != "x86_64":
            raise unittest.SkipTest("the probes use x86-64 system call numbers")
        cls.nobody = pwd.getpwnam(NOBODY)
        cls.tmp = tempfile.mkdtemp(prefix="agentd-restricted-")
        os.chmod(cls.tmp, 0o755)
        cls.probe = os.path.join(cls.tmp, "probe.py")
        with open(cls.probe, "w") as f:
            f.write(PROBE)
        os.chmod(cls.probe, 0o644)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def exec_ok(self, exec_id, body):
        obj, out, err = run(self.daemon, exec_id, body)
        self.assertEqual(obj["exit_code"], 0, (obj, err))
        return obj, out.decode()

    def probe_errnos(self, exec_id, names, **body):
        obj, out = self.exec_ok(exec_id, dict(body, argv=[PYTHON, self.probe] + names))
        return obj, json.loads(out)

    def test_restricted_exec_reports_and_has_no_privilege(self):
        obj, out = self.exec_ok("r-status", {"argv": ["cat", "/proc/self/status"],
                                             "profile": "restricted"})
        self.assertEqual(obj["profile"], "restricted")
        r = obj["restriction"]
        self.assertEqual((r["user"], r["uid"], r["gid"]),
                         (NOBODY, self.nobody.pw_uid, self.nobody.pw_gid))
        self.assertEqual((r["no_new_privs"], r["capabilities"]), (True, "none"))
        self.assertGreater(r["seccomp_refused_syscalls"], 20)
        st = status_fields(out)
        for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            self.assertEqual(int(st[cap].strip(), 16), 0, cap)
        self.assertEqual(st["NoNewPrivs"].strip(), "1")
        self.assertEqual(st["Seccomp"].strip(), "2")  # filter mode
        self.assertEqual(st["Uid"].split(), [str(self.nobody.pw_uid)] * 4)
        # The control: the same exec unrestricted is root with a full set.
        obj, out = self.exec_ok("u-status", {"argv": ["cat", "/proc/self/status"]})
        self.assertEqual(obj["profile"], "unrestricted")
        self.assertNotIn("restriction", obj)
        st = status_fields(out)
        self.assertNotEqual(int(st["CapEff"].strip(), 16), 0)
        self.assertEqual(st["Seccomp"].strip(), "0")

    def test_every_probed_call_is_refused_by_the_filter_with_eperm(self):
        names = ["mount", "unshare", "ptrace", "bpf", "finit_module", "init_module",
                 "kexec_load", "perf_event_open", "keyctl", "open_by_handle_at", "userfaultfd",
                 "chroot", "pivot_root", "setns", "clock_settime", "iopl", "swapon", "reboot"]
        _, restricted = self.probe_errnos("r-probe", names, profile="restricted")
        self.assertEqual(restricted, {n: "EPERM" for n in names})
        # The same user unrestricted: the kernel looks at the arguments and
        # answers otherwise, so the EPERM above is the filter's.
        _, plain = self.probe_errnos("u-probe", names, user=NOBODY)
        from_kernel = [n for n in names if plain[n] != "EPERM"]
        for n in ("mount", "unshare", "ptrace", "keyctl", "setns", "chroot"):
            self.assertIn(n, from_kernel, plain)

    def test_module_load_refusal_comes_from_the_filter(self):
        # Root unrestricted passes the capability check and fails on the
        # bad descriptor (ENOSYS: a kernel built without modules); either
        # way not EPERM. Restricted, the filter answers first.
        _, root = self.probe_errnos("u-module", ["finit_module", "bpf"])
        self.assertIn(root["finit_module"], ("EBADF", "ENOSYS"), root)
        self.assertEqual(root["bpf"], "EINVAL")
        _, restricted = self.probe_errnos("r-module", ["finit_module", "bpf"],
                                          profile="restricted")
        self.assertEqual(restricted, {"finit_module": "EPERM", "bpf": "EPERM"})

    def test_mount_works_unrestricted_and_is_refused_restricted(self):
        target = tempfile.mkdtemp(dir=self.tmp)
        os.chmod(target, 0o777)
        try:
            self.exec_ok("u-mount", {"argv": ["mount", "-t", "tmpfs", "none", target]})
            self.assertTrue(os.path.ismount(target))
        finally:
            subprocess.run(["umount", target], check=False)
        obj, out, err = run(self.daemon, "r-mount",
                            {"argv": ["mount", "-t", "tmpfs", "none", target],
                             "profile": "restricted"})
        self.assertNotEqual(obj["exit_code"], 0)
        self.assertFalse(os.path.ismount(target))

    def test_unshare_mount_namespace_works_unrestricted_and_is_refused_restricted(self):
        check_unshare_mount_namespace_refused(self, self.daemon)
        # A user namespace (which needs no capability) is refused too.
        obj, out, err = run(self.daemon, "r-unshare-user",
                            {"argv": ["unshare", "-U", "true"], "profile": "restricted"})
        self.assertNotEqual(obj["exit_code"], 0)
        self.assertIn(b"Operation not permitted", err)

    def test_setuid_root_binary_gives_nothing_under_no_new_privs(self):
        check_setuid_root_binary_gives_nothing(self, PYTHON, self.tmp, self.nobody.pw_uid)

    def test_ptrace_of_the_daemon(self):
        pid = self.daemon.proc.pid
        seize = ("import ctypes, errno; libc = ctypes.CDLL(None, use_errno=True); "
                 "rc = libc.ptrace(0x4206, %d, 0, 0); "
                 "print(0 if rc == 0 else errno.errorcode[ctypes.get_errno()])" % pid)
        # Root may seize it (the tracer's exit detaches; SEIZE does not stop it).
        _, out = self.exec_ok("u-ptrace", {"argv": [PYTHON, "-c", seize]})
        self.assertEqual(out.strip(), "0")
        _, out = self.exec_ok("r-ptrace", {"argv": [PYTHON, "-c", seize],
                                           "profile": "restricted"})
        self.assertEqual(out.strip(), "EPERM")
        self.assertEqual(self.daemon.json("GET", "/v1/health", auth=False)[0], 200)

    def test_run_reports_the_profile(self):
        s, body = self.daemon.json("POST", "/v1/run", {"runtime": "shell", "code": "id -u",
                                                      "profile": "restricted"})
        self.assertEqual(s, 200, body)
        self.assertEqual(body["stdout"].strip(), str(self.nobody.pw_uid))
        self.assertEqual(body["profile"], "restricted")
        self.assertEqual(body["restriction"]["uid"], self.nobody.pw_uid)
        s, body = self.daemon.json("POST", "/v1/run", {"runtime": "shell", "code": "id -u"})
        self.assertEqual((s, body["profile"], body["stdout"].strip()), (200, "unrestricted", "0"))

    def test_restricted_exec_refuses_root_and_bad_profiles(self):
        s, body = self.daemon.json("PUT", "/v1/execs/r-root", {"argv": ["true"], "user": "root",
                                                               "profile": "restricted"})
        self.assertError(s, body, 400, "invalid_request")
        s, body = self.daemon.json("PUT", "/v1/execs/r-bad", {"argv": ["true"],
                                                              "profile": "sandboxed"})
        self.assertError(s, body, 400, "invalid_request")
        self.assertEqual(body["error"]["field"], "profile")

    def test_health_lists_the_profiles(self):
        s, body = self.daemon.json("GET", "/v1/health", auth=False)
        self.assertEqual(s, 200)
        p = body["profiles"]
        self.assertEqual(p["default"], "unrestricted")
        self.assertTrue(p["restricted"]["available"])
        self.assertEqual(p["restricted"]["user"], NOBODY)
        for name in ("mount", "unshare", "ptrace", "bpf", "finit_module", "kexec_load"):
            self.assertIn(name, p["restricted"]["refused_syscalls"])


class RestrictedDefaultTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (the CI runs as root)")

    def test_default_profile_applies_and_an_exec_may_opt_out(self):
        with Daemon("--default-profile", "restricted") as d:
            obj, out, _ = run(d, "dflt", {"argv": ["id", "-u"]})
            self.assertEqual((obj["profile"], out.strip()),
                             ("restricted", str(pwd.getpwnam(NOBODY).pw_uid).encode()))
            obj, out, _ = run(d, "opt-out", {"argv": ["id", "-u"], "profile": "unrestricted"})
            self.assertEqual((obj["profile"], out.strip()), ("unrestricted", b"0"))

    def test_the_first_exec_after_start_runs_under_the_filter_health_reports(self):
        # The filter is compiled while the start-up probes run
        # (docs/ARCHITECTURE.md, "Start-up"), and is in before the daemon
        # listens: the first request, sent the moment the daemon listens,
        # already runs under it. Were it compiled after the listen, this
        # exec would run without it (or be refused).
        with Daemon("--default-profile", "restricted") as d:
            obj, out, err = run(d, "first", {"argv": ["cat", "/proc/self/status"]})
            self.assertEqual((obj["exit_code"], obj["profile"]), (0, "restricted"), err)
            self.assertEqual(status_fields(out.decode())["Seccomp"].strip(), "2")
            self.assertGreater(obj["restriction"]["seccomp_refused_syscalls"], 20)
            status, health = d.json("GET", "/v1/health")
            self.assertEqual(status, 200)
            self.assertIs(health["profiles"]["restricted"]["seccomp"], True)

    def test_missing_restricted_user_is_a_clear_400(self):
        with Daemon("--restricted-user", "agentd-no-such-user") as d:
            s, body = d.json("PUT", "/v1/execs/x", {"argv": ["true"], "profile": "restricted"})
            self.assertEqual((s, error_code(body)), (400, "restricted_user_unknown"), body)
            self.assertEqual(body["error"]["user"], "agentd-no-such-user")
            self.assertIn("agentd-no-such-user", body["error"]["message"])
            # Unrestricted execs are unaffected.
            obj, _, _ = run(d, "y", {"argv": ["true"]})
            self.assertEqual(obj["exit_code"], 0)

    def test_restricted_user_flag_refuses_root(self):
        p = subprocess.run([AGENTD_BIN, "--restricted-user", "root"],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("restricted-user", p.stderr)


class PrivilegedGenerationTest(unittest.TestCase):
    """Health and the reset report say whether an exec of the generation ran
    unrestricted as root; --reset-requires-restricted quarantines then."""

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (the CI runs as root)")

    def privileged(self, d):
        s, body = d.json("GET", "/v1/health", auth=False)
        return body["privileged_generation"]

    def test_set_by_a_root_exec_not_by_a_restricted_one_and_cleared_by_a_reset(self):
        with Daemon() as d:
            self.assertFalse(self.privileged(d))
            run(d, "restricted", {"argv": ["true"], "profile": "restricted"})
            run(d, "as-nobody", {"argv": ["true"], "user": NOBODY})
            self.assertFalse(self.privileged(d))
            run(d, "as-root", {"argv": ["true"]})
            self.assertTrue(self.privileged(d))
            s, report = d.json("POST", "/v1/reset", {"reset_id": "r1",
                                                     "next": {"token": d.token}})
            self.assertEqual((s, report["clean"], report["privileged_generation"]),
                             (200, True, True), report)
            self.assertFalse(self.privileged(d))
            run(d, "next-restricted", {"argv": ["true"], "profile": "restricted"})
            s, report = d.json("POST", "/v1/reset", {"reset_id": "r2",
                                                     "next": {"token": d.token}})
            self.assertEqual((report["clean"], report["privileged_generation"]), (True, False))

    def test_reset_requires_restricted_quarantines_a_privileged_generation(self):
        with Daemon("--reset-requires-restricted") as d:
            run(d, "restricted", {"argv": ["true"], "profile": "restricted"})
            s, report = d.json("POST", "/v1/reset", {"reset_id": "r1",
                                                     "next": {"token": d.token}})
            self.assertEqual((s, report["clean"]), (200, True), report)
            run(d, "as-root", {"argv": ["true"]})
            s, report = d.json("POST", "/v1/reset", {"reset_id": "r2",
                                                     "next": {"token": d.token}})
            self.assertEqual((s, report["clean"], report["privileged_generation"]),
                             (200, False, True), report)
            self.assertEqual([r["kind"] for r in report["remaining"]], ["privilege"], report)
            s, health = d.json("GET", "/v1/health", auth=False)
            self.assertEqual((s, health["state"]), (503, "quarantined"), health)


if __name__ == "__main__":
    unittest.main()
