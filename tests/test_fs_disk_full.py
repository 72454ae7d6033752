"""Disk pressure on a small tmpfs mounted for the test (needs root; skipped
otherwise): refusals before writing with real numbers, ENOSPC in the middle
caught and cleaned up, and the daemon goes on serving."""

import json
import os
import socket
import tempfile
import unittest

from lib.agentd_test import DaemonTestCase, error_code, read_until_close
from lib.fs_helpers import listing, member, tar_bytes, tmpfs, url

MiB = 1 << 20


class DiskFullTest(DaemonTestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("mounting a tmpfs needs root")
        self._mount = tmpfs(4 * MiB)
        self.fs = self._mount.__enter__()
        if self.fs is None:
            self._mount.__exit__(None, None, None)
            self.skipTest("could not mount a tmpfs")
        with open(os.path.join(self.fs, "old"), "wb") as f:
            f.write(b"old content")

    def tearDown(self):
        self._mount.__exit__(None, None, None)

    def assertOnlyOld(self):
        self.assertEqual(listing(self.fs), ["old"])
        with open(os.path.join(self.fs, "old"), "rb") as f:
            self.assertEqual(f.read(), b"old content")

    def test_declared_body_beyond_free_space_is_refused_before_it_is_sent(self):
        s = socket.create_connection(("127.0.0.1", self.daemon.port))
        s.settimeout(5)
        s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Length: %d\r\nExpect: 100-continue\r\n\r\n" %
                   (url("/v1/fs/file", path=os.path.join(self.fs, "old")), self.daemon.token,
                    8 * MiB)).encode())
        reply = read_until_close(s)
        s.close()
        head, _, body = reply.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 507"), head)
        self.assertNotIn(b"100 Continue", head)
        err = json.loads(body)["error"]
        self.assertEqual(err["code"], "insufficient_storage")
        self.assertEqual(err["needed"], 8 * MiB)
        self.assertLess(err["available"], 4 * MiB)
        self.assertGreater(err["available"], 3 * MiB)
        self.assertOnlyOld()

    def test_enospc_in_the_middle_of_a_chunked_write_is_507_and_cleaned_up(self):
        conn = self.daemon.connection()
        chunks = (b"z" * (256 * 1024) for _ in range(32))  # 8 MiB, size unknown upfront
        conn.request("PUT", url("/v1/fs/file", path=os.path.join(self.fs, "old")), body=chunks,
                     headers=self.daemon.headers(), encode_chunked=True)
        resp = conn.getresponse()
        err = json.loads(resp.read())["error"]
        conn.close()
        self.assertEqual((resp.status, err["code"]), (507, "insufficient_storage"))
        self.assertGreater(err["needed"], 3 * MiB)
        self.assertIn("available", err)
        self.assertOnlyOld()

    def test_tar_declaring_more_than_free_space_is_507_before_data(self):
        archive = tar_bytes([(member("a"), bytes(MiB)), (member("b"), bytes(5 * MiB))])
        s, b = self.daemon.json("PUT", url("/v1/fs/tar", path=self.fs), archive)
        self.assertEqual((s, error_code(b)), (507, "insufficient_storage"), b)
        self.assertEqual((b["error"]["needed"], b["error"]["member"]), (6 * MiB, "b"))
        self.assertLess(b["error"]["available"], 4 * MiB)
        self.assertOnlyOld()

    def test_running_out_of_inodes_mid_archive_is_507_and_nothing_stays(self):
        with tmpfs(4 * MiB, inodes=40) as small:
            if small is None:
                self.skipTest("could not mount a tmpfs")
            archive = tar_bytes([(member("f%03d" % i), b"x") for i in range(200)])
            s, b = self.daemon.json("PUT", url("/v1/fs/tar", path=small), archive)
            self.assertEqual((s, error_code(b)), (507, "insufficient_storage"), b)
            self.assertIn("needed", b["error"])
            self.assertIn("available", b["error"])
            self.assertEqual(os.listdir(small), [])

    def test_daemon_goes_on_serving_after_disk_full(self):
        try:  # refused before the body is read: the client may see a reset
            self.daemon.request("PUT", url("/v1/fs/file", path=os.path.join(self.fs, "big")),
                                b"q" * (5 * MiB))
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.assertOnlyOld()
        s, h = self.daemon.json("GET", "/v1/health", auth=False)
        self.assertEqual(s, 200)
        status, _, _ = self.daemon.request(
            "PUT", url("/v1/fs/file", path=os.path.join(self.fs, "small")), b"fits")
        self.assertEqual(status, 200)
        with open(os.path.join(self.fs, "small"), "rb") as f:
            self.assertEqual(f.read(), b"fits")


if __name__ == "__main__":
    unittest.main()
