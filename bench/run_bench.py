#!/usr/bin/env python3
"""Code action benchmarks (docs/BENCHMARKS.md, "Code actions").

  scan        the changed-files scans of POST /v1/run on a tree of 100,000
              files (1,000 directories of 100), read from the daemon's own
              phase histogram (agentd_run_phase_seconds, scan_before and
              scan_after), vs `find TREE -printf '%s %T@ %C@ %i %m\\n'`
              (GNU find: the same fstatat of every entry, printed to
              /dev/null). On the disk file system of /tmp and on tmpfs.
  run         the whole /v1/run round trip of `true` with the scans and with
              scan_changes=false, vs a detached exec of `sh -c true` and a
              long poll.
  limits      /v1/run of `true` with a memory and pids limit (a cgroup per
              run) vs without.
  context     a trivial python run (`x = 1`) in a warm context
              (POST /v1/contexts/{id}/run) vs `python3 -c 'x = 1'` started
              cold by this script, and vs /v1/run of the same code; where
              bun is installed, the same for ts (`const x = 1;` in a warm ts
              context vs `bun -e` cold and vs /v1/run ts).

Every measurement is interleaved with its baseline in rounds and reported
as a median and a ratio. Usage: bench/run_bench.py [--agentd PATH] [--files N]
[--rounds N]. Writes bench/results/run.json and prints a Markdown table.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from exec_bench import Daemon, TOKEN  # noqa: E402


def make_tree(root, files):
    per_dir = 100
    for d in range((files + per_dir - 1) // per_dir):
        path = os.path.join(root, "d%04d" % d)
        os.makedirs(path)
        for f in range(min(per_dir, files - d * per_dir)):
            with open(os.path.join(path, "f%03d.txt" % f), "w") as fh:
                fh.write("x")


class Client:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def call(self, method, path, body=None):
        headers = {"Authorization": "Bearer " + TOKEN}
        data = json.dumps(body).encode() if body is not None else None
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        return resp.status, resp.read()

    def run(self, body):
        status, data = self.call("POST", "/v1/run", body)
        assert status == 200, (status, data)
        return json.loads(data)

    def phases(self):
        status, data = self.call("GET", "/v1/metrics")
        out = {}
        for phase in ("scan_before", "scan_after", "execution"):
            s = re.search(r'agentd_run_phase_seconds_sum\{phase="%s"\} (\S+)' % phase, data.decode())
            c = re.search(r'agentd_run_phase_seconds_count\{phase="%s"\} (\S+)' % phase,
                          data.decode())
            out[phase] = (float(s.group(1)), int(c.group(1))) if s else (0.0, 0)
        return out


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def bench_scan(binary, parent, files, rounds):
    tree = tempfile.mkdtemp(prefix="agentd-scan-", dir=parent)
    try:
        t = time.perf_counter()
        make_tree(tree, files)
        made = time.perf_counter() - t
        d = Daemon(binary, "--workdir", tree, "--scan-max-entries", str(files * 2),
                   "--scan-max-ms", "60000", state_parent=parent)
        try:
            c = Client(d.port)
            c.run({"runtime": "shell", "code": "true"})  # warm the caches
            subprocess.run(["find", tree, "-printf", "%s %T@ %C@ %i %m\\n"],
                           stdout=subprocess.DEVNULL, check=True)
            scans, finds, changed = [], [], []
            for i in range(rounds):
                before = c.phases()
                r = c.run({"runtime": "shell", "code": "echo %d > d0500/f050.txt" % i})
                after = c.phases()
                changed.append(len(r["changed_files"]))
                assert not r["changed_files_truncated"], r
                for phase in ("scan_before", "scan_after"):
                    scans.append(after[phase][0] - before[phase][0])
                finds.append(timed(lambda: subprocess.run(
                    ["find", tree, "-printf", "%s %T@ %C@ %i %m\\n"],
                    stdout=subprocess.DEVNULL, check=True)))
            return {"files": files, "tree_made_s": made, "scan_ms": statistics.median(scans) * 1e3,
                    "find_ms": statistics.median(finds) * 1e3,
                    "changed_files": changed[0]}
        finally:
            d.close()
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def bench_run(binary, rounds):
    work = tempfile.mkdtemp(prefix="agentd-runw-")
    d = Daemon(binary, "--workdir", work)
    try:
        c = Client(d.port)
        cases = {
            "run_scan": lambda: c.run({"runtime": "shell", "code": "true"}),
            "run_noscan": lambda: c.run({"runtime": "shell", "code": "true",
                                         "scan_changes": False}),
            "run_limits": lambda: c.run({"runtime": "shell", "code": "true",
                                         "scan_changes": False, "memory_mb": 256,
                                         "pids": 64}),
        }
        n = [0]

        def exec_baseline():
            n[0] += 1
            eid = "b%d" % n[0]
            s, _ = c.call("PUT", "/v1/execs/" + eid, {"command": "true"})
            assert s == 201
            s, _ = c.call("GET", "/v1/execs/%s?stdout_from=0&stderr_from=0&wait_ms=10000" % eid)
            assert s == 200
            c.call("POST", "/v1/execs/%s/ack" % eid)
        cases["exec_baseline"] = exec_baseline
        times = {k: [] for k in cases}
        for _ in range(rounds):
            for k, fn in cases.items():
                times[k].append(timed(fn))
        return {k: statistics.median(v) * 1e3 for k, v in times.items()}
    finally:
        d.close()
        shutil.rmtree(work, ignore_errors=True)


def bench_context(binary, rounds):
    work = tempfile.mkdtemp(prefix="agentd-ctxw-")
    d = Daemon(binary, "--workdir", work)
    try:
        c = Client(d.port)
        status, data = c.call("POST", "/v1/contexts", {"id": "bench", "runtime": "python",
                                                        "scan_changes": False})
        assert status == 201, (status, data)

        def in_context(cid, code):
            status, data = c.call("POST", "/v1/contexts/%s/run" % cid, {"code": code})
            r = json.loads(data)
            assert status == 200 and r["exit_code"] == 0, (status, data)

        def warm():
            in_context("bench", "x = 1")

        def cold():
            subprocess.run(["python3", "-c", "x = 1"], check=True)

        def run_python():
            r = c.run({"runtime": "python", "code": "x = 1", "scan_changes": False})
            assert r["exit_code"] == 0, r
        warm()  # the first run imports nothing more, but pays the first page-ins
        cases = {"context_warm": warm, "python_cold": cold, "run_python": run_python}
        bun = shutil.which("bun")
        if bun:
            status, data = c.call("POST", "/v1/contexts", {"id": "bench-ts", "runtime": "ts",
                                                            "scan_changes": False})
            assert status == 201, (status, data)

            def run_ts():
                r = c.run({"runtime": "ts", "code": "const x = 1;", "scan_changes": False})
                assert r["exit_code"] == 0, r
            in_context("bench-ts", "const x = 1;")  # the interpreter's start
            cases["context_ts_warm"] = lambda: in_context("bench-ts", "const x = 1;")
            cases["bun_cold"] = lambda: subprocess.run([bun, "-e", "const x = 1;"], check=True)
            cases["run_ts"] = run_ts
        times = {k: [] for k in cases}
        for _ in range(rounds):
            for k, fn in cases.items():
                times[k].append(timed(fn))
        return {k: statistics.median(v) * 1e3 for k, v in times.items()}
    finally:
        d.close()
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentd", default=os.path.join(ROOT, "build", "daemon", "agentd"))
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="", help="context: only the context rows")
    args = ap.parse_args()
    if args.only == "context":
        r = bench_context(args.agentd, args.rounds * 10)
        print_context(r)
        return
    results = {"scan_disk": bench_scan(args.agentd, "/tmp", args.files, args.rounds)}
    if os.path.isdir("/dev/shm"):
        results["scan_tmpfs"] = bench_scan(args.agentd, "/dev/shm", args.files, args.rounds)
    results["run"] = bench_run(args.agentd, args.rounds * 10)
    results["context"] = bench_context(args.agentd, args.rounds * 10)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "run.json"), "w") as f:
        json.dump(results, f, indent=2)
    print("| measurement | agentd | baseline | ratio |")
    print("|---|---|---|---|")
    for key in ("scan_disk", "scan_tmpfs"):
        if key in results:
            r = results[key]
            print("| one scan of %d files (%s) | %.0f ms | find: %.0f ms | %.2f |" % (
                r["files"], key[5:], r["scan_ms"], r["find_ms"], r["scan_ms"] / r["find_ms"]))
    r = results["run"]
    for key, label in (("run_scan", "/v1/run `true`, scans of an empty cwd"),
                       ("run_noscan", "/v1/run `true`, scan_changes=false"),
                       ("run_limits", "/v1/run `true`, memory+pids limits (cgroup)")):
        print("| %s | %.1f ms | exec+poll: %.1f ms | %.2f |" % (
            label, r[key], r["exec_baseline"], r[key] / r["exec_baseline"]))
    print_context(results["context"])


def print_context(r):
    print("| trivial python run in a warm context | %.2f ms | `python3 -c` cold: %.1f ms | "
          "%.1fx faster |" % (r["context_warm"], r["python_cold"],
                              r["python_cold"] / r["context_warm"]))
    print("| trivial python run in a warm context | %.2f ms | /v1/run python: %.1f ms | "
          "%.1fx faster |" % (r["context_warm"], r["run_python"],
                              r["run_python"] / r["context_warm"]))
    if "context_ts_warm" in r:
        print("| trivial ts run in a warm context | %.2f ms | `bun -e` cold: %.1f ms | "
              "%.1fx faster |" % (r["context_ts_warm"], r["bun_cold"],
                                  r["bun_cold"] / r["context_ts_warm"]))
        print("| trivial ts run in a warm context | %.2f ms | /v1/run ts: %.1f ms | "
              "%.1fx faster |" % (r["context_ts_warm"], r["run_ts"],
                                  r["run_ts"] / r["context_ts_warm"]))


if __name__ == "__main__":
    main()
