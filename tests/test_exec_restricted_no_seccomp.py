"""The restricted profile on a kernel that cannot load seccomp filters
(docs/SECURITY.md, "The weaker profile"). The daemon runs under
tests/lib/no_seccomp.py, a filter that answers seccomp(2) with ENOSYS and
prctl(PR_SET_SECCOMP) with EINVAL, as a kernel without CONFIG_SECCOMP does.

Without --restricted-without-seccomp every restricted request is refused
(400 profile_unsupported); with it a restricted exec runs as the restricted
user with no capabilities, no_new_privs and its read-only paths, and says
the filter is missing. Each claim has a same-run control: the wrapper's
filter is shown in force (a seccomp call answers ENOSYS in an exec), and the
protections that remain are shown absent without the profile."""

import errno
import json
import os
import pwd
import shutil
import sys
import tempfile
import unittest

from lib.agentd_test import Daemon, error_code
from lib.exec_util import run
from lib.restricted_checks import (check_setuid_root_binary_gives_nothing,
                                  check_unshare_mount_namespace_refused)

NO_SECCOMP = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib",
                                           "no_seccomp.py")]
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
NOBODY = "nobody"

# seccomp(SECCOMP_SET_MODE_FILTER, 0, NULL): EFAULT where filters load,
# ENOSYS under the wrapper. keyctl and bpf with a bad command: the kernel
# answers EOPNOTSUPP and EINVAL, the refusal filter EPERM.
PROBE = r"""
import ctypes, errno, json
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    rc = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return 0 if rc >= 0 else errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())
print(json.dumps({"seccomp": call(317, 1, 0, 0), "keyctl": call(250, 9999, 0, 0, 0, 0),
                  "bpf": call(321, 9999, 0, 0)}))
"""


def status_fields(text):
    return {k: v.strip() for k, v in (line.split(":", 1) for line in text.splitlines()
                                      if ":" in line)}


def setUpModule():
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root (the CI runs as root)")
    if os.uname().machine != "x86_64":
        raise unittest.SkipTest("the probe uses x86-64 system call numbers")


class NoSeccompCase(unittest.TestCase):
    flags = ()

    @classmethod
    def setUpClass(cls):
        cls.nobody = pwd.getpwnam(NOBODY)
        cls.tmp = tempfile.mkdtemp(prefix="agentd-noseccomp-")
        os.chmod(cls.tmp, 0o755)
        cls.probe_path = os.path.join(cls.tmp, "probe.py")
        with open(cls.probe_path, "w") as f:
            f.write(PROBE)
        os.chmod(cls.probe_path, 0o644)
        # Open to everyone, and read-only for restricted execs.
        cls.open_dir = os.path.join(cls.tmp, "open")
        os.mkdir(cls.open_dir)
        os.chmod(cls.open_dir, 0o777)
        cls.daemon = Daemon(*cls.flags, "--readonly-path", cls.open_dir, wrapper=NO_SECCOMP)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def exec_ok(self, exec_id, body):
        obj, out, err = run(self.daemon, exec_id, body)
        self.assertEqual(obj["exit_code"], 0, (obj, err))
        return obj, out.decode()

    def probe(self, exec_id, **body):
        obj, out = self.exec_ok(exec_id, dict(body, argv=[PYTHON, self.probe_path]))
        return obj, json.loads(out)

    def restricted_health(self):
        s, body = self.daemon.json("GET", "/v1/health", auth=False)
        self.assertEqual(s, 200, body)
        return body["profiles"]["restricted"]


