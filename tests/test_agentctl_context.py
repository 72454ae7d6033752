"""agentctl context against a live daemon: create, run (answered like
`agentctl run`: output, summary, exit code), list, reset, delete, and the
daemon's refusal once a limit ended the context."""

import shutil
import tempfile
import unittest

BUN = shutil.which("bun")

from test_agentctl_exec import AgentctlTestCase


class ContextCommandTest(AgentctlTestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="agentd-ctl-ctx-")
        self.addCleanup(shutil.rmtree, self.work, True)
    def test_a_context_keeps_names_between_runs_and_ends_on_delete(self):
        r, env = self.envelope("context", "create", "--cwd", self.work, "ctl-keep")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(env["result"]["state"], "ready")
        self.addCleanup(self.ctl, "context", "delete", "ctl-keep")
        r = self.ctl("context", "run", "ctl-keep", "n = 20")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.ctl("context", "run", "ctl-keep", "print(n + 1)")
        self.assertEqual((r.returncode, r.stdout), (0, b"21\n"))
        self.assertRegex(r.stderr.decode(), r"^agentctl: exit 0 in \d+ ms\n$")
        r = self.ctl("context", "run", "ctl-keep", "import sys\nsys.exit(4)")
        self.assertEqual(r.returncode, 4)
        r = self.ctl("context", "list")
        self.assertIn(b"ctl-keep  ready  python", r.stdout)
        r = self.ctl("context", "reset", "ctl-keep")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.ctl("context", "run", "ctl-keep", "print(n)")
        self.assertEqual(r.returncode, 1)
        self.assertIn("NameError", r.stderr.decode())
        r, env = self.envelope("context", "delete", "ctl-keep")
        self.assertEqual(env["result"]["ended_reason"], "deleted")

    @unittest.skipIf(BUN is None, "bun is not installed here")
    def test_a_ts_context_keeps_declarations_and_prints_its_exception(self):
        r = self.ctl("context", "create", "--runtime", "ts", "--cwd", self.work, "ctl-ts")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.addCleanup(self.ctl, "context", "delete", "ctl-ts")
        self.assertEqual(self.ctl("context", "run", "ctl-ts", "let n: number = 20;").returncode, 0)
        r = self.ctl("context", "run", "ctl-ts", "console.log(n + 1)")
        self.assertEqual((r.returncode, r.stdout), (0, b"21\n"))
        r = self.ctl("context", "run", "ctl-ts", "const o: any = JSON.parse('null');\nconsole.log(o.x)")
        self.assertEqual(r.returncode, 1)
        self.assertIn("TypeError", r.stderr.decode())
        self.assertIn("<cell 3> line 2", r.stderr.decode())
        self.assertIn(b"ctl-ts  ready  ts", self.ctl("context", "list").stdout)

    def test_a_limit_that_ends_the_context_is_named_and_later_runs_are_refused(self):
        self.assertEqual(self.ctl("context", "create", "--cwd", self.work, "ctl-slow").returncode, 0)
        self.addCleanup(self.ctl, "context", "delete", "ctl-slow")
        r = self.ctl("context", "run", "--timeout", "1", "ctl-slow", "import time; time.sleep(30)")
        self.assertEqual(r.returncode, 124)
        self.assertTrue(r.stderr.endswith(b"agentctl: killed: wall-clock limit 1s exceeded\n"),
                        r.stderr)
        r, env = self.envelope("context", "run", "ctl-slow", "print(1)")
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(env["error"]["code"], "context_gone")
        self.assertEqual(env["error"]["killed_by"], "timeout")

    def test_usage_errors_name_the_actions(self):
        r = self.ctl("context", "frobnicate", "x")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b"create, run, get, list, reset or delete", r.stderr)
        r = self.ctl("context", "run", "x")
        self.assertIn(b"context run ID CODE", r.stderr)


if __name__ == "__main__":
    unittest.main()
