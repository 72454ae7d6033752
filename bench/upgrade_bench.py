#!/usr/bin/env python3
"""The pause of an upgrade in place (docs/BENCHMARKS.md, "Upgrade in place";
issue 27's row): how long a new request waits while the daemon re-executes
its binary, with 0 and with 100 running execs handed over.

While `agentd --upgrade` runs, a prober sends `GET /v1/health` on a fresh
connection after each answer. The listening socket is handed over, so a
connection made during the upgrade waits in the kernel's backlog until the
new binary accepts it; the longest answer of the probes that overlapped the
upgrade is the pause. Also: the `agentd --upgrade` command's own duration,
and probes that failed (none may: the contract lets an upgrade close a
keep-alive connection, never refuse a new one).

Baseline, same run: a cold start of the same binary to its first health
200 (what a restart costs at the least, before it loses every running
exec). After the rounds every one of the running execs must still run.

Usage: bench/upgrade_bench.py [--agentd PATH] [--execs 100] [--rounds 5]
                              [--smoke] [--json FILE]
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from typing import Any, Dict, List

from exec_bench import ROOT, Daemon
from startup_bench import one_start

HEALTH = b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


def health_upgrades(port: int) -> int:
    """One fresh connection and `GET /v1/health`: the daemon's `upgrades`."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(HEALTH)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError("health answered %r" % head[:40])
    return json.loads(body)["upgrades"]


class Prober(threading.Thread):
    """Health probes back to back until stopped: (sent, answered, upgrades)
    for each, and the errors."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.probes: List[tuple] = []
        self.errors: List[str] = []

    def run(self):
        while not self.stop.is_set():
            t0 = time.perf_counter()
            try:
                n = health_upgrades(self.port)
            except (OSError, RuntimeError, ValueError) as e:
                self.errors.append(repr(e))
                continue
            self.probes.append((t0, time.perf_counter(), n))


def one_upgrade(d: Daemon, binary: str, done_before: int) -> Dict[str, float]:
    prober = Prober(d.port)
    prober.start()
    while not prober.probes:  # the prober is answered before the upgrade starts
        time.sleep(0.001)
    t0 = time.perf_counter()
    run = subprocess.run([binary, "--upgrade", "--state-dir", os.path.join(d.tmp, "state")],
                         capture_output=True, text=True, timeout=300)
    t1 = time.perf_counter()
    if run.returncode != 0:
        prober.stop.set()
        raise RuntimeError("agentd --upgrade exited %d: %s" % (run.returncode,
                                                                run.stdout + run.stderr))
    # Until a probe made after the command returned is answered by the new binary.
    while not any(s > t1 and n == done_before + 1 for s, _, n in prober.probes):
        if not prober.is_alive():
            raise RuntimeError("the prober stopped")
        time.sleep(0.001)
    prober.stop.set()
    prober.join()
    overlapping = [a - s for s, a, _ in prober.probes if a >= t0 and s <= t1]
    steady = [a - s for s, a, _ in prober.probes if a < t0]
    return {"pause_s": max(overlapping), "command_s": t1 - t0,
            "steady_probe_s": statistics.median(steady), "probes": len(prober.probes),
            "errors": len(prober.errors), "error_sample": prober.errors[:3]}


def running_count(d: Daemon) -> int:
    conn = d.conn()
    try:
        _, obj = d.call(conn, "GET", "/v1/execs")
    finally:
        conn.close()
    return sum(1 for e in obj["execs"] if e["state"] == "running")


def measure(binary: str, execs: int, rounds: int) -> Dict[str, Any]:
    # The daemon runs a copy: an upgrade executes the binary at the daemon's
    # own path, and nothing here may replace the build's.
    bin_dir = tempfile.mkdtemp(prefix="agentd-upgrade-bench-")
    copy = os.path.join(bin_dir, "agentd")
    shutil.copyfile(binary, copy)
    os.chmod(copy, 0o755)
    d = Daemon(copy, "--max-execs", str(execs + 10), state_parent="/dev/shm")
    try:
        conn = d.conn()
        for i in range(execs):
            s, obj = d.call(conn, "PUT", "/v1/execs/held-%d" % i, {"argv": ["sleep", "3600"]})
            assert s == 201, (s, obj)
        conn.close()
        ups = [one_upgrade(d, copy, k) for k in range(rounds)]
        still = running_count(d)
        if still != execs:
            raise RuntimeError("%d of %d execs still run after %d upgrades" % (
                still, execs, rounds))
    finally:
        d.close()
        shutil.rmtree(bin_dir, ignore_errors=True)
    med = statistics.median
    return {"execs": execs, "rounds": rounds, "still_running": still,
            "pause_p50_s": med(u["pause_s"] for u in ups),
            "pause_max_s": max(u["pause_s"] for u in ups),
            "command_p50_s": med(u["command_s"] for u in ups),
            "steady_probe_p50_s": med(u["steady_probe_s"] for u in ups),
            "probe_errors": sum(u["errors"] for u in ups),
            "error_sample": [e for u in ups for e in u["error_sample"]][:3],
            "each": ups}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agentd", default=os.path.join(ROOT, "build", "daemon", "agentd"))
    ap.add_argument("--execs", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--smoke", action="store_true", help="2 rounds, 10 execs")
    ap.add_argument("--json", help="also write the measurements to this file")
    args = ap.parse_args()
    rounds, execs = (2, 10) if args.smoke else (args.rounds, args.execs)

    one_start(args.agentd, "/dev/shm")  # the page cache holds the binary
    starts = [one_start(args.agentd, "/dev/shm") for _ in range(max(5, rounds))]
    result = {"cold_start_p50_s": statistics.median(starts),
              "idle": measure(args.agentd, 0, rounds),
              "busy": measure(args.agentd, execs, rounds)}
    for name in ("idle", "busy"):
        r = result[name]
        print("upgrade with %d running execs: pause p50 %.1f ms (max %.1f), command %.1f ms, "
              "%d probe errors" % (r["execs"], r["pause_p50_s"] * 1e3, r["pause_max_s"] * 1e3,
                                   r["command_p50_s"] * 1e3, r["probe_errors"]))
    print("cold start to first health: %.1f ms" % (result["cold_start_p50_s"] * 1e3))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
