"""Reading output: read-only poll, long poll, raw byte routes with follow,
Server-Sent Events with exact resume, and explicit gaps under retention."""

import base64
import hashlib
import json
import os
import random
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from lib.agentd_test import Daemon, DaemonTestCase, error_code
from lib.exec_util import SseEvents, collect_sse, read_stream, run, start, wait_exit, wait_until


def make_random_file(size, seed):
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "data")
    rng = random.Random(seed)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 1 << 20)
            f.write(rng.randbytes(n))
            left -= n
    with open(path, "rb") as f:
        data = f.read()
    return tmp, path, data


def dechunk(body):
    """The payload of a chunked body, as far as it is complete."""
    out = b""
    while True:
        line, sep, rest = body.partition(b"\r\n")
        if not sep:
            return out
        size = int(line, 16)
        if size == 0 or len(rest) < size:
            return out + rest[:size] if size else out
        out += rest[:size]
        body = rest[size + 2:]


class PollTest(DaemonTestCase):
    def test_poll_is_read_only_identical_polls_answer_the_same(self):
        obj, _, _ = run(self.daemon, "poll-1", {"command": "printf 'abc'; printf 'E' >&2"})
        q = "/v1/execs/poll-1?stdout_from=0&stderr_from=0"
        answers = [self.daemon.request("GET", q)[2] for _ in range(3)]
        self.assertEqual(answers[0], answers[1])
        self.assertEqual(answers[1], answers[2])
        s, body = self.daemon.json("GET", q)
        self.assertEqual(body["stdout"], {"from": 0, "next": 3, "data_b64": "YWJj"})
        self.assertEqual(body["stderr"], {"from": 0, "next": 1, "data_b64": "RQ=="})
        self.assertEqual(body["stdout_bytes"], 3)

    def test_cursors_and_max_bytes_select_the_bytes(self):
        run(self.daemon, "poll-2", {"argv": ["printf", "0123456789"]})
        s, body = self.daemon.json("GET", "/v1/execs/poll-2?stdout_from=3&max_bytes=4")
        self.assertEqual(body["stdout"], {"from": 3, "next": 7,
                                          "data_b64": base64.b64encode(b"3456").decode()})
        self.assertNotIn("stderr", body)
        s, body = self.daemon.json("GET", "/v1/execs/poll-2?stdout_from=10")
        self.assertEqual(body["stdout"], {"from": 10, "next": 10, "data_b64": ""})
        s, body = self.daemon.json("GET", "/v1/execs/poll-2")
        self.assertNotIn("stdout", body)

    def test_long_poll_answers_when_output_arrives(self):
        start(self.daemon, "poll-3", {"command": "read x; echo got $x",
                                       "stdin_stream": True})
        result = {}

        def poll():
            t0 = time.monotonic()
            result["answer"] = self.daemon.json(
                "GET", "/v1/execs/poll-3?stdout_from=0&wait_ms=120000", timeout=200)
            result["seconds"] = time.monotonic() - t0

        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.3)
        self.assertTrue(t.is_alive())  # nothing to say yet: it waits
        self.daemon.json("POST", "/v1/execs/poll-3/stdin?offset=0&eof=1", b"hi\n")
        t.join(200)
        s, body = result["answer"]
        self.assertEqual(base64.b64decode(body["stdout"]["data_b64"]), b"got hi\n")
        self.assertLess(result["seconds"], 100)  # far before the 120 s deadline

    def test_long_poll_without_news_waits_until_its_deadline(self):
        start(self.daemon, "poll-4", {"argv": ["sleep", "30"]})
        self.addCleanup(self.daemon.json, "POST", "/v1/execs/poll-4/kill", {"signal": "KILL"})
        t0 = time.monotonic()
        s, body = self.daemon.json("GET", "/v1/execs/poll-4?stdout_from=0&wait_ms=400")
        self.assertGreaterEqual(time.monotonic() - t0, 0.39)
        self.assertEqual((s, body["state"], body["stdout"]["next"]), (200, "running", 0))

    def test_long_poll_answers_at_exit(self):
        start(self.daemon, "poll-5", {"command": "sleep 0.3"})
        s, body = self.daemon.json("GET", "/v1/execs/poll-5?wait_ms=120000", timeout=200)
        self.assertEqual(body["state"], "exited")

    def test_until_exit_waits_past_new_output_for_the_exit(self):
        start(self.daemon, "poll-6", {"command": "echo a; sleep 0.3; echo b"})
        s, body = self.daemon.json(
            "GET", "/v1/execs/poll-6?stdout_from=0&wait_ms=120000&until=exit", timeout=200)
        self.assertEqual((s, body["state"], body["exit_code"]), (200, "exited", 0))
        self.assertEqual(base64.b64decode(body["stdout"]["data_b64"]), b"a\nb\n")
        # until=output (the default) ends the wait at the first new byte.
        start(self.daemon, "poll-7", {"command": "echo a; sleep 30"})
        self.addCleanup(self.daemon.json, "POST", "/v1/execs/poll-7/kill", {"signal": "KILL"})
        s, body = self.daemon.json(
            "GET", "/v1/execs/poll-7?stdout_from=0&wait_ms=120000&until=output", timeout=200)
        self.assertEqual((s, body["state"]), (200, "running"))
        self.assertEqual(base64.b64decode(body["stdout"]["data_b64"]), b"a\n")


