"""Reset paths: POST /v1/reset returns each --reset-path to its golden copy
(its contents at start, or --reset-baseline) and proves it by a walk
(docs/PROTOCOL.md, "Reuse")."""

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__)))
from lib.agentd_test import AGENTD_BIN, Daemon, new_token  # noqa: E402
from lib.exec_util import start, wait_exit  # noqa: E402


def tree(root):
    """{relative path: (kind, mode, bytes or link target)} of a whole tree."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if os.path.islink(p):
                out[rel] = ("link", 0, os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("dir", st.st_mode & 0o7777, None)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", st.st_mode & 0o7777, f.read())
    return out


def reset(d):
    nxt = new_token()
    status, report = d.json("POST", "/v1/reset",
                            {"reset_id": secrets.token_hex(4), "next": {"token": nxt}})
    d.token = nxt
    return status, report


class ResetPathTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="agentd-reuse-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.work = os.path.join(self.tmp, "work")
        os.makedirs(os.path.join(self.work, "src"))
        with open(os.path.join(self.work, "src", "main.py"), "w") as f:
            f.write("print('golden')\n")
        with open(os.path.join(self.work, "data.csv"), "w") as f:
            f.write("id,value\n1,golden\n")
        os.symlink("src/main.py", os.path.join(self.work, "entry"))
        self.golden = tree(self.work)

    def tenant_writes(self, d, canary):
        script = ("mkdir -p out && echo %s > out/canary && echo 2,%s >> data.csv && "
                  "rm src/main.py && chmod 600 entry 2>/dev/null; ln -sfn /etc entry && "
                  "echo %s > .hidden" % (canary, canary, canary))
        start(d, "tenant-a", {"command": script, "cwd": self.work})
        self.assertEqual(wait_exit(d, "tenant-a")["exit_code"], 0)
        self.assertNotEqual(tree(self.work), self.golden)

    def assert_no_canary(self, canary):
        self.assertEqual(tree(self.work), self.golden)
        found = subprocess.run(["grep", "-r", canary, self.work], capture_output=True)
        self.assertEqual(found.returncode, 1, found.stdout)

    def test_a_reset_returns_the_workdir_to_its_contents_at_start(self):
        d = Daemon("--workdir", self.work)
        self.addCleanup(d.close)
        canary = secrets.token_hex(16)
        self.tenant_writes(d, canary)
        status, report = reset(d)
        self.assertEqual((status, report["clean"]), (200, True), report)
        self.assertGreaterEqual(report["removed"]["entries"], 3)  # out/, out/canary, .hidden
        self.assertGreaterEqual(report["removed"]["bytes"], 2 * len(canary))
        self.assert_no_canary(canary)

    def test_a_state_dir_inside_a_reset_path_is_refused_at_start(self):
        # A reset would empty the daemon's own records and golden copies.
        state = os.path.join(self.work, "state")
        args = [AGENTD_BIN, "--state-dir", state, "--reset-path", self.work + "/",
                "--listen", "127.0.0.1:0"]
        r = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"lies inside reset path", r.stderr)
        left = {k: v for k, v in tree(self.work).items() if not k.startswith("state")}
        self.assertEqual(left, self.golden)

    def test_the_golden_copy_survives_a_restart(self):
        d = Daemon("--reset-path", self.work)
        self.addCleanup(d.close)
        canary = secrets.token_hex(16)
        self.tenant_writes(d, canary)
        d.restart()  # the dirty tree must not become the golden copy
        d.json("POST", "/v1/bootstrap", {"token": d.token}, auth=False)
        status, report = reset(d)
        self.assertEqual((status, report["clean"]), (200, True), report)
        self.assert_no_canary(canary)

    def test_an_explicit_baseline_is_the_golden_copy(self):
        baseline = os.path.join(self.tmp, "baseline")
        shutil.copytree(self.work, baseline, symlinks=True)
        with open(os.path.join(baseline, "only-in-baseline"), "w") as f:
            f.write("b\n")
        d = Daemon("--reset-path", self.work, "--reset-baseline", baseline)
        self.addCleanup(d.close)
        status, report = reset(d)
        self.assertEqual((status, report["clean"]), (200, True), report)
        self.assertEqual(tree(self.work), tree(baseline))

    def test_a_mount_the_tenant_left_in_a_reset_path_quarantines_it_by_name(self):
        d = Daemon("--reset-path", self.work)
        self.addCleanup(d.close)
        mnt = os.path.join(self.work, "mnt")
        start(d, "mount", {"command": "mkdir mnt && mount -t tmpfs none mnt && echo x > mnt/f",
                           "cwd": self.work})
        if wait_exit(d, "mount")["exit_code"] != 0:
            self.skipTest("the tenant cannot mount here (needs CAP_SYS_ADMIN)")
        self.addCleanup(subprocess.run, ["umount", "-l", mnt])
        status, report = reset(d)
        self.assertEqual(status, 200, report)
        self.assertFalse(report["clean"], report)
        self.assertIn(mnt, [r["name"] for r in report["remaining"]], report)
        self.assertEqual(d.json("GET", "/v1/health", auth=False)[1]["state"], "quarantined")


if __name__ == "__main__":
    unittest.main()
