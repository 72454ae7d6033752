"""Version negotiation of the Python client (docs/CLIENT.md, "Version
negotiation"): on first use it reads `protocol` from /v1/health, refuses a
daemon of another protocol major with ProtocolMismatch naming both versions
before sending the call, and keeps working with a newer minor (unknown
health fields, a newer version, a "1.x" protocol). The daemon reports only
its own protocol, so a small HTTP server stands in for one of another
version; the real daemon shows the ordinary case."""

import asyncio
import http.server
import json
import threading
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.agentd_test import Daemon

import agentd_client as ac
from agentd_client.aio import AsyncClient


class VersionedDaemon(http.server.ThreadingHTTPServer):
    """Answers /v1/health with `health` and /v1/ports with an empty list that
    carries a field no client knows; counts the requests of each path."""
    daemon_threads = True

    def __init__(self, health, health_status=200):
        super().__init__(("127.0.0.1", 0), VersionedHandler)
        self.health = health
        self.health_status = health_status
        self.seen = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]


class VersionedHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = self.path.split("?")[0]
        self.server.seen.append(path)
        if path == "/v1/health":
            body = self.server.health
        elif path == "/v1/ports":
            body = {"ports": [{"port": 8000, "address": "127.0.0.1", "family": "ipv4",
                               "owner": "added in a later minor"}], "since": "later"}
        else:
            body = {"error": {"code": "route_not_found", "message": "no"}}
        data = json.dumps(body).encode()
        status = 200 if "error" not in body else 404
        self.send_response(self.server.health_status if path == "/v1/health" else status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def health(protocol, version="0.1.0", **extra):
    doc = {"status": "ok", "version": version, "protocol": protocol, "bootstrapped": True,
           "busy": False, "execs": 0, "uptime_ms": 1, "runtimes": ["shell"],
           "ack_ttl_sec": 60, "retention": {"stream_bytes": 1, "total_bytes": 1}}
    doc.update(extra)
    return doc


class ClientProtocolTest(unittest.TestCase):
    def fake(self, doc, health_status=200, **client_options):
        server = VersionedDaemon(doc, health_status)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        c = ac.Client(server.url, token="t", **client_options)
        self.addCleanup(c.close)
        return server, c

    def test_a_daemon_of_another_protocol_major_is_refused_naming_both(self):
        server, c = self.fake(health(2, version="2.0.0"))
        with self.assertRaises(ac.ProtocolMismatch) as cm:
            c.list_ports()
        e = cm.exception
        self.assertIn("protocol 2", str(e))
        self.assertIn("protocol 1", str(e))
        self.assertIn("2.0.0", str(e))
        self.assertEqual((e.code, e.details["daemon_protocol"], e.details["client_protocol"]),
                         ("protocol_mismatch", 2, 1))
        # Refused before the call was sent, and remembered: no second health.
        with self.assertRaises(ac.ProtocolMismatch):
            c.open_tunnel(8000)
        self.assertEqual(server.seen, ["/v1/health"])
        # Health itself answers whatever the daemon speaks.
        self.assertEqual(c.health().protocol, 2)

    def test_the_asyncio_client_refuses_the_same_way(self):
        server = VersionedDaemon(health(0))
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)

        async def main():
            async with AsyncClient(server.url, token="t") as guest:
                await guest.list_execs()
        with self.assertRaises(ac.ProtocolMismatch):
            asyncio.run(main())
        self.assertEqual(server.seen, ["/v1/health"])

    def test_a_newer_minor_keeps_working(self):
        server, c = self.fake(health(1, version="1.9.0", features={"later": True},
                                     state="ready-for-more"))
        ports = c.list_ports()
        self.assertEqual([p.port for p in ports], [8000])
        c.list_ports()
        # One health check on first use, not one per call.
        self.assertEqual(server.seen, ["/v1/health", "/v1/ports", "/v1/ports"])

    def test_a_dotted_protocol_is_read_by_its_major(self):
        _, c = self.fake(health("1.4"))
        self.assertEqual(len(c.list_ports()), 1)
        _, c = self.fake(health("3.0"))
        with self.assertRaises(ac.ProtocolMismatch):
            c.list_ports()

    def test_a_503_health_carrying_the_daemons_document_is_answered_at_once(self):
        doc = health(1, status="state_dir_unwritable", errno="EROFS",
                     reason="cannot write /state/.write-probe: Read-only file system")
        server, c = self.fake(doc, 503)
        h = c.health()
        self.assertEqual((h.status, h.errno), ("state_dir_unwritable", "EROFS"))
        self.assertIn("Read-only file system", h.reason)
        self.assertEqual(server.seen, ["/v1/health"], "answered once, not retried")
        # The asyncio client answers the same.
        async def ask():
            async with AsyncClient(server.url, token="t") as a:
                return await a.health()
        self.assertEqual(asyncio.run(ask()).status, "state_dir_unwritable")

    def test_a_503_health_without_the_daemons_document_still_raises(self):
        for doc in ({"message": "no healthy upstream"}, health(1, status="draining")):
            with self.subTest(doc=doc):
                server, c = self.fake(doc, 503, max_attempts=2, backoff_initial=0.005)
                with self.assertRaises(ac.AgentdError) as raised:
                    c.health()
                self.assertEqual(raised.exception.status, 503)
                self.assertEqual(len(server.seen), 2, "retried like any 503")

    def test_the_real_daemon_speaks_this_clients_protocol(self):
        daemon = Daemon()
        self.addCleanup(daemon.close)
        c = ac.Client("http://127.0.0.1:%d" % daemon.port, token="test-token")
        self.addCleanup(c.close)
        self.assertEqual(c.run(["echo", "ok"]).stdout, b"ok\n")
        self.assertEqual(c.health().protocol, 1)


if __name__ == "__main__":
    unittest.main()
