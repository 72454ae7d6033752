"""--fs-root confinement: escapes through "..", symlinks and magic links are refused
by every route, and nothing outside the root is read, written, listed or removed."""

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest

from lib.agentd_test import Daemon, error_code
from lib.fs_helpers import listing, url


class ConfinementTest(unittest.TestCase):
    daemon_env = None  # the environment of the daemon (None: inherit)

    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="agentd-confine-")
        cls.root = os.path.join(cls.base, "root")
        cls.outside = os.path.join(cls.base, "outside")
        os.makedirs(os.path.join(cls.root, "sub"))
        os.makedirs(cls.outside)
        with open(os.path.join(cls.outside, "secret"), "w") as f:
            f.write("secret")
        with open(os.path.join(cls.root, "sub", "file"), "w") as f:
            f.write("inside")
        links = {"up": "..", "out": "../outside", "abs": cls.outside,
                 "dangling-out": "../outside/created", "inside": "sub",
                 "abs-inside": os.path.join(cls.root, "sub"), "self-root": "/proc/self/root"}
        for name, target in links.items():
            os.symlink(target, os.path.join(cls.root, name))
        cls.proc_mounted = False
        if os.geteuid() == 0:
            os.mkdir(os.path.join(cls.root, "proc"))
            cls.proc_mounted = subprocess.run(
                ["mount", "-t", "proc", "proc", os.path.join(cls.root, "proc")],
                stderr=subprocess.DEVNULL).returncode == 0
        cls.daemon = Daemon("--fs-root", cls.root, env=cls.daemon_env)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        if cls.proc_mounted:
            subprocess.run(["umount", "-l", os.path.join(cls.root, "proc")], check=False)
        shutil.rmtree(cls.base, ignore_errors=True)

    def setUp(self):
        self.outside_before = listing(self.outside)

    def tearDown(self):
        self.assertEqual(listing(self.outside), self.outside_before, "something leaked outside")
        with open(os.path.join(self.outside, "secret")) as f:
            self.assertEqual(f.read(), "secret")

    def r(self, *parts):
        return os.path.join(self.root, *parts)

    def assertUnsafe(self, status, body):
        self.assertEqual((status, error_code(body)), (400, "unsafe_path"), body)

    def escapes(self):
        return [self.root + "/../outside/secret", self.r("out", "secret"),
                self.r("abs", "secret"), self.r("up", "outside", "secret"),
                self.r("inside", "..", "..", "outside", "secret"), "/etc/hostname"]

    def test_reads_through_every_escape_are_refused(self):
        for p in self.escapes():
            s, b = self.daemon.json("GET", url("/v1/fs/file", path=p))
            self.assertUnsafe(s, b)
            s, b = self.daemon.json("GET", url("/v1/fs/stat", path=p))
            self.assertUnsafe(s, b)

    def test_symlinks_that_stay_inside_are_followed(self):
        status, _, body = self.daemon.request("GET", url("/v1/fs/file", path=self.r("inside",
                                                                                    "file")))
        self.assertEqual((status, body), (200, b"inside"))
        s, b = self.daemon.json("GET", url("/v1/fs/realpath", path=self.r("inside", "file")))
        self.assertEqual((s, b["path"]), (200, self.r("sub", "file")))

    def test_absolute_symlinks_are_not_followed_under_a_root(self):
        # Even one whose target lies inside: documented in PROTOCOL.md.
        s, b = self.daemon.json("GET", url("/v1/fs/file", path=self.r("abs-inside", "file")))
        self.assertUnsafe(s, b)

    def test_writes_through_escapes_are_refused(self):
        for p in [self.r("out", "new"), self.r("abs", "new"), self.r("dangling-out"),
                  self.r("up", "outside", "new")]:
            s, b = self.daemon.json("PUT", url("/v1/fs/file", path=p, parents="1"), b"pwned")
            self.assertUnsafe(s, b)
        s, b = self.daemon.json("POST", "/v1/fs/mkdir", {"path": self.r("out", "d"),
                                                         "parents": True})
        self.assertUnsafe(s, b)

    def test_rename_and_delete_through_escapes_are_refused(self):
        with open(self.r("movable"), "w") as f:
            f.write("m")
        s, b = self.daemon.json("POST", "/v1/fs/rename", {"from": self.r("movable"),
                                                          "to": self.r("out", "moved")})
        self.assertUnsafe(s, b)
        s, b = self.daemon.json("POST", "/v1/fs/rename", {"from": self.r("out", "secret"),
                                                          "to": self.r("stolen")})
        self.assertUnsafe(s, b)
        for recursive in ("0", "1"):
            s, b = self.daemon.json("DELETE", url("/v1/fs", path=self.r("out", "secret"),
                                                  recursive=recursive))
            self.assertUnsafe(s, b)
        s, b = self.daemon.json("DELETE", url("/v1/fs", path=self.root, recursive="1"))
        self.assertUnsafe(s, b)
        self.assertFalse(os.path.exists(self.r("stolen")))

    def test_listing_and_realpath_of_escapes_are_refused(self):
        for p in [self.r("out"), self.r("abs"), self.r("up")]:
            s, b = self.daemon.json("GET", url("/v1/fs/list", path=p))
            self.assertUnsafe(s, b)
            s, b = self.daemon.json("GET", url("/v1/fs/realpath", path=p))
            self.assertUnsafe(s, b)
        # Describing the link itself is fine: it is inside.
        s, b = self.daemon.json("GET", url("/v1/fs/stat", path=self.r("out")))
        self.assertEqual((s, b["type"], b["target"]), (200, "symlink", "../outside"))

    def test_tar_download_keeps_escaping_links_as_links(self):
        status, _, data = self.daemon.request("GET", url("/v1/fs/tar", path=self.root))
        self.assertEqual(status, 200)
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            members = {m.name: m for m in t.getmembers()}
        self.assertTrue(members["out"].issym())
        self.assertEqual(members["out"].linkname, "../outside")
        self.assertFalse(any("secret" in n for n in members), sorted(members))
        for p in [self.r("out"), self.r("abs")]:
            s, b = self.daemon.json("GET", url("/v1/fs/tar", path=p))
            self.assertUnsafe(s, b)

    def test_tar_upload_into_an_escape_is_refused(self):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            info = tarfile.TarInfo("pwned")
            info.size = 1
            t.addfile(info, io.BytesIO(b"x"))
        for p in [self.r("out"), self.r("abs"), self.r("up")]:
            s, b = self.daemon.json("PUT", url("/v1/fs/tar", path=p), buf.getvalue())
            self.assertUnsafe(s, b)

    def test_magic_links_are_refused(self):
        s, b = self.daemon.json("GET", url("/v1/fs/file", path=self.r("self-root", "etc",
                                                                     "hostname")))
        self.assertUnsafe(s, b)
        if not self.proc_mounted:
            self.skipTest("could not mount proc inside the root")
        for p in [self.r("proc", "self", "root", "etc", "hostname"),
                  self.r("proc", "self", "cwd", "x"),
                  self.r("proc", "thread-self", "root", "etc", "hostname")]:
            s, b = self.daemon.json("GET", url("/v1/fs/file", path=p))
            self.assertUnsafe(s, b)
        # Plain procfs files under the root are still readable.
        status, _, body = self.daemon.request("GET", url("/v1/fs/file",
                                                         path=self.r("proc", "self", "status")))
        self.assertEqual(status, 200)
        self.assertIn(b"Name:", body)


