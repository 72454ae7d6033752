"""Single files: streamed reads and atomic writes (docs/PROTOCOL.md, "Files")."""

import hashlib
import json
import os
import shutil
import socket
import stat
import tempfile
import time
import unittest

from lib.agentd_test import (Daemon, DaemonTestCase, error_code, parse_raw_responses,
                             read_until_close)
from lib.exec_util import wait_until
from lib.fs_helpers import listing, url


class FileTestCase(DaemonTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentd-files-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def put(self, path, data, headers=None, **params):
        return self.daemon.request("PUT", url("/v1/fs/file", path=path, **params), data,
                                   headers=headers)

    def get(self, path, headers=None, **params):
        return self.daemon.request("GET", url("/v1/fs/file", path=path, **params),
                                   headers=headers)


class ReadTest(FileTestCase):
    def test_read_is_byte_identical(self):
        data = bytes(range(256)) * 4099 + b"\r\n\x00tail"
        with open(self.path("f.bin"), "wb") as f:
            f.write(data)
        status, headers, body = self.get(self.path("f.bin"))
        self.assertEqual(status, 200)
        self.assertEqual(body, data)
        self.assertEqual(headers["content-type"], "application/octet-stream")
        self.assertEqual(int(headers["content-length"]), len(data))

    def test_missing_file_is_404_naming_the_path(self):
        status, _, body = self.daemon.request("GET", url("/v1/fs/file", path=self.path("nope")))
        err = __import__("json").loads(body)
        self.assertEqual((status, error_code(err)), (404, "not_found"))
        self.assertEqual(err["error"]["path"], self.path("nope"))

    def test_directory_is_400_is_directory(self):
        s, b = self.daemon.json("GET", url("/v1/fs/file", path=self.dir))
        self.assertError(s, b, 400, "is_directory")
        self.assertEqual(b["error"]["path"], self.dir)

    def test_fifo_is_refused_without_blocking(self):
        os.mkfifo(self.path("fifo"))
        s, b = self.daemon.json("GET", url("/v1/fs/file", path=self.path("fifo")))
        self.assertError(s, b, 400, "unsafe_path")

    def test_relative_path_and_missing_path_are_invalid_requests(self):
        s, b = self.daemon.json("GET", url("/v1/fs/file", path="relative/x"))
        self.assertError(s, b, 400, "invalid_request")
        s, b = self.daemon.json("GET", "/v1/fs/file")
        self.assertError(s, b, 400, "invalid_request")
        self.assertEqual(b["error"]["field"], "path")

    def test_unknown_query_parameter_is_refused(self):
        s, b = self.daemon.json("GET", url("/v1/fs/file", path="/etc/hostname", strat_line="1"))
        self.assertError(s, b, 400, "invalid_request")
        self.assertEqual(b["error"]["field"], "strat_line")

    def test_byte_range_is_206_with_content_range(self):
        data = b"0123456789" * 10
        with open(self.path("r"), "wb") as f:
            f.write(data)
        for header, want, content_range in [("bytes=10-19", data[10:20], "bytes 10-19/100"),
                                            ("bytes=95-", data[95:], "bytes 95-99/100"),
                                            ("bytes=-3", data[97:], "bytes 97-99/100"),
                                            ("bytes=90-1000", data[90:], "bytes 90-99/100")]:
            status, headers, body = self.get(self.path("r"), headers={"Range": header})
            self.assertEqual((status, body), (206, want), header)
            self.assertEqual(headers["content-range"], content_range)

    def test_unsatisfiable_range_is_416_with_the_size(self):
        with open(self.path("r"), "wb") as f:
            f.write(b"x" * 100)
        status, headers, body = self.get(self.path("r"), headers={"Range": "bytes=100-"})
        err = __import__("json").loads(body)
        self.assertEqual((status, error_code(err)), (416, "range_not_satisfiable"))
        self.assertEqual(err["error"]["size"], 100)
        self.assertEqual(headers["content-range"], "bytes */100")

    def test_multi_range_and_malformed_range_get_the_whole_file(self):
        with open(self.path("r"), "wb") as f:
            f.write(b"abcdef")
        for header in ["bytes=0-1,3-4", "bytes=x-y", "pages=1"]:
            status, _, body = self.get(self.path("r"), headers={"Range": header})
            self.assertEqual((status, body), (200, b"abcdef"), header)

    def test_proc_files_with_unknown_size_are_read_to_the_end(self):
        status, _, body = self.get("/proc/self/status")
        self.assertEqual(status, 200)
        self.assertIn(b"VmRSS", body)
        status, _, body = self.get("/proc/self/status", start_line="1", end_line="1")
        self.assertEqual(status, 200)
        self.assertTrue(body.startswith(b"Name:") and body.endswith(b"\n"), body)
        self.assertEqual(body.count(b"\n"), 1)

    def test_head_sends_the_length_without_the_body(self):
        with open(self.path("h"), "wb") as f:
            f.write(b"x" * 1234)
        status, headers, body = self.daemon.request("HEAD", url("/v1/fs/file", path=self.path("h")))
        self.assertEqual((status, body), (200, b""))
        self.assertEqual(headers["content-length"], "1234")


class WriteTest(FileTestCase):
    def test_write_then_read_round_trips(self):
        data = os.urandom(300_000)
        status, _, body = self.put(self.path("new.bin"), data)
        self.assertEqual(status, 200, body)
        st = __import__("json").loads(body)
        self.assertEqual((st["type"], st["size"], st["path"]), ("file", len(data),
                                                                 self.path("new.bin")))
        with open(self.path("new.bin"), "rb") as f:
            self.assertEqual(f.read(), data)
        self.assertEqual(self.get(self.path("new.bin"))[2], data)

    def test_an_empty_body_writes_an_empty_file(self):
        with open(self.path("was-full"), "wb") as f:
            f.write(b"content")
        for name in ("new-empty", "was-full"):
            status, _, body = self.put(self.path(name), b"")
            self.assertEqual(status, 200, body)
            self.assertEqual(os.path.getsize(self.path(name)), 0)
        self.assertEqual(sorted(os.listdir(self.dir)), ["new-empty", "was-full"])

    def test_mode_is_exactly_the_one_asked_for_whatever_the_umask(self):
        old = os.umask(0o077)  # the daemon inherits it; open(2) alone would give 0700
        try:
            daemon = Daemon()
        finally:
            os.umask(old)
        with daemon:
            for mode in ["0755", "0600", "0644", "0777", "0444", "1755"]:
                status, _, body = daemon.request(
                    "PUT", url("/v1/fs/file", path=self.path("m-" + mode), mode=mode), b"x")
                self.assertEqual(status, 200, body)
                got = stat.S_IMODE(os.stat(self.path("m-" + mode)).st_mode)
                self.assertEqual(oct(got), oct(int(mode, 8)), mode)
                self.assertEqual(__import__("json").loads(body)["mode"], mode)
            s, b = daemon.json("POST", "/v1/fs/mkdir", {"path": self.path("d"), "mode": "0775"})
            self.assertEqual(stat.S_IMODE(os.stat(self.path("d")).st_mode), 0o775)
            status, _, _ = daemon.request("PUT", url("/v1/fs/file", path=self.path("p", "f"),
                                                     parents="1"), b"x")
            self.assertEqual(stat.S_IMODE(os.stat(self.path("p")).st_mode), 0o755)
            self.assertEqual(stat.S_IMODE(os.stat(self.path("p", "f")).st_mode), 0o644)

    def test_overwrite_keeps_the_mode_unless_asked(self):
        self.put(self.path("s.sh"), b"v1", mode="0750")
        status, _, _ = self.put(self.path("s.sh"), b"v2")
        self.assertEqual(status, 200)
        self.assertEqual(stat.S_IMODE(os.stat(self.path("s.sh")).st_mode), 0o750)
        self.put(self.path("s.sh"), b"v3", mode="0600")
        self.assertEqual(stat.S_IMODE(os.stat(self.path("s.sh")).st_mode), 0o600)
        self.put(self.path("fresh"), b"x")
        self.assertEqual(stat.S_IMODE(os.stat(self.path("fresh")).st_mode), 0o644)

    def test_bad_mode_is_invalid_request(self):
        s, b = self.daemon.json("PUT", url("/v1/fs/file", path=self.path("x"), mode="0999"), b"x")
        self.assertError(s, b, 400, "invalid_request")
        self.assertEqual(b["error"]["field"], "mode")
        self.assertFalse(os.path.exists(self.path("x")))

    def test_parents_creates_missing_directories(self):
        target = self.path("a", "b", "c.txt")
        s, b = self.daemon.json("PUT", url("/v1/fs/file", path=target), b"x")
        self.assertError(s, b, 404, "not_found")
        status, _, _ = self.put(target, b"x", parents="1")
        self.assertEqual(status, 200)
        self.assertEqual(stat.S_IMODE(os.stat(self.path("a", "b")).st_mode), 0o755)

    def test_write_onto_a_directory_is_is_directory(self):
        os.mkdir(self.path("d"))
        s, b = self.daemon.json("PUT", url("/v1/fs/file", path=self.path("d")), b"x")
        self.assertError(s, b, 400, "is_directory")

    def test_write_follows_a_final_symlink_and_keeps_it(self):
        with open(self.path("real"), "wb") as f:
            f.write(b"old")
        os.symlink("real", self.path("alias"))
        status, _, _ = self.put(self.path("alias"), b"new")
        self.assertEqual(status, 200)
        self.assertTrue(os.path.islink(self.path("alias")))
        with open(self.path("real"), "rb") as f:
            self.assertEqual(f.read(), b"new")

    def test_numeric_owner_is_applied_when_root(self):
        if os.geteuid() != 0:
            self.skipTest("needs root")
        status, _, body = self.put(self.path("owned"), b"x", user="1234", group="4321")
        self.assertEqual(status, 200, body)
        st = os.stat(self.path("owned"))
        self.assertEqual((st.st_uid, st.st_gid), (1234, 4321))

    def test_unknown_user_and_group_are_refused_before_writing(self):
        s, b = self.daemon.json("PUT", url("/v1/fs/file", path=self.path("u"),
                                           user="no-such-user-here"), b"x")
        self.assertError(s, b, 400, "unknown_user")
        s, b = self.daemon.json("PUT", url("/v1/fs/file", path=self.path("u"),
                                           group="no-such-group-here"), b"x")
        self.assertError(s, b, 400, "unknown_group")
        self.assertFalse(os.path.exists(self.path("u")))

    def test_chunked_upload_is_written_whole(self):
        # 4 MiB: more than the daemon's 1 MiB write queue, so the blocks it
        # gathers the body into are written, recycled and refilled many times.
        conn = self.daemon.connection()
        chunks = [os.urandom(70_000) for _ in range(60)]
        conn.request("PUT", url("/v1/fs/file", path=self.path("chunked")), body=iter(chunks),
                     headers=self.daemon.headers(), encode_chunked=True)
        resp = conn.getresponse()
        resp.read()
        self.assertEqual(resp.status, 200)
        with open(self.path("chunked"), "rb") as f:
            self.assertEqual(f.read(), b"".join(chunks))

    def test_content_length_upload_is_exact_and_the_next_request_on_the_connection_is_kept(self):
        # A Content-Length body is received from the socket straight into
        # the daemon's write blocks: 4 MiB and a bit (not a whole number of
        # blocks), sent in one go with the head, and a second request right
        # behind it. The bytes land exactly, the answer's tag is their
        # SHA-256, and the GET behind the body is answered, not swallowed.
        data = os.urandom((4 << 20) + 12_345)
        target = self.path("exact")
        head = ("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                "Content-Length: %d\r\n\r\n" %
                (url("/v1/fs/file", path=target), self.daemon.token, len(data)))
        get = ("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Connection: close\r\n\r\n" % (url("/v1/fs/stat", path=target),
                                                  self.daemon.token))
        s = socket.create_connection(("127.0.0.1", self.daemon.port))
        s.sendall(head.encode() + data + get.encode())
        answers = parse_raw_responses(read_until_close(s))
        s.close()
        self.assertEqual([a[0] for a in answers], [200, 200])
        tag = '"sha256:%s"' % hashlib.sha256(data).hexdigest()
        self.assertEqual(json.loads(answers[0][2])["etag"], tag)
        self.assertEqual(json.loads(answers[1][2])["size"], len(data))
        with open(target, "rb") as f:
            self.assertEqual(f.read(), data)

    def test_content_length_body_in_small_pieces_after_100_continue(self):
        # The client waits for 100 Continue, then sends the body in pieces
        # smaller than a socket read: each lands where the last one ended.
        pieces = [os.urandom(1000 + 997 * i) for i in range(40)]
        data = b"".join(pieces)
        target = self.path("pieces")
        s = socket.create_connection(("127.0.0.1", self.daemon.port))
        s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Length: %d\r\nExpect: 100-continue\r\n\r\n" %
                   (url("/v1/fs/file", path=target), self.daemon.token, len(data))).encode())
        self.assertTrue(s.recv(64).startswith(b"HTTP/1.1 100 Continue\r\n\r\n"))
        for piece in pieces:
            s.sendall(piece)
        s.shutdown(socket.SHUT_WR)
        answers = parse_raw_responses(read_until_close(s))
        s.close()
        self.assertEqual(answers[0][0], 200)
        self.assertEqual(json.loads(answers[0][2])["etag"],
                         '"sha256:%s"' % hashlib.sha256(data).hexdigest())
        with open(target, "rb") as f:
            self.assertEqual(f.read(), data)

    def test_a_body_shorter_than_its_content_length_leaves_the_old_file(self):
        # The client sends 3 MB of a declared 10 MB and ends its side: the
        # daemon sees the end mid-body, keeps the old file, removes the
        # temporary, and serves the next connection.
        with open(self.path("short"), "wb") as f:
            f.write(b"original")
        s = socket.create_connection(("127.0.0.1", self.daemon.port))
        s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Length: 10000000\r\n\r\n" %
                   (url("/v1/fs/file", path=self.path("short")), self.daemon.token)).encode() +
                  b"y" * 3_000_000)
        s.shutdown(socket.SHUT_WR)
        read_until_close(s)  # the daemon closes: the request can never complete
        s.close()
        deadline = time.time() + 5
        while time.time() < deadline and listing(self.dir) != ["short"]:
            time.sleep(0.05)
        self.assertEqual(listing(self.dir), ["short"])
        with open(self.path("short"), "rb") as f:
            self.assertEqual(f.read(), b"original")
        self.assertEqual(self.get(self.path("short"))[2], b"original")

    def test_dropped_connection_leaves_the_old_file_and_no_temporary(self):
        with open(self.path("keep"), "wb") as f:
            f.write(b"original")
        for declared in (10_000_000, None):
            s = socket.create_connection(("127.0.0.1", self.daemon.port))
            head = ("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n" %
                    (url("/v1/fs/file", path=self.path("keep")), self.daemon.token))
            if declared:
                head += "Content-Length: %d\r\n\r\n" % declared
                s.sendall(head.encode() + b"y" * 3_000_000)
            else:
                head += "Transfer-Encoding: chunked\r\n\r\n"
                s.sendall(head.encode() + b"100000\r\n" + b"y" * 0x100000 + b"\r\n")
            time.sleep(0.3)  # often cut mid-write; cut before the write starts is as good
            s.close()
            # The temporary goes once the daemon saw the cut: bound by that.
            wait_until(lambda: listing(self.dir) == ["keep"], 60, what="the temporary removed")
            with open(self.path("keep"), "rb") as f:
                self.assertEqual(f.read(), b"original")
        # And the daemon goes on serving.
        self.assertEqual(self.get(self.path("keep"))[2], b"original")


if __name__ == "__main__":
    unittest.main()
