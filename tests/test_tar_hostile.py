"""Hostile archives, each built in memory at test time and named after its attack.
Every one is refused, and nothing is written inside or outside the target."""

import gzip
import io
import os
import shutil
import tarfile
import tempfile
import unittest

from lib.agentd_test import DaemonTestCase, error_code
from lib.fs_helpers import listing, member, tar_bytes, url

MiB = 1 << 20


class HostileArchiveTest(DaemonTestCase):
    # Small caps so the bombs stay small; the 100,000-member test below uses
    # the default member cap.
    daemon_flags = ("--tar-max-entry-bytes", str(16 * MiB),
                    "--tar-max-total-bytes", str(24 * MiB))

    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="agentd-hostile-")
        self.target = os.path.join(self.base, "target")
        self.outside = os.path.join(self.base, "outside")
        os.makedirs(os.path.join(self.target, "existing"))
        with open(os.path.join(self.target, "existing", "file"), "w") as f:
            f.write("before")
        os.makedirs(self.outside)
        with open(os.path.join(self.outside, "secret"), "w") as f:
            f.write("secret")
        self.before_inside = listing(self.target)
        self.before_outside = listing(self.outside)

    def tearDown(self):
        shutil.rmtree(self.base, ignore_errors=True)

    def upload(self, data):
        return self.daemon.json("PUT", url("/v1/fs/tar", path=self.target), data)

    def assertRefused(self, data, status, code, member_name=None):
        s, b = self.upload(data)
        self.assertEqual((s, error_code(b)), (status, code), b)
        if member_name is not None:
            self.assertEqual(b["error"]["member"], member_name, b)
        self.assertEqual(listing(self.target), self.before_inside, "partial files inside")
        self.assertEqual(listing(self.outside), self.before_outside, "files written outside")
        with open(os.path.join(self.target, "existing", "file")) as f:
            self.assertEqual(f.read(), "before")
        return b

    def test_absolute_member_name(self):
        evil = os.path.join(self.outside, "pwned")
        self.assertRefused(tar_bytes([(member(evil), b"x")]), 400, "unsafe_path", evil)

    def test_dotdot_member_name(self):
        for name in ["../outside/pwned", "a/../../outside/pwned", "a/b/../c", ".."]:
            with self.subTest(name=name):
                self.assertRefused(tar_bytes([(member(name), b"x")]), 400, "unsafe_path", name)

    def test_write_through_a_relative_symlink_that_leaves_the_target(self):
        archive = tar_bytes([(member("link", tarfile.SYMTYPE, linkname="../outside"), None),
                             (member("link/pwned"), b"x")])
        b = self.assertRefused(archive, 400, "unsafe_path", "link/pwned")
        self.assertIn("symlink", b["error"]["reason"])

    def test_write_through_an_absolute_symlink(self):
        archive = tar_bytes([(member("link", tarfile.SYMTYPE, linkname=self.outside), None),
                             (member("link/pwned"), b"x")])
        self.assertRefused(archive, 400, "unsafe_path", "link/pwned")

    def test_write_through_a_symlink_that_stays_inside(self):
        archive = tar_bytes([(member("real", tarfile.DIRTYPE), None),
                             (member("alias", tarfile.SYMTYPE, linkname="real"), None),
                             (member("alias/file"), b"x")])
        self.assertRefused(archive, 400, "unsafe_path", "alias/file")

    def test_directory_through_a_symlink(self):
        archive = tar_bytes([(member("link", tarfile.SYMTYPE, linkname="../outside"), None),
                             (member("link/newdir", tarfile.DIRTYPE), None)])
        self.assertRefused(archive, 400, "unsafe_path", "link/newdir/")  # as named in the archive

    def test_symlink_chain_then_write(self):
        archive = tar_bytes([(member("a", tarfile.SYMTYPE, linkname="b"), None),
                             (member("b", tarfile.SYMTYPE, linkname="../outside"), None),
                             (member("a/pwned"), b"x")])
        self.assertRefused(archive, 400, "unsafe_path", "a/pwned")

    def test_hard_link_to_an_absolute_path(self):
        archive = tar_bytes([(member("h", tarfile.LNKTYPE,
                                     linkname=os.path.join(self.outside, "secret")), None)])
        self.assertRefused(archive, 400, "unsafe_path", "h")

    def test_hard_link_climbing_out(self):
        archive = tar_bytes([(member("h", tarfile.LNKTYPE, linkname="../outside/secret"), None)])
        self.assertRefused(archive, 400, "unsafe_path", "h")

    def test_hard_link_to_an_existing_file_not_in_the_archive(self):
        archive = tar_bytes([(member("h", tarfile.LNKTYPE, linkname="existing/file"), None)])
        self.assertRefused(archive, 400, "unsafe_path", "h")

    def test_hard_link_through_an_archive_symlink(self):
        archive = tar_bytes([(member("s", tarfile.SYMTYPE, linkname=self.outside), None),
                             (member("h", tarfile.LNKTYPE, linkname="s/secret"), None)])
        self.assertRefused(archive, 400, "unsafe_path", "h")

    def test_device_nodes_and_fifos(self):
        for kind, reason in [(tarfile.CHRTYPE, "device"), (tarfile.BLKTYPE, "device"),
                             (tarfile.FIFOTYPE, "FIFO")]:
            with self.subTest(kind=kind):
                info = member("node", kind)
                info.devmajor, info.devminor = 1, 3
                b = self.assertRefused(tar_bytes([(info, None)]), 400, "unsafe_path", "node")
                self.assertIn(reason, b["error"]["reason"])

    def test_symlink_replacing_the_target_itself(self):
        archive = tar_bytes([(member(".", tarfile.SYMTYPE, linkname=self.outside), None)])
        self.assertRefused(archive, 400, "unsafe_path", ".")

    def test_valid_members_before_an_attack_are_not_kept(self):
        archive = tar_bytes([(member("good1"), b"fine"), (member("dir", tarfile.DIRTYPE), None),
                             (member("dir/good2"), b"fine"),
                             (member("existing/file"), b"overwritten?"),
                             (member("../outside/pwned"), b"x")])
        self.assertRefused(archive, 400, "unsafe_path", "../outside/pwned")

    def test_gzip_bomb_is_refused_at_its_header(self):
        # 64 MiB of zeros, about 64 KiB compressed; the member cap is 16 MiB.
        bomb = gzip.compress(tar_bytes([(member("zeros"), bytes(64 * MiB))]), 9)
        self.assertLess(len(bomb), 200_000)
        b = self.assertRefused(bomb, 413, "archive_too_large", "zeros")
        self.assertEqual((b["error"]["cap"], b["error"]["limit"]), ("entry_bytes", 16 * MiB))

    def test_huge_declared_size_is_refused_before_any_data(self):
        info = member("huge")
        info.size = 100 << 30
        buf = io.BytesIO()
        buf.write(info.tobuf(tarfile.PAX_FORMAT))  # a header, and no data at all
        b = self.assertRefused(gzip.compress(buf.getvalue()), 413, "archive_too_large", "huge")
        self.assertEqual(b["error"]["value"], 100 << 30)

    def test_total_size_cap(self):
        members = [(member("part%d" % i), bytes(10 * MiB)) for i in range(3)]
        b = self.assertRefused(gzip.compress(tar_bytes(members), 1), 413, "archive_too_large",
                               "part2")
        self.assertEqual((b["error"]["cap"], b["error"]["limit"]), ("total_bytes", 24 * MiB))

    def test_truncated_archive(self):
        whole = tar_bytes([(member("a"), os.urandom(100_000)), (member("b"), b"x")])
        b = self.assertRefused(whole[:50_000], 400, "invalid_archive")
        self.assertIn("reason", b["error"])

    def test_truncated_gzip_stream(self):
        whole = gzip.compress(tar_bytes([(member("a"), os.urandom(300_000))]))
        self.assertRefused(whole[:len(whole) // 2], 400, "invalid_archive")

    def test_garbage_is_not_an_archive(self):
        self.assertRefused(os.urandom(5000), 400, "invalid_archive")
        self.assertRefused(b"", 400, "invalid_archive")

    def test_existing_symlink_in_the_target_is_replaced_not_followed(self):
        os.symlink(self.outside, os.path.join(self.target, "trap"))
        archive = tar_bytes([(member("trap/pwned"), b"x")])
        s, b = self.upload(archive)
        self.assertEqual(s, 200, b)
        self.assertEqual(listing(self.outside), self.before_outside)
        self.assertTrue(os.path.isdir(os.path.join(self.target, "trap")))
        self.assertFalse(os.path.islink(os.path.join(self.target, "trap")))

    def test_daemon_still_serves_after_every_refusal(self):
        self.upload(os.urandom(100))
        s, b = self.upload(tar_bytes([(member("ok"), b"fine")]))
        self.assertEqual((s, b), (200, {"entries": 1, "bytes": 4}))


    def test_a_member_deeper_than_256_levels_is_refused_at_its_header(self):
        deep = "/".join(["d"] * 256) + "/f"
        b = self.assertRefused(tar_bytes([(member(deep), b"x")]), 413, "archive_too_large", deep)
        self.assertEqual((b["error"]["cap"], b["error"]["limit"], b["error"]["value"]),
                         ("depth", 256, 257))

    def test_a_member_256_levels_deep_lands(self):
        deep = "/".join(["d"] * 255) + "/f"
        s, b = self.upload(tar_bytes([(member(deep), b"x")]))
        self.assertEqual((s, b), (200, {"entries": 1, "bytes": 1}), b)


class MemberCountCapTest(DaemonTestCase):
    def test_a_100000_member_archive_is_refused_by_the_member_cap(self):
        base = tempfile.mkdtemp(prefix="agentd-many-")
        try:
            target = os.path.join(base, "t")
            os.mkdir(target)
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
                info = tarfile.TarInfo("f")
                for i in range(100_000):
                    info.name = "d%d/f%d" % (i // 1000, i)
                    t.addfile(info)
            data = gzip.compress(buf.getvalue(), 1)
            # Bound by the answer, not a clock: writing and then removing
            # 65,536 staged members took over 30 s on a loaded 2-core machine.
            s, b = self.daemon.json("PUT", url("/v1/fs/tar", path=target), data, timeout=600)
            self.assertEqual((s, error_code(b)), (413, "archive_too_large"), b)
            self.assertEqual((b["error"]["cap"], b["error"]["limit"]), ("entries", 65536))
            self.assertEqual(b["error"]["value"], 65537)
            self.assertEqual(os.listdir(target), [])
        finally:
            shutil.rmtree(base)


if __name__ == "__main__":
    unittest.main()
