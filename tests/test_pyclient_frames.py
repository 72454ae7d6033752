"""The Python client's output stream over the event stream's binary frames
(docs/PROTOCOL.md, "Frames"): it asks for frames, yields exactly the bytes
the raw route holds, resumes through cut connections, falls back to SSE
when an older daemon answers text/event-stream, and refuses a frame longer
than the documented bounds before reading it."""

import asyncio
import http.server
import json
import random
import socketserver
import struct
import threading
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.cutting_proxy import CuttingProxy
from lib.pyclient_case import DaemonPerClassCase

import agentd_client as ac
from agentd_client.aio import AsyncClient

FRAMES = "application/vnd.agentd.frames"
# Interleaved stdout and stderr, with runs longer than one frame.
MIXED = ("i=0; while [ $i -lt 30 ]; do head -c 2500 /dev/urandom; head -c 900 /dev/urandom >&2; "
         "i=$((i+1)); done; head -c 400000 /dev/urandom; head -c 150000 /dev/urandom >&2")


def frame(kind, stream, offset, payload):
    return struct.pack(">BBHIQ", kind, stream, 0, len(payload), offset) + payload


def collect(events):
    out = {"stdout": bytearray(), "stderr": bytearray()}
    final = None
    for ev in events:
        if isinstance(ev, ac.OutputEvent):
            out[ev.kind] += ev.data
        elif isinstance(ev, ac.ExitEvent):
            final = ev
    return bytes(out["stdout"]), bytes(out["stderr"]), final


def record_opens(client):
    """(request Accept, answer Content-Type) of every request the client opens."""
    seen = []
    inner = client._t.open

    def open_(req):
        resp = inner(req)
        seen.append((req.headers.get("Accept"), resp.headers.get("content-type")))
        return resp
    client._t.open = open_
    return seen


class PyClientFramesTest(DaemonPerClassCase):
    def client(self, url=None, **kw):
        c = ac.Client(url or self.url, token="test-token", **kw)
        self.addCleanup(c.close)
        return c

    def test_stream_asks_for_frames_and_yields_the_raw_routes_bytes(self):
        c = self.client()
        exec_id = ac.mint_exec_id("frames")
        c.start_exec(exec_id, ["sh", "-c", MIXED])
        seen = record_opens(c)
        out, err, final = collect(c.stream(exec_id))
        self.assertEqual(seen, [(FRAMES + ", text/event-stream", FRAMES)])
        self.assertEqual((len(out), len(err)), (30 * 2500 + 400000, 30 * 900 + 150000))
        self.assertEqual(out, c.read_output(exec_id, "stdout").data)
        self.assertEqual(err, c.read_output(exec_id, "stderr").data)
        self.assertEqual(final.exec.exit_code, 0)
        self.assertEqual(final.cursors, ac.Cursors(len(out), len(err)))
        # From cursors mid-stream: the rest, once.
        out2, err2, _ = collect(c.stream(exec_id, ac.Cursors(150001, 7)))
        self.assertEqual((out2, err2), (out[150001:], err[7:]))

        async def aio():
            async with AsyncClient(self.url, token="test-token") as guest:
                return collect([ev async for ev in guest.stream(exec_id)])
        self.assertEqual(asyncio.run(aio())[:2], (out, err))

    def test_stream_of_frames_delivers_every_byte_once_through_cut_connections(self):
        rng = random.Random(3)
        proxy = CuttingProxy(self.daemon.port, budget=lambda: rng.randint(1, 300000))
        self.addCleanup(proxy.close)
        c = self.client(url=proxy.url, backoff_initial=0.005, backoff_max=0.05,
                        max_stream_reconnects=50)
        exec_id = ac.mint_exec_id("frcut")
        c.start_exec(exec_id, ["sh", "-c", MIXED])
        seen = record_opens(c)
        out, err, final = collect(c.stream(exec_id))
        direct = self.client()
        self.assertEqual(out, direct.read_output(exec_id, "stdout").data)
        self.assertEqual(err, direct.read_output(exec_id, "stderr").data)
        self.assertEqual(final.exec.exit_code, 0)
        self.assertGreater(proxy.cuts, 3)
        self.assertEqual({t for _, t in seen}, {FRAMES})


