"""Reset from the Python client: reset() installs the next token and a retry
answers the recorded report (docs/PROTOCOL.md, "Reuse")."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__)))
from lib import pyclient  # noqa: F401,E402  (puts client/python on sys.path)
from lib.agentd_test import Daemon, new_token  # noqa: E402
from lib.exec_util import pid_alive, read_stream, start, wait_exit  # noqa: E402

import agentd_client as ac  # noqa: E402


def leave_a_sleeper(d):
    start(d, "bg", {"command": "setsid sleep 1000 > /dev/null & echo $!"})
    wait_exit(d, "bg")
    return int(read_stream(d, "bg"))


class PyClientResetTest(unittest.TestCase):
    def setUp(self):
        self.d = Daemon()
        self.addCleanup(self.d.close)

    def test_the_python_client_resets_and_uses_the_next_token(self):
        d = self.d
        sleeper = leave_a_sleeper(d)
        c = ac.Client("http://127.0.0.1:%d" % d.port, d.token)
        self.addCleanup(c.close)
        nxt = new_token()
        report = c.reset("py-reset-1", next_token=nxt, env={"TENANT": "b"})
        self.assertIsInstance(report, ac.ResetReport)
        self.assertTrue(report.clean, report)
        self.assertEqual((report.generation, report.replayed), (1, False))
        self.assertFalse(pid_alive(sleeper))
        self.assertEqual(c.health().raw["generation"], 1)
        self.assertEqual(c.list_execs(), [])  # uses the next token: no 401
        again = ac.Client("http://127.0.0.1:%d" % d.port, d.token).reset("py-reset-1")
        self.assertTrue(again.replayed)
        with self.assertRaises(ac.Unauthorized):
            ac.Client("http://127.0.0.1:%d" % d.port, d.token).reset("py-reset-2")

    def test_health_says_how_each_reset_path_is_reset(self):
        work = os.path.join(self.d.tmp, "work")
        os.mkdir(work)
        d = Daemon("--reset-path", work)
        self.addCleanup(d.close)
        c = ac.Client("http://127.0.0.1:%d" % d.port, d.token)
        self.addCleanup(c.close)
        self.assertEqual(c.health().reset_paths,
                         [{"path": work, "mode": "restore",
                           "overlay_unavailable": "--reset-overlay off"}])
        self.assertEqual(ac.Client("http://127.0.0.1:%d" % self.d.port).health().reset_paths, [])

    def test_health_says_how_a_reset_ends_processes(self):
        d = Daemon("--reset-cgroup", "off")
        self.addCleanup(d.close)
        c = ac.Client("http://127.0.0.1:%d" % d.port, d.token)
        self.addCleanup(c.close)
        self.assertEqual(c.health().reset_processes,
                         {"mode": "subreaper", "cgroup_unavailable": "--reset-cgroup off"})

    def test_a_second_client_keeps_the_retired_token_until_set_token(self):
        # docs/CLIENT.md, "Tokens": only the client that reset switches.
        url = "http://127.0.0.1:%d" % self.d.port
        owner, worker = ac.Client(url, self.d.token), ac.Client(url, self.d.token)
        self.addCleanup(owner.close)
        self.addCleanup(worker.close)
        self.assertEqual(worker.run(["true"]).exit_code, 0)
        nxt = new_token()
        self.assertTrue(owner.reset(next_token=nxt).clean)
        with self.assertRaises(ac.Unauthorized):
            worker.list_execs()
        worker.set_token(nxt)
        self.assertEqual(worker.run(["echo", "again"]).stdout, b"again\n")
        worker.set_token(self.d.token)  # and back: the retired one stays retired
        with self.assertRaises(ac.Unauthorized):
            worker.list_execs()


class PyClientFreshGuestTest(unittest.TestCase):
    def test_a_fresh_guest_is_bootstrapped_after_health_says_it_is_not(self):
        # docs/CLIENT.md, "Tokens": health needs no token; bootstrap installs
        # one and the client uses it; the same token replays, another conflicts.
        d = Daemon(bootstrap=False)
        self.addCleanup(d.close)
        c = ac.Client("http://127.0.0.1:%d" % d.port)
        self.addCleanup(c.close)
        self.assertFalse(c.health().bootstrapped)
        with self.assertRaises(ac.NotBootstrapped):
            c.list_execs()
        token = new_token()
        self.assertEqual(c.bootstrap(token, env={"TENANT": "a"}).replayed, False)
        self.assertTrue(c.health().bootstrapped)
        self.assertEqual(c.run("echo $TENANT").stdout, b"a\n")
        self.assertTrue(c.bootstrap(token).replayed)
        with self.assertRaises(ac.AlreadyBootstrapped):
            ac.Client("http://127.0.0.1:%d" % d.port).bootstrap(new_token())


if __name__ == "__main__":
    unittest.main()