class ConfinementWalkTest(ConfinementTest):
    """The same attacks against the component walk that replaces openat2 on
    kernels without it (forced by the daemon's test seam)."""

    daemon_env = dict(os.environ, AGENTD_TEST_RESOLVE_WALK="1")

    def test_the_daemon_uses_the_walk(self):
        self.assertTrue(any("component walk" in line for line in self.daemon.logs()))


class UnconfinedTest(unittest.TestCase):
    """Without --fs-root the root is "/": absolute symlinks of the guest work as
    they always do; only procfs magic links are refused."""

    def test_absolute_symlinks_resolve_and_magic_links_do_not(self):
        tmp = tempfile.mkdtemp(prefix="agentd-unconfined-")
        try:
            with open(os.path.join(tmp, "real"), "w") as f:
                f.write("real")
            os.symlink(os.path.join(tmp, "real"), os.path.join(tmp, "abs"))
            with Daemon() as d:
                status, _, body = d.request("GET", url("/v1/fs/file", path=os.path.join(tmp, "abs")))
                self.assertEqual((status, body), (200, b"real"))
                s, b = d.json("GET", url("/v1/fs/file", path="/proc/self/root" + tmp + "/real"))
                self.assertEqual((s, error_code(b)), (400, "unsafe_path"))
                s, b = d.json("GET", url("/v1/fs/file", path="/../../etc/hostname"))
                self.assertEqual((s, error_code(b)), (400, "unsafe_path"))
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main()
