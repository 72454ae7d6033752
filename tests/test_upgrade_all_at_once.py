"""One upgrade in place with everything in flight at once (issue's named
test; docs/OPERATIONS.md, "Upgrade"): a large stream read by cursor over
the raw route, many running execs, a PTY session, a watch stream, a tunnel
with bytes stalled in its buffers and an idle code context. After the
upgrade every one of them goes on: the stream's bytes match exactly, every
exec reports its true exit status, the terminal answers, the watch's ids
continue without a gap, the tunnel's bytes come back whole and the
context keeps its state.

CI runs it at small sizes; the full sizes of the issue are

    AGENTD_UPGRADE_STREAM_LINES=120000000 AGENTD_UPGRADE_EXECS=100 \\
        python3 tests/test_upgrade_all_at_once.py

(120,000,000 lines of `seq` are 1.04 GiB).
"""

import hashlib
import http.client
import os
import socket
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from echo_server import EchoServer  # noqa: E402
from sse_reader import SseStream  # noqa: E402
from test_upgrade import MAX_RECONNECTS, UpgradeCase  # noqa: E402

STREAM_LINES = int(os.environ.get("AGENTD_UPGRADE_STREAM_LINES", "2000000"))
EXECS = int(os.environ.get("AGENTD_UPGRADE_EXECS", "20"))


def seq_digest(first, last):
    """(length, sha256) of what `seq FIRST LAST` prints, made in blocks."""
    h = hashlib.sha256()
    size = 0
    block = 100000
    for start in range(first, last + 1, block):
        chunk = "".join("%d\n" % i for i in range(start, min(start + block, last + 1))).encode()
        h.update(chunk)
        size += len(chunk)
    return size, h.hexdigest()


def seq_length(first, last):
    """The byte length of what `seq FIRST LAST` prints, by arithmetic: the
    stream is read while it is made, so nothing slow may come first."""
    size, width, low = 0, 1, 1
    while low <= last:
        high = low * 10 - 1
        a, b = max(first, low), min(last, high)
        if a <= b:
            size += (b - a + 1) * (width + 1)
        width, low = width + 1, low * 10
    return size


class RawReader(threading.Thread):
    """Reads an exec's stdout to its end over the raw route, resuming by
    byte cursor after every connection the upgrade closes."""

    def __init__(self, daemon, exec_id, first_part):
        super().__init__(daemon=True)
        self.daemon_ = daemon
        self.exec_id = exec_id
        self.first_part = first_part  # bytes after which `reached` is set
        self.reached = threading.Event()
        self.sha = hashlib.sha256()
        self.size = 0
        self.reconnects = 0
        self.errors = []

    def run(self):
        while self.reconnects <= MAX_RECONNECTS:
            conn = self.daemon_.connection(timeout=120)
            try:
                conn.request("GET", "/v1/execs/%s/stdout?follow=1&from=%d" % (
                    self.exec_id, self.size), headers=self.daemon_.headers())
                resp = conn.getresponse()
                if resp.status != 200:
                    self.errors.append((resp.status, resp.read()[:200]))
                    return
                if resp.getheader("Agentd-From") != str(self.size):  # a gap
                    self.errors.append(("gap", self.size, resp.getheader("Agentd-From")))
                    return
                while True:
                    chunk = resp.read1(1 << 20)
                    if not chunk:
                        return  # the follow ended with the exec's output
                    self.sha.update(chunk)
                    self.size += len(chunk)
                    if self.size >= self.first_part:
                        self.reached.set()
            except (ConnectionError, http.client.HTTPException):
                self.reconnects += 1  # the upgrade closed it: resume from the cursor
            finally:
                conn.close()
        self.errors.append("more than %d reconnects" % MAX_RECONNECTS)


