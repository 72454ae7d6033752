#!/usr/bin/env python3
"""What the exec holder costs (docs/BENCHMARKS.md, "Exec holder"): the same
measurements with holders (the default) and with --exec-holder off, in the
same run, interleaved in rounds, as ratios.

  round trip  start /bin/true and wait, from C (exec_round_trip.c), state
              on tmpfs: the exec start latency plus the exit's report; also
              against fork+exec+wait (the round trip's target: p50 <= 1.5x).
  throughput  one exec printing SIZE bytes, read over the raw route.
  memory      daemon RSS and system processes with N running execs; the
              RSS a holder keeps after the daemon was killed (the dead
              daemon's memory, shared by all its holders).

Usage: bench/holder_bench.py [--agentd build/daemon/agentd] [--smoke] [--json FILE]
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys

from exec_bench import (ROOT, Daemon, build_baseline, c_exec_round, fork_exec_round, pct,
                        stream_exec, wait_all_exited)

GIB = 1 << 30


def meminfo_kib(key):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def children(pid):
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/stat" % p) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(p))
            except (OSError, ValueError, IndexError):
                pass
    return out


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def round_trips(binary, exe, driver, n, rounds):
    on = Daemon(binary, "--ack-ttl-sec", "0", state_parent="/dev/shm")
    off = Daemon(binary, "--ack-ttl-sec", "0", "--exec-holder", "off", state_parent="/dev/shm")
    try:
        for d in (on, off):
            c_exec_round(driver, d, 2 * 10**6, 20)  # warm up
        base, with_h, without = [], [], []
        for r in range(rounds):
            base += fork_exec_round(exe, n // rounds)
            with_h += c_exec_round(driver, on, r * n, n // rounds)
            without += c_exec_round(driver, off, r * n, n // rounds)
    finally:
        on.close()
        off.close()
    return {"n": len(with_h), "holder_p50_us": pct(with_h, 50), "holder_p99_us": pct(with_h, 99),
            "off_p50_us": pct(without, 50), "off_p99_us": pct(without, 99),
            "baseline_p50_us": pct(base, 50)}


def throughputs(binary, size, rounds):
    flags = ("--retention-stream-bytes", str(4 * GIB), "--retention-total-bytes", str(8 * GIB),
             "--ack-ttl-sec", "0")
    on = Daemon(binary, *flags, state_parent="/dev/shm")
    off = Daemon(binary, *flags, "--exec-holder", "off", state_parent="/dev/shm")
    with_h, without = [], []
    try:
        for r in range(rounds):
            with_h.append(stream_exec(on, "t-%d" % r, "stdout?follow=1", size)[0])
            without.append(stream_exec(off, "t-%d" % r, "stdout?follow=1", size)[0])
            for d in (on, off):
                conn = d.conn()
                d.call(conn, "POST", "/v1/execs/t-%d/ack" % r)
                conn.close()
    finally:
        on.close()
        off.close()
    med = statistics.median
    return {"size": size, "rounds": rounds, "holder_bytes_per_s": med(with_h),
            "off_bytes_per_s": med(without),
            "ratio": med(a / b for a, b in zip(with_h, without))}


def restart(d, binary, *flags):
    """A new daemon on d's state directory (after d's was killed)."""
    d.proc = subprocess.Popen(
        [binary, "--listen", "127.0.0.1:0", "--state-dir", os.path.join(d.tmp, "state"),
         "--log-level", "warn", "--token-file", os.path.join(d.tmp, "token")] + list(flags),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d.port = d._find_port()


def memory(binary, running):
    out = {"running_execs": running}
    for mode in ("on", "off"):
        flags = ("--max-execs", str(running + 10), "--exec-holder", mode)
        d = Daemon(binary, *flags)
        try:
            conn = d.conn()
            d.call(conn, "GET", "/v1/execs")
            idle = d.rss_kib()
            stack0 = meminfo_kib("KernelStack")
            for i in range(running):
                s, _ = d.call(conn, "PUT", "/v1/execs/m-%d" % i, {"argv": ["sleep", "600"]})
                assert s == 201, s
            out[mode] = {"idle_kib": idle, "with_running_kib": d.rss_kib(),
                         "daemon_children": len(children(d.proc.pid)),
                         "kernel_stack_delta_kib": meminfo_kib("KernelStack") - stack0}
            conn.close()
            if mode == "on":
                # Kill the daemon: each holder keeps the dead daemon's memory
                # (one copy, shared by all of them) until a daemon ends it.
                holders = children(d.proc.pid)
                d.proc.kill()
                d.proc.wait()
                out["after_crash_holders"] = len([h for h in holders if os.path.exists(
                    "/proc/%d" % h)])
                out["after_crash_holder_rss_kib"] = rss_kib(holders[0])
                restart(d, binary, *flags)
                conn = d.conn()
            for i in range(running):
                d.call(conn, "POST", "/v1/execs/m-%d/kill" % i, {"signal": "KILL"})
            wait_all_exited(d, conn)
            conn.close()
        finally:
            d.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentd", default=os.path.join(ROOT, "build", "daemon", "agentd"))
    ap.add_argument("--quick", "--smoke", action="store_true", dest="smoke")
    ap.add_argument("--json")
    args = ap.parse_args()
    n, rounds = (40, 2) if args.smoke else (1000, 5)
    size = (16 << 20) if args.smoke else GIB
    running = 20 if args.smoke else 500
    exe = build_baseline()
    driver = build_baseline("exec_round_trip")
    results = {"machine": {"cpus": os.cpu_count(), "loadavg_at_start": os.getloadavg()}}
    results["round_trip"] = round_trips(args.agentd, exe, driver, n, rounds)
    results["throughput"] = throughputs(args.agentd, size, 1 if args.smoke else 3)
    results["memory"] = memory(args.agentd, running)
    results["machine"]["loadavg_at_end"] = os.getloadavg()
    shutil.rmtree(os.path.dirname(exe))
    shutil.rmtree(os.path.dirname(driver))
    out = args.json or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                    "holder.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=2)
    rt, tp, m = results["round_trip"], results["throughput"], results["memory"]
    print("| measurement | holder | --exec-holder off | ratio |")
    print("|---|---|---|---|")
    print("| round trip p50 (tmpfs, from C) | %.2f ms | %.2f ms | %.2fx |" % (
        rt["holder_p50_us"] / 1000, rt["off_p50_us"] / 1000, rt["holder_p50_us"] / rt["off_p50_us"]))
    print("| round trip p50 vs fork+exec+wait %.2f ms | %.2fx | %.2fx | target <= 1.5x |" % (
        rt["baseline_p50_us"] / 1000, rt["holder_p50_us"] / rt["baseline_p50_us"],
        rt["off_p50_us"] / rt["baseline_p50_us"]))
    print("| %d MiB output, raw | %.0f MiB/s | %.0f MiB/s | %.2f |" % (
        tp["size"] >> 20, tp["holder_bytes_per_s"] / (1 << 20), tp["off_bytes_per_s"] / (1 << 20),
        tp["ratio"]))
    for k in ("on", "off"):
        r = m[k]
        print("| %s: daemon RSS +%.1f KiB/exec, %d children, kernel stacks +%.1f KiB/exec |" % (
            k, (r["with_running_kib"] - r["idle_kib"]) / m["running_execs"], r["daemon_children"],
            r["kernel_stack_delta_kib"] / m["running_execs"]))
    print("| after a crash: a holder's RSS %.1f MiB (the dead daemon's, shared), %d holders |" % (
        m["after_crash_holder_rss_kib"] / 1024, m["after_crash_holders"]))


if __name__ == "__main__":
    sys.exit(main())
