"""Metadata routes: stat, list, mkdir, rename, delete, realpath."""

import hashlib
import os
import shutil
import stat
import tempfile
import unittest

from lib.agentd_test import DaemonTestCase
from lib.fs_helpers import url


class MetaTestCase(DaemonTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentd-meta-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def touch(self, rel, data=b"", mode=0o644):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        os.chmod(p, mode)
        return p


class StatTest(MetaTestCase):
    def test_stat_describes_a_file(self):
        p = self.touch("f.txt", b"hello", 0o640)
        os.utime(p, ns=(1_700_000_000_123_000_000,) * 2)
        s, b = self.daemon.json("GET", url("/v1/fs/stat", path=p))
        self.assertEqual(s, 200)
        st = os.stat(p)
        self.assertEqual(b, {"path": p, "type": "file", "size": 5, "mode": "0640",
                             "uid": st.st_uid, "gid": st.st_gid,
                             "mtime": "2023-11-14T22:13:20.123Z", "target": None,
                             "etag": '"sha256:' + hashlib.sha256(b"hello").hexdigest() + '"'})

    def test_stat_does_not_follow_symlinks_unless_asked(self):
        self.touch("real", b"12345")
        os.symlink("real", self.path("link"))
        s, b = self.daemon.json("GET", url("/v1/fs/stat", path=self.path("link")))
        self.assertEqual((s, b["type"], b["target"]), (200, "symlink", "real"))
        s, b = self.daemon.json("GET", url("/v1/fs/stat", path=self.path("link"), follow="1"))
        self.assertEqual((s, b["type"], b["size"], b["target"]), (200, "file", 5, None))
        os.symlink("nowhere", self.path("dangling"))
        s, b = self.daemon.json("GET", url("/v1/fs/stat", path=self.path("dangling")))
        self.assertEqual((s, b["target"]), (200, "nowhere"))
        s, b = self.daemon.json("GET", url("/v1/fs/stat", path=self.path("dangling"), follow="1"))
        self.assertError(s, b, 404, "not_found")

    def test_stat_types_and_special_bits(self):
        os.mkdir(self.path("d"))
        os.chmod(self.path("d"), 0o2775)
        os.mkfifo(self.path("fifo"))
        s, b = self.daemon.json("GET", url("/v1/fs/stat", path=self.path("d")))
        self.assertEqual((b["type"], b["mode"]), ("dir", "2775"))
        s, b = self.daemon.json("GET", url("/v1/fs/stat", path=self.path("fifo")))
        self.assertEqual(b["type"], "other")

    def test_stat_missing_is_404_with_path(self):
        s, b = self.daemon.json("GET", url("/v1/fs/stat", path=self.path("none")))
        self.assertError(s, b, 404, "not_found")
        self.assertEqual(b["error"]["path"], self.path("none"))

    def test_stat_through_a_file_is_not_a_directory(self):
        self.touch("file")
        s, b = self.daemon.json("GET", url("/v1/fs/stat", path=self.path("file", "x")))
        self.assertError(s, b, 400, "not_a_directory")


class ListTest(MetaTestCase):
    def test_list_is_sorted_and_describes_without_following(self):
        self.touch("b.txt", b"bb")
        self.touch("a.txt", b"a")
        os.mkdir(self.path("c"))
        os.symlink("/etc", self.path("d"))
        s, b = self.daemon.json("GET", url("/v1/fs/list", path=self.dir))
        self.assertEqual(s, 200)
        self.assertEqual([e["path"] for e in b["entries"]],
                         [self.path(n) for n in ["a.txt", "b.txt", "c", "d"]])
        self.assertEqual([e["type"] for e in b["entries"]], ["file", "file", "dir", "symlink"])
        self.assertEqual(b["entries"][3]["target"], "/etc")
        self.assertEqual(b["entries"][1]["size"], 2)

    def test_list_of_a_file_is_not_a_directory(self):
        p = self.touch("f")
        s, b = self.daemon.json("GET", url("/v1/fs/list", path=p))
        self.assertError(s, b, 400, "not_a_directory")
        self.assertEqual(b["error"]["path"], p)

    def test_list_of_missing_is_404(self):
        s, b = self.daemon.json("GET", url("/v1/fs/list", path=self.path("missing")))
        self.assertError(s, b, 404, "not_found")

    def test_list_of_an_empty_directory(self):
        s, b = self.daemon.json("GET", url("/v1/fs/list", path=self.dir))
        self.assertEqual((s, b), (200, {"entries": []}))


class MkdirTest(MetaTestCase):
    def test_mkdir_with_exact_mode(self):
        for mode in ["0700", "0755", "2770", "1777"]:
            p = self.path("d" + mode)
            s, b = self.daemon.json("POST", "/v1/fs/mkdir", {"path": p, "mode": mode})
            self.assertEqual((s, b["type"], b["mode"]), (200, "dir", mode), b)
            self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), int(mode, 8))

    def test_mkdir_default_mode_is_0755(self):
        s, b = self.daemon.json("POST", "/v1/fs/mkdir", {"path": self.path("plain")})
        self.assertEqual((s, b["mode"]), (200, "0755"))

    def test_mkdir_existing_is_already_exists_unless_parents(self):
        os.mkdir(self.path("x"))
        s, b = self.daemon.json("POST", "/v1/fs/mkdir", {"path": self.path("x")})
        self.assertError(s, b, 409, "already_exists")
        self.assertEqual(b["error"]["path"], self.path("x"))
        s, b = self.daemon.json("POST", "/v1/fs/mkdir", {"path": self.path("x"), "parents": True})
        self.assertEqual(s, 200)
        self.touch("file")
        s, b = self.daemon.json("POST", "/v1/fs/mkdir", {"path": self.path("file"), "parents": True})
        self.assertError(s, b, 409, "already_exists")

    def test_mkdir_parents(self):
        p = self.path("a", "b", "c")
        s, b = self.daemon.json("POST", "/v1/fs/mkdir", {"path": p})
        self.assertError(s, b, 404, "not_found")
        s, b = self.daemon.json("POST", "/v1/fs/mkdir", {"path": p, "parents": True, "mode": "0700"})
        self.assertEqual(s, 200)
        self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), 0o700)
        self.assertEqual(stat.S_IMODE(os.stat(self.path("a")).st_mode), 0o755)

    def test_mkdir_refuses_unknown_fields_and_integer_modes(self):
        s, b = self.daemon.json("POST", "/v1/fs/mkdir", {"path": self.path("y"), "parent": True})
        self.assertError(s, b, 400, "invalid_request")
        self.assertEqual(b["error"]["field"], "parent")
        s, b = self.daemon.json("POST", "/v1/fs/mkdir", {"path": self.path("y"), "mode": 493})
        self.assertError(s, b, 400, "invalid_request")
        self.assertFalse(os.path.exists(self.path("y")))

    def test_mkdir_with_owner_when_root(self):
        if os.geteuid() != 0:
            self.skipTest("needs root")
        s, b = self.daemon.json("POST", "/v1/fs/mkdir",
                                {"path": self.path("owned"), "user": "1234", "group": "99"})
        self.assertEqual((s, b["uid"], b["gid"]), (200, 1234, 99), b)


