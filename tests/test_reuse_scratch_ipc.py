"""POST /v1/reset empties the scratch dirs (--reset-scratch) and removes
the System V IPC objects made since the start (--reset-ipc, or PID 1),
then proves it (docs/PROTOCOL.md, "Reuse"). The IPC tests run the daemon
in an IPC namespace of its own (unshare --ipc, root only), as in a guest:
the sweep must never touch the host's objects."""

import os
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__)))
from lib import pyclient  # noqa: F401,E402  (puts client/python on sys.path)
from lib.agentd_test import AGENTD_BIN, Daemon, new_token  # noqa: E402
from lib.exec_util import run  # noqa: E402

import agentd_client as ac  # noqa: E402

# Made before the daemon starts, in the fresh namespace: the image's object.
IMAGE_OBJECT = 'ipcmk -M 4096 >/dev/null && exec "$@"'


def reset_to(d, token):
    status, report = d.json("POST", "/v1/reset", {"reset_id": secrets.token_hex(8),
                                                  "next": {"token": token}})
    assert status == 200, (status, report)
    d.token = token
    return report


def ipc_ids(d, exec_id):
    """The (kind, id) of every System V object the daemon's namespace lists,
    seen by an exec, as a tenant would look."""
    obj, out, err = run(d, exec_id, {"command": "for t in shm msg sem; do "
                                                "tail -n +2 /proc/sysvipc/$t | "
                                                "sed \"s/^/$t /\"; done"})
    assert obj["exit_code"] == 0, (obj, err)
    return {(f[0], int(f[2])) for f in (line.split() for line in out.decode().splitlines())}


class ScratchDirTest(unittest.TestCase):
    def setUp(self):
        self.scratch = tempfile.mkdtemp(prefix="agentd-scratch-")
        self.outside = tempfile.mkdtemp(prefix="agentd-outside-")
        self.addCleanup(shutil.rmtree, self.scratch, True)
        self.addCleanup(shutil.rmtree, self.outside, True)
        os.chmod(self.scratch, 0o1777)
        with open(os.path.join(self.scratch, "from-the-image"), "w") as f:
            f.write("there before the daemon")
        self.d = Daemon("--reset-scratch", self.scratch)
        self.addCleanup(self.d.close)

    def test_a_reset_empties_the_scratch_dir_and_keeps_the_dir(self):
        d = self.d
        canary = secrets.token_hex(16)
        keep = os.path.join(self.outside, "keep")
        with open(keep, "w") as f:
            f.write("outside the scratch dir")
        script = ("cd %s && mkdir -p deep/er && echo %s > deep/er/canary && echo %s > .hidden "
                  "&& ln -s %s link-out && ln -s / root-link && mkdir ro && touch ro/f "
                  "&& chmod 500 ro" % (self.scratch, canary, canary, keep))
        obj, _, err = run(d, "tenant-a", {"command": script})
        self.assertEqual(obj["exit_code"], 0, err)
        token = new_token()
        report = reset_to(d, token)
        self.assertTrue(report["clean"], report)
        self.assertEqual(os.listdir(self.scratch), [])
        self.assertGreaterEqual(report["removed"]["entries"], 9, report)
        # The dir stays, sticky and world-writable as it was; a symlink in it
        # was removed, never followed.
        self.assertEqual(stat.S_IMODE(os.stat(self.scratch).st_mode), 0o1777)
        with open(keep) as f:
            self.assertEqual(f.read(), "outside the scratch dir")
        self.assertTrue(os.path.isdir("/usr"))
        obj, out, _ = run(d, "tenant-b", {"command": "grep -r %s %s; ls -A %s" %
                                          (canary, self.scratch, self.scratch)})
        self.assertEqual(out, b"")

    def test_a_scratch_dir_holding_the_state_dir_is_refused_at_start(self):
        # A reset would empty the daemon's own records.
        state = os.path.join(self.scratch, "state")
        args = [AGENTD_BIN, "--state-dir", state, "--reset-scratch", self.scratch + "/",
                "--listen", "127.0.0.1:0"]
        r = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"lies inside scratch dir", r.stderr)


@unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare") and shutil.which("ipcmk"),
                     "an IPC namespace of the daemon's own needs root, unshare and ipcmk")
class IpcSweepTest(unittest.TestCase):
    def daemon(self, *flags):
        d = Daemon(*flags, wrapper=["unshare", "--ipc", "sh", "-c", IMAGE_OBJECT, "sh"])
        self.addCleanup(d.close)
        return d

    def test_a_reset_removes_the_tenants_ipc_objects_and_keeps_the_images(self):
        d = self.daemon("--reset-ipc")
        image = ipc_ids(d, "look-0")
        self.assertEqual([k for k, _ in image], ["shm"], image)
        obj, out, err = run(d, "tenant-a", {"command": "ipcmk -M 65536 && ipcmk -Q && ipcmk -S 3"})
        self.assertEqual(obj["exit_code"], 0, err)
        made = ipc_ids(d, "look-1") - image
        self.assertEqual(sorted(k for k, _ in made), ["msg", "sem", "shm"], made)
        token = new_token()
        report = reset_to(d, token)
        self.assertTrue(report["clean"], report)
        self.assertEqual(report["removed"]["ipc_objects"], 3, report)
        self.assertEqual(ipc_ids(d, "look-2"), image)

    def test_the_python_client_reports_the_ipc_objects_removed(self):
        d = self.daemon("--reset-ipc")
        c = ac.Client("http://127.0.0.1:%d" % d.port, d.token)
        self.addCleanup(c.close)
        self.assertEqual(c.run("ipcmk -Q && ipcmk -Q").exit_code, 0)
        report = c.reset(next_token=new_token())
        self.assertTrue(report.clean, report)
        self.assertEqual(report.removed_ipc_objects, 2, report)

    def test_without_the_flag_a_reset_leaves_ipc_alone(self):
        d = self.daemon()
        obj, _, err = run(d, "tenant-a", {"command": "ipcmk -Q"})
        self.assertEqual(obj["exit_code"], 0, err)
        before = ipc_ids(d, "look-1")
        report = reset_to(d, new_token())
        self.assertEqual(report["removed"]["ipc_objects"], 0, report)
        self.assertEqual(ipc_ids(d, "look-2"), before)


if __name__ == "__main__":
    unittest.main()
