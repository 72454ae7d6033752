"""GET /v1/metrics: Prometheus text, parsed, with counters checked after a
known workload; no command lines, paths, env or output in labels
(docs/PROTOCOL.md, "Metrics")."""

import os
import re
import unittest

from lib.agentd_test import Daemon, error_code
from lib.exec_util import run as run_exec, start, wait_exit
from lib.fs_helpers import member, tar_bytes, url

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """{(name, frozenset(labels.items())): value}; asserts every line parses."""
    samples = {}
    types = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
            continue
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        assert m, "unparsable line: %r" % line
        labels = dict(LABEL.findall(m.group(3) or ""))
        samples[(m.group(1), frozenset(labels.items()))] = float(m.group(4))
    return samples, types


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


class MetricsTest(unittest.TestCase):
    def test_counters_after_a_known_workload(self):
        secret = "SECRET-ENV-VALUE-42"
        with Daemon() as d:
            status, body = d.json("GET", "/v1/metrics", auth=False)
            self.assertEqual((status, error_code(body)), (401, "unauthorized"))

            run_exec(d, "ok-1", {"argv": ["echo", "hello"]})          # 6 bytes stdout
            run_exec(d, "ok-2", {"command": "printf abc >&2",          # 3 bytes stderr
                                 "env": {"SECRET": secret}})
            run_exec(d, "bad", {"argv": ["false"]})
            run_exec(d, "missing", {"argv": ["/no/such/program"]})
            run_exec(d, "slow", {"command": "sleep 30", "timeout_sec": 1, "kill_grace_sec": 1})
            start(d, "killed", {"command": "sleep 30"})
            d.json("POST", "/v1/execs/killed/kill", {"signal": "KILL"})
            wait_exit(d, "killed")
            status, r = d.json("POST", "/v1/run", {"runtime": "python", "cpu_sec": 1,
                                                    "code": "while True: pass"})
            self.assertEqual(r["killed_by"], "cpu")
            d.json("GET", "/v1/execs/no-such")

            # Files and trees: bytes in and out, a HEAD counting none.
            path = os.path.join(d.tmp, "m.bin")
            status, _, _ = d.request("PUT", url("/v1/fs/file", path=path), b"x" * 5000)
            self.assertEqual(status, 200)
            status, _, got = d.request("GET", url("/v1/fs/file", path=path, start_line=1))
            self.assertEqual((status, len(got)), (200, 5000))
            status, _, got = d.request("GET", url("/v1/fs/file", path=path),
                                       headers={"Range": "bytes=0-99"})
            self.assertEqual((status, len(got)), (206, 100))
            self.assertEqual(d.request("HEAD", url("/v1/fs/file", path=path))[0], 200)
            archive = tar_bytes([(member("t/a.txt"), b"y" * 3000)])
            status, _, _ = d.request("PUT", url("/v1/fs/tar", path=d.tmp), archive)
            self.assertEqual(status, 200)
            status, _, tar_out = d.request("GET", url("/v1/fs/tar", path=os.path.join(d.tmp, "t")))
            self.assertEqual(status, 200)

            status, headers, data = d.request("GET", "/v1/metrics")
            self.assertEqual(status, 200)
            self.assertTrue(headers["content-type"].startswith("text/plain; version=0.0.4"))
            text = data.decode()
            samples, types = parse(text)

        self.assertEqual(value(samples, "agentd_execs_started_total", kind="exec"), 6)
        self.assertEqual(value(samples, "agentd_execs_started_total", kind="run"), 1)
        self.assertEqual(value(samples, "agentd_execs_exited_total", outcome="success"), 2)
        self.assertEqual(value(samples, "agentd_execs_exited_total", outcome="failure"), 1)
        self.assertEqual(value(samples, "agentd_execs_exited_total", outcome="spawn_failed"), 1)
        self.assertEqual(value(samples, "agentd_execs_exited_total", outcome="killed"), 3)
        for limit in ("timeout", "kill", "cpu"):
            self.assertEqual(value(samples, "agentd_exec_forced_terminations_total", limit=limit),
                             1, limit)
        self.assertEqual(value(samples, "agentd_exec_output_bytes_total", stream="stdout"), 6)
        # stderr: "abc" and the spawn failure's "agentd: ..." line are both output.
        self.assertGreaterEqual(value(samples, "agentd_exec_output_bytes_total",
                                      stream="stderr"), 3)
        self.assertEqual(value(samples, "agentd_exec_duration_seconds_count"), 6)
        self.assertEqual(value(samples, "agentd_exec_spawn_seconds_count"), 7)  # with the run
        self.assertEqual(value(samples, "agentd_http_requests_total", method="PUT",
                               route="/v1/execs/{id}", status="201"), 6)
        self.assertEqual(value(samples, "agentd_http_requests_total", method="GET",
                               route="/v1/execs/{id}", status="404"), 1)
        self.assertEqual(value(samples, "agentd_http_requests_total", method="POST",
                               route="/v1/run", status="200"), 1)
        self.assertEqual(value(samples, "agentd_execs_running"), 0)
        self.assertEqual(value(samples, "agentd_run_phase_seconds_count", phase="execution"), 1)
        # The metrics request's own connection is open while it renders.
        self.assertGreaterEqual(value(samples, "agentd_http_connections_open"), 1)
        self.assertEqual(types["agentd_http_request_duration_seconds"], "histogram")
        self.assertEqual(value(samples, "agentd_http_request_duration_seconds_count",
                               route="/v1/run"), 1)
        self.assertEqual(types["agentd_exec_duration_seconds"], "histogram")
        # Histogram buckets are cumulative and end at the count.
        self.assertEqual(value(samples, "agentd_exec_duration_seconds_bucket", le="+Inf"), 6)
        for counter in ("agentd_tar_bytes_total", "agentd_file_bytes_total"):
            self.assertEqual(types[counter], "counter")
        self.assertEqual(value(samples, "agentd_file_bytes_total", direction="in"), 5000)
        self.assertEqual(value(samples, "agentd_file_bytes_total", direction="out"), 5100)
        self.assertEqual(value(samples, "agentd_tar_bytes_total", direction="in"), len(archive))
        self.assertEqual(value(samples, "agentd_tar_bytes_total", direction="out"), len(tar_out))
        self.assertGreater(len(tar_out), 3000)
        # Nothing a caller sent or a process printed is a label.
        for (name, labels), _ in samples.items():
            for k, v in labels:
                for bad in (secret, "hello", "/no/such", "sleep", "no-such", "ok-1", "abc",
                            "m.bin", "a.txt", d.tmp):
                    self.assertNotIn(bad, v, (name, k, v))
        self.assertNotIn(secret, text)


if __name__ == "__main__":
    unittest.main()
