"""The daemon's front door: bootstrap, auth, health, routing, HTTP hygiene."""

import http.client
import json
import os
import socket
import subprocess
import tempfile
import time
import unittest

from lib.agentd_test import (Daemon, DaemonTestCase, error_code, parse_raw_responses,
                             read_until_close)


class BootstrapTest(unittest.TestCase):
    def test_first_writer_wins_and_same_token_replays(self):
        with Daemon(bootstrap=False) as d:
            s, b = d.json("POST", "/v1/bootstrap", {"token": "t1", "env": {"A": "1"}}, auth=False)
            self.assertEqual((s, b["replayed"]), (200, False))
            s, b = d.json("POST", "/v1/bootstrap", {"token": "t1", "env": {"B": "2"}}, auth=False)
            self.assertEqual((s, b["replayed"]), (200, True))
            s, b = d.json("POST", "/v1/bootstrap", {"token": "t2"}, auth=False)
            self.assertEqual((s, error_code(b)), (409, "already_bootstrapped"))

    def test_budget_counts_raw_body_bytes_and_names_env_share(self):
        with Daemon(bootstrap=False) as d:
            token = "tok"
            # Exactly 4096 raw bytes is within the budget.
            prefix = b'{"token":"tok","env":{"K":"'
            suffix = b'"}}'
            exact = prefix + b"x" * (4096 - len(prefix) - len(suffix)) + suffix
            self.assertEqual(len(exact), 4096)
            status, _, body = d.request("POST", "/v1/bootstrap", exact, auth=False)
            self.assertEqual(status, 200, body)
        with Daemon(bootstrap=False) as d:
            over = prefix + b"x" * (4097 - len(prefix) - len(suffix)) + suffix
            s, b = d.json("POST", "/v1/bootstrap", over, auth=False)
            self.assertEqual((s, error_code(b)), (413, "payload_too_large"))
            self.assertEqual(b["error"]["size"], 4097)
            self.assertEqual(b["error"]["limit"], 4096)
            self.assertGreater(b["error"]["env_bytes"], 4000)
            # Refused means nothing was set.
            s, h = d.json("GET", "/v1/health", auth=False)
            self.assertFalse(h["bootstrapped"])
            del token

    def test_malformed_bootstrap_bodies_are_refused_by_code(self):
        with Daemon(bootstrap=False) as d:
            for body, code in [(b"{", "invalid_json"), (b'{"token": 5}', "invalid_request"),
                               (b'{"token": "a b"}', "invalid_request"),
                               (b'{"token": "t", "env": {"A=B": "x"}}', "invalid_request"),
                               (b'{"token": "t", "surprise": 1}', "invalid_request"),
                               (b"", "invalid_request")]:
                s, b = d.json("POST", "/v1/bootstrap", body, auth=False)
                self.assertEqual((s, error_code(b)), (400, code), body)
            s, h = d.json("GET", "/v1/health", auth=False)
            self.assertFalse(h["bootstrapped"])

    def test_token_file_starts_bootstrapped(self):
        tmp = tempfile.mkdtemp()
        path = os.path.join(tmp, "token")
        with open(path, "w") as f:
            f.write("from-file\n")
        os.chmod(path, 0o600)
        with Daemon("--token-file", path, token="from-file", bootstrap=False) as d:
            s, h = d.json("GET", "/v1/health", auth=False)
            self.assertTrue(h["bootstrapped"])
            s, b = d.json("POST", "/v1/bootstrap", {"token": "from-file"}, auth=False)
            self.assertEqual((s, b["replayed"]), (200, True))
            s, b = d.json("POST", "/v1/bootstrap", {"token": "other"}, auth=False)
            self.assertEqual(error_code(b), "already_bootstrapped")


class AuthTest(unittest.TestCase):
    def test_before_bootstrap_everything_but_health_is_not_bootstrapped(self):
        with Daemon(bootstrap=False) as d:
            status, headers, data = d.request("GET", "/v1/execs", auth=False)
            self.assertEqual((status, error_code(json.loads(data))), (401, "not_bootstrapped"))
            self.assertEqual(headers.get("www-authenticate"), "Bearer")
            s, _ = d.json("GET", "/v1/health", auth=False)
            self.assertEqual(s, 200)

    def test_missing_or_wrong_token_is_unauthorized(self):
        with Daemon() as d:
            # /v1/bootstrap with a missing token field is a bad request, but
            # every authenticated route refuses a missing or wrong token.
            for headers in [{}, {"Authorization": "Bearer wrong"},
                            {"Authorization": "Basic dGVzdA=="},
                            {"Authorization": "Bearer " + d.token + "x"}]:
                conn = d.connection()
                conn.request("GET", "/v1/execs", headers=headers)
                resp = conn.getresponse()
                body = json.loads(resp.read())
                self.assertEqual((resp.status, error_code(body)), (401, "unauthorized"), headers)