class RenameTest(MetaTestCase):
    def test_rename_moves_and_replaces(self):
        self.touch("a", b"A")
        self.touch("b", b"B")
        s, b = self.daemon.json("POST", "/v1/fs/rename", {"from": self.path("a"),
                                                          "to": self.path("b")})
        self.assertEqual((s, b["path"], b["size"]), (200, self.path("b"), 1))
        self.assertFalse(os.path.exists(self.path("a")))
        with open(self.path("b"), "rb") as f:
            self.assertEqual(f.read(), b"A")

    def test_rename_without_overwrite_refuses_an_existing_target(self):
        self.touch("a", b"A")
        self.touch("b", b"B")
        s, b = self.daemon.json("POST", "/v1/fs/rename", {"from": self.path("a"),
                                                          "to": self.path("b"),
                                                          "overwrite": False})
        self.assertError(s, b, 409, "already_exists")
        self.assertEqual(b["error"]["path"], self.path("b"))

    def test_rename_missing_source_is_404_naming_it(self):
        s, b = self.daemon.json("POST", "/v1/fs/rename", {"from": self.path("none"),
                                                          "to": self.path("b")})
        self.assertError(s, b, 404, "not_found")
        self.assertEqual(b["error"]["path"], self.path("none"))

    def test_rename_onto_a_non_empty_directory(self):
        os.mkdir(self.path("src"))
        self.touch("dst/x")
        s, b = self.daemon.json("POST", "/v1/fs/rename", {"from": self.path("src"),
                                                          "to": self.path("dst")})
        self.assertError(s, b, 409, "directory_not_empty")

    def test_rename_a_symlink_moves_the_link(self):
        os.symlink("target-text", self.path("l"))
        s, b = self.daemon.json("POST", "/v1/fs/rename", {"from": self.path("l"),
                                                          "to": self.path("m")})
        self.assertEqual((s, b["type"], b["target"]), (200, "symlink", "target-text"))

    def test_rename_across_file_systems_is_cross_device(self):
        if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(self.dir).st_dev:
            self.skipTest("needs two file systems")
        other = tempfile.mkdtemp(dir="/dev/shm")
        try:
            self.touch("a")
            s, b = self.daemon.json("POST", "/v1/fs/rename", {"from": self.path("a"),
                                                              "to": os.path.join(other, "a")})
            self.assertError(s, b, 409, "cross_device")
        finally:
            shutil.rmtree(other)


