"""packaging/check-guest, the "check it works" step after starting a guest:
against a real daemon over TCP it bootstraps one nobody has bootstrapped,
accepts one that already is, runs its exec and acks it (its output is then released),
and fails (exit 1, saying what came back) on a wrong token or an
unreachable guest."""

import os
import socket
import subprocess
import tempfile
import unittest

from lib.agentd_test import Daemon

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECK_GUEST = os.path.join(ROOT, "packaging", "check-guest")


def check_guest(*args):
    return subprocess.run([CHECK_GUEST] + list(args), capture_output=True, text=True,
                          timeout=120)


class CheckGuestTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def token_file(self, text):
        path = os.path.join(self.tmp.name, "token-%d" % len(os.listdir(self.tmp.name)))
        with open(path, "w") as f:
            f.write(text + "\n")
        return path

    def daemon(self, **kwargs):
        d = Daemon(**kwargs)
        self.addCleanup(d.close)
        return d

    def test_a_fresh_daemon_is_bootstrapped_then_runs_one_exec_and_acks_it(self):
        d = self.daemon(token="fresh-token", bootstrap=False)
        r = check_guest("--url", "http://127.0.0.1:%d" % d.port,
                        "--token-file", self.token_file("fresh-token"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("check-guest: bootstrapped", r.stdout)
        self.assertIn("exec ok", r.stdout)
        status, body = d.json("GET", "/v1/execs")
        self.assertEqual(status, 200)
        self.assertEqual([(e["exit_code"], e["acked"]) for e in body["execs"]], [(0, True)],
                         "one exec, exited 0 and acked, so its output is released")

    def test_an_already_bootstrapped_daemon_is_used_with_its_token(self):
        d = self.daemon(token="the-token")
        r = check_guest("--url", "http://127.0.0.1:%d" % d.port, "--token", "the-token")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("already bootstrapped", r.stdout)

    def test_a_wrong_token_fails_and_says_so(self):
        d = self.daemon(token="the-token")
        r = check_guest("--url", "http://127.0.0.1:%d" % d.port, "--token", "another")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("the token is not the daemon's", r.stderr)

    def test_an_unreachable_guest_fails_and_names_the_url(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        r = check_guest("--url", "http://127.0.0.1:%d" % port, "--token", "t")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("cannot reach http://127.0.0.1:%d" % port, r.stderr)

    def test_usage_errors_exit_2(self):
        for args in ([], ["--url", "http://x:1"], ["--url", "http://x:1", "--token", "a",
                                                   "--token-file", "f"]):
            self.assertEqual(check_guest(*args).returncode, 2, args)


if __name__ == "__main__":
    unittest.main()
