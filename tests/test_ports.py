"""GET /v1/ports and GET /v1/ports/{port}/connect: listening ports, and raw
TCP tunnels through the daemon's port."""

import http.server
import socket
import threading
import unittest

from lib.agentd_test import Daemon, DaemonTestCase, error_code
from lib.echo_server import EchoServer, free_port


def open_tunnel(daemon, port, early=b"", token=None):
    """Returns (status line, head bytes, socket positioned after the head)."""
    sock = socket.create_connection(("127.0.0.1", daemon.port), timeout=10)
    token = daemon.token if token is None else token
    sock.sendall(("GET /v1/ports/%s/connect HTTP/1.1\r\nHost: guest\r\n"
                  "Authorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
                  % (port, token)).encode() + early)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)
        if not chunk:
            break
        head += chunk
    return head.split(b"\r\n")[0].decode(), head, sock


def recv_exactly(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


class PortsTest(DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.echo = EchoServer()

    @classmethod
    def tearDownClass(cls):
        cls.echo.shutdown()
        cls.echo.server_close()
        super().tearDownClass()

    def test_listening_ports_include_a_server_in_the_guest(self):
        status, body = self.daemon.json("GET", "/v1/ports")
        self.assertEqual(status, 200)
        found = [p for p in body["ports"] if p["port"] == self.echo.port]
        self.assertEqual(found, [{"port": self.echo.port, "address": "127.0.0.1",
                                  "family": "ipv4"}])
        # The daemon's own port is listed too.
        self.assertIn(self.daemon.port, [p["port"] for p in body["ports"]])

    def test_a_tunnel_relays_bytes_both_ways_and_passes_on_a_half_close(self):
        status, head, sock = open_tunnel(self.daemon, self.echo.port)
        with sock:
            self.assertEqual(status, "HTTP/1.1 101 Switching Protocols")
            self.assertIn(b"\r\nUpgrade: tcp\r\n", head)
            payload = bytes(range(256)) * 4096  # 1 MiB, every byte value
            sender = threading.Thread(target=sock.sendall, args=(payload,))
            sender.start()
            self.assertEqual(recv_exactly(sock, len(payload)), payload)
            sender.join()
            sock.shutdown(socket.SHUT_WR)
            self.assertEqual(recv_exactly(sock, 16), b"bye")

    def test_bytes_sent_right_behind_the_upgrade_request_are_relayed(self):
        status, _, sock = open_tunnel(self.daemon, self.echo.port, early=b"early-bytes")
        with sock:
            self.assertEqual(status, "HTTP/1.1 101 Switching Protocols")
            self.assertEqual(recv_exactly(sock, 11), b"early-bytes")

    def test_an_http_server_in_the_guest_is_reached_through_the_tunnel(self):
        class Hello(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = ("hello from %s" % self.path).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        status, _, sock = open_tunnel(self.daemon, server.server_address[1])
        with sock:
            self.assertEqual(status, "HTTP/1.1 101 Switching Protocols")
            sock.sendall(b"GET /page HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            reply = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                reply += chunk
        self.assertTrue(reply.startswith(b"HTTP/1.0 200"), reply)
        self.assertTrue(reply.endswith(b"hello from /page"), reply)

    def test_many_concurrent_tunnels_each_carry_their_own_bytes(self):
        results = {}

        def one(i):
            status, _, sock = open_tunnel(self.daemon, self.echo.port)
            with sock:
                data = ("tunnel-%d;" % i).encode() * 1000
                sock.sendall(data)
                results[i] = (status, recv_exactly(sock, len(data)) == data)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual(results, {i: ("HTTP/1.1 101 Switching Protocols", True)
                                   for i in range(64)})

    def test_a_closed_port_is_a_502_before_any_upgrade(self):
        port = free_port()
        status, _, sock = open_tunnel(self.daemon, port)
        sock.close()
        self.assertEqual(status, "HTTP/1.1 502 Bad Gateway")
        status, body = self.daemon.json(
            "GET", "/v1/ports/%d/connect" % port,
            headers={"Connection": "Upgrade", "Upgrade": "tcp"})
        self.assertEqual((status, error_code(body)), (502, "port_unreachable"))
        self.assertEqual(body["error"]["port"], port)

    def test_bad_ports_and_missing_upgrade_headers_are_refused(self):
        for bad in ("0", "65536", "http", "-1"):
            status, body = self.daemon.json("GET", "/v1/ports/%s/connect" % bad,
                                            headers={"Connection": "Upgrade", "Upgrade": "tcp"})
            self.assertEqual((status, error_code(body)), (400, "invalid_request"), bad)
        status, body = self.daemon.json("GET", "/v1/ports/%d/connect" % self.echo.port)
        self.assertEqual((status, error_code(body)), (400, "invalid_request"))
        status, body = self.daemon.json("GET", "/v1/ports/%d/connect" % self.echo.port,
                                        headers={"Connection": "Upgrade",
                                                 "Upgrade": "websocket"})
        self.assertEqual((status, error_code(body)), (400, "invalid_request"))

    def test_a_tunnel_needs_the_token(self):
        status, _, sock = open_tunnel(self.daemon, self.echo.port, token="wrong")
        sock.close()
        self.assertEqual(status, "HTTP/1.1 401 Unauthorized")


class TunnelLimitTest(unittest.TestCase):
    def test_tunnels_beyond_the_limit_are_refused_and_slots_come_back(self):
        echo = EchoServer()
        self.addCleanup(echo.server_close)
        self.addCleanup(echo.shutdown)
        with Daemon("--max-tunnels", "2") as d:
            first = [open_tunnel(d, echo.port) for _ in range(2)]
            self.assertEqual([t[0] for t in first],
                             ["HTTP/1.1 101 Switching Protocols"] * 2)
            status, _, sock = open_tunnel(d, echo.port)
            sock.close()
            self.assertEqual(status, "HTTP/1.1 503 Service Unavailable")
            for _, _, s in first:
                s.shutdown(socket.SHUT_WR)
                recv_exactly(s, 3)
                s.close()
            status = None
            for _ in range(50):
                status, _, sock = open_tunnel(d, echo.port)
                sock.close()
                if status.startswith("HTTP/1.1 101"):
                    break
            self.assertEqual(status, "HTTP/1.1 101 Switching Protocols")


if __name__ == "__main__":
    unittest.main()
