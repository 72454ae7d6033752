"""agentctl reset, over the C++ client's Reset (docs/PROTOCOL.md, "Reuse")."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__)))
from lib.agentd_test import AGENTD_BIN, Daemon, new_token  # noqa: E402
from lib.exec_util import pid_alive, read_stream, start, wait_exit  # noqa: E402

AGENTCTL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(AGENTD_BIN))), "cli",
                        "agentctl")


def leave_a_sleeper(d):
    start(d, "bg", {"command": "setsid sleep 1000 > /dev/null & echo $!"})
    wait_exit(d, "bg")
    return int(read_stream(d, "bg"))


class AgentctlResetTest(unittest.TestCase):
    def setUp(self):
        self.d = Daemon()
        self.addCleanup(self.d.close)

    def test_agentctl_reset_installs_the_next_token_and_prints_one_envelope(self):
        d = self.d
        sleeper = leave_a_sleeper(d)
        nxt = new_token()
        with tempfile.NamedTemporaryFile("w", suffix=".token") as f:
            f.write(nxt + "\n")
            f.flush()
            env = dict(os.environ, AGENTD_URL="http://127.0.0.1:%d" % d.port,
                       AGENTD_TOKEN=d.token, NO_COLOR="1")
            r = subprocess.run([AGENTCTL, "--json", "reset", "--next-token-file", f.name,
                                "--env", "TENANT=b", "--id", "cli-reset-1"],
                               capture_output=True, env=env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        envelope = json.loads(r.stdout)
        self.assertTrue(envelope["ok"], envelope)
        report = envelope["result"]
        self.assertEqual((report["clean"], report["generation"]), (True, 1), report)
        self.assertGreaterEqual(report["killed_processes"], 1)
        self.assertFalse(pid_alive(sleeper))
        d.token = nxt
        start(d, "env", {"command": "echo $TENANT"})
        wait_exit(d, "env")
        self.assertEqual(read_stream(d, "env"), b"b\n")
        # A retry by the same id with the retired token answers the report.
        r = subprocess.run([AGENTCTL, "reset", "--id", "cli-reset-1"], capture_output=True,
                           env=env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"clean", r.stdout)


if __name__ == "__main__":
    unittest.main()
