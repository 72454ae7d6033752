"""The Python client's files and trees against the real daemon, and confined
extraction against a fake daemon serving hostile archives."""

import gzip
import hashlib
import http.server
import io
import os
import shutil
import socketserver
import stat
import tarfile
import tempfile
import threading
import time
import unittest
from unittest import mock

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib import fs_helpers
from lib.agentd_test import Daemon

import agentd_client as ac


class PyClientFilesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.c = ac.Client("http://127.0.0.1:%d" % cls.daemon.port, token="test-token")

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.daemon.close()

    def setUp(self):
        self.remote = tempfile.mkdtemp(prefix="pyclient-remote-")
        self.local = tempfile.mkdtemp(prefix="pyclient-local-")

    def tearDown(self):
        shutil.rmtree(self.remote, ignore_errors=True)
        shutil.rmtree(self.local, ignore_errors=True)

    # -- single files ---------------------------------------------------------

    def test_write_then_read_whole_lines_and_byte_ranges(self):
        p = os.path.join(self.remote, "a.txt")
        st = self.c.write_file(p, b"one\ntwo\r\nthree\nfour", mode=0o640)
        self.assertEqual((st.type, st.size, st.mode), ("file", 19, 0o640))
        self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), 0o640)
        self.assertEqual(self.c.read_file(p), b"one\ntwo\r\nthree\nfour")
        self.assertEqual(self.c.read_file(p, start_line=2, end_line=3), b"two\r\nthree\n")
        self.assertEqual(self.c.read_file(p, start_line=3), b"three\nfour")
        self.assertEqual(self.c.read_file(p, start_line=2, end_line=99), b"two\r\nthree\nfour")
        self.assertEqual(self.c.read_file(p, start_line=9), b"")
        self.assertEqual(self.c.read_file(p, byte_range=(4, 6)), b"two")
        self.assertEqual(self.c.read_file(p, byte_range=(15, None)), b"four")
        with self.assertRaises(ac.InvalidRange):
            self.c.read_file(p, start_line=3, end_line=2)
        with self.assertRaises(ac.RangeNotSatisfiable) as cm:
            self.c.read_file(p, byte_range=(100, None))
        self.assertEqual((cm.exception.status, cm.exception.details["size"]), (416, 19))

    def test_modes_are_exact_and_text_is_utf8(self):
        p = os.path.join(self.remote, "run.sh")
        self.assertEqual(self.c.write_file(p, "#!/bin/sh\necho é\n", mode="4755").mode, 0o4755)
        with open(p, "rb") as f:
            self.assertEqual(f.read(), "#!/bin/sh\necho é\n".encode())
        self.assertEqual(self.c.write_file(p, b"x", mode=0o600).mode, 0o600)

    def test_streamed_write_from_a_file_object_and_read_into_a_sink(self):
        data = os.urandom(3 << 20)
        p = os.path.join(self.remote, "sub", "big.bin")
        st = self.c.write_file(p, io.BytesIO(data), parents=True)
        self.assertEqual(st.size, len(data))
        sink = io.BytesIO()
        self.assertEqual(self.c.read_file_to(p, sink), len(data))
        self.assertEqual(sink.getvalue(), data)
        parts = []
        self.c.read_file_to(p, parts.append, byte_range=(10, 19))
        self.assertEqual(b"".join(parts), data[10:20])

    def test_a_read_into_a_descriptor_writes_the_file_byte_identical(self):
        # 0, 1, and a few MiB that is not a multiple of the 256 KiB buffer.
        for size in (0, 1, (3 << 20) + 12345):
            with self.subTest(size=size):
                data = os.urandom(size)
                p = os.path.join(self.remote, "src-%d" % size)
                with open(p, "wb") as f:
                    f.write(data)
                local = os.path.join(self.local, "dst-%d" % size)
                fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                heard = []
                try:
                    self.assertEqual(self.c.read_file_to_fd(p, fd, progress=heard.append), size)
                finally:
                    os.close(fd)
                with open(local, "rb") as f:
                    self.assertEqual(f.read(), data)
                self.assertEqual(sum(heard), size)
                self.assertTrue(all(0 < n <= 256 << 10 for n in heard), heard[:5])

    def test_a_read_into_an_append_descriptor_keeps_what_was_there(self):
        data = os.urandom((2 << 20) + 7)
        p = os.path.join(self.remote, "src")
        with open(p, "wb") as f:
            f.write(data)
        local = os.path.join(self.local, "log")
        with open(local, "wb") as f:
            f.write(b"prefix\n")
        fd = os.open(local, os.O_WRONLY | os.O_APPEND)
        try:
            self.assertEqual(self.c.read_file_to_fd(p, fd), len(data))
            self.assertEqual(self.c.read_file_to_fd(p, fd, byte_range=(10, 19)), 10)
        finally:
            os.close(fd)
        with open(local, "rb") as f:
            self.assertEqual(f.read(), b"prefix\n" + data + data[10:20])

    def test_a_read_of_a_missing_file_into_a_descriptor_is_not_found_and_writes_nothing(self):
        missing = os.path.join(self.remote, "missing")
        local = os.path.join(self.local, "dst")
        fd = os.open(local, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            with self.assertRaises(ac.NotFound) as cm:
                self.c.read_file_to_fd(missing, fd)
        finally:
            os.close(fd)
        self.assertEqual((cm.exception.status, cm.exception.details["path"]), (404, missing))
        self.assertEqual(os.path.getsize(local), 0)

    def test_a_failing_source_leaves_the_old_file_untouched(self):
        p = os.path.join(self.remote, "keep.txt")
        self.c.write_file(p, b"old")

        def broken():
            yield b"new data"
            raise OSError("disk of the harness failed")
        with self.assertRaises(OSError):
            self.c.write_file(p, broken())
        self.assertEqual(self.c.read_file(p), b"old")

    def test_a_write_from_an_open_file_sends_it_whole_or_leaves_the_old_file(self):
        # 3 MiB of distinct bytes, sent by sendfile with Content-Length.
        data = os.urandom((3 << 20) + 999)
        local = os.path.join(self.local, "src.bin")
        with open(local, "wb") as f:
            f.write(data)
        p = os.path.join(self.remote, "dst.bin")
        with open(local, "rb") as f:
            f.seek(12345)  # sent from offset 0 whatever the file position
            st = self.c.write_file_from_fd(p, f.fileno(), len(data), mode=0o600)
            self.assertEqual((st.size, st.mode), (len(data), 0o600))
            self.assertEqual(st.etag, '"sha256:%s"' % hashlib.sha256(data).hexdigest())
            with open(p, "rb") as out:
                self.assertEqual(out.read(), data)
            # Declared longer than the file: the body is cut short, the old
            # content stays and the error says how far the file went.
            with self.assertRaises(ac.IoError) as cm:
                self.c.write_file_from_fd(p, f.fileno(), len(data) + 4096, etag=False)
            self.assertIn("ended at %d bytes" % len(data), str(cm.exception))
            untagged = self.c.write_file_from_fd(os.path.join(self.remote, "b"), f.fileno(), 10,
                                                 etag=False)
            self.assertIsNone(untagged.etag)
        with open(p, "rb") as out:
            self.assertEqual(out.read(), data)
        self.assertEqual(self.c.read_file(os.path.join(self.remote, "b")), data[:10])
        self.assertEqual([n for n in os.listdir(self.remote) if n.startswith(".agentd-tmp")], [])

    def test_a_large_write_refused_from_its_head_arrives_as_the_daemons_error(self):
        # Bodies over 1 MiB and streamed ones wait for "100 Continue": a
        # refusal the daemon makes from the head alone is not lost to the
        # connection it closes while the body would still be in flight.
        stranger = ac.Client("http://127.0.0.1:%d" % self.daemon.port, token="wrong-token")
        self.addCleanup(stranger.close)
        p = os.path.join(self.remote, "never")
        for body in (b"x" * (16 << 20), io.BytesIO(b"x" * (16 << 20))):
            with self.subTest(body=type(body).__name__):
                with self.assertRaises(ac.Unauthorized) as cm:
                    stranger.write_file(p, body)
                self.assertEqual(cm.exception.status, 401)
        self.assertFalse(os.path.exists(p))

    def test_a_write_beyond_free_space_is_insufficient_storage_with_real_numbers(self):
        if os.geteuid() != 0:
            self.skipTest("mounting a tmpfs needs root")
        with fs_helpers.tmpfs(4 << 20) as fs:
            if fs is None:
                self.skipTest("could not mount a tmpfs")
            p = os.path.join(fs, "big")
            with self.assertRaises(ac.InsufficientStorage) as cm:
                self.c.write_file(p, b"x" * (64 << 20))
            e = cm.exception
            self.assertEqual((e.status, e.details["needed"], e.details["path"]), (507, 64 << 20, p))
            self.assertLessEqual(e.details["available"], 4 << 20)
            with self.assertRaises(ac.InsufficientStorage):
                self.c.write_file(p, io.BytesIO(b"x" * (64 << 20)))
            self.assertEqual(os.listdir(fs), [])
            self.assertEqual(self.c.write_file(p, b"fits").size, 4)

    def test_file_errors_are_typed_and_name_the_path(self):
        missing = os.path.join(self.remote, "missing")
        with self.assertRaises(ac.NotFound) as cm:
            self.c.read_file(missing)
        self.assertEqual((cm.exception.status, cm.exception.details["path"]), (404, missing))
        with self.assertRaises(ac.IsADirectory):
            self.c.read_file(self.remote)
        with self.assertRaises(ac.InvalidRequest):
            self.c.stat("relative/path")
        with self.assertRaises(ac.NotFound):
            self.c.write_file(os.path.join(self.remote, "no", "dir", "f"), b"x")

    def test_metadata_operations(self):
        d = os.path.join(self.remote, "d", "e")
        st = self.c.make_dir(d, mode=0o750, parents=True)
        self.assertEqual((st.type, st.mode), ("dir", 0o750))
        self.assertEqual(self.c.make_dir(d, parents=True).type, "dir")  # idempotent with parents
        with self.assertRaises(ac.AlreadyExists):
            self.c.make_dir(d)
        f = os.path.join(d, "f")
        self.c.write_file(f, b"12345")
        os.symlink("f", os.path.join(d, "link"))
        self.assertEqual(self.c.stat(os.path.join(d, "link")).target, "f")
        self.assertEqual(self.c.stat(os.path.join(d, "link"), follow=True).size, 5)
        self.assertEqual([e.path for e in self.c.list_dir(d)],
                         [os.path.join(d, "f"), os.path.join(d, "link")])
        self.assertEqual(self.c.realpath(os.path.join(d, "link")), os.path.realpath(f))
        g = os.path.join(d, "g")
        self.assertEqual(self.c.rename(f, g).path, g)
        with self.assertRaises(ac.AlreadyExists):
            self.c.write_file(f, b"again")
            self.c.rename(f, g, overwrite=False)
        with self.assertRaises(ac.DirectoryNotEmpty):
            self.c.remove(os.path.join(self.remote, "d"))
        # d, d/e, d/e/f (written again), d/e/g, d/e/link
        self.assertEqual(self.c.remove(os.path.join(self.remote, "d"), recursive=True), 5)
        self.assertFalse(os.path.exists(os.path.join(self.remote, "d")))

    # -- trees ----------------------------------------------------------------

    def make_tree(self, root):
        os.makedirs(os.path.join(root, "src", "pkg"))
        os.makedirs(os.path.join(root, "empty"))
        with open(os.path.join(root, "src", "pkg", "mod.py"), "wb") as f:
            f.write(b"print('hi')\n")
        with open(os.path.join(root, "run.sh"), "wb") as f:
            f.write(b"#!/bin/sh\n")
        os.chmod(os.path.join(root, "run.sh"), 0o751)
        big = os.urandom(1 << 20)
        with open(os.path.join(root, "big.bin"), "wb") as f:
            f.write(big)
        os.link(os.path.join(root, "big.bin"), os.path.join(root, "src", "hard.bin"))
        os.symlink("pkg/mod.py", os.path.join(root, "src", "rel-link"))
        os.symlink("/etc/hostname", os.path.join(root, "abs-link"))
        os.symlink("does/not/exist", os.path.join(root, "dangling"))
        weird = os.fsencode(root) + b"/caf\xe9-\xff.txt"  # not UTF-8
        with open(weird, "wb") as f:
            f.write(b"latin-1 name")
        os.chmod(os.path.join(root, "empty"), 0o700)
        os.utime(os.path.join(root, "run.sh"), ns=(1_600_000_000_123_456_789,) * 2)
        os.utime(os.path.join(root, "src", "pkg"), ns=(1_500_000_000_987_654_321,) * 2)

    def describe(self, root):
        out = {}
        rootb = os.fsencode(root)
        for dirpath, dirnames, filenames in os.walk(rootb):
            for name in dirnames + filenames:
                p = os.path.join(dirpath, name)
                rel = os.path.relpath(p, rootb)
                st = os.lstat(p)
                kind = stat.S_IFMT(st.st_mode)
                entry = [kind, stat.S_IMODE(st.st_mode)]
                if stat.S_ISLNK(st.st_mode):
                    entry.append(os.readlink(p))
                else:
                    entry.append(st.st_mtime_ns)
                if stat.S_ISREG(st.st_mode):
                    with open(p, "rb") as f:
                        entry.append(f.read())
                    entry.append(st.st_nlink)
                out[rel] = entry
        return out

    def test_upload_and_download_keep_everything(self):
        for compress in ("none", "gzip"):
            with self.subTest(compress=compress):
                src = os.path.join(self.local, "src-" + compress)
                back = os.path.join(self.local, "back-" + compress)
                remote = os.path.join(self.remote, compress)
                self.make_tree(src)
                up = self.c.upload_dir(src, remote, compress=compress, parents=True)
                self.assertEqual(up.entries, 11)
                self.assertEqual(up.bytes, (1 << 20) + 12 + 10 + 12)
                self.assertEqual(self.describe(remote), self.describe(src))
                down = self.c.download_dir(remote, back, compress=compress)
                self.assertEqual(down.entries, 11)
                self.assertEqual(self.describe(back), self.describe(src))
                self.assertEqual(os.stat(os.path.join(back, "big.bin")).st_ino,
                                 os.stat(os.path.join(back, "src", "hard.bin")).st_ino)
                self.assertEqual([n for n in os.listdir(back) if n.startswith(".agentd")], [])

    def test_download_merges_into_an_existing_directory_and_replaces_symlinks(self):
        os.makedirs(os.path.join(self.remote, "a"))
        with open(os.path.join(self.remote, "a", "f"), "w") as f:
            f.write("from guest")
        outside = os.path.join(self.local, "outside")
        os.makedirs(outside)
        dest = os.path.join(self.local, "dest")
        os.makedirs(os.path.join(dest, "a"))
        with open(os.path.join(dest, "a", "kept"), "w") as f:
            f.write("kept")
        os.symlink(os.path.join(outside, "victim"), os.path.join(dest, "a", "f"))
        self.c.download_dir(self.remote, dest)
        self.assertFalse(os.path.islink(os.path.join(dest, "a", "f")))
        with open(os.path.join(dest, "a", "f")) as f:
            self.assertEqual(f.read(), "from guest")
        self.assertTrue(os.path.exists(os.path.join(dest, "a", "kept")))
        self.assertEqual(os.listdir(outside), [])

    def test_an_upload_whose_local_walk_fails_leaves_nothing_behind(self):
        src = os.path.join(self.local, "src")
        os.makedirs(src)
        for name in ("a-big", "b-fails"):
            with open(os.path.join(src, name), "wb") as f:
                f.write(os.urandom(2 << 20))
        original = tarfile.TarFile.addfile

        def addfile(tf, info, fileobj=None):
            if info.name == "b-fails":
                raise OSError(5, "Input/output error", os.path.join(src, info.name))
            return original(tf, info, fileobj)
        target = os.path.join(self.remote, "up")
        with mock.patch.object(tarfile.TarFile, "addfile", addfile):
            with self.assertRaises(ac.IoError) as cm:
                self.c.upload_dir(src, target, parents=True)
        self.assertEqual(cm.exception.details["path"], os.path.join(src, "b-fails"))
        # The daemon notices the cut request and removes its staging and the
        # directory parents=1 created (asynchronously, right after the cut).
        deadline = time.monotonic() + 10
        while os.path.exists(target) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(os.path.exists(target))
        self.assertEqual(self.c.run(["true"]).exit_code, 0)  # and the client still works

    def test_an_upload_with_a_fifo_is_refused_by_the_daemon(self):
        src = os.path.join(self.local, "src")
        os.makedirs(src)
        os.mkfifo(os.path.join(src, "fifo"))
        with self.assertRaises(ac.UnsafePath) as cm:
            self.c.upload_dir(src, os.path.join(self.remote, "up"), parents=True)
        self.assertEqual(cm.exception.details["member"], "fifo")

    def test_download_of_a_missing_directory_is_not_found(self):
        with self.assertRaises(ac.NotFound):
            self.c.download_dir(os.path.join(self.remote, "nope"), self.local)
        with self.assertRaises(ac.InvalidRequest):
            self.c.download_dir(self.remote, self.local, compress="zstd")


# -- hostile archives from a fake daemon ---------------------------------------

def tar_bytes(members, end=True):
    """members: list of (TarInfo, data or None)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    raw = buf.getvalue()
    if not end:
        raw = raw.rstrip(b"\0")
    return raw


def ti(name, kind=tarfile.REGTYPE, linkname="", mode=0o644):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = mode
    info.mtime = 1_600_000_000
    return info


class _FakeDaemon(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # the client closing a connection mid-answer is what these tests do


class CutReadTest(unittest.TestCase):
    """A file body cut short is a TransportError, never a short count."""

    def test_a_cut_body_read_into_a_descriptor_raises_transport_error(self):
        body = os.urandom(600 << 10)  # more than one 256 KiB read

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                if self.path == "/v1/health":  # the client's version check on first use
                    doc = b'{"status": "ok", "version": "0.1.0", "protocol": 1}'
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(doc)))
                    self.end_headers()
                    self.wfile.write(doc)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body) + 1000))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()
                self.close_connection = True

        server = _FakeDaemon(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        c = ac.Client("http://127.0.0.1:%d" % server.server_address[1], token="t",
                      max_attempts=2, backoff_initial=0.001)
        self.addCleanup(c.close)
        with tempfile.TemporaryFile() as f:
            with self.assertRaises(ac.TransportError) as cm:
                c.read_file_to_fd("/x", f.fileno())
            self.assertIn("1000 bytes missing", str(cm.exception))
            f.seek(0)
            self.assertEqual(f.read(), body)  # what arrived, then the error


class HostileArchiveTest(unittest.TestCase):
    """A broken or hostile daemon cannot make download_dir write outside its target."""

    def serve(self, body, chunked_cut=False, gzip_it=False):
        if gzip_it:
            body = gzip.compress(body)

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/x-tar")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                half = body[:len(body) // 2] if chunked_cut else body
                self.wfile.write(b"%x\r\n%s\r\n" % (len(half), half))
                if chunked_cut:
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(b"0\r\n\r\n")

        server = _FakeDaemon(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return ac.Client("http://127.0.0.1:%d" % server.server_address[1], token="t",
                         max_attempts=2, backoff_initial=0.001)

    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="pyclient-hostile-")
        self.dest = os.path.join(self.base, "dest")
        os.makedirs(self.dest)
        self.addCleanup(shutil.rmtree, self.base, True)

    def assert_refused(self, members, reason_part, error=ac.UnsafePath, **serve):
        c = self.serve(tar_bytes(members), **serve)
        with self.assertRaises(error) as cm:
            c.download_dir("/x", self.dest)
        if reason_part:
            self.assertIn(reason_part, str(cm.exception.details.get("reason", "")))
        # Nothing outside dest, and nothing of the archive inside it.
        self.assertEqual(sorted(os.listdir(self.base)), ["dest"])
        self.assertEqual(os.listdir(self.dest), [])
        return cm.exception

    def test_absolute_member_names_are_refused(self):
        e = self.assert_refused([(ti(self.base + "/evil"), b"x")], "absolute")
        self.assertEqual(e.details["member"], self.base + "/evil")

    def test_dotdot_members_are_refused(self):
        self.assert_refused([(ti("ok"), b"x"), (ti("../evil"), b"x")], "..")

    def test_writing_through_an_archive_symlink_is_refused(self):
        self.assert_refused([(ti("link", tarfile.SYMTYPE, linkname=self.base), None),
                             (ti("link/evil"), b"x")], "symlink")

    def test_a_symlink_to_a_directory_inside_is_not_written_through_either(self):
        self.assert_refused([(ti("d", tarfile.DIRTYPE, mode=0o755), None),
                             (ti("link", tarfile.SYMTYPE, linkname="d"), None),
                             (ti("link/f"), b"x")], "symlink")

    def test_hard_links_must_name_earlier_members(self):
        self.assert_refused([(ti("h", tarfile.LNKTYPE, linkname="/etc/passwd"), None)],
                            "hard link")
        self.assert_refused([(ti("h", tarfile.LNKTYPE, linkname="../outside"), None)],
                            "hard link")
        self.assert_refused([(ti("h", tarfile.LNKTYPE, linkname="later"), None),
                             (ti("later"), b"x")], "hard link")

    def test_devices_and_fifos_are_refused(self):
        self.assert_refused([(ti("dev", tarfile.CHRTYPE), None)], "device")
        self.assert_refused([(ti("fifo", tarfile.FIFOTYPE), None)], "FIFO")

    def test_a_truncated_member_is_an_invalid_archive(self):
        raw = tar_bytes([(ti("a"), b"a" * 5000), (ti("b"), b"b" * 5000)])
        c = self.serve(raw[:512 + 2048])
        with self.assertRaises(ac.InvalidArchive):
            c.download_dir("/x", self.dest)
        self.assertEqual(os.listdir(self.dest), [])

    def test_a_cut_transfer_leaves_no_partial_tree(self):
        raw = tar_bytes([(ti("a"), b"a" * 50000), (ti("b"), b"b" * 50000)])
        c = self.serve(raw, chunked_cut=True)
        with self.assertRaises(ac.TransportError):
            c.download_dir("/x", self.dest)
        self.assertEqual(os.listdir(self.dest), [])

    def test_setuid_bits_are_dropped_unless_asked_for(self):
        members = [(ti("s", mode=0o4755), b"x")]
        self.serve(tar_bytes(members)).download_dir("/x", self.dest)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.dest, "s")).st_mode), 0o755)
        self.serve(tar_bytes(members)).download_dir("/x", self.dest, keep_setid=True)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.dest, "s")).st_mode), 0o4755)

    def test_the_data_policy_refuses_escaping_symlinks_and_tames_modes(self):
        c = self.serve(tar_bytes([(ti("l", tarfile.SYMTYPE, linkname="../../etc"), None)]))
        with self.assertRaises(ac.UnsafePath):
            c.download_dir("/x", self.dest, policy="data")
        members = [(ti("d", tarfile.DIRTYPE, mode=0o777), None),
                   (ti("d/in", tarfile.SYMTYPE, linkname="../f"), None),
                   (ti("f", mode=0o4777), b"x"), (ti("g", mode=0o000), b"y")]
        self.serve(tar_bytes(members), gzip_it=True).download_dir("/x", self.dest, policy="data")
        mode = lambda p: stat.S_IMODE(os.lstat(os.path.join(self.dest, p)).st_mode)  # noqa: E731
        self.assertEqual((mode("d"), mode("f"), mode("g")), (0o755, 0o755, 0o600))
        self.assertEqual(os.readlink(os.path.join(self.dest, "d", "in")), "../f")


if __name__ == "__main__":
    unittest.main()
