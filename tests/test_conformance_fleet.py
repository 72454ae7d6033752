"""agentd-conformance --targets FILE checks a fleet of guests at once: one
row per guest (passed, failed or skipped) and a total, at most --parallel
checkers at a time, exit status 1 when any guest failed and 2 for a usage
error. Against three real local daemons, one of them given the wrong
token."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

from lib.agentd_test import Daemon
from lib.guests import CONFORMANCE

# A few quick checks that need a token: a wrong token fails every one.
FILTER = "exec: "


def write(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


class FleetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="agentd-fleet-")
        cls.daemons = [Daemon(token="fleet-token-%d" % i) for i in range(3)]
        cls.urls = ["http://127.0.0.1:%d" % d.port for d in cls.daemons]
        cls.tokens = []
        for i, d in enumerate(cls.daemons):
            cls.tokens.append(os.path.join(cls.tmp, "token-%d" % i))
            write(cls.tokens[-1], d.token + "\n")
        cls.wrong = os.path.join(cls.tmp, "wrong-token")
        write(cls.wrong, "not-the-token\n")

    @classmethod
    def tearDownClass(cls):
        for d in cls.daemons:
            d.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def targets(self, text, name="targets"):
        path = os.path.join(self.tmp, "%s-%s" % (self.id().rsplit(".", 1)[-1], name))
        write(path, text, 0o644)
        return path

    def fleet(self, *args):
        return subprocess.run([CONFORMANCE] + list(args), capture_output=True, text=True,
                              timeout=600)

    def rows(self, stdout):
        """{url: (verdict, detail)} from the per-guest rows."""
        out = {}
        for line in stdout.splitlines():
            m = re.match(r"^(passed|failed|skipped)\s+(\S+)\s+(.*)$", line)
            if m:
                self.assertNotIn(m.group(2), out, "two rows for one guest")
                out[m.group(2)] = (m.group(1), m.group(3))
        return out

    def test_every_guest_passing_is_exit_0_with_a_row_each_and_a_total(self):
        path = self.targets("# the fleet\n\n" + "".join(
            "%s %s  # guest %d\n" % (u, t, i)
            for i, (u, t) in enumerate(zip(self.urls, self.tokens))))
        r = self.fleet("--targets", path, "--parallel", "2", "--filter", FILTER)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.rows(r.stdout)
        self.assertEqual(set(rows), set(self.urls))
        for verdict, detail in rows.values():
            self.assertEqual(verdict, "passed")
            self.assertRegex(detail, r"^[1-9]\d* passed, 0 failed, \d+ skipped")
        self.assertIn("guests: 3 passed, 0 failed, 0 skipped of 3", r.stdout)

    def test_a_guest_with_the_wrong_token_fails_the_fleet_and_the_others_still_pass(self):
        path = self.targets("%s %s\n%s %s\n%s %s\n" % (
            self.urls[0], self.tokens[0], self.urls[1], self.wrong, self.urls[2],
            self.tokens[2]))
        r = self.fleet("--targets", path, "--parallel", "3", "--filter", FILTER)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        rows = self.rows(r.stdout)
        self.assertEqual(rows[self.urls[1]][0], "failed")
        self.assertRegex(rows[self.urls[1]][1], r"^0 passed, [1-9]\d* failed")
        self.assertEqual((rows[self.urls[0]][0], rows[self.urls[2]][0]), ("passed", "passed"))
        self.assertIn("| FAIL", r.stdout)  # the failing guest's checks, under its row
        self.assertIn("guests: 2 passed, 1 failed, 0 skipped of 3", r.stdout)

    def test_an_unreachable_guest_and_a_missing_token_file_are_failed_rows(self):
        path = self.targets("http://127.0.0.1:1 %s\n%s %s\n" % (
            self.tokens[0], self.urls[0], os.path.join(self.tmp, "absent")))
        # One check: an unreachable guest fails each after the client's retries.
        r = self.fleet("--targets", path, "--parallel", "1", "--filter", "exec: cwd is honoured")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        rows = self.rows(r.stdout)
        self.assertEqual([v for v, _ in rows.values()], ["failed", "failed"])
        self.assertIn("cannot read the token file", r.stdout)  # the checker's own words
        self.assertIn("guests: 0 passed, 2 failed, 0 skipped of 2", r.stdout)

    def test_usage_errors_exit_2_naming_the_problem(self):
        good = self.targets("%s %s\n" % (self.urls[0], self.tokens[0]), "good")
        bad_line = self.targets("%s %s\nhttp://x only-one-field extra\n" % (
            self.urls[0], self.tokens[0]), "bad")
        empty = self.targets("# nothing\n\n", "empty")
        for args, says in (
                (["--targets", bad_line], "line 2"),
                (["--targets", empty], "no targets"),
                (["--targets", os.path.join(self.tmp, "absent")], "cannot read"),
                (["--targets", good, "--parallel", "0"], "--parallel"),
                (["--targets", good, "--parallel", "many"], "--parallel"),
                (["--targets", good, "--url", self.urls[0]], "--url"),
                (["--parallel", "2", "--url", self.urls[0], "--token-file", self.tokens[0]],
                 "--targets")):
            r = self.fleet(*args)
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
            self.assertIn(says, r.stderr, args)
            self.assertNotIn("guests:", r.stdout)


if __name__ == "__main__":
    unittest.main()
