#!/usr/bin/env python3
"""Two builds of agentd in the same run (docs/BENCHMARKS.md, "Code actions"
and "Exec engine"): for a change that should not move a hot path (compiler
options, the binary's size), the before and after binaries measured side by
side, interleaved round by round, so load from other work hits both alike.
Run separately, each binary's ratio to its own baseline moved by 2x on a
shared machine.

  scan  the changed-files scans of POST /v1/run on a tree of FILES files
        (run_bench.py's tree and phase histogram), a daemon of each build on
        the same tree, on the disk file system of /tmp and on tmpfs; `find`
        in the same rounds.
  rt    the exec round trip driven from C (exec_bench.py's exec_round_trip.c,
        the start that waits), state on tmpfs, a daemon of each build; the
        C fork+exec+wait loop in the same rounds.
  tp    output throughput (exec_bench.py's rows): one exec printing N bytes
        (1 GiB) read over the raw route and over SSE, from a daemon of each
        build, state on tmpfs; `head -c` through loopback TCP in the same
        rounds. Also the daemon's CPU and voluntary context switches per
        GiB of the raw row, which load from other work moves less than
        the rates.

Usage: bench/ab_bench.py A_AGENTD B_AGENTD scan|rt|tp [--n N] [--rounds R]
Prints medians (and p99 for rt) and B/A. Swap A and B for a second run:
which one goes first in a round should not matter.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from exec_bench import (GIB, Daemon, baseline_socket, build_baseline, c_exec_round,  # noqa: E402
                        fork_exec_round, pct, stream_exec)
from proc_cpu import cpu_seconds  # noqa: E402
from run_bench import Client, make_tree, timed  # noqa: E402


def scan(binaries, files, rounds):
    changed = "d%04d/f050.txt" % (files // 200)  # a file in the middle of the tree
    for parent in ("/tmp", "/dev/shm"):
        if not os.path.isdir(parent):
            continue
        tree = tempfile.mkdtemp(prefix="agentd-scan-", dir=parent)
        daemons = []
        try:
            make_tree(tree, files)
            for b in binaries:
                daemons.append(Daemon(b, "--workdir", tree, "--scan-max-entries", str(files * 2),
                                      "--scan-max-ms", "60000", state_parent=parent))
            clients = [Client(d.port) for d in daemons]
            for c in clients:
                c.run({"runtime": "shell", "code": "true"})  # warm the caches
            scans, finds = [[] for _ in binaries], []
            for i in range(rounds):
                for k, c in enumerate(clients):
                    before = c.phases()
                    r = c.run({"runtime": "shell", "code": "echo %d > %s" % (i, changed)})
                    after = c.phases()
                    assert len(r["changed_files"]) == 1 and not r["changed_files_truncated"], r
                    for phase in ("scan_before", "scan_after"):
                        scans[k].append(after[phase][0] - before[phase][0])
                finds.append(timed(lambda: subprocess.run(
                    ["find", tree, "-printf", "%s %T@ %C@ %i %m\\n"],
                    stdout=subprocess.DEVNULL, check=True)))
        finally:
            for d in daemons:
                d.close()
            shutil.rmtree(tree, ignore_errors=True)
        a, b, f = (statistics.median(x) * 1e3 for x in (scans[0], scans[1], finds))
        print("scan on %s, %d files, %d scans each: A %.1f ms (%.2f of find), "
              "B %.1f ms (%.2f of find), find %.1f ms; B/A %.3f" % (
                  parent, files, len(scans[0]), a, a / f, b, b / f, f, b / a))


def round_trip(binaries, n, rounds):
    exe = build_baseline()
    driver = build_baseline("exec_round_trip")
    daemons = []
    try:
        for b in binaries:
            daemons.append(Daemon(b, "--ack-ttl-sec", "0", state_parent="/dev/shm"))
        for d in daemons:
            c_exec_round(driver, d, 2 * 10**6, 20)  # warm up
        times, base = [[] for _ in binaries], []
        for r in range(rounds):
            base += fork_exec_round(exe, n)
            for k, d in enumerate(daemons):
                times[k] += c_exec_round(driver, d, r * n, n)
    finally:
        for d in daemons:
            d.close()
        shutil.rmtree(os.path.dirname(exe))
        shutil.rmtree(os.path.dirname(driver))
    for p in (50, 99):
        a, b, f = pct(times[0], p), pct(times[1], p), pct(base, p)
        print("round trip p%d, state on tmpfs, %d each: A %.3f ms (%.2fx fork+exec), "
              "B %.3f ms (%.2fx), fork+exec %.3f ms; B/A %.3f" % (
                  p, len(times[0]), a / 1000, a / f, b / 1000, b / f, f / 1000, b / a))


def daemon_cost(pid):
    """(CPU seconds of all the daemon's threads, their voluntary context
    switches): what a stream costs the daemon beside its wall-clock rate,
    which load from other work moves far more."""
    cpu = cpu_seconds(pid)
    switches = 0
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/status" % (pid, task)) as f:
            switches += sum(int(line.split()[1]) for line in f
                            if line.startswith("voluntary_ctxt_switches"))
    return cpu, switches


def throughput(binaries, size, rounds):
    daemons = []
    try:
        for b in binaries:  # retention above the size: nothing is released while read
            daemons.append(Daemon(b, "--retention-stream-bytes", str(4 * GIB),
                                  "--retention-total-bytes", str(8 * GIB), "--ack-ttl-sec", "0",
                                  state_parent="/dev/shm"))
        base, raw, sse = [], [[] for _ in binaries], [[] for _ in binaries]
        cost = [[] for _ in binaries]  # per GiB of the raw row: (CPU s, switches)
        for r in range(rounds):
            base.append(baseline_socket(size))
            order = list(enumerate(daemons))
            for k, d in order if r % 2 == 0 else reversed(order):
                before = daemon_cost(d.proc.pid)
                raw[k].append(stream_exec(d, "raw-%d" % r, "stdout?follow=1", size)[0])
                after = daemon_cost(d.proc.pid)
                cost[k].append(tuple((a - b) * GIB / size for a, b in zip(after, before)))
                sse[k].append(stream_exec(d, "sse-%d" % r, "events", size)[0])
                conn = d.conn()
                for exec_id in ("raw-%d" % r, "sse-%d" % r):
                    d.call(conn, "POST", "/v1/execs/%s/ack" % exec_id)
                conn.close()
    finally:
        for d in daemons:
            d.close()
    med, mib = statistics.median, lambda x: x / (1 << 20)
    print("%d MiB, %d rounds; head -c through loopback TCP: %.0f MiB/s (rounds %s)" % (
        size >> 20, rounds, mib(med(base)), " ".join("%.0f" % mib(x) for x in base)))
    for k, name in enumerate("AB"):
        print("%s: raw %.0f MiB/s, %.2fx of the socket (rounds %s); SSE %.0f MiB/s, %.2fx of "
              "raw (rounds %s)" % (
                  name, mib(med(raw[k])), med(x / b for x, b in zip(raw[k], base)),
                  " ".join("%.2f" % (x / b) for x, b in zip(raw[k], base)), mib(med(sse[k])),
                  med(s / x for s, x in zip(sse[k], raw[k])),
                  " ".join("%.2f" % (s / x) for s, x in zip(sse[k], raw[k]))))
    for k, name in enumerate("AB"):
        print("%s: the daemon per GiB of raw: %.2f s CPU (rounds %s), %.0f voluntary switches" % (
            name, med(c[0] for c in cost[k]), " ".join("%.2f" % c[0] for c in cost[k]),
            med(c[1] for c in cost[k])))
    print("B/A: raw %.3f, SSE %.3f (medians of round ratios)" % (
        med(b / a for a, b in zip(raw[0], raw[1])), med(b / a for a, b in zip(sse[0], sse[1]))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("what", choices=("scan", "rt", "tp"))
    ap.add_argument("--n", type=int,
                    help="scan: files (30,000); rt: execs per round (200); tp: bytes (1 GiB)")
    ap.add_argument("--rounds", type=int, default=None, help="scan: 15; rt: 5; tp: 3")
    args = ap.parse_args()
    if args.what == "scan":
        scan((args.a, args.b), args.n or 30_000, args.rounds or 15)
    elif args.what == "rt":
        round_trip((args.a, args.b), args.n or 200, args.rounds or 5)
    else:
        throughput((args.a, args.b), args.n or GIB, args.rounds or 3)


if __name__ == "__main__":
    main()