class FakeDaemon:
    """Answers /v1/health (protocol 1) and the event stream with a fixed
    Content-Type and body; records the Accept of each events request."""

    def __init__(self, content_type, body):
        fake = self
        self.accepts = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 (http.server's name)
                if self.path.startswith("/v1/health"):
                    doc = json.dumps({"status": "ok", "protocol": 1}).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(doc)))
                    self.end_headers()
                    self.wfile.write(doc)
                    return
                fake.accepts.append(self.headers.get("Accept"))
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


EXIT_DOC = {"id": "fake-1", "state": "exited", "exit_code": 0, "stdout_bytes": 5}


class PyClientFramesFakeDaemonTest(unittest.TestCase):
    def fake(self, content_type, body):
        d = FakeDaemon(content_type, body)
        self.addCleanup(d.close)
        c = ac.Client(d.url, token="t", max_stream_reconnects=0)
        self.addCleanup(c.close)
        return d, c

    def test_an_older_daemon_answering_sse_is_read_as_sse(self):
        sse = (b'event: stdout\ndata: {"offset":0,"data_b64":"aGVsbG8="}\nid: 5:0\n\n'
               b"event: exit\ndata: " + json.dumps(EXIT_DOC).encode() + b"\nid: 5:0\n\n")
        d, c = self.fake("text/event-stream", sse)
        events = list(c.stream("fake-1"))
        self.assertEqual(d.accepts, [FRAMES + ", text/event-stream"])
        self.assertEqual([(e.kind, e.data) for e in events[:-1]], [("stdout", b"hello")])
        self.assertEqual((events[-1].exec.exit_code, events[-1].cursors), (0, ac.Cursors(5, 0)))

    def test_frames_from_a_fake_daemon_give_output_gap_and_exit(self):
        body = (frame(2, 1, 0, struct.pack(">Q", 3)) + frame(4, 0, 0, b"") +
                frame(1, 1, 3, b"lo") + frame(1, 2, 0, b"E") + frame(9, 0, 0, b"future") +
                frame(3, 0, 0, json.dumps(EXIT_DOC).encode()))
        d, c = self.fake(FRAMES, body)
        events = list(c.stream("fake-1"))
        gap, out, err, final = events
        self.assertEqual((gap.kind, gap.stream, gap.start, gap.end), ("gap", "stdout", 0, 3))
        self.assertEqual((out.kind, out.offset, out.data), ("stdout", 3, b"lo"))
        self.assertEqual((err.kind, err.offset, err.data), ("stderr", 0, b"E"))
        self.assertEqual((final.exec.exit_code, final.cursors), (0, ac.Cursors(5, 1)))

    def test_a_frame_over_the_documented_bound_is_a_protocol_error(self):
        for kind, length in ((1, 131073), (3, (1 << 20) + 1), (1, 0xFFFFFFFF), (2, 9)):
            with self.subTest(kind=kind, length=length):
                # The header alone: the client must refuse before waiting for
                # (or allocating) the payload it announces.
                head = struct.pack(">BBHIQ", kind, 1, 0, length, 0)
                d, c = self.fake(FRAMES, head)
                with self.assertRaises(ac.ProtocolError) as cm:
                    list(c.stream("fake-1"))
                if kind != 2:
                    self.assertEqual(cm.exception.details["length"], length)


class FrameDecoderTest(unittest.TestCase):
    def test_frames_split_at_every_byte_decode_alike(self):
        from agentd_client._frames import FrameDecoder
        wire = (frame(1, 1, 0, bytes(range(256)) * 512) + frame(1, 2, 0, b"x") +
                frame(4, 0, 0, b"") + frame(3, 0, 0, b"{}"))
        want = FrameDecoder().feed(wire)
        self.assertEqual([f[0] for f in want], [1, 1, 4, 3])
        for step in (1, 5, 16, 17, 4096, 131088):
            dec, got = FrameDecoder(), []
            for i in range(0, len(wire), step):
                got += dec.feed(wire[i:i + step])
            self.assertEqual(got, want, step)


if __name__ == "__main__":
    unittest.main()
