#!/usr/bin/env python3
"""The exec round trip per --state-sync mode (docs/BENCHMARKS.md, "Exec
engine", "Disk-backed state"): start /bin/true and wait in one request,
driven from C (exec_round_trip.c), with the state directory on each given
file system, a daemon per (file system, mode), all in the same rounds as
the C fork+exec+wait loop, interleaved so load from other work hits all
alike.

Usage: bench/state_sync_bench.py [--agentd build/daemon/agentd]
           [--on /tmp,/dev/shm] [--modes none,batch,always] [--n 200]
           [--rounds 5] [--cgroup DIR] [--json FILE]
--on takes parent directories. A slow device: bench/slow_disk.sh mounts
an ext4 loop device whose writes the cgroup v1 blkio controller throttles
to a few per second (no dm-delay in this kernel); --cgroup DIR puts every
daemon into that blkio cgroup, so the writes its fsyncs issue wait there.
"""

import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from exec_bench import Daemon, build_baseline, c_exec_round, fork_exec_round, pct  # noqa: E402


def metric(d, name):
    conn = d.conn()
    conn.request("GET", "/v1/metrics", headers={"Authorization": "Bearer bench-token"})
    for line in conn.getresponse().read().decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentd", default=os.path.join(os.path.dirname(HERE), "build/daemon/agentd"))
    ap.add_argument("--on", default="/tmp,/dev/shm")
    ap.add_argument("--modes", default="none,batch,always")
    ap.add_argument("--n", type=int, default=200, help="execs per daemon per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cgroup", help="a blkio cgroup directory for the daemons")
    ap.add_argument("--json")
    args = ap.parse_args()
    exe = build_baseline()
    driver = build_baseline("exec_round_trip")
    keys = [(p, m) for p in args.on.split(",") for m in args.modes.split(",")]
    daemons = {}
    try:
        for p, m in keys:
            daemons[p, m] = Daemon(args.agentd, "--ack-ttl-sec", "0", "--state-sync", m,
                                   state_parent=p)
            if args.cgroup:
                with open(os.path.join(args.cgroup, "cgroup.procs"), "w") as f:
                    f.write(str(daemons[p, m].proc.pid))
            c_exec_round(driver, daemons[p, m], 10**6, 20)  # warm up
        times = {k: [] for k in keys}
        base = []
        for r in range(args.rounds):
            base += fork_exec_round(exe, args.n)
            for k in keys:
                times[k] += c_exec_round(driver, daemons[k], r * args.n, args.n)
        syncs = {k: (metric(daemons[k], "agentd_state_syncs_total"),
                     metric(daemons[k], "agentd_state_writes_total")) for k in keys}
    finally:
        for d in daemons.values():
            d.close()
        shutil.rmtree(os.path.dirname(exe))
        shutil.rmtree(os.path.dirname(driver))
    b50, b99 = pct(base, 50), pct(base, 99)
    rows = []
    print("| state on | --state-sync | p50 | p99 | p50 / fork+exec | fsync rounds / writes |")
    print("|---|---|---|---|---|---|")
    for k in keys:
        a50, a99 = pct(times[k], 50), pct(times[k], 99)
        rows.append({"on": k[0], "mode": k[1], "n": len(times[k]), "p50_us": a50, "p99_us": a99,
                     "baseline_p50_us": b50, "baseline_p99_us": b99,
                     "syncs": syncs[k][0], "writes": syncs[k][1]})
        print("| %s | %s | %.3f ms | %.3f ms | %.2fx | %d / %d |" % (
            k[0], k[1], a50 / 1000, a99 / 1000, a50 / b50, syncs[k][0], syncs[k][1]))
    print("fork+exec+wait: p50 %.3f ms, p99 %.3f ms (%d runs)" % (b50 / 1000, b99 / 1000,
                                                                   len(base)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
