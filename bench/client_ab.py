#!/usr/bin/env python3
"""A/B of the C++ client's Run(/bin/true) overhead: two client_bench builds
(say main's and a branch's) run in turns against fresh daemons of one
agentd binary, in one script, so both see the same load.

  bench/client_ab.py --a BUILD_A --b BUILD_B [--agentd PATH] [--pairs N] [--rounds N]

Prints, per side, the median over the pairs of client_bench's ratio
Run p50 / raw p50 and of the client's overhead (Run p50 - raw p50, in us),
with the load average before and after.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

from exec_bench import Daemon, TOKEN


def one(build, agentd, rounds):
    d = Daemon(agentd, state_parent="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        p = subprocess.Popen(
            [os.path.join(build, "bench", "client_bench"), "--url", "http://127.0.0.1:%d" % d.port,
             "--token", TOKEN, "--rounds", str(rounds), "--stream-mib", "1"],
            stdout=subprocess.PIPE, text=True)
        out = p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise RuntimeError("client_bench failed: %d" % p.returncode)
    finally:
        d.close()
    r = json.loads(out)
    # The whole client_bench process (both sides, start-up, a 1 MiB stream):
    # the raw side is the same code in A and B, so the difference is the client's.
    r["process_cpu_us_per_round"] = (usage.ru_utime + usage.ru_stime) * 1e6 / (rounds + 20)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="build directory of side A")
    ap.add_argument("--b", required=True, help="build directory of side B")
    ap.add_argument("--agentd", help="daemon for both sides (default: side A's)")
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=500)
    args = ap.parse_args()
    agentd = args.agentd or os.path.join(args.a, "daemon", "agentd")
    load0 = os.getloadavg()
    res = {"a": [], "b": []}
    for i in range(args.pairs):
        for side in (("a", "b") if i % 2 == 0 else ("b", "a")):
            r = one(getattr(args, side), agentd, args.rounds)
            res[side].append(r)
            print("%s: ratio %.3f  run %.3f ms  raw %.3f ms  overhead %.0f us  process cpu %.0f us/round%s" % (
                side, r["run_ratio_p50"], r["run_p50_ms"], r["raw_p50_ms"],
                (r["run_p50_ms"] - r["raw_p50_ms"]) * 1e3, r["process_cpu_us_per_round"],
                "  cpu run %.0f raw %.0f us" % (r["run_cpu_us"], r["raw_cpu_us"])
                if "run_cpu_us" in r else ""), flush=True)
    load1 = os.getloadavg()
    for side in ("a", "b"):
        rs = res[side]
        print("%s (%s): median ratio %.3f, median overhead %.0f us, process cpu %.0f us/round" % (
            side, getattr(args, side), statistics.median(r["run_ratio_p50"] for r in rs),
            statistics.median((r["run_p50_ms"] - r["raw_p50_ms"]) * 1e3 for r in rs),
            statistics.median(r["process_cpu_us_per_round"] for r in rs)))
    print("load average before %.2f %.2f %.2f, after %.2f %.2f %.2f" % (load0 + load1))


if __name__ == "__main__":
    sys.exit(main())
