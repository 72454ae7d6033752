"""disk_bytes (docs/PROTOCOL.md, "Limits"): an exec's or run's scratch space
is a fresh tmpfs of that size at disk_path, its own; a writer that fills it
is ended with killed_by "disk" and the guest's disk is untouched."""

import os
import shutil
import subprocess
import tempfile
import unittest
import uuid

from lib.agentd_test import AGENTD_BIN, Daemon, error_code
from lib.exec_util import read_stream, start, wait_exit, wait_until

MIB = 1 << 20


class ScratchDiskTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        status, health = cls.d.json("GET", "/v1/health", auth=False)
        assert status == 200
        if "disk" not in health["limits"]["supported"]:
            cls.d.close()
            raise unittest.SkipTest("disk_bytes unavailable here: %s" % health["limits"].get("disk_why"))

    @classmethod
    def tearDownClass(cls):
        cls.d.close()

    def run_code(self, body):
        status, obj = self.d.json("POST", "/v1/run", dict({"runtime": "shell"}, **body), timeout=120)
        self.assertEqual(status, 200, obj)
        return obj

    def test_a_writer_that_fills_its_scratch_is_ended_by_the_disk_limit(self):
        name = "agentd-disk-%s" % uuid.uuid4().hex
        r = self.run_code({"code": "head -c %d /dev/zero > /tmp/%s; echo wrote $?" % (10 * MIB, name),
                           "disk_bytes": MIB})
        self.assertEqual(r["killed_by"], "disk", r)
        self.assertEqual(r["limit"], {"name": "disk", "value": MIB, "unit": "bytes"})
        self.assertIn("disk limit 1048576 bytes", r["summary"])
        # Written to the exec's tmpfs, not to the guest's /tmp.
        self.assertFalse(os.path.exists("/tmp/" + name))

    def test_a_writer_that_ignores_enospc_is_killed(self):
        # It never exits by itself: only the daemon's watch of the full tmpfs ends it.
        r = self.run_code({"code": "while :; do cat /dev/zero >> /tmp/f 2>/dev/null; done",
                           "disk_bytes": MIB, "timeout_sec": 300})
        self.assertEqual((r["killed_by"], r["timed_out"]), ("disk", False), r)

    def test_scratch_space_within_its_size_is_the_exec_own_and_gone_after(self):
        name = "agentd-disk-%s" % uuid.uuid4().hex
        r = self.run_code({"code": "head -c 65536 /dev/zero > /tmp/%s && stat -f -c %%T /tmp && "
                                   "ls /tmp" % name, "disk_bytes": MIB})
        self.assertEqual((r["exit_code"], r["killed_by"]), (0, None), r)
        self.assertEqual(r["stdout"], "tmpfs\n%s\n" % name)  # fresh: only its own file
        self.assertFalse(os.path.exists("/tmp/" + name))
        # The control: without disk_bytes the same /tmp is the guest's.
        r = self.run_code({"code": "head -c 10 /dev/zero > /tmp/%s" % name})
        self.assertEqual(r["exit_code"], 0, r)
        self.assertTrue(os.path.exists("/tmp/" + name))
        os.unlink("/tmp/" + name)

    def test_an_exec_mounts_its_scratch_at_disk_path_and_reports_it(self):
        where = tempfile.mkdtemp(prefix="agentd-disk-path-")
        try:
            start(self.d, "disk-exec", {"command": "df -B1 --output=size %s | tail -n 1; "
                                                   "touch %s/mine" % (where, where),
                                        "disk_bytes": 4 * MIB, "disk_path": where})
            obj = wait_exit(self.d, "disk-exec")
            self.assertEqual(obj["exit_code"], 0, obj)
            self.assertEqual((obj["limits"]["disk_bytes"], obj["limits"]["disk_path"]),
                             (4 * MIB, where))
            _, _, out = self.d.request("GET", "/v1/execs/disk-exec/stdout")
            self.assertEqual(int(out.strip()), 4 * MIB)
            self.assertEqual(os.listdir(where), [])
        finally:
            shutil.rmtree(where)

    def test_bad_disk_members_are_refused_with_their_field(self):
        for body, field in (({"disk_bytes": 1024}, "disk_bytes"),
                            ({"disk_bytes": MIB, "disk_path": "tmp"}, "disk_path"),
                            ({"disk_bytes": MIB, "disk_path": "/"}, "disk_path"),
                            ({"disk_path": "/tmp"}, "disk_path"),
                            ({"disk_bytes": MIB, "disk_path": "/no/such/dir"}, "disk_path")):
            status, obj = self.d.json("POST", "/v1/run",
                                      dict({"runtime": "shell", "code": "true"}, **body))
            self.assertEqual((status, error_code(obj), obj["error"].get("field")),
                             (400, "invalid_request", field), body)


def stdout_bytes(d, exec_id):
    status, obj = d.json("GET", "/v1/execs/" + exec_id)
    return obj["stdout_bytes"] if status == 200 else 0