class RawOutputTest(DaemonTestCase):
    def test_raw_route_serves_exact_bytes_with_offsets(self):
        data = os.urandom(200000)
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, "d")
        with open(path, "wb") as f:
            f.write(data)
        run(self.daemon, "raw-1", {"argv": ["cat", path]})
        status, headers, body = self.daemon.request("GET", "/v1/execs/raw-1/stdout")
        self.assertEqual((status, body), (200, data))
        self.assertEqual(headers["content-type"], "application/octet-stream")
        self.assertEqual((headers["agentd-from"], headers["agentd-next"]), ("0", "200000"))
        status, headers, body = self.daemon.request("GET", "/v1/execs/raw-1/stdout?from=150000")
        self.assertEqual((body, headers["agentd-from"]), (data[150000:], "150000"))
        status, headers, body = self.daemon.request("GET", "/v1/execs/raw-1/stderr")
        self.assertEqual((status, body, headers["agentd-next"]), (200, b"", "0"))

    def test_head_sends_the_headers_without_a_body(self):
        run(self.daemon, "raw-head", {"argv": ["printf", "abc"]})
        for query in ("", "?follow=1"):
            raw = self.daemon.raw(b"HEAD /v1/execs/raw-head/stdout%s HTTP/1.1\r\nHost: x\r\n"
                                  b"Authorization: Bearer test-token\r\nConnection: close\r\n\r\n"
                                  % query.encode())
            head, _, rest = raw.partition(b"\r\n\r\n")
            self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
            self.assertIn(b"Agentd-From: 0", head)
            self.assertEqual(rest, b"")

    def test_follow_streams_until_exit_and_all_bytes_are_sent(self):
        start(self.daemon, "raw-2", {"command": "for i in 1 2 3 4 5; do echo line$i; sleep 0.1; done",
                                      "stdin_stream": False})
        status, headers, body = self.daemon.request("GET", "/v1/execs/raw-2/stdout?follow=1")
        self.assertEqual(status, 200)
        self.assertEqual(headers.get("transfer-encoding"), "chunked")
        self.assertNotIn("agentd-next", headers)
        self.assertEqual(body, b"".join(b"line%d\n" % i for i in range(1, 6)))

    def test_follow_from_an_offset_of_a_finished_exec(self):
        run(self.daemon, "raw-3", {"argv": ["printf", "abcdef"]})
        status, headers, body = self.daemon.request("GET", "/v1/execs/raw-3/stdout?from=2&follow=1")
        self.assertEqual((body, headers["agentd-from"]), (b"cdef", "2"))

    def test_follow_of_a_large_fast_output_is_byte_exact(self):
        tmp, path, data = make_random_file(24 << 20, 7)
        self.addCleanup(shutil.rmtree, tmp)
        start(self.daemon, "raw-4", {"argv": ["cat", path]})
        status, headers, body = self.daemon.request("GET", "/v1/execs/raw-4/stdout?follow=1",
                                                    timeout=120)
        self.assertEqual(hashlib.sha256(body).hexdigest(), hashlib.sha256(data).hexdigest())


    def test_a_live_follower_that_stops_reading_gets_every_byte_from_where_its_tap_filled(self):
        # A follower that has caught up is fed by a tee of the child's pipe
        # (its tap, a few MiB); one that stops reading while the exec
        # prints much more fills it, gets what it held, then the rest from
        # the spool file, and must see each byte once, in order.
        tmp, path, data = make_random_file(24 << 20, 9)
        self.addCleanup(shutil.rmtree, tmp)
        start(self.daemon, "raw-7", {"command": "read go; cat %s" % path, "stdin_stream": True})
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        s.connect(("127.0.0.1", self.daemon.port))
        self.addCleanup(s.close)
        s.sendall(b"GET /v1/execs/raw-7/stdout?follow=1 HTTP/1.1\r\nHost: x\r\n"
                  b"Authorization: Bearer test-token\r\nConnection: close\r\n\r\n")
        raw = b""
        while b"\r\n\r\n" not in raw:  # the head: the follower is live at 0
            chunk = s.recv(4096)
            self.assertTrue(chunk, raw)
            raw += chunk
        self.daemon.json("POST", "/v1/execs/raw-7/stdin?offset=0&eof=1", b"go\n")
        obj = wait_exit(self.daemon, "raw-7")  # all printed while the follower read nothing
        self.assertEqual(obj["stdout_bytes"], len(data))
        while not raw.endswith(b"0\r\n\r\n"):
            chunk = s.recv(1 << 20)
            self.assertTrue(chunk, len(raw))
            raw += chunk
        body = dechunk(raw.partition(b"\r\n\r\n")[2])
        self.assertEqual(len(body), len(data))
        self.assertEqual(hashlib.sha256(body).hexdigest(), hashlib.sha256(data).hexdigest())

    def test_a_follower_that_catches_up_has_the_whole_chunk_before_the_stream_waits(self):
        # A chunk's closing CRLF rides with the next chunk's size line, so
        # a follower that caught up must be sent it before the daemon
        # waits for output: a client that hands on whole chunks would
        # otherwise hold the last bytes until the exec prints again.
        start(self.daemon, "raw-5", {"command": "printf a; read go; printf b",
                                      "stdin_stream": True})
        s = socket.create_connection(("127.0.0.1", self.daemon.port))
        self.addCleanup(s.close)
        s.sendall(b"GET /v1/execs/raw-5/stdout?follow=1 HTTP/1.1\r\nHost: x\r\n"
                  b"Authorization: Bearer test-token\r\nConnection: close\r\n\r\n")
        raw = b""
        while not raw.partition(b"\r\n\r\n")[2].startswith(b"1\r\na"):
            chunk = s.recv(4096)
            self.assertTrue(chunk, raw)
            raw += chunk
        # The daemon sends the CRLF in the turn that sent the byte, before
        # it waits; a request answered after that turn orders the check.
        self.assertEqual(self.daemon.request("GET", "/v1/health")[0], 200)
        s.setblocking(False)
        try:
            raw += s.recv(4096)
        except BlockingIOError:
            pass
        self.assertEqual(raw.partition(b"\r\n\r\n")[2], b"1\r\na\r\n")
        s.setblocking(True)
        self.daemon.json("POST", "/v1/execs/raw-5/stdin?offset=0&eof=1", b"go\n")
        while not raw.endswith(b"0\r\n\r\n"):
            chunk = s.recv(4096)
            self.assertTrue(chunk, raw)
            raw += chunk
        self.assertEqual(raw.partition(b"\r\n\r\n")[2], b"1\r\na\r\n1\r\nb\r\n0\r\n\r\n")

    def test_a_writer_that_outruns_the_pump_gets_a_larger_pipe_and_exact_bytes(self):
        # A 1 MiB write wakes the pump only once the 256 KiB pipe is full,
        # so the pump's turn moves a whole pipe and grows it to 1 MiB. The
        # child reads its pipe's size after each block; the bytes that went
        # through the grown pipe must be exact from any cursor.
        child = ("import fcntl, sys\n"
                 "out = sys.stdout.buffer\n"
                 "for i in range(64):\n"
                 "    out.write(bytes([i]) * 65536 + bytes(range(256)) * 3840)\n"
                 "    out.flush()\n"
                 "    if fcntl.fcntl(1, 1032) >= 1 << 20: break\n"
                 "sys.stderr.write('%d %d' % (fcntl.fcntl(1, 1032), i + 1))\n")
        obj, out, err = run(self.daemon, "raw-6", {"argv": ["python3", "-c", child]})
        self.assertEqual(obj["exit_code"], 0, err)
        size, blocks = map(int, err.split())
        self.assertEqual(size, 1 << 20, "the pipe was not grown after %d MiB" % blocks)
        data = b"".join(bytes([i]) * 65536 + bytes(range(256)) * 3840 for i in range(blocks))
        self.assertEqual(out, data)
        middle = len(data) // 2 + 12345
        self.assertEqual(read_stream(self.daemon, "raw-6", "stdout", middle), data[middle:])
        status, headers, body = self.daemon.request(
            "GET", "/v1/execs/raw-6/stdout?from=%d&follow=1" % middle)
        self.assertEqual((status, headers["agentd-from"], body), (200, str(middle), data[middle:]))


