"""The overlay fast path of a reset path (--reset-overlay auto): the path is
an overlay on its golden copy with a tmpfs upper layer, and POST /v1/reset
swaps that layer, then verifies the result by the same walk as without
overlays (docs/PROTOCOL.md, "Reuse"). Needs root and overlayfs; the
fallback to restoring by copying is tested where the overlay cannot be
mounted."""

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__)))
from lib.agentd_test import Daemon  # noqa: E402
from lib.exec_util import pid_alive, read_stream, start, wait_exit, wait_until  # noqa: E402
from test_reuse_paths import reset, tree  # noqa: E402


def overlay_missing():
    if os.geteuid() != 0:
        return "not root"
    with open("/proc/filesystems") as f:
        if "\toverlay\n" not in f.read():
            return "no overlayfs"
    return None


def mounts_at(path):
    """The file system types mounted at `path`, bottom first."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == path:
                out.append(fields[fields.index("-") + 1])
    return out


@unittest.skipIf(overlay_missing(), overlay_missing())
class OverlayResetTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="agentd-overlay-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.work = os.path.join(self.tmp, "work")
        os.makedirs(os.path.join(self.work, "src"))
        with open(os.path.join(self.work, "src", "main.py"), "w") as f:
            f.write("print('golden')\n")
        with open(os.path.join(self.work, "data.csv"), "w") as f:
            f.write("id,value\n1,golden\n")
        os.chmod(os.path.join(self.work, "data.csv"), 0o640)
        os.symlink("src/main.py", os.path.join(self.work, "entry"))
        self.golden = tree(self.work)
        self.state = os.path.join(self.tmp, "state")
        self.d = Daemon("--reset-path", self.work, "--reset-overlay", "auto",
                        state_dir=self.state)
        self.addCleanup(self.unmount)
        self.addCleanup(self.d.close)

    def unmount(self):
        # The daemon leaves its overlay mounted when it stops (a restart
        # adopts it); the test takes it off.
        for path in (self.work, os.path.join(self.state, "reset-overlay", "0")):
            while mounts_at(path):
                subprocess.run(["umount", "-l", path], check=True)

    def tenant(self, exec_id, script):
        start(self.d, exec_id, {"command": script, "cwd": self.work})
        result = wait_exit(self.d, exec_id)
        self.assertEqual(result["exit_code"], 0, read_stream(self.d, exec_id, "stderr"))

    def tenant_writes(self, canary):
        self.tenant("tenant-" + canary[:6],
                    "mkdir -p out && echo %s > out/canary && echo 2,%s >> data.csv && "
                    "rm src/main.py && chmod 600 data.csv && ln -sfn /etc entry && "
                    "echo %s > .hidden" % (canary, canary, canary))
        self.assertNotEqual(tree(self.work), self.golden)

    def assert_no_canary(self, canary):
        self.assertEqual(tree(self.work), self.golden)
        found = subprocess.run(["grep", "-r", canary, self.work], capture_output=True)
        self.assertEqual(found.returncode, 1, found.stdout)

    def test_health_reports_the_path_as_an_overlay(self):
        status, health = self.d.json("GET", "/v1/health", auth=False)
        self.assertEqual(status, 200)
        self.assertEqual(health["reset_paths"], [{"path": self.work, "mode": "overlay"}])
        self.assertEqual(mounts_at(self.work), ["overlay"])

    def test_a_reset_swaps_out_a_canary_and_brings_back_changed_and_deleted_files(self):
        for n in range(3):  # the first verification compares bytes, later ones identities
            canary = secrets.token_hex(16)
            self.tenant_writes(canary)
            status, report = reset(self.d)
            self.assertEqual((status, report["clean"]), (200, True), report)
            self.assertEqual(report["remaining"], [])
            # out/, out/canary, .hidden, data.csv (copied up), entry, the
            # whiteout of src/main.py and the copied-up src/.
            self.assertGreaterEqual(report["removed"]["entries"], 5, report)
            self.assertGreater(report["removed"]["bytes"], 0, report)
            self.assert_no_canary(canary)
            self.assertEqual(mounts_at(self.work), ["overlay"], "round %d" % n)

    def test_the_answer_shows_the_golden_tree_and_the_old_layer_is_freed_after_it(self):
        canary = secrets.token_hex(16)
        self.tenant("many", "mkdir many && cd many && seq 1 2000 | xargs touch && "
                    "head -c 1048576 /dev/zero > big && echo %s > canary" % canary)
        status, report = reset(self.d)
        # What the answer promises holds when it arrives: the fresh overlay
        # shows the golden tree.
        self.assertEqual((status, report["clean"]), (200, True), report)
        self.assert_no_canary(canary)
        self.assertEqual(mounts_at(self.work), ["overlay"])
        self.assertGreaterEqual(report["removed"]["entries"], 2002, report)

        # The swapped-out overlay and tmpfs are dropped only after the
        # answer (the kernel frees the tenant's files then), and it ends.
        def lines():
            return [json.loads(line) for line in self.d.logs() if line.startswith("{")]

        def released():
            return [e for e in lines() if e.get("msg") == "reset overlay released"]

        (freed,) = wait_until(released, what="the old overlay's release")
        self.assertEqual(freed["generation"], report["generation"] - 1, freed)
        self.assertEqual((freed["entries"], freed["bytes"]),
                         (report["removed"]["entries"], report["removed"]["bytes"]), freed)
        self.assertGreaterEqual(freed["bytes"], 1 << 20, freed)
        msgs = [e.get("msg") for e in lines()]
        self.assertLess(msgs.index("guest reset"), msgs.index("reset overlay released"), msgs)

    def test_a_mount_the_tenant_made_over_or_in_the_path_is_gone_after_the_reset(self):
        canary = secrets.token_hex(16)
        self.tenant("mounts", "mount -t tmpfs none %s/src && echo %s > src/x && "
                    "mount -t tmpfs none %s && echo %s > %s/y"
                    % (self.work, canary, self.work, canary, self.work))
        self.assertEqual(mounts_at(self.work), ["overlay", "tmpfs"])
        status, report = reset(self.d)
        self.assertEqual((status, report["clean"]), (200, True), report)
        # Nothing of the tenant's stays mounted beneath the new overlay.
        self.assertEqual(mounts_at(self.work), ["overlay"])
        self.assertEqual(mounts_at(os.path.join(self.work, "src")), [])
        self.assert_no_canary(canary)

    def test_an_exec_with_its_cwd_and_an_open_file_in_the_path_is_ended_first(self):
        canary = secrets.token_hex(16)
        script = ("echo %s > src/held; exec 3<src/held; cd src; "
                  "setsid sleep 1000 & echo $!; exec sleep 1000" % canary)
        start(self.d, "holder", {"command": script, "cwd": self.work})
        sleeper = int(wait_until(lambda: read_stream(self.d, "holder").strip(),
                                 what="the setsid'd sleeper"))
        self.assertEqual(os.readlink("/proc/%d/cwd" % sleeper), os.path.join(self.work, "src"))
        status, report = reset(self.d)
        self.assertEqual((status, report["clean"]), (200, True), report)
        self.assertGreaterEqual(report["killed_processes"], 2, report)
        self.assertFalse(pid_alive(sleeper))
        self.assert_no_canary(canary)

    def test_a_restart_keeps_the_tenants_overlay_and_the_next_reset_still_cleans(self):
        canary = secrets.token_hex(16)
        self.tenant_writes(canary)
        self.d.restart()  # SIGKILL, as a crash; an upgrade in place keeps the mount too
        status, body = self.d.json("POST", "/v1/bootstrap", {"token": self.d.token}, auth=False)
        self.assertEqual(status, 200, body)
        # Adopted, not stacked: one overlay, the tenant's files still there.
        self.assertEqual(mounts_at(self.work), ["overlay"])
        with open(os.path.join(self.work, "out", "canary")) as f:
            self.assertEqual(f.read().strip(), canary)
        status, health = self.d.json("GET", "/v1/health", auth=False)
        self.assertEqual(health["reset_paths"][0]["mode"], "overlay")
        status, report = reset(self.d)
        self.assertEqual((status, report["clean"]), (200, True), report)
        self.assert_no_canary(canary)
        self.assertEqual(mounts_at(self.work), ["overlay"])


@unittest.skipIf(overlay_missing(), overlay_missing())
class OverlayFallbackTest(unittest.TestCase):
    def test_a_path_overlayfs_cannot_name_falls_back_to_restoring_and_says_why(self):
        tmp = tempfile.mkdtemp(prefix="agentd-overlay-")
        self.addCleanup(shutil.rmtree, tmp, True)
        work = os.path.join(tmp, "a,b")  # ',' separates overlayfs options
        os.mkdir(work)
        with open(os.path.join(work, "golden"), "w") as f:
            f.write("golden\n")
        d = Daemon("--reset-path", work, "--reset-overlay", "auto")
        self.addCleanup(d.close)
        status, health = d.json("GET", "/v1/health", auth=False)
        self.assertEqual(status, 200)
        (path,) = health["reset_paths"]
        self.assertEqual((path["path"], path["mode"]), (work, "restore"))
        self.assertIn("overlayfs options", path["overlay_unavailable"])
        self.assertEqual(mounts_at(work), [])
        canary = secrets.token_hex(16)
        start(d, "t", {"command": "echo %s > canary" % canary, "cwd": work})
        wait_exit(d, "t")
        status, report = reset(d)
        self.assertEqual((status, report["clean"]), (200, True), report)
        self.assertEqual(os.listdir(work), ["golden"])

    def test_without_the_flag_a_path_is_restored_by_copying(self):
        tmp = tempfile.mkdtemp(prefix="agentd-overlay-")
        self.addCleanup(shutil.rmtree, tmp, True)
        d = Daemon("--reset-path", tmp)
        self.addCleanup(d.close)
        status, health = d.json("GET", "/v1/health", auth=False)
        self.assertEqual(health["reset_paths"],
                         [{"path": tmp, "mode": "restore",
                           "overlay_unavailable": "--reset-overlay off"}])
        self.assertEqual(mounts_at(tmp), [])


if __name__ == "__main__":
    unittest.main()