class EverythingInFlightTest(UpgradeCase):
    def open_tunnel(self, port):
        tunnel = socket.create_connection(("127.0.0.1", self.daemon.port), timeout=120)
        self.addCleanup(tunnel.close)
        tunnel.sendall(("GET /v1/ports/%d/connect HTTP/1.1\r\nHost: guest\r\nAuthorization: "
                        "Bearer %s\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
                        % (port, self.daemon.token)).encode())
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            head += tunnel.recv(1)
        self.assertTrue(head.startswith(b"HTTP/1.1 101 "), head)
        return tunnel

    def recv_exactly(self, sock, size):
        got = bytearray()
        while len(got) < size:
            chunk = sock.recv(1 << 16)
            self.assertTrue(chunk, "the tunnel ended after %d bytes" % len(got))
            got += chunk
        return bytes(got)

    def test_one_upgrade_with_a_stream_execs_a_pty_a_watch_a_tunnel_and_a_context(self):
        # The stream: half of it, then (once stdin says so) the rest, so the
        # upgrade comes while the second half pours out and is read; it
        # exits only on a second line sent after the upgrade, so its
        # follower's connection is open when the upgrade comes.
        half = STREAM_LINES // 2
        self.start("stream", {"argv": ["sh", "-c", "seq 1 %d; read x; seq %d %d; read y" % (
            half, half + 1, STREAM_LINES)], "stdin_stream": True})
        reader = RawReader(self.daemon, "stream", seq_length(1, half))
        reader.start()
        # Execs that each wait for their stdin, so all run across the upgrade.
        for i in range(EXECS):
            self.start("many-%d" % i, {"argv": ["sh", "-c", "read x; echo got $x; exit %d"
                                                % (i % 100)], "stdin_stream": True})
        self.start("tty", {"command": "read x; stty size; echo got $x; exit 5",
                           "pty": {"rows": 24, "cols": 80}})
        watched = os.path.join(self.bin_dir, "watched")
        os.mkdir(watched)
        watch = SseStream(self.daemon, "/v1/fs/watch?path=" + watched, timeout=120)
        self.addCleanup(watch.close)
        self.assertEqual(watch.status, 200)
        echo = EchoServer()
        self.addCleanup(echo.server_close)
        self.addCleanup(echo.shutdown)
        tunnel = self.open_tunnel(echo.port)
        status, made = self.daemon.json("POST", "/v1/contexts", {"id": "py", "runtime": "python"},
                                        timeout=60)
        self.assertEqual(status, 201, made)
        status, ran = self.daemon.json("POST", "/v1/contexts/py/run", {"code": "x = 41"},
                                       timeout=120)
        self.assertEqual((status, ran.get("exit_code")), (200, 0), ran)

        # Everything in flight: the stream's second half released, a change
        # the watch has not delivered, a megabyte stalled in the tunnel.
        self.assertTrue(reader.reached.wait(300), reader.errors)
        self.stdin("stream", 0, b"go\n", eof=False)
        os.mkdir(os.path.join(watched, "during"))
        stalled = bytes(range(256)) * 4096
        sender = threading.Thread(target=tunnel.sendall, args=(stalled,))
        sender.start()
        code, out = self.upgrade()
        self.assertEqual(code, 0, out)

        self.assertTrue(self.recv_exactly(tunnel, len(stalled)) == stalled,
                        "the bytes relayed across the upgrade differ")
        sender.join()
        status, obj = self.daemon.json("POST", "/v1/execs/tty/resize", {"rows": 50, "cols": 132})
        self.assertEqual((status, obj["state"]), (200, "running"), obj)
        self.stdin("tty", 0, b"hi\n", eof=False)
        for i in range(EXECS):
            self.stdin("many-%d" % i, 0, b"v%d\n" % i)
        os.mkdir(os.path.join(watched, "after"))
        status, ran = self.daemon.json("POST", "/v1/contexts/py/run",
                                       {"code": "print(x + 1)"}, timeout=120)
        self.assertEqual((status, ran.get("stdout")), (200, "42\n"), ran)

        self.stdin("stream", 3, b"end\n")
        reader.join(600)
        self.assertFalse(reader.is_alive(), "the stream did not end")
        self.assertEqual(reader.errors, [])
        self.assertGreaterEqual(reader.reconnects, 1)  # it was cut by the upgrade, and resumed
        self.assertEqual((reader.size, reader.sha.hexdigest()), seq_digest(1, STREAM_LINES))
        self.assertEqual(self.wait_exit("stream")["exit_code"], 0)
        for i in range(EXECS):
            obj = self.wait_exit("many-%d" % i)
            self.assertEqual((obj["exit_code"], obj["killed_by"]), (i % 100, None), obj)
            status, _, body = self.daemon.request("GET", "/v1/execs/many-%d/stdout" % i)
            self.assertEqual(body, b"got v%d\n" % i)
        self.assertEqual(self.wait_exit("tty")["exit_code"], 5)
        status, _, out = self.daemon.request("GET", "/v1/execs/tty/stdout")
        self.assertEqual(out.replace(b"\r", b"").split(b"\n"),
                         [b"hi", b"50 132", b"got hi", b""], out)
        self.assertEqual(watch.next(timeout=120), ("created", {"path": watched + "/during",
                                                               "type": "dir"}, "1"))
        self.assertEqual(watch.next(timeout=120), ("created", {"path": watched + "/after",
                                                               "type": "dir"}, "2"))
        tunnel.sendall(b"after")
        self.assertEqual(self.recv_exactly(tunnel, 5), b"after")
        health = self.health()
        self.assertEqual(health["upgrades"], 1)
        print("\nstream %d bytes (%d reconnects), %d execs, pty, watch, tunnel, context" % (
            reader.size, reader.reconnects, EXECS))


if __name__ == "__main__":
    unittest.main()