class HealthTest(DaemonTestCase):
    def test_health_has_every_contract_field(self):
        s, h = self.daemon.json("GET", "/v1/health", auth=False)
        self.assertEqual(s, 200)
        self.assertEqual(h["status"], "ok")
        self.assertEqual(h["protocol"], 1)
        self.assertIsInstance(h["version"], str)
        self.assertIs(h["bootstrapped"], True)
        self.assertIs(h["busy"], False)
        self.assertIsInstance(h["execs"], int)
        self.assertIsInstance(h["uptime_ms"], int)
        self.assertIsInstance(h["runtimes"], list)
        self.assertEqual(h["ack_ttl_sec"], 60)
        self.assertEqual(h["retention"], {"stream_bytes": 256 << 20, "total_bytes": 1 << 30})


class RoutingTest(DaemonTestCase):
    def test_unknown_route_is_404_json(self):
        s, b = self.daemon.json("GET", "/v1/no-such-thing")
        self.assertEqual((s, error_code(b)), (404, "route_not_found"))

    def test_wrong_method_is_405_json_with_allow(self):
        status, headers, data = self.daemon.request("DELETE", "/v1/health")
        self.assertEqual((status, error_code(json.loads(data))), (405, "method_not_allowed"))
        self.assertEqual(headers["allow"], "GET")

    def test_head_is_served_without_a_body(self):
        raw = self.daemon.raw(b"HEAD /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        head, _, rest = raw.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 200"))
        self.assertEqual(rest, b"")


