"""The event stream's binary framing (docs/PROTOCOL.md, "Frames"): GET
/v1/execs/{id}/events with `Accept: application/vnd.agentd.frames` carries
the SSE route's events (stdout, stderr, gap, exit, keepalive) as 16-byte
big-endian headers and raw payload bytes, with the same cursors, order,
resume and errors."""

import json
import os
import shutil
import socket
import struct
import tempfile
import unittest

from lib.agentd_test import Daemon, DaemonTestCase
from lib.exec_util import run, start, wait_exit

FRAMES = "application/vnd.agentd.frames"
HEAD = struct.Struct(">BBHIQ")
OUTPUT, GAP, EXIT, KEEPALIVE = 1, 2, 3, 4
STREAMS = {1: "stdout", 2: "stderr"}


def parse_frames(body, whole=True):
    """[(kind, stream, offset, payload)] of a body; with whole, asserts it
    ends on a frame, else stops before a frame the body cuts off."""
    frames, pos = [], 0
    while pos < len(body):
        if not whole and len(body) - pos < HEAD.size:
            break
        kind, stream, zero, length, offset = HEAD.unpack_from(body, pos)
        assert zero == 0, zero
        payload = body[pos + HEAD.size:pos + HEAD.size + length]
        if not whole and len(payload) < length:
            break
        assert len(payload) == length, (len(payload), length)
        frames.append((kind, stream, offset, payload))
        pos += HEAD.size + length
    return frames


def random_file(test, size):
    """(path, bytes) of a new file of random bytes, removed after the test."""
    tmp = tempfile.mkdtemp()
    test.addCleanup(shutil.rmtree, tmp)
    path = os.path.join(tmp, "d")
    data = os.urandom(size)
    with open(path, "wb") as f:
        f.write(data)
    return path, data


def get_frames(d, exec_id, query="", headers=None):
    h = {"Accept": FRAMES}
    h.update(headers or {})
    return d.request("GET", "/v1/execs/%s/events%s" % (exec_id, query), headers=h, timeout=120)


def replay(test, frames, cursors=(0, 0)):
    """The bytes of each stream the frames carry from `cursors`, checking
    that offsets continue exactly; the gaps; the exit frame's exec object."""
    data = {"stdout": bytearray(), "stderr": bytearray()}
    nxt = {"stdout": cursors[0], "stderr": cursors[1]}
    gaps, exit_obj = [], None
    for kind, stream, offset, payload in frames:
        test.assertIsNone(exit_obj, "a frame after the exit frame")
        if kind == OUTPUT:
            name = STREAMS[stream]
            test.assertEqual(offset, nxt[name])
            test.assertLessEqual(len(payload), 131072)
            test.assertTrue(payload)
            data[name] += payload
            nxt[name] += len(payload)
        elif kind == GAP:
            name = STREAMS[stream]
            (to,) = struct.unpack(">Q", payload)
            test.assertEqual(offset, nxt[name])
            gaps.append({"stream": name, "from": offset, "to": to})
            nxt[name] = to
        elif kind == EXIT:
            test.assertEqual((stream, offset), (0, 0))
            exit_obj = json.loads(payload)
    return bytes(data["stdout"]), bytes(data["stderr"]), gaps, exit_obj


