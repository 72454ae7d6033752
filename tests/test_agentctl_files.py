"""agentctl's file commands against a live daemon: cat (lines, bytes), put
(modes), stat, ls, mkdir, mv, rm, and cp of files and whole trees."""

import hashlib
import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import unittest
import urllib.parse

from test_agentctl_exec import AGENTCTL, AgentctlTestCase


class _Reader:
    """Reads HTTP message heads and bodies of known length off a socket."""

    def __init__(self, sock):
        self.sock, self.buffered = sock, b""

    def head(self):
        while b"\r\n\r\n" not in self.buffered:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffered += chunk
        head, _, self.buffered = self.buffered.partition(b"\r\n\r\n")
        return head + b"\r\n\r\n"

    def take(self, n):
        while len(self.buffered) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("the message ended early")
            self.buffered += chunk
        data, self.buffered = self.buffered[:n], self.buffered[n:]
        return data


def _content_length(head):
    """A message's Content-Length; None when it has none (chunked, or a
    request without a body is given 0 by its method below)."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
        if name.strip().lower() == b"transfer-encoding":
            return None
    return 0 if head.startswith((b"GET ", b"HEAD ", b"DELETE ", b"HTTP/1.1 204", b"HTTP/1.1 304")) else None


class OlderDaemonProxy:
    """Stands in front of the test's daemon as a daemon older than PUT
    /v1/fs/file's `etag` parameter: such a write is refused as that daemon
    refused any unknown parameter (400 invalid_request naming the field,
    its body read and dropped, the connection closed); every other
    connection is passed through byte for byte. `puts` records each write's
    query as the proxy saw it."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.puts = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.listener.close()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        # Request by request (the client asks for health first and keeps
        # the connection), until a message without a length: then raw.
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        reader, up_reader = _Reader(conn), _Reader(upstream)
        try:
            while True:
                head = reader.head()
                if head is None:
                    return
                method, target = head.split(b" ")[:2]
                url = urllib.parse.urlsplit(target.decode())
                query = urllib.parse.parse_qs(url.query)
                length = _content_length(head)
                expects_continue = b"\r\nexpect: 100-continue" in head.lower()
                if method == b"PUT" and url.path == "/v1/fs/file":
                    self.puts.append(query)
                    if "etag" in query:
                        if not expects_continue:  # the body comes anyway: read and dropped
                            reader.take(length or 0)
                        body = json.dumps({"error": {
                            "code": "invalid_request", "field": "etag",
                            "message": 'unknown query parameter "etag"'}}).encode()
                        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json"
                                     b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                                     % (len(body), body))
                        return
                if length is None:
                    break
                upstream.sendall(head)
                if expects_continue:
                    answer = up_reader.head()
                    if not answer.startswith(b"HTTP/1.1 100"):  # refused: no body comes
                        conn.sendall(answer + up_reader.take(_content_length(answer) or 0))
                        continue
                    conn.sendall(answer)
                upstream.sendall(reader.take(length))
                answer = up_reader.head()
                answer_length = _content_length(answer)
                if answer_length is None:
                    conn.sendall(answer)
                    break
                conn.sendall(answer + up_reader.take(answer_length))
            # Raw from here: what each reader holds already, then the sockets.
            upstream.sendall(reader.buffered)
            conn.sendall(up_reader.buffered)
            threading.Thread(target=self._pipe, args=(upstream, conn), daemon=True).start()
            self._pipe(conn, upstream)
        except OSError:
            pass
        finally:
            conn.close()
            upstream.close()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                chunk = src.recv(1 << 20)
                if not chunk:
                    break
                dst.sendall(chunk)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


