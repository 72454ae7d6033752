"""Tree fidelity: a tree with every kind of entry goes up and comes back down
unchanged, compared entry by entry (type, mode, link target, content hash,
hard-link identity, mtime to the nanosecond)."""

import io
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
import unittest

from lib.agentd_test import DaemonTestCase
from lib.fs_helpers import make_rich_tree, member, snapshot, tar_bytes, tar_of_dir, url


class RoundTripTest(DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.base = tempfile.mkdtemp(prefix="agentd-roundtrip-")
        cls.src = os.path.join(cls.base, "src")
        make_rich_tree(cls.src)
        cls.want = snapshot(cls.src)

    @classmethod
    def tearDownClass(cls):
        for dirpath, dirnames, _ in os.walk(cls.base):
            for d in dirnames:
                p = os.path.join(dirpath, d)
                if not os.path.islink(p):
                    os.chmod(p, 0o755)
        shutil.rmtree(cls.base, ignore_errors=True)
        super().tearDownClass()

    def target(self, name):
        path = os.path.join(self.base, name)
        os.mkdir(path)
        return path

    def upload(self, path, data, **params):
        s, b = self.daemon.json("PUT", url("/v1/fs/tar", path=path, **params), data)
        self.assertEqual(s, 200, b)
        return b

    def download(self, path, compress="none"):
        status, headers, data = self.daemon.request("GET", url("/v1/fs/tar", path=path,
                                                               compress=compress))
        self.assertEqual(status, 200)
        return headers, data

    def assertSameTree(self, got_root):
        got = snapshot(got_root)
        self.assertEqual(sorted(got), sorted(self.want), "entry names differ")
        for name in sorted(self.want):
            self.assertEqual(got[name], self.want[name], name)

    def test_upload_of_a_gnu_tar_archive_is_exact(self):
        for compression in ("", "gz", "zst"):
            with self.subTest(compression=compression or "none"):
                dst = self.target("up-" + (compression or "plain"))
                answer = self.upload(dst, tar_of_dir(self.src, compression))
                self.assertEqual(answer["entries"], len(self.want) + 1)  # and "./"
                files = {n: d for n, d in self.want.items() if d[0] == "file"}
                sizes = sum(os.lstat(os.path.join(self.src, n)).st_size for n in files
                            if files[n][-1][0] == n)  # first name of each inode
                self.assertEqual(answer["bytes"], sizes)
                self.assertSameTree(dst)

    def test_download_then_upload_is_exact(self):
        dst = self.target("mid")
        self.upload(dst, tar_of_dir(self.src))
        for compress in ("none", "gzip", "zstd"):
            with self.subTest(compress=compress):
                headers, data = self.download(dst, compress)
                want_type = {"none": "application/x-tar", "gzip": "application/gzip",
                             "zstd": "application/zstd"}[compress]
                self.assertEqual(headers["content-type"], want_type)
                again = self.target("again-" + compress)
                self.upload(again, data)
                self.assertSameTree(again)

    def test_download_extracts_exactly_with_gnu_tar(self):
        dst = self.target("for-gnu")
        self.upload(dst, tar_of_dir(self.src, "gz"))
        _, data = self.download(dst, "gzip")
        out = self.target("gnu-extracted")
        subprocess.run(["tar", "-x", "-z", "-p", "-C", out], input=data, check=True,
                       stderr=subprocess.DEVNULL)
        self.assertSameTree(out)

    def test_download_names_are_relative_and_directories_come_first(self):
        dst = self.target("order")
        self.upload(dst, tar_of_dir(self.src))
        _, data = self.download(dst)
        with tarfile.open(fileobj=io.BytesIO(data), encoding="utf-8",
                          errors="surrogateescape") as t:
            names = [m.name for m in t.getmembers()]
            links = [m for m in t.getmembers() if m.islnk()]
        self.assertFalse([n for n in names if n.startswith("/") or n.startswith("./")])
        seen = set()
        for n in names:
            parent = os.path.dirname(n)
            self.assertTrue(parent == "" or parent in seen, n)
            seen.add(n)
        # One inode with three names: one carries the data, two link to it.
        self.assertEqual(len([m for m in links if "main.c" in m.linkname]), 2)

    def test_upload_merges_into_an_existing_tree(self):
        dst = self.target("merge")
        os.makedirs(os.path.join(dst, "src"))
        with open(os.path.join(dst, "src", "local.txt"), "w") as f:
            f.write("mine")
        with open(os.path.join(dst, "README.md"), "w") as f:
            f.write("old readme")
        os.symlink("/tmp", os.path.join(dst, "bin"))  # replaced, never followed
        self.upload(dst, tar_of_dir(self.src))
        with open(os.path.join(dst, "src", "local.txt")) as f:
            self.assertEqual(f.read(), "mine")
        with open(os.path.join(dst, "README.md")) as f:
            self.assertEqual(f.read(), "# project\n")
        self.assertTrue(os.path.isdir(os.path.join(dst, "bin")))
        self.assertFalse(os.path.islink(os.path.join(dst, "bin")))
        self.assertFalse(os.path.exists("/tmp/run.sh"))

    def test_parents_creates_the_target(self):
        dst = os.path.join(self.base, "made", "by", "parents")
        s, b = self.daemon.json("PUT", url("/v1/fs/tar", path=dst), tar_of_dir(self.src))
        self.assertError(s, b, 404, "not_found")
        self.upload(dst, tar_of_dir(self.src), parents="1")
        self.assertSameTree(dst)

    def test_setid_bits_are_kept_only_when_asked_and_root(self):
        if os.geteuid() != 0:
            self.skipTest("needs root")
        archive = tar_bytes([(member("suid", mode=0o4755), b"x"),
                             (member("sgid", mode=0o2755), b"y"),
                             (member("dir", tarfile.DIRTYPE, mode=0o2775), None)])
        plain = self.target("setid-plain")
        self.upload(plain, archive)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(plain, "suid")).st_mode), 0o755)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(plain, "sgid")).st_mode), 0o755)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(plain, "dir")).st_mode), 0o2775)
        kept = self.target("setid-kept")
        self.upload(kept, archive, setid="1")
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(kept, "suid")).st_mode), 0o4755)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(kept, "sgid")).st_mode), 0o2755)

    def test_upload_with_an_owner(self):
        if os.geteuid() != 0:
            self.skipTest("needs root")
        dst = self.target("owned")
        self.upload(dst, tar_of_dir(self.src), user="2345", group="3456")
        for dirpath, dirnames, filenames in os.walk(dst):
            for name in dirnames + filenames:
                st = os.lstat(os.path.join(dirpath, name))
                self.assertEqual((st.st_uid, st.st_gid), (2345, 3456), name)

    def test_duplicate_members_the_last_wins(self):
        archive = tar_bytes([(member("x"), b"first"), (member("x"), b"second"),
                             (member("d", tarfile.DIRTYPE), None), (member("d/f"), b"in d"),
                             (member("d", tarfile.SYMTYPE, linkname="x"), None)])
        dst = self.target("dups")
        self.upload(dst, archive)
        with open(os.path.join(dst, "x"), "rb") as f:
            self.assertEqual(f.read(), b"second")
        self.assertEqual(os.readlink(os.path.join(dst, "d")), "x")

    def test_an_empty_archive_extracts_nothing(self):
        dst = self.target("empty-archive")
        answer = self.upload(dst, tar_bytes([]))
        self.assertEqual(answer, {"entries": 0, "bytes": 0})
        self.assertEqual(os.listdir(dst), [])


if __name__ == "__main__":
    unittest.main()
