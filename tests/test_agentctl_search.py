"""agentctl grep and agentctl glob against a live daemon: grep's lines and
exit codes (0 matched, 1 nothing matched, 65 a bad pattern), the JSON
envelope, and glob's sorted paths."""

import os
import shutil
import tempfile
import unittest

from test_agentctl_exec import AgentctlTestCase


class SearchCommandsTest(AgentctlTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentctl-search-")
        for rel, text in (("a.c", "int x;\nint needle;\n"), ("b.h", "needle\n"),
                          ("build/gen.c", "needle\n"), (".gitignore", "build/\n")):
            p = os.path.join(self.dir, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_grep_prints_path_line_text_and_exits_by_whether_it_matched(self):
        r = self.ctl("grep", "needle", self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.decode().splitlines(),
                         [self.dir + "/a.c:2:int needle;", self.dir + "/b.h:1:needle"])
        self.assertEqual(self.ctl("grep", "absent", self.dir).returncode, 1)
        r = self.ctl("grep", "--no-ignore", "--glob", "*.c", "needle", self.dir)
        self.assertEqual(r.stdout.decode().splitlines(),
                         [self.dir + "/a.c:2:int needle;", self.dir + "/build/gen.c:1:needle"])
        r = self.ctl("grep", "--context", "1", "needle", self.dir + "/a.c")
        self.assertEqual(r.stdout.decode().splitlines(),
                         [self.dir + "/a.c-1-int x;", self.dir + "/a.c:2:int needle;", "--"])

    def test_grep_json_envelope_and_a_bad_pattern(self):
        r, env = self.envelope("grep", "--max-results", "1", "needle", self.dir)
        self.assertEqual(len(env["result"]["matches"]), 1)
        self.assertEqual(env["result"]["summary"]["bound"], "results")
        r, env = self.envelope("grep", "a(b", self.dir)
        self.assertEqual((r.returncode, env["error"]["code"]), (65, "invalid_request"))

    def test_glob_prints_sorted_paths(self):
        r = self.ctl("glob", "**/*.{c,h}", self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.decode().splitlines(), [self.dir + "/a.c", self.dir + "/b.h"])
        r, env = self.envelope("glob", "--no-ignore", "*", self.dir)
        self.assertEqual([os.path.basename(e["path"]) for e in env["result"]["entries"]],
                         ["a.c", "b.h", "build"])


if __name__ == "__main__":
    unittest.main()