class HttpHygieneTest(DaemonTestCase):
    daemon_flags = ("--header-timeout-ms", "1500", "--max-json-body-bytes", "65536")

    def test_oversized_header_is_431(self):
        raw = self.daemon.raw(b"GET /v1/health HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
        (status, _, body), = parse_raw_responses(raw)
        self.assertEqual(status, 431)
        self.assertEqual(json.loads(body)["error"]["limit"], 16384)

    def test_oversized_json_body_is_413_before_it_is_read(self):
        s, b = self.daemon.json("POST", "/v1/bootstrap", b"x" * 70000, auth=False)
        self.assertEqual((s, error_code(b)), (413, "payload_too_large"))
        self.assertEqual(b["error"]["limit"], 4096)

    def test_malformed_request_is_400_and_closes(self):
        raw = self.daemon.raw(b"G@T / HTTP/1.1\r\n\r\n")
        (status, headers, body), = parse_raw_responses(raw)
        self.assertEqual((status, error_code(json.loads(body))), (400, "invalid_request"))
        self.assertEqual(headers["connection"], "close")

    def test_slow_header_is_cut_off_at_the_header_deadline(self):
        s = socket.create_connection(("127.0.0.1", self.daemon.port))
        s.settimeout(10)
        start = time.monotonic()
        closed_after = None
        request = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 100
        try:
            for byte in request:  # one byte every 100 ms: steady, but never done
                s.sendall(bytes([byte]))
                time.sleep(0.1)
                if time.monotonic() - start > 6:
                    break
        except (BrokenPipeError, ConnectionResetError):
            closed_after = time.monotonic() - start
        data = read_until_close(s)
        closed_after = closed_after or (time.monotonic() - start)
        s.close()
        self.assertLess(closed_after, 5, "a trickled header must be cut off near 1.5 s")
        if data:
            self.assertIn(b"408", data.split(b"\r\n")[0])

    def test_idle_keep_alive_connection_serves_200_requests(self):
        conn = self.daemon.connection()
        for _ in range(200):
            conn.request("GET", "/v1/health")
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            json.loads(resp.read())
        conn.close()

    def test_pipelined_requests_are_answered_in_order(self):
        req = (b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
               b"GET /v1/nope HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer test-token\r\n\r\n"
               b"DELETE /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        responses = parse_raw_responses(self.daemon.raw(req))
        self.assertEqual([r[0] for r in responses], [200, 404, 405])

    def test_chunked_request_body_is_accepted(self):
        body = json.dumps({"token": self.daemon.token}).encode()
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        raw = self.daemon.raw(b"POST /v1/bootstrap HTTP/1.1\r\nHost: x\r\n"
                              b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunked)
        (status, _, data), = parse_raw_responses(raw)
        self.assertEqual(status, 200, data)
        self.assertTrue(json.loads(data)["replayed"])

    def test_expect_continue_gets_100_then_the_answer(self):
        body = json.dumps({"token": self.daemon.token}).encode()
        s = socket.create_connection(("127.0.0.1", self.daemon.port))
        s.settimeout(5)
        s.sendall(b"POST /v1/bootstrap HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                  b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body))
        interim = s.recv(1024)
        self.assertTrue(interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), interim)
        s.sendall(body)
        rest = interim[len(b"HTTP/1.1 100 Continue\r\n\r\n"):] + read_until_close(s)
        s.close()
        (status, _, _), = parse_raw_responses(rest)
        self.assertEqual(status, 200)

    def test_an_early_answer_reaches_a_client_that_sends_its_whole_body(self):
        # Regression: the daemon answered 404 before reading a 3 MB upload,
        # drained 256 KiB and closed; the unread bytes made the kernel reset
        # the connection, and a client that writes its whole body before
        # reading (Python's http.client) saw a broken pipe, not the 404.
        missing = os.path.join(tempfile.mkdtemp(prefix="agentd-linger-"), "no", "such")
        body_bytes = 16 * 1024 * 1024
        s = socket.create_connection(("127.0.0.1", self.daemon.port))
        s.settimeout(60)
        s.sendall(b"PUT /v1/fs/tar?path=%s HTTP/1.1\r\nHost: x\r\n"
                  b"Authorization: Bearer %s\r\nContent-Length: %d\r\n\r\n"
                  % (missing.encode(), self.daemon.token.encode(), body_bytes))
        chunk = b"\0" * (1024 * 1024)
        for _ in range(body_bytes // len(chunk)):
            s.sendall(chunk)  # raised BrokenPipeError/ConnectionResetError before
        data = read_until_close(s)
        s.close()
        (status, _, answer), = parse_raw_responses(data)
        self.assertEqual((status, error_code(json.loads(answer))), (404, "not_found"))

    def test_client_vanishing_mid_body_leaves_the_daemon_serving(self):
        s = socket.create_connection(("127.0.0.1", self.daemon.port))
        s.sendall(b"POST /v1/bootstrap HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"tok")
        s.close()
        status, _ = self.daemon.json("GET", "/v1/health")
        self.assertEqual(status, 200)


class ConnectionLimitTest(unittest.TestCase):
    def test_connections_beyond_the_limit_get_503(self):
        with Daemon("--max-connections", "4") as d:
            held = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(4)]
            time.sleep(0.2)
            raw = d.raw(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            (status, _, body), = parse_raw_responses(raw)
            self.assertEqual((status, error_code(json.loads(body))), (503, "too_many_connections"))
            self.assertEqual(json.loads(body)["error"]["limit"], 4)
            for s in held:
                s.close()
            time.sleep(0.2)
            s, _ = d.json("GET", "/v1/health")
            self.assertEqual(s, 200)


class TransportTest(unittest.TestCase):
    def test_unix_socket_listener_serves_the_api(self):
        tmp = tempfile.mkdtemp()
        path = os.path.join(tmp, "agentd.sock")
        with Daemon("--listen", "unix:" + path) as d:
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            s.settimeout(5)
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            (status, _, body), = parse_raw_responses(read_until_close(s))
            s.close()
            self.assertEqual(status, 200)
            self.assertTrue(json.loads(body)["bootstrapped"])
            self.assertIsNotNone(d.port)
        self.assertFalse(os.path.exists(path), "the socket file is removed on shutdown")

    def test_bad_listen_address_fails_start_with_a_message(self):
        from lib.agentd_test import AGENTD_BIN
        r = subprocess.run([AGENTD_BIN, "--listen", "example.com:80"], capture_output=True,
                           timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"numeric IP", r.stderr)


class ShutdownTest(unittest.TestCase):
    def test_sigterm_stops_accepting_and_exits_zero(self):
        d = Daemon()
        try:
            conn = d.connection()
            conn.request("GET", "/v1/health")
            conn.getresponse().read()
            self.assertEqual(d.stop(), 0)
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.1", d.port), timeout=2)
        finally:
            d.close()


class FlagsTest(unittest.TestCase):
    def test_help_and_version(self):
        from lib.agentd_test import AGENTD_BIN
        r = subprocess.run([AGENTD_BIN, "--help"], capture_output=True, timeout=10)
        self.assertEqual(r.returncode, 0)
        for flag in [b"--listen", b"--token-file", b"--state-dir", b"--ack-ttl-sec", b"--fs-root",
                     b"--workdir", b"--log-level"]:
            self.assertIn(flag, r.stdout)
        r = subprocess.run([AGENTD_BIN, "--version"], capture_output=True, timeout=10)
        self.assertEqual(r.returncode, 0)
        self.assertTrue(r.stdout.startswith(b"agentd "))

    def test_unknown_flag_exits_2_naming_it(self):
        from lib.agentd_test import AGENTD_BIN
        r = subprocess.run([AGENTD_BIN, "--frobnicate"], capture_output=True, timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--frobnicate", r.stderr)


if __name__ == "__main__":
    unittest.main()
