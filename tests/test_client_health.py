"""The clients' health() on a daemon that cannot take work (docs/CLIENT.md,
"Health"): a 503 that carries the daemon's health document is the answer,
with its status and reason, not an error. The Python client returns it and
agentctl (the C++ client) prints it, reason first, and exits 70 as for any
5xx; a serving daemon is the control (200, no reason, exit 0). The probe
side of the same daemon states is in test_health_probes."""

import json
import os
import signal
import socket
import subprocess
import time
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.agentd_test import Daemon
from lib.fs_helpers import url
from test_agentctl_exec import AGENTCTL
from test_health_probes import state_dir_made_a_file, until_health

import agentd_client as ac


class ClientHealthTest(unittest.TestCase):
    def clients(self, daemon):
        """(Health from the Python client, agentctl's exit code, its JSON
        result, its table)."""
        with ac.Client("http://127.0.0.1:%d" % daemon.port) as c:
            h = c.health()
        env = dict(os.environ, AGENTD_URL="http://127.0.0.1:%d" % daemon.port, NO_COLOR="1")
        r = subprocess.run([AGENTCTL, "--json", "health"], capture_output=True, env=env,
                           timeout=60)
        table = subprocess.run([AGENTCTL, "health"], capture_output=True, env=env, timeout=60)
        self.assertEqual(table.returncode, r.returncode, table.stderr)
        return h, r.returncode, json.loads(r.stdout)["result"], table.stdout.decode()

    def test_a_serving_daemon_is_ok_without_a_reason_and_agentctl_exits_0(self):
        with Daemon() as d:
            h, code, result, table = self.clients(d)
            self.assertEqual((h.status, h.reason, code, result["status"]), ("ok", "", 0, "ok"))
            self.assertNotIn("reason", result)
            self.assertNotIn("reason", table)

    def test_an_unwritable_state_dir_is_answered_with_its_reason_and_errno(self):
        with Daemon() as d:
            with state_dir_made_a_file(d):
                status, doc = until_health(d, 503)
                self.assertEqual(status, 503, doc)
                h, code, result, table = self.clients(d)
            self.assertEqual((h.status, h.errno), ("state_dir_unwritable", "ENOTDIR"))
            self.assertIn("Not a directory", h.reason)
            self.assertEqual((code, result["status"], result["errno"]),
                             (70, "state_dir_unwritable", "ENOTDIR"))
            self.assertIn("Not a directory", table)
            # Restored: the same clients answer ok again.
            self.assertEqual(until_health(d, 200)[0], 200)
            self.assertEqual(self.clients(d)[1], 0)

    def test_a_draining_daemon_is_answered_with_its_reason(self):
        d = Daemon("--shutdown-grace-ms", "600000")
        try:
            # An upload in flight holds the drain open until the test ends it.
            upload = socket.create_connection(("127.0.0.1", d.port))
            upload.settimeout(30)
            upload.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                            "Content-Length: 8\r\nExpect: 100-continue\r\n\r\n" %
                            (url("/v1/fs/file", path=os.path.join(d.tmp, "upload")),
                             d.token)).encode())
            self.assertEqual(upload.recv(100), b"HTTP/1.1 100 Continue\r\n\r\n")
            d.proc.send_signal(signal.SIGTERM)
            # Probed once the daemon says it drains (a connection that
            # raced the signal may be closed unanswered).
            while not any('"shutting down"' in line for line in d.logs()):
                self.assertIsNone(d.proc.poll(), "the daemon left before it drained")
                time.sleep(0.02)
            status, doc = until_health(d, 503)
            self.assertEqual((status, doc["status"]), (503, "draining"), doc)
            h, code, result, table = self.clients(d)
            self.assertEqual((h.status, h.reason), ("draining", doc["reason"]))
            self.assertIn("SIGTERM", h.reason)
            self.assertEqual((code, result["status"]), (70, "draining"))
            self.assertIn("SIGTERM", table)
            upload.sendall(b"12345678")
            self.assertTrue(upload.recv(4096).startswith(b"HTTP/1.1 20"))
            upload.close()
            self.assertEqual(d.proc.wait(30), 0)
        finally:
            d.close()


if __name__ == "__main__":
    unittest.main()
