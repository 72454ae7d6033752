"""agentctl wait port|path|output against a live daemon: exit 0 when the
condition held, 1 when --for passed first (or the exec ended without a
match), the JSON envelope, and `wait ID` still waiting for an exit."""

import os
import shutil
import socket
import subprocess
import tempfile
import unittest

from test_agentctl_exec import AGENTCTL, AgentctlTestCase


class WaitCommandTest(AgentctlTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentctl-wait-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_wait_path_wakes_when_the_path_appears_and_when_it_is_gone(self):
        target = os.path.join(self.dir, "ready")
        self.assertEqual(self.ctl("wait", "--for", "0", "path", target).returncode, 1)
        # The file appears once agentctl is waiting (it needs a day to give up).
        ctl = subprocess.Popen([AGENTCTL, "wait", "path", target], stdout=subprocess.PIPE,
                               env=self.env)
        open(target, "w").close()
        out, _ = ctl.communicate(timeout=120)
        self.assertEqual((ctl.returncode, out.decode().strip()), (0, target + " exists"))
        r, env = self.envelope("wait", "--for", "0", "path", "--gone", target)
        self.assertEqual((r.returncode, env["result"]["met"]), (1, False))
        os.unlink(target)
        r, env = self.envelope("wait", "path", "--gone", target)
        self.assertEqual((r.returncode, env["result"]),
                         (0, {"path": target, "until": "gone", "met": True}))

    def test_wait_port_exits_by_whether_the_port_listens(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        try:
            r, env = self.envelope("wait", "--for", "0", "port", str(port))
            self.assertEqual((r.returncode, env["result"]), (1, {"port": port, "listening": False}))
            s.listen()
            r, env = self.envelope("wait", "port", str(port))
            self.assertEqual((r.returncode, env["result"]), (0, {"port": port, "listening": True}))
        finally:
            s.close()
        self.assertEqual(self.ctl("wait", "port", "0").returncode, 2)

    def test_wait_output_prints_the_match_or_why_there_is_none(self):
        r = self.ctl("start", "--id", "ctl-wait", "--", "sh", "-c", "echo booting; echo ready on 8080")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.ctl("wait", "output", "ctl-wait", r"ready on \d+")
        self.assertEqual((r.returncode, r.stdout.decode()), (0, "ready on 8080\n"), r.stderr)
        r, env = self.envelope("wait", "output", "ctl-wait", "never")
        self.assertEqual(r.returncode, 1)
        self.assertEqual((env["result"]["matched"], env["result"]["reason"]), (False, "exited"))
        # `wait ID` is still the wait for an exit.
        self.assertEqual(self.ctl("wait", "ctl-wait").returncode, 0)


if __name__ == "__main__":
    unittest.main()