class ScratchDiskAcrossRestartTest(unittest.TestCase):
    """A recovered exec keeps its tmpfs, and the daemon that took it back
    still sees it fill: from the exec's holder after a crash, from the
    handover after an upgrade in place."""

    def setUp(self):
        self.d = Daemon()
        self.addCleanup(self.d.close)
        status, health = self.d.json("GET", "/v1/health", auth=False)
        self.assertEqual(status, 200)
        if "disk" not in health["limits"]["supported"]:
            self.skipTest("disk_bytes unavailable here: %s" % health["limits"].get("disk_why"))
        # The scratch tmpfs covers disk_path; the FIFO that says "fill now" and
        # the marker that says "done" live beside it, on the guest's disk.
        self.scratch = tempfile.mkdtemp(prefix="agentd-disk-restart-")
        self.side = tempfile.mkdtemp(prefix="agentd-disk-side-")
        self.addCleanup(shutil.rmtree, self.scratch, True)
        self.addCleanup(shutil.rmtree, self.side, True)
        self.fifo = os.path.join(self.side, "go")
        os.mkfifo(self.fifo)

    def start_writer(self, exec_id, fill):
        """An exec that says "ready", waits for the FIFO, then runs `fill`."""
        start(self.d, exec_id, {
            "command": "echo ready; read x < %s; %s; touch %s/done" % (self.fifo, fill, self.side),
            "disk_bytes": MIB, "disk_path": self.scratch, "timeout_sec": 120})
        wait_until(lambda: stdout_bytes(self.d, exec_id) == 6, what="the writer to be ready")

    def restart_after_kill(self):
        self.d.kill()
        self.d.start()
        status, _ = self.d.json("POST", "/v1/bootstrap", {"token": self.d.token}, auth=False)
        self.assertEqual(status, 200)

    def go(self):
        with open(self.fifo, "w") as f:
            f.write("x\n")

    def assertEndedByDisk(self, exec_id):
        obj = wait_exit(self.d, exec_id, timeout=120)
        self.assertEqual((obj["killed_by"], obj["timed_out"], obj["error"]), ("disk", False, None),
                         obj)
        self.assertEqual(obj["limit"], {"name": "disk", "value": MIB, "unit": "bytes"})
        self.assertEqual(read_stream(self.d, exec_id)[:6], b"ready\n")
        self.assertEqual(os.listdir(self.scratch), [])  # the guest's directory is untouched

    def test_a_fill_after_a_daemon_crash_is_reported_as_disk(self):
        self.start_writer("fill-crash", "head -c %d /dev/zero > %s/f; echo wrote $?" % (
            10 * MIB, self.scratch))
        self.restart_after_kill()
        self.go()
        self.assertEndedByDisk("fill-crash")

    def test_a_writer_ignoring_enospc_after_a_crash_is_killed_by_the_poll(self):
        # It never exits by itself: only the new daemon's watch can end it.
        self.start_writer("spin-crash", "while :; do cat /dev/zero >> %s/f 2>/dev/null; done"
                          % self.scratch)
        self.restart_after_kill()
        self.go()
        self.assertEndedByDisk("spin-crash")

    def test_a_fill_while_the_daemon_is_down_is_reported_as_disk(self):
        self.start_writer("fill-down", "head -c %d /dev/zero > %s/f; echo wrote $?" % (
            10 * MIB, self.scratch))
        self.d.kill()
        self.go()
        # The writer ended on ENOSPC with no daemon around (its last step
        # leaves a marker outside the tmpfs); the next daemon learns its exit
        # from the holder and must still see the tmpfs full.
        wait_until(lambda: os.path.exists(os.path.join(self.side, "done")), what="the fill")
        self.d.start()
        self.d.json("POST", "/v1/bootstrap", {"token": self.d.token}, auth=False)
        self.assertEndedByDisk("fill-down")

    def test_a_streamed_stdin_exec_filling_after_a_crash_is_reported_as_disk(self):
        # Its holder hands back the stdin relay's write end too: the tmpfs
        # comes after it.
        start(self.d, "fill-stdin", {
            "command": "echo ready; read n; head -c $n /dev/zero > %s/f; echo wrote $?"
                       % self.scratch,
            "disk_bytes": MIB, "disk_path": self.scratch, "stdin_stream": True,
            "timeout_sec": 120})
        wait_until(lambda: stdout_bytes(self.d, "fill-stdin") == 6, what="the writer to be ready")
        self.restart_after_kill()
        status, obj = self.d.json("POST", "/v1/execs/fill-stdin/stdin?offset=0&eof=1",
                                  b"%d\n" % (10 * MIB))
        self.assertEqual(status, 200, obj)
        self.assertEndedByDisk("fill-stdin")

    def test_a_fill_after_an_upgrade_in_place_is_reported_as_disk(self):
        self.start_writer("fill-upgrade", "head -c %d /dev/zero > %s/f; echo wrote $?" % (
            10 * MIB, self.scratch))
        run = subprocess.run([AGENTD_BIN, "--upgrade", "--state-dir", self.d.state_dir],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.go()
        self.assertEndedByDisk("fill-upgrade")


if __name__ == "__main__":
    unittest.main()
