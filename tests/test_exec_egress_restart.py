"""Egress accounting through a daemon crash (docs/PROTOCOL.md, "Egress"):
an exec with a policy that outlives a SIGKILL of the daemon (its holder,
proc/exec_holder.h) stays policed, and its successor on the same state
directory takes its counts over: attempts made before the crash, while no
daemon ran and after the restart are all answered, exactly. An exec that
ended before the crash or while no daemon ran keeps its counts; where
nothing kept an exec, the record says which attempts are not counted and
from when, never a silent zero.

Each exec runs a worker that waits on a FIFO for a number N, makes N
connects to a private address (refused by "public" at once, EPERM, so no
packet leaves) and one to the test's loopback listener (allowed), and
acknowledges on a second FIFO: every wait is bounded by the worker's own
answer. The CI runs as root; without root or cgroup2 the module is skipped
with the daemon's reason."""

import json
import os
import re
import socket
import sys
import tempfile
import unittest

from lib.agentd_test import Daemon
from lib.exec_util import start, wait_exit

PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
PRIVATE = "10.0.0.1"
PORT = 8080

WORKER = r"""
import errno, socket, sys
go, ack, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
while True:
    with open(go) as f:
        line = f.read().strip()
    if line == "exit":
        sys.exit(0)
    refused = 0
    for _ in range(int(line)):
        s = socket.socket()
        s.settimeout(5)
        try:
            s.connect((%r, %d))
        except OSError as e:
            refused += e.errno == errno.EPERM
        finally:
            s.close()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.close()
    with open(ack, "w") as f:
        f.write("%%d\n" %% refused)
""" % (PRIVATE, PORT)


