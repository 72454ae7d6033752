"""--state-sync (docs/OPERATIONS.md, "Durability of the state"): when exec
records written under the state directory are fsynced. Counted by the
daemon's metrics agentd_state_writes_total and agentd_state_syncs_total;
a daemon killed with SIGKILL finds every record again in each mode (the
page cache survives a daemon crash)."""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from agentd_test import AGENTD_BIN, Daemon  # noqa: E402

EXECS = 12


def counters(d):
    s, _, data = d.request("GET", "/v1/metrics")
    assert s == 200, s
    out = {}
    for line in data.decode().splitlines():
        for name in ("agentd_state_writes_total", "agentd_state_syncs_total"):
            if line.startswith(name + " "):
                out[name[len("agentd_state_"):-len("_total")]] = int(float(line.split()[1]))
    return out


def run_execs(d, prefix):
    """EXECS execs of /bin/true, each started and waited for in one request."""
    for i in range(EXECS):
        s, body = d.json("PUT", "/v1/execs/%s-%d?wait_ms=30000&until=exit" % (prefix, i),
                         {"argv": ["/bin/true"]})
        assert s == 201 and body["state"] == "exited", (s, body)


def wait_for(what, check):
    """Polls `check` until it holds; the bound is the daemon's own work (a
    pool task per commit), not a clock: a failure shows as the test's
    timeout with `what` on the last line."""
    while True:
        result = check()
        if result:
            return result
        time.sleep(0.01)


class StateSyncModes(unittest.TestCase):
    def survives_a_daemon_crash(self, d, prefix):
        d.restart()
        s, _ = d.json("POST", "/v1/bootstrap", {"token": d.token}, auth=False)
        self.assertEqual(s, 200)
        for i in range(EXECS):
            s, body = d.json("GET", "/v1/execs/%s-%d" % (prefix, i))
            self.assertEqual((s, body["state"], body["exit_code"]), (200, "exited", 0))

    def test_none_writes_every_record_and_never_fsyncs(self):
        with Daemon("--state-sync", "none") as d:
            run_execs(d, "n")
            c = counters(d)
            self.assertGreaterEqual(c["writes"], 2 * EXECS)  # a start and an exit at least
            self.assertEqual(c["syncs"], 0)
            self.survives_a_daemon_crash(d, "n")

    def test_always_fsyncs_each_write(self):
        with Daemon("--state-sync", "always") as d:
            run_execs(d, "a")
            writes = counters(d)["writes"]
            self.assertGreaterEqual(writes, 2 * EXECS)
            # Each write posts its own round; they end when the pool has run them.
            wait_for("one fsync round per write",
                     lambda: counters(d)["syncs"] == writes)
            self.survives_a_daemon_crash(d, "a")

    def test_batch_coalesces_writes_into_at_most_one_commit_per_interval(self):
        with Daemon() as d:  # batch is the default
            t0 = time.monotonic()
            run_execs(d, "b")
            c = counters(d)
            elapsed_ms = (time.monotonic() - t0) * 1000
            self.assertGreaterEqual(c["writes"], 2 * EXECS)
            # The daemon's promise: a commit at most every 50 ms (the bound
            # is this run's own elapsed time, not a fixed clock).
            self.assertLessEqual(c["syncs"], elapsed_ms // 50 + 1)
            # ...and what was written is committed without further writes.
            wait_for("a commit of the last writes", lambda: counters(d)["syncs"] >= 1)
            self.survives_a_daemon_crash(d, "b")

    def test_a_bad_mode_is_refused_by_name(self):
        out = subprocess.run([AGENTD_BIN, "--state-sync", "sometimes"], capture_output=True,
                             text=True, stdin=subprocess.DEVNULL)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn('--state-sync: "sometimes" is not one of none, batch, always', out.stderr)


if __name__ == "__main__":
    unittest.main()