class LiveFollowers:
    """Live raw followers, fed from their taps (a tee of the child's pipe)
    once caught up and from the spool file otherwise (mixed into a
    DaemonTestCase; run with and without the exec holder)."""

    def open_follower(self, exec_id, stream, cursor=0, rcvbuf=None):
        s = socket.socket()
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.connect(("127.0.0.1", self.daemon.port))
        s.settimeout(60)
        self.addCleanup(s.close)
        s.sendall(("GET /v1/execs/%s/%s?from=%d&follow=1 HTTP/1.1\r\nHost: x\r\n"
                   "Authorization: Bearer test-token\r\nConnection: close\r\n\r\n" %
                   (exec_id, stream, cursor)).encode())
        raw = b""
        while b"\r\n\r\n" not in raw:  # the head: the follower is live at its cursor
            chunk = s.recv(4096)
            self.assertTrue(chunk, raw)
            raw += chunk
        head, _, rest = raw.partition(b"\r\n\r\n")
        self.assertIn(b" 200 ", head.split(b"\r\n")[0])
        self.assertIn(b"agentd-from: %d" % cursor, head.lower())
        return s, [rest]

    def read_to_end(self, s, parts):
        while not b"".join(parts[-2:]).endswith(b"0\r\n\r\n"):
            chunk = s.recv(1 << 20)
            self.assertTrue(chunk, "cut after %d bytes" % sum(map(len, parts)))
            parts.append(chunk)
        body, out, at = b"".join(parts), [], 0
        while True:  # dechunk() by index: slicing a large body per chunk is quadratic
            eol = body.index(b"\r\n", at)
            size = int(body[at:eol], 16)
            if size == 0:
                return b"".join(out)
            out.append(body[eol + 2:eol + 2 + size])
            at = eol + 4 + size

    def read_payload(self, s, parts, n):
        """Receives until the stream's payload holds `n` bytes, in whole
        chunks; returns them and the parts left for read_to_end."""
        buf, at, out, got = b"".join(parts), 0, [], 0
        while got < n:
            eol = buf.find(b"\r\n", at)
            if eol >= 0:
                size = int(buf[at:eol], 16)
                self.assertNotEqual(size, 0, "the stream ended after %d bytes" % got)
                if len(buf) >= eol + 4 + size:
                    out.append(buf[eol + 2:eol + 2 + size])
                    got, at = got + size, eol + 4 + size
                    continue
            chunk = s.recv(1 << 20)
            self.assertTrue(chunk, "cut after %d bytes" % got)
            buf, at = buf[at:] + chunk, 0
        return b"".join(out), [buf[at:]]

    def assert_running(self, exec_id):
        status, obj = self.daemon.json("GET", "/v1/execs/" + exec_id)
        self.assertEqual((status, obj["state"]), (200, "running"))

    def live_follower_of_waiting_exec(self, name, command):
        # The exec waits for "go" on stdin until its follower is live (the
        # response head came), so its output passes through the tap.
        exec_id = "%s-%d" % (name, len(self.daemon_flags))
        start(self.daemon, exec_id, {"command": "read go; " + command, "stdin_stream": True})
        s, parts = self.open_follower(exec_id, "stdout", 0)
        self.daemon.json("POST", "/v1/execs/%s/stdin?offset=0" % exec_id, b"go\n")
        return exec_id, s, parts

    def test_a_prompt_reaches_its_follower_while_the_exec_waits_for_the_answer(self):
        # Small output is sent as it comes: a follower of a fast producer
        # batches its sends, but a prompt must not wait for more output.
        exec_id, s, parts = self.live_follower_of_waiting_exec(
            "prompt", "printf 'name? '; read name; printf 'hi %s' \"$name\"")
        got, parts = self.read_payload(s, parts, 6)
        self.assertEqual(got, b"name? ")
        self.assert_running(exec_id)  # the bytes came while the exec waits on stdin
        self.daemon.json("POST", "/v1/execs/%s/stdin?offset=3&eof=1" % exec_id, b"bob\n")
        self.assertEqual(self.read_to_end(s, parts), b"hi bob")

    def test_a_large_burst_then_a_pause_reaches_its_follower_while_the_exec_waits(self):
        # 100 KiB in one write is a fast producer's turn, less than a
        # batch: held, and sent when the hold's deadline passes, not when
        # the exec prints more or ends.
        burst = bytes(range(256)) * 400
        exec_id, s, parts = self.live_follower_of_waiting_exec(
            "burst", "python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 400); "
                     "sys.stdout.flush(); sys.stdin.readline(); print(\"end\")'")
        got, parts = self.read_payload(s, parts, len(burst))
        self.assertEqual(got, burst)
        self.assert_running(exec_id)
        self.daemon.json("POST", "/v1/execs/%s/stdin?offset=3&eof=1" % exec_id, b"x\n")
        self.assertEqual(self.read_to_end(s, parts), b"end\n")

    def test_a_fast_producer_is_streamed_whole_and_its_tail_comes_before_the_exec_ends(self):
        want = subprocess.run(["seq", "1", "6000000"], check=True, stdout=subprocess.PIPE).stdout
        exec_id, s, parts = self.live_follower_of_waiting_exec(
            "fast", "seq 1 6000000; read end; printf end")
        got, parts = self.read_payload(s, parts, len(want))
        self.assertEqual((len(got), hashlib.sha256(got).hexdigest()),
                         (len(want), hashlib.sha256(want).hexdigest()))
        self.assert_running(exec_id)  # the last batch did not wait for the exec's end
        self.daemon.json("POST", "/v1/execs/%s/stdin?offset=3&eof=1" % exec_id, b"x\n")
        self.assertEqual(self.read_to_end(s, parts), b"end")

    def test_followers_at_the_end_in_the_middle_stalled_and_of_stderr_each_get_their_exact_bytes(self):
        tmp, path, data = make_random_file(12 << 20, 21)
        self.addCleanup(shutil.rmtree, tmp)
        first = 3 << 20 | 4321  # printed before the followers come
        err_tmp, err_path, err_data = make_random_file(5 << 20, 22)
        self.addCleanup(shutil.rmtree, err_tmp)
        exec_id = "live-%d" % len(self.daemon_flags)
        start(self.daemon, exec_id, {
            "command": "head -c %d %s; read go; tail -c +%d %s; cat %s >&2" %
                       (first, path, first + 1, path, err_path),
            "stdin_stream": True})
        wait_until(lambda: self.daemon.json("GET", "/v1/execs/" + exec_id)[1]["stdout_bytes"]
                   == first, what="the first part printed")
        middle = first // 2 + 7
        followers = {
            "end": (self.open_follower(exec_id, "stdout", first), data[first:]),
            "start": (self.open_follower(exec_id, "stdout", 0), data),
            "middle": (self.open_follower(exec_id, "stdout", middle), data[middle:]),
            "stalled": (self.open_follower(exec_id, "stdout", first, rcvbuf=64 * 1024),
                        data[first:]),
            "stderr": (self.open_follower(exec_id, "stderr", 0), err_data),
        }
        bodies = {}

        def read(name):
            (s, parts), _ = followers[name]
            try:
                bodies[name] = self.read_to_end(s, parts)
            except Exception as e:  # reported by the comparison below
                bodies[name] = repr(e).encode()

        readers = [threading.Thread(target=read, args=(name,))
                   for name in followers if name != "stalled"]
        for t in readers:
            t.start()
        self.daemon.json("POST", "/v1/execs/%s/stdin?offset=0&eof=1" % exec_id, b"go\n")
        obj = wait_exit(self.daemon, exec_id)  # all printed while "stalled" read nothing
        self.assertEqual((obj["stdout_bytes"], obj["stderr_bytes"]), (len(data), len(err_data)))
        read("stalled")
        for t in readers:
            t.join(60)
        for name, (_, want) in followers.items():
            got = bodies[name]
            self.assertEqual((len(got), hashlib.sha256(got).hexdigest()),
                             (len(want), hashlib.sha256(want).hexdigest()), name)

    def test_a_pty_follower_gets_the_terminal_output_exactly(self):
        # A terminal's output reaches the spool by read(2) without the
        # holder (no tee: the tap stays empty) and through the holder's
        # pipe with it (teed): the follower's bytes are the log's either way.
        exec_id = "live-pty-%d" % len(self.daemon_flags)
        start(self.daemon, exec_id, {
            "command": "read go; i=0; while [ $i -lt 3000 ]; do echo line-$i-abcdefghijklmnop; "
                       "i=$((i+1)); done",
            "pty": {"rows": 24, "cols": 80}})
        s, parts = self.open_follower(exec_id, "stdout", 0)
        self.daemon.json("POST", "/v1/execs/%s/stdin?offset=0" % exec_id, b"go\n")
        body = self.read_to_end(s, parts)
        self.assertEqual(body, read_stream(self.daemon, exec_id, "stdout", 0))
        self.assertIn(b"line-2999-abcdefghijklmnop\r\n", body)