class EgressRestartTest(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root (the CI runs as root)")
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.addCleanup(self.listener.close)

    def daemon(self, *flags):
        d = Daemon(*flags)
        self.addCleanup(d.close)
        s, health = d.json("GET", "/v1/health", auth=False)
        if not health["limits"]["egress_modes"]:
            self.skipTest("no egress mode works here: " + health["limits"].get("egress_why", ""))
        return d

    def worker(self, d, exec_id):
        fifos = []
        for name in ("go", "ack"):
            path = os.path.join(self.tmp.name, "%s-%s" % (exec_id, name))
            os.mkfifo(path)
            fifos.append(path)
        start(d, exec_id, {"argv": [PYTHON, "-c", WORKER, fifos[0], fifos[1],
                                    str(self.listener.getsockname()[1])],
                           "egress": {"mode": "public"}})
        return fifos

    def ask(self, fifos, n):
        """N refused connects and one allowed, done (whether a daemon runs or not)."""
        with open(fifos[0], "w") as f:
            f.write("%d\n" % n)
        with open(fifos[1]) as f:
            self.assertEqual(int(f.read()), n)  # each refused at once with EPERM
        self.listener.accept()[0].close()

    def end(self, fifos):
        with open(fifos[0], "w") as f:
            f.write("exit\n")

    def report(self, d, exec_id):
        s, body = d.json("GET", "/v1/execs/%s/egress" % exec_id)
        self.assertEqual(s, 200, body)
        return body

    def assertCounts(self, report, refused, allowed):
        self.assertEqual((report["accounting"], report["refused"], report["allowed"],
                          report["attempts"]), (True, refused, allowed, refused + allowed), report)
        private = [x for x in report["destinations"] if x["address"] == PRIVATE]
        self.assertEqual([(x["port"], x["verdict"], x["count"]) for x in private],
                         [(PORT, "refused", refused)], report)
        self.assertLessEqual(private[0]["first_at"], private[0]["last_at"])

    def restart(self, d):
        d.kill()
        d.start()
        s, _ = d.json("POST", "/v1/bootstrap", {"token": d.token}, auth=False)
        self.assertEqual(s, 200)

    def test_a_running_exec_is_counted_before_the_crash_in_the_gap_and_after_the_restart(self):
        d = self.daemon()
        fifos = self.worker(d, "live")
        self.ask(fifos, 2)
        self.assertCounts(self.report(d, "live"), 2, 1)
        d.kill()
        self.ask(fifos, 3)  # no daemon runs: still refused, and counted
        d.start()
        s, _ = d.json("POST", "/v1/bootstrap", {"token": d.token}, auth=False)
        self.assertEqual(s, 200)
        report = self.report(d, "live")
        self.assertCounts(report, 5, 2)
        self.assertNotIn("incomplete", report)
        self.ask(fifos, 4)
        self.assertCounts(self.report(d, "live"), 9, 3)
        self.end(fifos)
        self.assertEqual(wait_exit(d, "live")["exit_code"], 0)
        report = self.report(d, "live")
        self.assertCounts(report, 9, 3)
        self.assertEqual(report["policy"]["mode"], "public")
        # The successor counts them in its metrics when the exec ends: all of them.
        s, _, data = d.request("GET", "/v1/metrics")
        found = dict(re.findall(r'agentd_egress_attempts_total\{verdict="(\w+)"\} (\d+)',
                                data.decode()))
        self.assertEqual((found.get("refused"), found.get("allowed")), ("9", "3"), found)
        # A second crash after the end: the final counts are kept.
        self.restart(d)
        self.assertCounts(self.report(d, "live"), 9, 3)

    def test_an_exec_that_ends_while_no_daemon_runs_keeps_its_counts(self):
        d = self.daemon()
        fifos = self.worker(d, "gap-end")
        self.ask(fifos, 2)
        d.kill()
        self.ask(fifos, 3)
        self.end(fifos)
        d.start()
        s, _ = d.json("POST", "/v1/bootstrap", {"token": d.token}, auth=False)
        self.assertEqual(s, 200)
        obj = wait_exit(d, "gap-end")
        self.assertEqual((obj["exit_code"], obj["killed_by"], obj["error"]), (0, None, None))
        report = self.report(d, "gap-end")
        self.assertCounts(report, 5, 2)
        self.assertNotIn("incomplete", report)

    def test_an_exec_that_ended_before_the_crash_keeps_its_counts(self):
        d = self.daemon()
        fifos = self.worker(d, "ended")
        self.ask(fifos, 2)
        self.end(fifos)
        wait_exit(d, "ended")
        start(d, "quiet", {"argv": ["true"], "egress": {"mode": "none"}})
        wait_exit(d, "quiet")
        self.restart(d)
        self.assertCounts(self.report(d, "ended"), 2, 1)
        report = self.report(d, "quiet")  # zero attempts stays a fact
        self.assertEqual((report["accounting"], report["attempts"], report["destinations"]),
                         (True, 0, []), report)

    def test_an_exec_no_holder_kept_says_what_is_not_counted_and_from_when(self):
        d = self.daemon("--exec-holder", "off")
        fifos = self.worker(d, "unheld")
        self.ask(fifos, 2)
        s, obj = d.json("GET", "/v1/execs/unheld")
        self.addCleanup(self.end, fifos)
        self.restart(d)
        obj = wait_exit(d, "unheld")
        self.assertEqual(obj["killed_by"], "daemon_restart")
        report = self.report(d, "unheld")
        self.assertCounts(report, 2, 1)
        self.assertGreaterEqual(report["incomplete"]["since"], obj["started_at"])
        self.assertIn("not counted", report["incomplete"]["why"])
        # Its process lives on, still policed (the kernel holds the policy),
        # but no longer counted, as the record says.
        self.ask(fifos, 3)
        self.assertEqual(self.report(d, "unheld"), report)

    def test_a_record_without_the_counts_says_they_are_lost_since_its_start(self):
        d = self.daemon()
        fifos = self.worker(d, "old")
        self.ask(fifos, 1)
        self.end(fifos)
        obj = wait_exit(d, "old")
        d.kill()
        # As an older daemon wrote it: no note of the counts.
        meta = os.path.join(d.state_dir, "execs", "exec-old", "meta.json")
        with open(meta) as f:
            doc = json.load(f)
        self.assertIn("egress_state", doc)
        del doc["egress_state"]
        with open(meta, "w") as f:
            json.dump(doc, f)
        d.start()
        s, _ = d.json("POST", "/v1/bootstrap", {"token": d.token}, auth=False)
        self.assertEqual(s, 200)
        report = self.report(d, "old")
        self.assertEqual((report["accounting"], report["attempts"]), (False, 0), report)
        self.assertEqual(report["incomplete"]["since"], obj["started_at"])
        self.assertIn("cannot reach", report["incomplete"]["why"])


if __name__ == "__main__":
    unittest.main()
