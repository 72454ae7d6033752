"""A hostile guest cannot hurt the host through a tree download
(docs/CLIENT.md, "Trees"; docs/SECURITY.md). The guest runs model-written
code, so whatever answers GET /v1/fs/tar may be hostile. A small HTTP
server stands in for such a guest: it passes every other route to a real
daemon and answers the tree download with a crafted tar. `agentctl cp
guest:DIR LOCAL` (the C++ client's DownloadDir, extracting with the
daemon's own confined extraction, agentd/trees/) must refuse each attack
with a clear error naming the member, leave the destination as it was, and
write nothing outside it. Each attack has a control: the same fake guest
serving a well-formed archive, which lands byte for byte."""

import http.client
import http.server
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
import unittest

from lib.agentd_test import Daemon
from lib.fs_helpers import member, tar_bytes
from test_agentctl_exec import AGENTCTL


class HostileGuest(http.server.ThreadingHTTPServer):
    """Answers GET /v1/fs/tar with `self.tar`; passes everything else to a
    real daemon (health, stat), so only the archive is hostile."""
    daemon_threads = True

    def __init__(self, daemon):
        super().__init__(("127.0.0.1", 0), HostileHandler)
        self.real = daemon
        self.tar = b""
        self.tar_requests = 0
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]


class HostileHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path.startswith("/v1/fs/tar?"):
            self.server.tar_requests += 1
            body = self.server.tar
            self.send_response(200)
            self.send_header("Content-Type", "application/x-tar")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        conn = http.client.HTTPConnection("127.0.0.1", self.server.real.port, timeout=30)
        conn.request("GET", self.path, headers={"Authorization": self.headers["Authorization"]})
        answer = conn.getresponse()
        body = answer.read()
        conn.close()
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.getheader("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class HostileDownloadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.guest = HostileGuest(cls.daemon)
        cls.env = dict(os.environ, AGENTD_URL=cls.guest.url, AGENTD_TOKEN=cls.daemon.token,
                       NO_COLOR="1")

    @classmethod
    def tearDownClass(cls):
        cls.guest.shutdown()
        cls.guest.server_close()
        cls.daemon.close()

    def setUp(self):
        # host/dest is the destination; host/outside is what an escape
        # would reach; the guest's directory is a real one, for stat.
        self.host = tempfile.mkdtemp(prefix="agentd-hostile-dl-")
        self.addCleanup(shutil.rmtree, self.host, ignore_errors=True)
        self.dest = os.path.join(self.host, "dest")
        self.outside = os.path.join(self.host, "outside")
        os.makedirs(self.dest)
        os.makedirs(self.outside)
        with open(os.path.join(self.dest, "existing.txt"), "w") as f:
            f.write("keep")
        with open(os.path.join(self.outside, "secret"), "w") as f:
            f.write("host secret")
        self.remote = tempfile.mkdtemp(prefix="agentd-hostile-guest-")
        self.addCleanup(shutil.rmtree, self.remote, ignore_errors=True)

    def download(self, archive):
        self.guest.tar = archive
        before = self.guest.tar_requests
        r = subprocess.run([AGENTCTL, "--json", "cp", "guest:" + self.remote, self.dest],
                           capture_output=True, env=self.env, timeout=300)
        self.assertGreater(self.guest.tar_requests, before, "the archive was never asked for")
        lines = r.stdout.decode().splitlines()
        self.assertEqual(len(lines), 1, (r.stdout, r.stderr))
        return r, json.loads(lines[0])

    def host_listing(self):
        out = []
        for root, dirs, files in os.walk(self.host):
            for n in dirs + files:
                p = os.path.join(root, n)
                out.append((os.path.relpath(p, self.host), os.path.islink(p)))
        return sorted(out)

    def assert_refused(self, archive, code, **details):
        before = self.host_listing()
        r, env = self.download(archive)
        self.assertNotEqual(r.returncode, 0, env)
        self.assertEqual(env["error"]["code"], code, env)
        for k, v in details.items():
            self.assertEqual(env["error"].get(k), v, env)
        # Nothing was written anywhere: not in dest, not beside it.
        self.assertEqual(self.host_listing(), before)
        with open(os.path.join(self.outside, "secret")) as f:
            self.assertEqual(f.read(), "host secret")
        return env

    def test_a_well_formed_archive_from_the_same_fake_guest_lands(self):
        r, env = self.download(tar_bytes([(member("a", tarfile.DIRTYPE), None),
                                       (member("a/f.txt"), b"hello"),
                                       (member("a/l", tarfile.SYMTYPE, linkname="f.txt"), None)]))
        self.assertEqual(r.returncode, 0, env)
        with open(os.path.join(self.dest, "a", "f.txt"), "rb") as f:
            self.assertEqual(f.read(), b"hello")
        self.assertEqual(os.readlink(os.path.join(self.dest, "a", "l")), "f.txt")
        self.assertTrue(os.path.exists(os.path.join(self.dest, "existing.txt")))

    def test_a_dotdot_member_is_refused_and_nothing_escapes(self):
        env = self.assert_refused(tar_bytes([(member("ok.txt"), b"x"),
                                          (member("../outside/escaped.txt"), b"evil")]),
                                  "unsafe_path", member="../outside/escaped.txt")
        self.assertIn("..", env["error"]["message"])

    def test_an_absolute_member_is_refused(self):
        target = os.path.join(self.outside, "absolute.txt")
        self.assert_refused(tar_bytes([(member(target), b"evil")]), "unsafe_path", member=target)

    def test_a_write_through_a_symlink_is_refused(self):
        self.assert_refused(tar_bytes([(member("link", tarfile.SYMTYPE, linkname=self.outside), None),
                                    (member("link/pwned.txt"), b"evil")]),
                            "unsafe_path", member="link/pwned.txt")

    def test_a_write_through_a_relative_symlink_out_is_refused(self):
        self.assert_refused(tar_bytes([(member("up", tarfile.SYMTYPE, linkname="../outside"), None),
                                    (member("up/secret"), b"overwritten")]),
                            "unsafe_path", member="up/secret")

    def test_hard_links_pointing_out_are_refused(self):
        for target in ("../outside/secret", os.path.join(self.outside, "secret"), "missing"):
            with self.subTest(target=target):
                self.assert_refused(tar_bytes([(member("hl", tarfile.LNKTYPE, linkname=target), None)]),
                                    "unsafe_path", member="hl")

    def test_device_nodes_and_fifos_are_refused(self):
        for name, kind in (("chr", tarfile.CHRTYPE), ("blk", tarfile.BLKTYPE),
                           ("fifo", tarfile.FIFOTYPE)):
            with self.subTest(kind=name):
                self.assert_refused(tar_bytes([(member(name, kind), None)]),
                                    "unsafe_path", member=name)

    def test_a_declared_size_beyond_the_data_is_refused(self):
        whole = tar_bytes([(member("big.bin"), b"z" * 100000)])
        # The header promises 100000 bytes; the stream ends after 10 KiB.
        self.assert_refused(whole[:512 * 3 + 10240], "invalid_archive")

    def test_nesting_beyond_the_depth_bound_is_refused(self):
        deep = "/".join(["d"] * 257) + "/f.txt"
        env = self.assert_refused(tar_bytes([(member(deep), b"deep")]), "archive_too_large",
                                  cap="depth", limit=256)
        self.assertEqual(env["error"]["value"], 258)

    def test_nesting_at_the_depth_bound_lands(self):
        deep = "/".join(["d"] * 255) + "/f.txt"
        r, env = self.download(tar_bytes([(member(deep), b"deep")]))
        self.assertEqual(r.returncode, 0, env)
        self.assertTrue(os.path.exists(os.path.join(self.dest, deep)))

    def test_a_huge_entry_count_is_refused_at_the_cap(self):
        # 65537 empty members: one past the cap (the daemon's upload default).
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as t:
            for i in range(65537):
                info = tarfile.TarInfo("e%d" % i)
                t.addfile(info)
        env = self.assert_refused(out.getvalue(), "archive_too_large", cap="entries",
                                  limit=65536)
        self.assertEqual(env["error"]["member"], "e65536")


if __name__ == "__main__":
    unittest.main()