class DeleteTest(MetaTestCase):
    def delete(self, path, **params):
        return self.daemon.json("DELETE", url("/v1/fs", path=path, **params))

    def test_delete_file_and_empty_dir(self):
        self.touch("f")
        os.mkdir(self.path("d"))
        self.assertEqual(self.delete(self.path("f")), (200, {"path": self.path("f"), "removed": 1}))
        self.assertEqual(self.delete(self.path("d"))[0], 200)
        self.assertEqual(os.listdir(self.dir), [])

    def test_non_recursive_delete_of_a_non_empty_dir_is_refused(self):
        self.touch("d/x")
        s, b = self.delete(self.path("d"))
        self.assertError(s, b, 409, "directory_not_empty")
        self.assertEqual(b["error"]["path"], self.path("d"))
        self.assertTrue(os.path.exists(self.path("d", "x")))

    def test_recursive_delete_never_follows_symlinks_out_of_the_tree(self):
        outside = tempfile.mkdtemp(prefix="agentd-outside-")
        try:
            with open(os.path.join(outside, "precious"), "w") as f:
                f.write("keep")
            self.touch("tree/a/b/file")
            os.symlink(outside, self.path("tree", "a", "link-to-outside"))
            os.symlink(os.path.join(outside, "precious"), self.path("tree", "file-link"))
            s, b = self.delete(self.path("tree"), recursive="1")
            self.assertEqual((s, b["removed"]), (200, 6), b)  # tree, a, b, file, 2 links
            self.assertFalse(os.path.exists(self.path("tree")))
            self.assertEqual(os.listdir(outside), ["precious"])
        finally:
            shutil.rmtree(outside)

    def test_delete_of_a_symlink_removes_the_link_only(self):
        self.touch("target", b"t")
        os.symlink("target", self.path("l"))
        self.assertEqual(self.delete(self.path("l"), recursive="1")[0], 200)
        self.assertTrue(os.path.exists(self.path("target")))

    def test_delete_missing_is_404(self):
        s, b = self.delete(self.path("none"))
        self.assertError(s, b, 404, "not_found")

    def test_delete_of_the_root_is_refused(self):
        s, b = self.delete("/", recursive="1")
        self.assertError(s, b, 400, "unsafe_path")


class RealpathTest(MetaTestCase):
    def test_realpath_resolves_symlinks_and_dots(self):
        self.touch("real/file")
        os.symlink("real", self.path("alias"))
        s, b = self.daemon.json("GET", url("/v1/fs/realpath",
                                           path=self.path("alias") + "/./../alias/file"))
        self.assertEqual((s, b), (200, {"path": os.path.realpath(self.path("real", "file"))}))

    def test_realpath_of_missing_is_404(self):
        s, b = self.daemon.json("GET", url("/v1/fs/realpath", path=self.path("gone")))
        self.assertError(s, b, 404, "not_found")


if __name__ == "__main__":
    unittest.main()