class RefusedWithoutTheFlagTest(NoSeccompCase):
    def test_the_daemon_sees_no_seccomp_and_an_unrestricted_exec_still_runs(self):
        _, errnos = self.probe("u-probe")
        self.assertEqual(errnos["seccomp"], "ENOSYS")  # the wrapper is in force
        r = self.restricted_health()
        self.assertEqual((r["available"], r["seccomp"]), (False, False), r)
        self.assertIn("no seccomp support", r["why"])
        self.assertNotIn("refused_syscalls", r)

    def test_restricted_exec_run_and_context_are_refused(self):
        s, body = self.daemon.json("PUT", "/v1/execs/r", {"argv": ["true"],
                                                          "profile": "restricted"})
        self.assertEqual((s, error_code(body)), (400, "profile_unsupported"), body)
        self.assertEqual(body["error"]["profile"], "restricted")
        self.assertIn("--restricted-without-seccomp", body["error"]["message"])
        s, body = self.daemon.json("POST", "/v1/run", {"runtime": "shell", "code": "true",
                                                      "profile": "restricted"})
        self.assertEqual((s, error_code(body)), (400, "profile_unsupported"), body)
        s, body = self.daemon.json("POST", "/v1/contexts", {"id": "c", "runtime": "python",
                                                           "profile": "restricted"}, timeout=60)
        self.assertEqual((s, error_code(body)), (400, "profile_unsupported"), body)
        # Nothing ran under the name.
        s, _ = self.daemon.json("GET", "/v1/execs/r")
        self.assertEqual(s, 404)


class WeakerProfileTest(NoSeccompCase):
    flags = ("--restricted-without-seccomp",)

    def test_health_says_restricted_runs_without_the_filter(self):
        r = self.restricted_health()
        self.assertEqual((r["available"], r["seccomp"], r["user"]), (True, False, NOBODY), r)
        self.assertIn("no seccomp support", r["why"])
        self.assertNotIn("refused_syscalls", r)

    def test_restricted_exec_reports_no_filter_and_keeps_the_rest(self):
        obj, out = self.exec_ok("r-status", {"argv": ["cat", "/proc/self/status"],
                                             "profile": "restricted"})
        self.assertEqual(obj["profile"], "restricted")
        r = obj["restriction"]
        self.assertEqual((r["seccomp"], r["seccomp_refused_syscalls"]), (False, 0), r)
        self.assertIn("no seccomp support", r["seccomp_why"])
        self.assertEqual((r["user"], r["uid"], r["gid"]),
                         (NOBODY, self.nobody.pw_uid, self.nobody.pw_gid))
        self.assertEqual((r["no_new_privs"], r["capabilities"]), (True, "none"))
        self.assertIn(os.path.realpath(self.open_dir), r["readonly_paths"])
        st = status_fields(out)
        for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            self.assertEqual(int(st[cap], 16), 0, cap)
        self.assertEqual(st["NoNewPrivs"], "1")
        self.assertEqual(st["Uid"].split(), [str(self.nobody.pw_uid)] * 4)
        # The control: unrestricted, root with a full set and no no_new_privs.
        obj, out = self.exec_ok("u-status", {"argv": ["cat", "/proc/self/status"]})
        self.assertNotIn("restriction", obj)
        st = status_fields(out)
        self.assertNotEqual(int(st["CapEff"], 16), 0)
        self.assertEqual(st["NoNewPrivs"], "0")

    def test_the_refusal_filter_is_really_absent(self):
        # What the exec reports is what ran: the calls the filter would
        # answer EPERM reach the kernel, which answers on the arguments.
        _, errnos = self.probe("r-probe", profile="restricted")
        self.assertEqual(errnos, {"seccomp": "ENOSYS", "keyctl": errno.errorcode[errno.EOPNOTSUPP],
                                  "bpf": "EINVAL"})

    def test_without_capabilities_mount_and_unshare_are_still_refused(self):
        target = tempfile.mkdtemp(dir=self.tmp)
        os.chmod(target, 0o777)
        obj, _, err = run(self.daemon, "r-mount", {"argv": ["mount", "-t", "tmpfs", "none",
                                                            target], "profile": "restricted"})
        self.assertNotEqual(obj["exit_code"], 0, err)
        self.assertFalse(os.path.ismount(target))
        # The wrapper leaves root's mounts alone: the control runs as root.
        check_unshare_mount_namespace_refused(self, self.daemon)

    def test_setuid_root_binary_gives_nothing_under_no_new_privs(self):
        check_setuid_root_binary_gives_nothing(self, PYTHON, self.tmp, self.nobody.pw_uid)

    def test_read_only_path_holds_without_the_filter(self):
        # Control: the same user without the profile may write there.
        self.exec_ok("u-write", {"argv": ["touch", os.path.join(self.open_dir, "u")],
                                 "user": NOBODY})
        self.assertTrue(os.path.exists(os.path.join(self.open_dir, "u")))
        obj, _, err = run(self.daemon, "r-write",
                          {"argv": ["touch", os.path.join(self.open_dir, "r")],
                           "profile": "restricted"})
        self.assertNotEqual(obj["exit_code"], 0)
        self.assertIn(b"Read-only file system", err)
        self.assertFalse(os.path.exists(os.path.join(self.open_dir, "r")))

    def test_run_reports_the_weaker_profile(self):
        s, body = self.daemon.json("POST", "/v1/run", {"runtime": "shell", "code": "id -u",
                                                      "profile": "restricted"})
        self.assertEqual(s, 200, body)
        self.assertEqual(body["stdout"].strip(), str(self.nobody.pw_uid))
        self.assertEqual((body["profile"], body["restriction"]["seccomp"]),
                         ("restricted", False), body)
        self.assertIn("no seccomp support", body["restriction"]["seccomp_why"])