class LiveFollowersTest(LiveFollowers, DaemonTestCase):
    pass


class LiveFollowersWithoutHolderTest(LiveFollowers, DaemonTestCase):
    daemon_flags = ("--exec-holder", "off")


class EventStreamTest(DaemonTestCase):
    def test_events_carry_output_then_exit_with_both_cursors(self):
        start(self.daemon, "sse-1", {"command": "printf out; printf err >&2; exit 4"})
        out, err, exit_obj, gaps, _ = collect_sse(self.daemon, "sse-1")
        self.assertEqual((out, err, gaps), (b"out", b"err", []))
        self.assertEqual((exit_obj["exit_code"], exit_obj["stdout_bytes"],
                          exit_obj["stderr_bytes"]), (4, 3, 3))

    def test_random_cuts_and_last_event_id_resume_deliver_every_byte_once(self):
        tmp, path, data = make_random_file(16 << 20, 11)
        self.addCleanup(shutil.rmtree, tmp)
        start(self.daemon, "sse-2", {"command": "cat %s; cat %s >&2" % (path, path)})
        rng = random.Random(1234)
        out, err, exit_obj, gaps, reconnects = collect_sse(self.daemon, "sse-2", rng=rng,
                                                           cut_every=3 << 20)
        self.assertEqual(gaps, [])
        self.assertGreater(reconnects, 5)
        self.assertEqual(hashlib.sha256(out).digest(), hashlib.sha256(data).digest())
        self.assertEqual(hashlib.sha256(err).digest(), hashlib.sha256(data).digest())
        self.assertEqual(exit_obj["stdout_bytes"], len(data))

    def test_cuts_inside_events_at_every_small_offset(self):
        # Small events while the process runs, then larger ones: cuts land
        # inside every part of an event (event, data and id lines).
        start(self.daemon, "sse-3", {"command": "for i in $(seq 1 60); do echo $i; echo e$i >&2; "
                                                "sleep 0.01; done"})
        rng = random.Random(99)
        out, err, exit_obj, gaps, reconnects = collect_sse(self.daemon, "sse-3", rng=rng,
                                                           cut_every=800)
        self.assertEqual(out, b"".join(b"%d\n" % i for i in range(1, 61)))
        self.assertEqual(err, b"".join(b"e%d\n" % i for i in range(1, 61)))
        self.assertGreater(reconnects, 3)

    def test_last_event_id_wins_over_query_cursors(self):
        run(self.daemon, "sse-4", {"argv": ["printf", "abcdef"]})
        stream = SseEvents(self.daemon, "sse-4", last_event_id="4:0", query="?stdout_from=1")
        events = []
        while not stream.ended:
            events += stream.read_some()
        stream.cut()
        self.assertEqual(events[0][0], "stdout")
        self.assertIn('"offset":4', events[0][1])
        self.assertEqual(events[-1][0], "exit")
        self.assertEqual(events[-1][2], "6:0")
        self.assertEqual(stream.headers["content-type"], "text/event-stream")

    def test_keepalive_comment_on_a_quiet_stream(self):
        start(self.daemon, "sse-5", {"argv": ["sleep", "60"]})
        self.addCleanup(self.daemon.json, "POST", "/v1/execs/sse-5/kill", {"signal": "KILL"})
        s = socket.create_connection(("127.0.0.1", self.daemon.port))
        s.settimeout(40)
        s.sendall(b"GET /v1/execs/sse-5/events HTTP/1.1\r\nHost: x\r\n"
                  b"Authorization: Bearer test-token\r\n\r\n")
        data = b""
        while b": keepalive" not in data:
            chunk = s.recv(4096)
            self.assertTrue(chunk, data)
            data += chunk
        s.close()