class FileCommandsTest(AgentctlTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentctl-files-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def random_file(self, name, size):
        """A local file of `size` random bytes: (its path, the bytes)."""
        path, data = os.path.join(self.dir, name), os.urandom(size)
        with open(path, "wb") as f:
            f.write(data)
        return path, data

    def test_put_with_mode_then_cat_whole_lines_and_bytes(self):
        path = os.path.join(self.dir, "g", "notes.txt")
        r = self.ctl("put", "--mode", "0640", "--parents", path, "-", input=b"a\nb\nc\nd\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o640)
        self.assertEqual(self.ctl("cat", path).stdout, b"a\nb\nc\nd\n")
        self.assertEqual(self.ctl("cat", "--lines", "2:3", path).stdout, b"b\nc\n")
        self.assertEqual(self.ctl("cat", "--lines", "3:", path).stdout, b"c\nd\n")
        self.assertEqual(self.ctl("cat", "--bytes", "2:4", path).stdout, b"b\nc")
        r, env = self.envelope("cat", "--lines", "0:1", path)
        self.assertEqual(env["error"]["code"], "invalid_range")

    def test_stat_ls_mkdir_mv_rm(self):
        base = os.path.join(self.dir, "tree")
        self.assertEqual(self.ctl("mkdir", "--parents", "--mode", "0700", base + "/a/b").returncode, 0)
        self.assertEqual(stat.S_IMODE(os.stat(base + "/a/b").st_mode), 0o700)
        self.ctl("put", base + "/a/file", "-", input=b"12345")
        os.symlink("file", base + "/a/link")
        r, env = self.envelope("stat", base + "/a/link")
        self.assertEqual((env["result"]["type"], env["result"]["target"]), ("symlink", "file"))
        r, env = self.envelope("stat", "--follow", base + "/a/link")
        self.assertEqual((env["result"]["type"], env["result"]["size"]), ("file", 5))
        listing = self.ctl("ls", base + "/a").stdout.decode().splitlines()
        self.assertEqual(len(listing), 3)
        self.assertTrue(any(line.startswith("d0700") and line.endswith(" b") for line in listing))
        self.assertTrue(any(line.endswith("link -> file") for line in listing))
        self.assertEqual(self.ctl("mv", base + "/a/file", base + "/a/moved").returncode, 0)
        self.assertTrue(os.path.exists(base + "/a/moved"))
        r = self.ctl("rm", base + "/a")
        self.assertEqual(r.returncode, 73, r.stderr)  # directory_not_empty: conflict
        r, env = self.envelope("rm", "--recursive", base)
        self.assertEqual(env["result"]["removed"], 5)
        self.assertFalse(os.path.exists(base))

    def test_edit_prints_the_diff_and_a_stale_if_match_changes_nothing(self):
        path = os.path.join(self.dir, "app.py")
        with open(path, "w") as f:
            f.write("def f():\n    return 1\n\nprint(f())\nx\nx\n")
        r, env = self.envelope("cat", path)
        tag = env["result"]["etag"]
        r = self.ctl("edit", path, "--old", "return 1", "--new", "return 2",
                     "--lines", "4:4", "--text", "print(f() + 1)", "--if-match", tag)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"-    return 1\n+    return 2\n", r.stdout)
        with open(path) as f:
            self.assertEqual(f.read(), "def f():\n    return 2\n\nprint(f() + 1)\nx\nx\n")
        r, env = self.envelope("stat", path)
        current = env["result"]["etag"]
        self.assertNotEqual(current, tag)
        # The same tag again is stale: 412 precondition_failed, exit 73 (conflict).
        r, env = self.envelope("edit", path, "--old", "return 2", "--new", "return 3",
                               "--if-match", tag)
        self.assertEqual((r.returncode, env["error"]["code"]), (73, "precondition_failed"))
        r, env = self.envelope("put", "--if-match", tag, path, "-", input=b"lost")
        self.assertEqual((r.returncode, env["error"]["code"]), (73, "precondition_failed"))
        r, env = self.envelope("rm", "--if-match", tag, path)
        self.assertEqual((r.returncode, env["error"]["code"]), (73, "precondition_failed"))
        # An ambiguous edit names the count found; --count makes it exact.
        r, env = self.envelope("edit", path, "--old", "x", "--new", "y")
        self.assertEqual((r.returncode, env["error"]["code"], env["error"]["found"]),
                         (73, "edit_mismatch", 2))
        r, env = self.envelope("edit", path, "--old", "x", "--new", "y", "--count", "2")
        self.assertEqual(env["result"]["etag"], self.envelope("stat", path)[1]["result"]["etag"])
        r = self.ctl("edit", path, "--old", "x")
        self.assertEqual(r.returncode, 2, r.stderr)  # usage: --old without --new
        r = self.ctl("put", "--if-none-match", path, "-", input=b"lost")
        self.assertEqual(r.returncode, 73, r.stderr)
        with open(path) as f:
            self.assertEqual(f.read(), "def f():\n    return 2\n\nprint(f() + 1)\ny\ny\n")

    def test_cp_file_both_ways_keeps_mode(self):
        local = os.path.join(self.dir, "run.sh")
        with open(local, "wb") as f:
            f.write(b"#!/bin/sh\necho hi\n")
        os.chmod(local, 0o751)
        remote = os.path.join(self.dir, "remote", "run.sh")
        r = self.ctl("cp", "--parents", local, "guest:" + remote)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(stat.S_IMODE(os.stat(remote).st_mode), 0o751)
        back = os.path.join(self.dir, "back.sh")
        r = self.ctl("cp", "guest:" + remote, back)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(back, "rb") as f:
            self.assertEqual(f.read(), b"#!/bin/sh\necho hi\n")
        self.assertEqual(stat.S_IMODE(os.stat(back).st_mode), 0o751)

    def test_cp_of_a_large_file_lands_whole_without_asking_for_its_tag(self):
        # A regular file goes with Content-Length by sendfile: 3 MiB and a
        # bit, more than one of agentctl's former 256 KiB reads and the
        # daemon's write blocks. cp asks for no tag (etag=0): its answer
        # has none, and a later stat hashes the bytes that landed.
        local, data = self.random_file("big.bin", (3 << 20) + 4321)
        remote = os.path.join(self.dir, "big-remote.bin")
        r, env = self.envelope("cp", local, "guest:" + remote)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(env["result"]["size"], len(data))
        self.assertNotIn("etag", env["result"])
        with open(remote, "rb") as f:
            self.assertEqual(f.read(), data)
        r, env = self.envelope("stat", remote)
        self.assertEqual(env["result"]["etag"], '"sha256:%s"' % hashlib.sha256(data).hexdigest())

    def test_cp_to_a_daemon_refusing_the_etag_parameter_asks_again_with_the_tag(self):
        # An older daemon refuses etag=0 after the body went out (sendfile
        # moved no file offset of agentctl's own): the second write sends the
        # whole file again, from its first byte, and asks for the tag.
        local, data = self.random_file("older.bin", (2 << 20) + 77)
        remote = os.path.join(self.dir, "older-remote.bin")
        proxy = OlderDaemonProxy(self.daemon.port)
        self.addCleanup(proxy.close)
        env = dict(self.env, AGENTD_URL="http://127.0.0.1:%d" % proxy.port)
        r = subprocess.run([AGENTCTL, "--json", "cp", local, "guest:" + remote],
                           capture_output=True, env=env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual([("etag" in q) for q in proxy.puts], [True, False])
        result = json.loads(r.stdout)["result"]
        self.assertEqual((result["size"], result["etag"]),
                         (len(data), '"sha256:%s"' % hashlib.sha256(data).hexdigest()))
        with open(remote, "rb") as f:
            self.assertEqual(f.read(), data)

    def test_cp_of_a_proc_file_copies_what_reading_it_gives(self):
        # procfs says such a file is empty (st_size 0) and makes its content
        # up when read: it is streamed, not sent as the 0 bytes its size says.
        remote = os.path.join(self.dir, "cmdline")
        r = self.ctl("cp", "/proc/self/cmdline", "guest:" + remote)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(remote, "rb") as f:
            self.assertIn(b"agentctl", f.read())

    def test_cp_tree_round_trip_keeps_symlinks_modes_and_empty_dirs(self):
        src = os.path.join(self.dir, "src")
        os.makedirs(src + "/pkg/empty")
        with open(src + "/pkg/tool", "w") as f:
            f.write("tool")
        os.chmod(src + "/pkg/tool", 0o755)
        os.symlink("pkg/tool", src + "/tool-link")
        os.symlink("/does/not/exist", src + "/dangling")
        remote = os.path.join(self.dir, "guest-copy")
        r = self.ctl("cp", src, "guest:" + remote)
        self.assertEqual(r.returncode, 0, r.stderr)
        back = os.path.join(self.dir, "back")
        r = self.ctl("cp", "guest:" + remote, back)
        self.assertEqual(r.returncode, 0, r.stderr)
        for root in (remote, back):
            self.assertTrue(os.path.isdir(root + "/pkg/empty"))
            self.assertEqual(stat.S_IMODE(os.stat(root + "/pkg/tool").st_mode), 0o755)
            self.assertEqual(os.readlink(root + "/tool-link"), "pkg/tool")
            self.assertEqual(os.readlink(root + "/dangling"), "/does/not/exist")

    def test_cp_needs_exactly_one_guest_side(self):
        r = self.ctl("cp", "a", "b")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"guest:", r.stderr)


if __name__ == "__main__":
    unittest.main()
