"""agentctl mcp --listen: the Streamable HTTP transport against a live
daemon, driven by the official MCP TypeScript SDK client (tests/mcp), plus
the transport's own rules: sessions, Origin, methods, the bearer token."""

import http.client
import json
import os
import re
import subprocess
import unittest

from test_agentctl_exec import AGENTCTL
from test_agentctl_mcp import TOOLS, McpTestCase, text_of


class McpHttpTestCase(McpTestCase):
    server_args = ()

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server = subprocess.Popen(
            [AGENTCTL, "mcp", "--listen", "127.0.0.1:0", *cls.server_args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=cls.mcp_env)
        line = cls.server.stderr.readline().decode()
        m = re.match(r"agentctl: listening on (http://127\.0\.0\.1:(\d+)/mcp)\n", line)
        assert m, line
        cls.url, cls.port = m.group(1), int(m.group(2))

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait(30)
        cls.server.stderr.close()
        super().tearDownClass()

    def post(self, body, headers=None, method="POST"):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            h = {"Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream"}
            h.update(headers or {})
            conn.request(method, "/mcp", body=body, headers=h)
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}}})


class McpHttpToolsTest(McpHttpTestCase):
    def test_sdk_client_over_streamable_http_calls_the_tools(self):
        out = self.sdk("tools", MCP_URL=self.url)
        self.assertEqual(sorted(t["name"] for t in out["tools"]), sorted(TOOLS))
        self.assertTrue(all(t["schemaOk"] is True for t in out["tools"]), out["tools"])
        with open(os.path.join(self.work, "a.txt")) as f:
            self.assertEqual(f.read(), "one\nTWO\nthree\n")
        self.assertEqual(text_of(out["read"]), "two\nthree\n")
        self.assertEqual(out["exec"]["structuredContent"]["exit_code"], 3)
        self.assertEqual(out["missing"]["structuredContent"]["error"]["code"], "not_found")
        with open(os.path.join(self.work, "runs")) as f:
            self.assertEqual(f.read(), "run\n")
        self.assertGreaterEqual(len(out["progress"]), 2, out["progress"])

    def test_cancelling_over_http_kills_the_exec(self):
        exec_id = "mcp-http-cancel-%d" % os.getpid()
        out = self.sdk("cancel", MCP_URL=self.url, MCP_EXEC_ID=exec_id)
        self.assertTrue(out["outcome"].startswith("aborted"), out)
        self.assertEqual(out["after"]["structuredContent"]["stdout"], "still here\n")
        record = self.exec_record(exec_id, wait_ms=30000)
        self.assertEqual((record["state"], record["signal"]), ("exited", "KILL"), record)


class McpHttpTransportTest(McpHttpTestCase):
    def initialize(self):
        status, headers, body = self.post(self.INIT, {"Accept": "application/json"})
        self.assertEqual(status, 200, body)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(json.loads(body)["result"]["protocolVersion"], "2025-11-25")
        return headers["mcp-session-id"]

    def test_a_session_starts_at_initialize_and_ends_at_delete(self):
        sid = self.initialize()
        self.assertRegex(sid, r"^[0-9a-f]{32}$")
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.assertEqual(self.post(note, {"Mcp-Session-Id": sid})[0], 202)
        ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        status, headers, body = self.post(ping, {"Mcp-Session-Id": sid})
        self.assertEqual((status, headers["content-type"]), (200, "text/event-stream"))
        events = [l[6:] for l in body.decode().splitlines() if l.startswith("data: ")]
        self.assertEqual([json.loads(e) for e in events],
                         [{"jsonrpc": "2.0", "id": 1, "result": {}}])
        self.assertEqual(self.post(ping)[0], 400)  # no session named
        self.assertEqual(self.post(ping, {"Mcp-Session-Id": "f" * 32})[0], 404)
        self.assertEqual(self.post("", {"Mcp-Session-Id": sid}, method="DELETE")[0], 200)
        self.assertEqual(self.post(ping, {"Mcp-Session-Id": sid})[0], 404)

    def test_a_foreign_origin_get_and_a_parse_error(self):
        status, _, _ = self.post(self.INIT, {"Origin": "http://evil.example"})
        self.assertEqual(status, 403)
        status, headers, _ = self.post(self.INIT, {"Origin": "http://localhost:3000",
                                                   "Accept": "application/json"})
        self.assertEqual(status, 200)
        self.assertIn("mcp-session-id", headers)
        self.assertEqual(self.post("", method="GET")[0], 405)
        status, _, body = self.post("{oops", {"Accept": "application/json"})
        self.assertEqual(json.loads(body)["error"]["code"], -32700)


class McpHttpTokenTest(McpHttpTestCase):
    @classmethod
    def setUpClass(cls):
        cls.http_token_path = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                           "agentd-mcp-http-token-%d" % os.getpid())
        with open(cls.http_token_path, "w") as f:
            f.write("http-secret\n")
        cls.server_args = ("--http-token-file", cls.http_token_path)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        os.unlink(cls.http_token_path)

    def test_the_bearer_token_is_required_when_configured(self):
        self.assertEqual(self.post(self.INIT)[0], 401)
        self.assertEqual(self.post(self.INIT, {"Authorization": "Bearer wrong"})[0], 401)
        status, _, _ = self.post(self.INIT, {"Authorization": "Bearer http-secret",
                                             "Accept": "application/json"})
        self.assertEqual(status, 200)

    def test_off_loopback_without_a_token_is_refused(self):
        r = subprocess.run([AGENTCTL, "mcp", "--listen", "0.0.0.0:0"], capture_output=True,
                           env=self.mcp_env, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--http-token-file", r.stderr)


if __name__ == "__main__":
    unittest.main()
