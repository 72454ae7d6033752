"""Load: 64 keep-alive connections of mixed traffic (exec starts, polls,
event streams, acks, file writes and reads, health) for a bounded time
(AGENTD_LOAD_SECONDS, default 20). No request may fail; latencies per kind
are printed (docs/BENCHMARKS.md, "Load", records a run)."""

import http.client
import json
import os
import random
import shutil
import tempfile
import threading
import time
import unittest

from lib.agentd_test import Daemon
from lib.fs_helpers import url

CONNECTIONS = 64
SECONDS = float(os.environ.get("AGENTD_LOAD_SECONDS", "20"))


def cpu_seconds(pid):
    """User + system CPU time of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


class Worker(threading.Thread):
    def __init__(self, d, n, files_dir, end):
        super().__init__(daemon=True)
        self.d, self.n, self.end = d, n, end
        self.rng = random.Random(n)
        self.path = os.path.join(files_dir, "w%02d" % n)
        self.latencies = {}
        self.errors = []
        self.pending = []  # exec ids started, not yet acked
        self.seq = 0
        self.written = None

    def call(self, kind, method, target, body=None, expect=(200,)):
        conn = self.conn
        t0 = time.monotonic()
        if isinstance(body, dict):
            body = json.dumps(body).encode()
        conn.request(method, target, body=body, headers=self.d.headers())
        resp = conn.getresponse()
        data = resp.read()
        self.latencies.setdefault(kind, []).append(time.monotonic() - t0)
        if resp.status not in expect:
            self.errors.append((kind, resp.status, data[:200]))
        return resp.status, data

    def step(self):
        op = self.rng.choices(["start", "poll", "events", "ack", "write", "read", "health"],
                              [3, 3, 2, 2, 2, 3, 1])[0]
        if op == "start" or (op in ("poll", "events", "ack") and not self.pending):
            self.seq += 1
            exec_id = "load-%d-%d" % (self.n, self.seq)
            self.call("start", "PUT", "/v1/execs/" + exec_id,
                      {"argv": ["sh", "-c", "echo %s; head -c 20000 /dev/zero" % exec_id]},
                      expect=(201,))
            self.pending.append(exec_id)
        elif op == "poll":
            self.call("poll", "GET", "/v1/execs/%s?stdout_from=0&wait_ms=1000" %
                      self.rng.choice(self.pending))
        elif op == "events":
            status, data = self.call("events", "GET", "/v1/execs/%s/events" % self.pending[0])
            if b"event: exit" not in data:
                self.errors.append(("events", status, data[-200:]))
        elif op == "ack":
            exec_id = self.pending[0]
            status, data = self.call("ack", "POST", "/v1/execs/%s/ack" % exec_id,
                                     expect=(200, 409))
            if status == 200:
                self.pending.pop(0)
        elif op == "write":
            self.written = os.urandom(self.rng.choice([1024, 65536, 262144]))
            self.call("write", "PUT", url("/v1/fs/file", path=self.path), self.written)
        elif op == "read" and self.written is not None:
            status, data = self.call("read", "GET", url("/v1/fs/file", path=self.path))
            if data != self.written:
                self.errors.append(("read", status, "content differs"))
        else:
            self.call("health", "GET", "/v1/health")

    def run(self):
        self.conn = self.d.connection(timeout=30)
        try:
            while time.monotonic() < self.end:
                self.step()
        except Exception as e:  # a dropped connection is an error of the run
            self.errors.append(("exception", repr(e)))
        finally:
            self.conn.close()


class LoadTest(unittest.TestCase):
    def test_64_connections_of_mixed_traffic_without_an_error(self):
        files_dir = tempfile.mkdtemp(prefix="agentd-load-")
        try:
            with Daemon("--ack-ttl-sec", "0") as d:
                cpu_before = cpu_seconds(d.proc.pid)
                end = time.monotonic() + SECONDS
                workers = [Worker(d, n, files_dir, end) for n in range(CONNECTIONS)]
                for w in workers:
                    w.start()
                for w in workers:
                    w.join(SECONDS + 120)
                daemon_cpu = cpu_seconds(d.proc.pid) - cpu_before
                errors = [e for w in workers for e in w.errors]
                self.assertEqual(errors, [])
                by_kind = {}
                for w in workers:
                    for kind, values in w.latencies.items():
                        by_kind.setdefault(kind, []).extend(values)
                total = sum(len(v) for v in by_kind.values())
                lines = ["%d connections, %.0f s, %d requests (%.0f/s), 0 errors; daemon CPU "
                         "%.2f s (%.2f ms per request)" % (CONNECTIONS, SECONDS, total,
                                                          total / SECONDS, daemon_cpu,
                                                          daemon_cpu * 1000 / total)]
                for kind in sorted(by_kind):
                    v = by_kind[kind]
                    lines.append("  %-7s n=%-6d p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms" %
                                 (kind, len(v), percentile(v, 50) * 1000,
                                  percentile(v, 99) * 1000, max(v) * 1000))
                everything = [x for v in by_kind.values() for x in v]
                lines.append("  all     p50 %.1f ms  p99 %.1f ms" %
                             (percentile(everything, 50) * 1000,
                              percentile(everything, 99) * 1000))
                print("\n" + "\n".join(lines))
                # Wall-clock latency here includes waiting for a CPU on a shared
                # machine; the bound only catches a stuck daemon.
                self.assertGreaterEqual(total, CONNECTIONS * 2)
                self.assertLess(percentile(everything, 99), 30.0)
                self.assertEqual(d.json("GET", "/v1/health", auth=False)[0], 200)
        finally:
            shutil.rmtree(files_dir, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
