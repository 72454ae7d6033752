"""The daemon keeps answering health while a child exhausts PIDs, memory or
CPU (docs/PROTOCOL.md, "Limits"). Each attack is bounded (a pids or memory
limit, a timeout) so the machine running the tests survives it."""

import os
import threading
import time
import unittest

from lib.agentd_test import DaemonTestCase
from lib.exec_util import start, wait_exit


class HealthPoller:
    """Polls /v1/health on its own connection until stopped; records latencies.

    A control thread beside it only sleeps and records how late it woke:
    the stalls of the machine itself (a loaded CI host, this process
    descheduled), which the daemon cannot be blamed for."""

    def __init__(self, d, interval=0.05):
        self.d = d
        self.interval = interval
        self.latencies = []
        self.failures = []
        self.machine_stalls = [0.0]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._control = threading.Thread(target=self._sleep_late, daemon=True)

    def _sleep_late(self):
        while not self._stop.is_set():
            t = time.monotonic()
            time.sleep(self.interval)
            self.machine_stalls.append(time.monotonic() - t - self.interval)

    def _run(self):
        conn = self.d.connection(timeout=10)
        while not self._stop.is_set():
            t = time.monotonic()
            try:
                status, _, _ = self.d.request("GET", "/v1/health", auth=False, conn=conn)
                if status != 200:
                    self.failures.append(status)
            except Exception as e:  # a refused or dropped health is the failure we look for
                self.failures.append(repr(e))
                conn = self.d.connection(timeout=10)
            self.latencies.append(time.monotonic() - t)
            time.sleep(self.interval)
        conn.close()

    def __enter__(self):
        self._thread.start()
        self._control.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(15)
        self._control.join(15)


class ResourceAttackTest(DaemonTestCase):
    def attack(self, exec_id, body, min_polls=5):
        with HealthPoller(self.daemon) as poller:
            start(self.daemon, exec_id, body)
            obj = wait_exit(self.daemon, exec_id, timeout=60)
            deadline = time.monotonic() + 5
            while len(poller.latencies) < min_polls and time.monotonic() < deadline:
                time.sleep(0.05)
        self.assertEqual(poller.failures, [])
        self.assertGreaterEqual(len(poller.latencies), min_polls)
        # Generous for a loaded 2-core CI machine, plus however long the
        # machine itself stalled; an unprotected daemon stalls for seconds
        # or dies.
        allowed = 2.0 + max(poller.machine_stalls)
        self.assertLess(max(poller.latencies), allowed,
                        "slowest health answers %s; slowest machine stalls %s"
                        % (sorted(poller.latencies)[-5:], sorted(poller.machine_stalls)[-5:]))
        return obj

    def test_fork_bomb_under_a_pids_limit(self):
        obj = self.attack("bomb", {"command": "b(){ b | b & }; b; sleep 30", "pids": 48,
                                   "timeout_sec": 30})
        self.assertEqual(obj["killed_by"], "pids")
        _, health = self.daemon.json("GET", "/v1/health", auth=False)
        self.assertFalse(health["busy"])

    def test_memory_hog_under_a_memory_limit(self):
        code = ("import time\nchunks = []\n"
                "while True:\n    chunks.append(bytearray(8 << 20))\n    time.sleep(0.01)\n")
        obj = self.attack("hog", {"argv": ["python3", "-c", code], "memory_mb": 128,
                                  "timeout_sec": 30})
        self.assertEqual(obj["killed_by"], "memory")
        with open("/proc/%d/status" % self.daemon.proc.pid) as f:
            rss = [int(l.split()[1]) for l in f if l.startswith("VmRSS:")][0]
        self.assertLess(rss, 64 * 1024, "the daemon's own memory stayed small")

    def test_busy_loop_on_every_core(self):
        loops = 2 * (os.cpu_count() or 2)
        spin = " ".join(["(while :; do :; done) &"] * loops)
        obj = self.attack("spin", {"command": spin + " wait", "timeout_sec": 3,
                                   "kill_grace_sec": 1}, min_polls=20)
        self.assertEqual(obj["killed_by"], "timeout")


if __name__ == "__main__":
    unittest.main()