class RetentionGapTest(unittest.TestCase):
    def test_small_caps_release_the_front_and_readers_get_explicit_gaps(self):
        with Daemon("--retention-stream-bytes", str(1 << 20)) as d:
            tmp, path, data = make_random_file(5 << 20, 3)
            self.addCleanup(shutil.rmtree, tmp)
            obj, _, _ = run(d, "gap-1", {"argv": ["cat", path]})
            self.assertEqual(obj["stdout_bytes"], len(data))
            self.assertEqual(obj["stdout_retained_from"], len(data) - (1 << 20))
            kept = obj["stdout_retained_from"]
            # Poll: the gap is a field; the bytes after it are exact.
            s, body = d.json("GET", "/v1/execs/gap-1?stdout_from=0&max_bytes=65536")
            self.assertEqual(body["stdout"]["gap"], {"from": 0, "to": kept})
            self.assertEqual(body["stdout"]["from"], kept)
            self.assertEqual(base64.b64decode(body["stdout"]["data_b64"]), data[kept:kept + 65536])
            # Raw: Agentd-From says where the bytes start.
            status, headers, raw = d.request("GET", "/v1/execs/gap-1/stdout?from=10")
            self.assertEqual((headers["agentd-from"], raw), (str(kept), data[kept:]))
            # SSE: a gap event, then the rest.
            out, _, exit_obj, gaps, _ = collect_sse(d, "gap-1")
            self.assertEqual(gaps, [{"stream": "stdout", "from": 0, "to": kept}])
            self.assertEqual(out[kept:], data[kept:])

    def test_a_reader_that_falls_behind_the_cap_gets_a_gap_event_mid_stream(self):
        with Daemon("--retention-stream-bytes", str(1 << 20)) as d:
            tmp, path, data = make_random_file(48 << 20, 9)
            self.addCleanup(shutil.rmtree, tmp)
            start(d, "gap-2", {"command": "read go; cat %s" % path, "stdin_stream": True})
            stream = SseEvents(d, "gap-2")
            d.json("POST", "/v1/execs/gap-2/stdin?offset=0&eof=1", b"go\n")
            got = bytearray()
            gaps = []
            slept = False
            while not stream.ended:
                for event, payload, eid in stream.read_some(4096 if not slept else 65536):
                    p = json.loads(payload)
                    if event == "gap":
                        self.assertEqual(p["from"], len(got))
                        gaps.append(p)
                        got += b"\0" * (p["to"] - p["from"])
                    elif event == "stdout":
                        self.assertEqual(p["offset"], len(got))
                        got += base64.b64decode(p["data_b64"])
                if got and not slept:
                    wait_exit(d, "gap-2")  # the reader sleeps while the child prints it all
                    slept = True
            stream.cut()
            # The reader slept while the child printed 48 MiB past a 1 MiB cap:
            # the loss is explicit, and every byte it did get is exact.
            self.assertTrue(gaps)
            # The last gap ends at most where retention ends: when the daemon
            # read an event past a gap before the child's last bytes pushed
            # retention on (the reader's socket had room), those bytes came
            # as data, checked byte for byte below.
            s, final = d.json("GET", "/v1/execs/gap-2")
            self.assertLessEqual(gaps[-1]["to"], final["stdout_retained_from"])
            self.assertEqual(len(got), len(data))
            start_at = 0
            for gap in gaps + [{"from": len(data), "to": len(data)}]:
                self.assertEqual(bytes(got[start_at:gap["from"]]), data[start_at:gap["from"]])
                start_at = gap["to"]

    def test_a_raw_follower_behind_the_cap_is_cut_and_told_on_reconnect(self):
        with Daemon("--retention-stream-bytes", str(1 << 20)) as d:
            tmp, path, data = make_random_file(48 << 20, 13)
            self.addCleanup(shutil.rmtree, tmp)
            start(d, "gap-3", {"command": "read go; cat %s" % path, "stdin_stream": True})
            s = socket.create_connection(("127.0.0.1", d.port))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            s.sendall(b"GET /v1/execs/gap-3/stdout?follow=1 HTTP/1.1\r\nHost: x\r\n"
                      b"Authorization: Bearer test-token\r\n\r\n")
            d.json("POST", "/v1/execs/gap-3/stdin?offset=0&eof=1", b"go\n")
            wait_exit(d, "gap-3")
            s.settimeout(30)
            raw = b""
            while True:
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                raw += chunk
            s.close()
            head, _, body = raw.partition(b"\r\n\r\n")
            self.assertIn(b"Agentd-From: 0", head)
            self.assertFalse(body.endswith(b"0\r\n\r\n"), "a cut stream has no final chunk")
            received = len(dechunk(body))
            self.assertLess(received, len(data))
            status, headers, rest = d.request("GET", "/v1/execs/gap-3/stdout?from=%d" % received)
            self.assertGreater(int(headers["agentd-from"]), received)
            self.assertEqual(rest, data[int(headers["agentd-from"]):])

    def test_total_cap_across_execs_keeps_small_outputs_whole(self):
        with Daemon("--retention-total-bytes", str(2 << 20)) as d:
            tmp, path, data = make_random_file(6 << 20, 5)
            self.addCleanup(shutil.rmtree, tmp)
            small, _, _ = run(d, "small", {"argv": ["printf", "keep me"]})
            big, _, _ = run(d, "big", {"argv": ["cat", path]})
            self.assertEqual(big["stdout_bytes"] - big["stdout_retained_from"], (2 << 20) - 7)
            s, small = d.json("GET", "/v1/execs/small?stdout_from=0")
            self.assertEqual(base64.b64decode(small["stdout"]["data_b64"]), b"keep me")
            s, health = d.json("GET", "/v1/health", auth=False)
            self.assertEqual(health["execs"], 2)


if __name__ == "__main__":
    unittest.main()
