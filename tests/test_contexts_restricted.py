"""Profiles on contexts (docs/PROTOCOL.md, "Contexts" and "Profiles"): a
context's interpreter is an exec like any other, so "profile": "restricted"
(or the daemon's --default-profile) runs it as the restricted user with no
capabilities, no_new_privs and the refusal filter, for every run of the
context. Each refusal has its control: the same call in an unrestricted
context of the same daemon succeeds."""

import os
import pwd
import shutil
import tempfile
import unittest

from lib.agentd_test import Daemon

NOBODY = "nobody"

SETUP = """import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def err(rc):
    return 0 if rc == 0 else errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())
"""
UNSHARE_MOUNT_NS = "print(err(libc.unshare(0x00020000)))"  # CLONE_NEWNS
MAKE_PRIVATE = "print(err(libc.mount(None, b'/', None, 16384 | 262144, None)))"  # MS_REC|MS_PRIVATE
MOUNT_TMPFS = "print(err(libc.mount(b'none', %r, b'tmpfs', 0, None)))"
STATUS = ("st = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)\n"
          "print(os.getuid(), int(st['CapEff'], 16), int(st['CapBnd'], 16), "
          "st['NoNewPrivs'].strip(), st['Seccomp'].strip())")


def setUpModule():
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root (the CI runs as root)")


class ContextProfileCase(unittest.TestCase):
    flags = ()

    @classmethod
    def setUpClass(cls):
        cls.uid = pwd.getpwnam(NOBODY).pw_uid
        cls.work = tempfile.mkdtemp(prefix="agentd-ctx-restricted-")
        os.chmod(cls.work, 0o755)  # the restricted user starts its interpreter here
        cls.daemon = Daemon("--workdir", cls.work, *cls.flags)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        shutil.rmtree(cls.work, ignore_errors=True)

    def new(self, cid, **extra):
        body = {"id": cid, "runtime": "python"}
        body.update(extra)
        status, info = self.daemon.json("POST", "/v1/contexts", body, timeout=60)
        self.assertEqual(status, 201, info)
        self.run_ok(cid, SETUP)
        return info

    def run_ok(self, cid, code):
        status, r = self.daemon.json("POST", "/v1/contexts/%s/run" % cid, {"code": code},
                                     timeout=120)
        self.assertEqual((status, r.get("exit_code")), (200, 0), r)
        return r


class RestrictedContextTest(ContextProfileCase):
    def test_restricted_context_runs_as_the_restricted_user_without_privilege(self):
        info = self.new("r", profile="restricted")
        self.assertEqual(info["profile"], "restricted")
        r = self.run_ok("r", STATUS)
        self.assertEqual(r["stdout"].split(), [str(self.uid), "0", "0", "1", "2"])
        self.assertEqual(r["profile"], "restricted")
        self.assertEqual((r["restriction"]["uid"], r["restriction"]["seccomp"]), (self.uid, True))
        # Control: an unrestricted context is root with capabilities, no filter.
        self.new("u")
        r = self.run_ok("u", STATUS)
        uid, cap_eff, _, nnp, seccomp = r["stdout"].split()
        self.assertEqual((uid, nnp, seccomp), ("0", "0", "0"))
        self.assertNotEqual(cap_eff, "0")
        self.assertEqual(r["profile"], "unrestricted")
        self.assertNotIn("restriction", r)

    def test_restricted_context_cannot_unshare_or_mount_in_any_run(self):
        target = tempfile.mkdtemp(dir=self.work)
        os.chmod(target, 0o777)
        self.new("ru", profile="restricted")
        # Later runs of the context are as refused as the first.
        for _ in range(2):
            self.assertEqual(self.run_ok("ru", UNSHARE_MOUNT_NS)["stdout"], "EPERM\n")
            self.assertEqual(self.run_ok("ru", MOUNT_TMPFS % target.encode())["stdout"],
                             "EPERM\n")
        self.assertFalse(os.path.ismount(target))
        # Control: the unrestricted interpreter may (in a private namespace
        # of its own, so the mount stays out of the guest's view).
        self.new("uu")
        self.assertEqual(self.run_ok("uu", UNSHARE_MOUNT_NS)["stdout"], "0\n")
        self.assertEqual(self.run_ok("uu", MAKE_PRIVATE)["stdout"], "0\n")
        self.assertEqual(self.run_ok("uu", MOUNT_TMPFS % target.encode())["stdout"], "0\n")
        self.assertFalse(os.path.ismount(target))


class DefaultProfileContextTest(ContextProfileCase):
    flags = ("--default-profile", "restricted")

    def test_default_profile_applies_to_contexts_and_one_may_opt_out(self):
        info = self.new("d")
        self.assertEqual(info["profile"], "restricted")
        self.assertEqual(self.run_ok("d", "print(os.getuid())")["stdout"], "%d\n" % self.uid)
        self.assertEqual(self.run_ok("d", UNSHARE_MOUNT_NS)["stdout"], "EPERM\n")
        info = self.new("o", profile="unrestricted")
        self.assertEqual(info["profile"], "unrestricted")
        self.assertEqual(self.run_ok("o", "print(os.getuid())")["stdout"], "0\n")


if __name__ == "__main__":
    unittest.main()
