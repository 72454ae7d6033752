"""32 containers of an unmodified busybox image, agentd injected from a
volume (tests/lib/docker_fleet.py, on a private Docker engine), driven at
once from this one process (a thread and a Python client per guest): each
runs a command, takes a tree upload, transforms it, and gives it back in a
download, byte for byte what was sent, with no guest's bytes in another's.
Every container, the image and the volume are removed even when it fails."""

import os
import shutil
import tempfile
import threading
import time
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.agentd_test import AGENTD_BIN
from lib.docker_fleet import DockerFleet
from agentd_client import Client

GUESTS = 32


def tree_bytes(root):
    """{relative path: bytes} of every regular file under root."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = f.read()
    return out


def make_tree(root, name):
    """A small tree unique to one guest: text, every byte value, a nested file."""
    os.makedirs(os.path.join(root, "sub", "deeper"))
    with open(os.path.join(root, "name.txt"), "w") as f:
        f.write(name + "\n")
    with open(os.path.join(root, "bytes.bin"), "wb") as f:
        f.write(bytes(range(256)) * 64 + name.encode() + os.urandom(4096))
    with open(os.path.join(root, "sub", "deeper", "random.bin"), "wb") as f:
        f.write(os.urandom(65536))


@unittest.skipUnless(os.geteuid() == 0, "needs root for dockerd")
class DockerFleetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="agentd-docker-fleet-")
        try:
            cls.fleet = DockerFleet(AGENTD_BIN, cls.tmp).__enter__()
        except BaseException:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.fleet.close()
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def wait_for_socket(self, name, sock):
        """Until agentd's socket appears; fails at once if the container ended."""
        deadline = time.monotonic() + 120  # a safety net only: the socket is the event
        while not os.path.exists(sock):
            state = self.fleet.docker("inspect", "-f", "{{.State.Running}}", name).stdout
            if state.strip() != b"true":
                raise AssertionError("%s is not running: %s" % (name, self.fleet.docker(
                    "logs", name, check=False).stderr.decode(errors="replace")[-2000:]))
            if time.monotonic() > deadline:
                raise AssertionError("no agentd socket in %s" % name)
            time.sleep(0.05)

    def test_32_injected_containers_driven_at_once_round_trip_trees_byte_exact(self):
        guests = self.fleet.create(GUESTS)
        self.fleet.start([name for name, _ in guests])
        start = threading.Barrier(GUESTS)
        errors = {}

        def drive(name, sock):
            try:
                self.wait_for_socket(name, sock)
                local_in = os.path.join(self.tmp, "in-" + name)
                local_out = os.path.join(self.tmp, "out-" + name)
                make_tree(local_in, name)
                with Client("unix:" + sock, token=self.fleet.token) as guest:
                    self.assertEqual(guest.health().status, "ok")
                    start.wait()
                    r = guest.run(["sh", "-c", 'echo "$0"; hostname', name])
                    self.assertEqual(r.exit_code, 0, r.stderr_text)
                    self.assertEqual(r.stdout_text.splitlines()[0], name)
                    guest.upload_dir(local_in, "/work/in", parents=True)
                    # The guest transforms the tree: a copy plus a listing,
                    # so the download is the guest's work, not an echo.
                    r = guest.run(["sh", "-c", "cp -a /work/in /work/out && "
                                   "cd /work/in && find . -type f | sort > /work/out/files"])
                    self.assertEqual(r.exit_code, 0, r.stderr_text)
                    guest.download_dir("/work/out", local_out)
                sent = tree_bytes(local_in)
                got = tree_bytes(local_out)
                listing = got.pop("files").decode().split()
                self.assertEqual(sorted("./" + p for p in sent), listing)
                self.assertEqual(got, sent)
            except BaseException as e:  # noqa: BLE001  (reported per guest below)
                errors[name] = repr(e)
                start.abort()

        threads = [threading.Thread(target=drive, args=g) for g in guests]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, {})


if __name__ == "__main__":
    unittest.main()
