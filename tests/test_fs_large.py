"""4 GiB through the daemon, both ways, for single files and for trees, with the
daemon's memory checked: streaming means its peak RSS stays within a few MiB
of idle. Data is generated on the fly (and lands on a tmpfs when the test can
mount one, so the disk is not the bottleneck)."""

import contextlib
import os
import shutil
import struct
import tarfile
import tempfile
import unittest

from lib.agentd_test import DaemonTestCase
from lib.fs_helpers import daemon_memory, tmpfs, url

MiB = 1 << 20
GiB = 1 << 30
SIZE = 4 * GiB
CHUNK = MiB
# Peak RSS may exceed idle RSS by at most this much during a transfer.
RSS_SLACK = 8 * MiB


def chunk(i):
    """The i-th MiB of the test stream: recognisable at any offset."""
    return struct.pack("<Q", i) * (CHUNK // 8)


def stream(n_chunks):
    for i in range(n_chunks):
        yield chunk(i)


class LargeTransferTest(DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.stack = contextlib.ExitStack()
        mounted = cls.stack.enter_context(tmpfs(SIZE + 512 * MiB)) if os.geteuid() == 0 else None
        cls.dir = mounted or tempfile.mkdtemp(prefix="agentd-large-")
        if not mounted:
            cls.stack.callback(shutil.rmtree, cls.dir, True)
        # Warm up every path once so the idle figure includes the code.
        small = os.path.join(cls.dir, "warm")
        cls.daemon.request("PUT", url("/v1/fs/file", path=small), b"w" * MiB)
        cls.daemon.request("GET", url("/v1/fs/file", path=small))
        cls.daemon.request("GET", url("/v1/fs/tar", path=cls.dir))
        os.unlink(small)
        cls.idle_rss, _ = daemon_memory(cls.daemon.proc.pid)

    @classmethod
    def tearDownClass(cls):
        cls.stack.close()
        super().tearDownClass()

    def assertRssBounded(self, what):
        rss, hwm = daemon_memory(self.daemon.proc.pid)
        print("\n%s: idle RSS %.1f MiB, peak %.1f MiB" % (what, self.idle_rss / MiB, hwm / MiB))
        self.assertLess(hwm - self.idle_rss, RSS_SLACK,
                        "%s: peak RSS %d MiB vs idle %d MiB" % (what, hwm // MiB,
                                                               self.idle_rss // MiB))

    def check_file(self, path, size):
        self.assertEqual(os.path.getsize(path), size)
        with open(path, "rb") as f:
            for i in (0, 1, size // CHUNK // 2, size // CHUNK - 1):
                f.seek(i * CHUNK)
                self.assertEqual(f.read(16), chunk(i)[:16], "chunk %d" % i)

    def read_body(self, resp, offset=0):
        """Reads a response body; returns its length, checking the pattern of
        the data that starts `offset` bytes into it."""
        total = 0
        while True:
            block = resp.read(CHUNK)
            if not block:
                return total
            start = total - offset
            if start >= 0 and start % CHUNK == 0 and len(block) >= 8:
                self.assertEqual(block[:8], struct.pack("<Q", start // CHUNK))
            total += len(block)

    def test_4_gib_file_upload_then_download(self):
        path = os.path.join(self.dir, "big.bin")
        conn = self.daemon.connection(timeout=300)
        headers = dict(self.daemon.headers(), **{"Content-Length": str(SIZE)})
        conn.request("PUT", url("/v1/fs/file", path=path), body=stream(SIZE // CHUNK),
                     headers=headers)
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200, resp.read())
        resp.read()
        self.check_file(path, SIZE)
        self.assertRssBounded("file upload")

        conn.request("GET", url("/v1/fs/file", path=path), headers=self.daemon.headers())
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        self.assertEqual(self.read_body(resp), SIZE)
        conn.close()
        self.assertRssBounded("file download")
        os.unlink(path)

    def test_4_gib_tree_upload_then_download(self):
        target = os.path.join(self.dir, "tree")
        os.mkdir(target)
        info = tarfile.TarInfo("big.bin")
        info.size = SIZE
        info.mode = 0o644
        header = info.tobuf(tarfile.PAX_FORMAT)

        def archive():
            yield header
            yield from stream(SIZE // CHUNK)
            yield bytes(1024)  # end of archive

        conn = self.daemon.connection(timeout=300)
        headers = dict(self.daemon.headers(),
                       **{"Content-Length": str(len(header) + SIZE + 1024)})
        conn.request("PUT", url("/v1/fs/tar", path=target), body=archive(), headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        self.assertEqual(resp.status, 200, body)
        self.check_file(os.path.join(target, "big.bin"), SIZE)
        self.assertRssBounded("tar upload")

        conn.request("GET", url("/v1/fs/tar", path=target), headers=self.daemon.headers())
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        total = self.read_body(resp, offset=512)  # a ustar header, then the data
        conn.close()
        self.assertGreaterEqual(total, SIZE + 1024)
        self.assertLess(total, SIZE + 64 * 1024)
        self.assertRssBounded("tar download")
        shutil.rmtree(target)


if __name__ == "__main__":
    unittest.main()