class FramesTest(DaemonTestCase):
    # Interleaved: many small writes of each stream, and runs longer than
    # one frame (131072 bytes) so both streams span several frames.
    MIXED = ("i=0; while [ $i -lt 40 ]; do head -c 3000 /dev/urandom; "
             "head -c 1700 /dev/urandom >&2; i=$((i+1)); done; "
             "head -c 300000 /dev/urandom; head -c 200000 /dev/urandom >&2; exit 3")

    def raw(self, exec_id, stream):
        status, _, body = self.daemon.request("GET", "/v1/execs/%s/%s" % (exec_id, stream))
        self.assertEqual(status, 200)
        return body

    def test_frames_carry_exactly_the_raw_routes_bytes_of_interleaved_stdout_and_stderr(self):
        start(self.daemon, "fr-1", {"command": self.MIXED})
        # Read while it runs: the stream follows the exec to its exit.
        status, headers, body = get_frames(self.daemon, "fr-1")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], FRAMES)
        frames = parse_frames(body)
        out, err, gaps, exit_obj = replay(self, frames)
        self.assertEqual(frames[-1][0], EXIT)
        self.assertEqual((len(out), len(err)), (40 * 3000 + 300000, 40 * 1700 + 200000))
        self.assertEqual(out, self.raw("fr-1", "stdout"))
        self.assertEqual(err, self.raw("fr-1", "stderr"))
        self.assertEqual(gaps, [])
        self.assertEqual((exit_obj["id"], exit_obj["state"], exit_obj["exit_code"]),
                         ("fr-1", "exited", 3))
        self.assertEqual((exit_obj["stdout_bytes"], exit_obj["stderr_bytes"]), (len(out), len(err)))
        kinds = {(k, s) for k, s, _, _ in frames}
        self.assertTrue({(OUTPUT, 1), (OUTPUT, 2)} <= kinds)

    def test_sse_stays_the_default_and_for_clients_that_ask_for_it(self):
        run(self.daemon, "fr-2", {"argv": ["printf", "abc"]})
        for accept in (None, "text/event-stream", "*/*"):
            status, headers, body = self.daemon.request(
                "GET", "/v1/execs/fr-2/events", headers={"Accept": accept} if accept else None)
            self.assertEqual(headers["content-type"], "text/event-stream", accept)
            self.assertIn(b"event: exit", body)
        # Listed among others, frames are chosen.
        status, headers, body = get_frames(self.daemon, "fr-2",
                                           headers={"Accept": FRAMES + ", text/event-stream"})
        self.assertEqual(headers["content-type"], FRAMES)
        self.assertEqual(replay(self, parse_frames(body))[0], b"abc")

    def test_resume_from_cursors_gives_every_remaining_byte_exactly_once(self):
        run(self.daemon, "fr-3", {"command": self.MIXED})
        out, err = self.raw("fr-3", "stdout"), self.raw("fr-3", "stderr")
        for cursors in ((12345, 777), (len(out), 0), (131072, len(err) - 1)):
            with self.subTest(cursors=cursors):
                # The query's cursors, and Last-Event-ID (which wins over them).
                for query, extra in (("?stdout_from=%d&stderr_from=%d" % cursors, None),
                                     ("?stdout_from=1", {"Last-Event-ID": "%d:%d" % cursors})):
                    status, _, body = get_frames(self.daemon, "fr-3", query, extra)
                    self.assertEqual(status, 200)
                    got_out, got_err, _, exit_obj = replay(self, parse_frames(body), cursors)
                    self.assertEqual(got_out, out[cursors[0]:])
                    self.assertEqual(got_err, err[cursors[1]:])
                    self.assertEqual(exit_obj["exit_code"], 3)

    def test_a_stream_cut_mid_frame_resumes_from_the_last_whole_frame(self):
        path, data = random_file(self, 3 << 20)
        start(self.daemon, "fr-4", {"argv": ["cat", path]})
        got, cursor, cuts = bytearray(), 0, 0
        while True:
            # A raw socket read of part of the stream, cut mid-frame; the
            # cursor moves only past whole frames, as a client's does.
            s = socket.create_connection(("127.0.0.1", self.daemon.port))
            s.settimeout(60)
            s.sendall(b"GET /v1/execs/fr-4/events?stdout_from=%d HTTP/1.1\r\nHost: x\r\n"
                      b"Accept: %s\r\nAuthorization: Bearer test-token\r\n"
                      b"Connection: close\r\n\r\n" % (cursor, FRAMES.encode()))
            raw = b""
            while len(raw) < 700000:
                chunk = s.recv(65536)
                if not chunk:
                    break
                raw += chunk
            s.close()
            head, _, chunked = raw.partition(b"\r\n\r\n")
            self.assertIn(b"Content-Type: " + FRAMES.encode(), head)
            frames = parse_frames(dechunk(chunked), whole=False)
            out, _, _, exit_obj = replay(self, frames, (cursor, 0))
            got += out
            cursor += len(out)
            if exit_obj is not None:
                break
            cuts += 1
            self.assertLess(cuts, 100)
        self.assertGreater(cuts, 1)
        self.assertEqual(bytes(got), data)

    def test_a_gap_frame_when_retention_dropped_bytes(self):
        with Daemon("--retention-stream-bytes", str(1 << 20)) as d:
            path, data = random_file(self, 5 << 20)
            obj, _, _ = run(d, "fr-5", {"argv": ["cat", path]})
            kept = obj["stdout_retained_from"]
            self.assertGreater(kept, 0)
            status, _, body = get_frames(d, "fr-5")
            frames = parse_frames(body)
            self.assertEqual(frames[0], (GAP, 1, 0, struct.pack(">Q", kept)))
            out, _, gaps, exit_obj = replay(self, frames)
            self.assertEqual(gaps, [{"stream": "stdout", "from": 0, "to": kept}])
            self.assertEqual(out, data[kept:])
            self.assertEqual(exit_obj["stdout_retained_from"], kept)
            # A cursor inside the dropped range: the gap starts at it.
            status, _, body = get_frames(d, "fr-5", "?stdout_from=1000")
            self.assertEqual(parse_frames(body)[0], (GAP, 1, 1000, struct.pack(">Q", kept)))

    def test_a_bad_cursor_is_the_same_400_as_the_sse_form(self):
        run(self.daemon, "fr-6", {"argv": ["printf", "abc"]})
        cases = [("?stdout_from=4", None), ("?stderr_from=1", None), ("?stdout_from=x", None),
                 ("", {"Last-Event-ID": "nope"}), ("?format=frames", None)]
        for query, extra in cases:
            with self.subTest(query=query, extra=extra):
                sse = self.daemon.request("GET", "/v1/execs/fr-6/events" + query, headers=extra)
                frames = get_frames(self.daemon, "fr-6", query, extra)
                self.assertEqual(sse[0], 400)
                self.assertEqual((frames[0], frames[2]), (sse[0], sse[2]))
                self.assertEqual(json.loads(frames[2])["error"]["code"], "invalid_request")
        status, _, body = get_frames(self.daemon, "fr-nope")
        self.assertEqual(status, 404)

    def test_head_answers_the_frames_type_without_a_body(self):
        run(self.daemon, "fr-7", {"argv": ["true"]})
        raw = self.daemon.raw(b"HEAD /v1/execs/fr-7/events HTTP/1.1\r\nHost: x\r\nAccept: %s\r\n"
                              b"Authorization: Bearer test-token\r\nConnection: close\r\n\r\n"
                              % FRAMES.encode())
        head, _, rest = raw.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
        self.assertIn(b"Content-Type: " + FRAMES.encode(), head)
        self.assertEqual(rest, b"")

    def test_the_exit_frame_comes_last_after_a_quiet_exec_ends(self):
        start(self.daemon, "fr-8", {"command": "read x; printf %s \"$x\"", "stdin_stream": True})
        s = socket.create_connection(("127.0.0.1", self.daemon.port))
        s.settimeout(60)
        s.sendall(b"GET /v1/execs/fr-8/events HTTP/1.1\r\nHost: x\r\nAccept: %s\r\n"
                  b"Authorization: Bearer test-token\r\nConnection: close\r\n\r\n"
                  % FRAMES.encode())
        self.daemon.json("POST", "/v1/execs/fr-8/stdin?offset=0&eof=1", b"hello\n")
        wait_exit(self.daemon, "fr-8")
        raw = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
        s.close()
        frames = parse_frames(dechunk(raw.partition(b"\r\n\r\n")[2]))
        self.assertEqual([f for f in frames if f[0] == OUTPUT], [(OUTPUT, 1, 0, b"hello")])
        self.assertEqual(frames[-1][0], EXIT)
        self.assertEqual(json.loads(frames[-1][3])["exit_code"], 0)


def dechunk(body):
    """The payload of a chunked body, as far as it is complete."""
    out = bytearray()
    while True:
        line, sep, rest = body.partition(b"\r\n")
        if not sep:
            return bytes(out)
        size = int(line, 16)
        if size == 0:
            return bytes(out)
        out += rest[:size]
        if len(rest) < size + 2:
            return bytes(out)
        body = rest[size + 2:]


if __name__ == "__main__":
    unittest.main()