class WeakerProfileGenerationTest(unittest.TestCase):
    """A weaker-profile exec leaves the generation unprivileged (docs/SECURITY.md
    says why); a root exec under the same wrapper still marks it."""

    def test_only_the_root_exec_marks_the_generation(self):
        with Daemon("--restricted-without-seccomp", "--reset-requires-restricted",
                    wrapper=NO_SECCOMP) as d:
            obj, _, _ = run(d, "r", {"argv": ["true"], "profile": "restricted"})
            self.assertEqual((obj["exit_code"], obj["restriction"]["seccomp"]), (0, False), obj)
            s, report = d.json("POST", "/v1/reset", {"reset_id": "r1",
                                                     "next": {"token": d.token}})
            self.assertEqual((s, report["clean"], report["privileged_generation"]),
                             (200, True, False), report)
            run(d, "root", {"argv": ["true"]})
            s, report = d.json("POST", "/v1/reset", {"reset_id": "r2",
                                                     "next": {"token": d.token}})
            self.assertEqual((report["clean"], report["privileged_generation"]), (False, True),
                             report)


class FlagWhereTheFilterLoadsTest(unittest.TestCase):
    """Where the kernel loads filters the flag changes nothing."""

    def test_restricted_exec_still_gets_the_filter(self):
        tmp = tempfile.mkdtemp(prefix="agentd-noseccomp-")
        try:
            os.chmod(tmp, 0o755)
            probe = os.path.join(tmp, "probe.py")
            with open(probe, "w") as f:
                f.write(PROBE)
            os.chmod(probe, 0o644)
            with Daemon("--restricted-without-seccomp") as d:
                s, health = d.json("GET", "/v1/health", auth=False)
                r = health["profiles"]["restricted"]
                self.assertEqual((r["available"], r["seccomp"]), (True, True), r)
                obj, out, err = run(d, "r", {"argv": [PYTHON, probe], "profile": "restricted"})
                self.assertEqual(obj["exit_code"], 0, err)
                self.assertEqual((obj["restriction"]["seccomp"], obj["restriction"].get(
                    "seccomp_why")), (True, None))
                self.assertGreater(obj["restriction"]["seccomp_refused_syscalls"], 20)
                self.assertEqual(json.loads(out), {"seccomp": "EFAULT", "keyctl": "EPERM",
                                                   "bpf": "EPERM"})
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
