#!/usr/bin/env python3
"""The daemon as a program: start to first health 200, and binary size
(docs/BENCHMARKS.md, "The suite: bench/run").

  start   spawn agentd on a fixed loopback port with a fresh state directory
          on tmpfs, then connect and `GET /v1/health` in a tight loop until
          one answers 200; the time from spawn to that answer, --starts
          times (median and p99)
          (beside it, the same script's spawn of /bin/true to its exit)
  size    the size of the binary given with --static after `strip --strip-all`
          (the release build ships it stripped)

Usage: bench/startup_bench.py [--agentd PATH] [--static PATH] [--starts 50]
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
import time
from typing import Any, Dict, List, Optional

from exec_bench import ROOT, pct
from loopback import free_port

HEALTH = b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


def health_ok(port: int) -> bool:
    """One connect + GET /v1/health; True on a 200 answer."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(HEALTH)
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def one_start(binary: str, state_parent: Optional[str]) -> float:
    tmp = tempfile.mkdtemp(prefix="agentd-start-", dir=state_parent)
    port = free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([binary, "--listen", "127.0.0.1:%d" % port, "--state-dir",
                             os.path.join(tmp, "state"), "--log-level", "warn"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = t0 + 10
        while not health_ok(port):
            if proc.poll() is not None:
                raise RuntimeError("agentd exited with %d before answering" % proc.returncode)
            if time.perf_counter() > deadline:
                raise RuntimeError("agentd did not answer /v1/health within 10 s")
            time.sleep(0.0002)
        return time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)


def one_spawn() -> float:
    """The same spawn from this script of /bin/true, to its exit: the part of
    a start that is Python's and the kernel's, not the daemon's."""
    t0 = time.perf_counter()
    subprocess.run(["/bin/true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def stripped_size(binary: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "agentd")
        subprocess.run(["strip", "--strip-all", "-o", out, binary], check=True)
        return os.path.getsize(out)


def is_static(binary: str) -> bool:
    """No program interpreter: the kernel loads it without ld.so."""
    headers = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True,
                             check=True).stdout
    return "INTERP" not in headers


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentd", default=os.path.join(ROOT, "build", "daemon", "agentd"))
    ap.add_argument("--static", help="the static binary to measure (default: --agentd)")
    ap.add_argument("--starts", type=int, default=50)
    ap.add_argument("--smoke", action="store_true", help="3 starts")
    ap.add_argument("--json", help="also write the measurements to this file")
    args = ap.parse_args()
    parent = "/dev/shm" if os.path.isdir("/dev/shm") else None
    one_start(args.agentd, parent)  # warm the page cache with the binary
    starts: List[float] = []
    spawns: List[float] = []
    for _ in range(3 if args.smoke else args.starts):  # interleaved
        starts.append(one_start(args.agentd, parent))
        spawns.append(one_spawn())
    static = args.static or args.agentd
    r: Dict[str, Any] = {
        "start_s": starts, "start_p50_s": statistics.median(starts),
        "start_p99_s": pct(starts, 99), "spawn_true_s": spawns,
        "spawn_true_p50_s": statistics.median(spawns), "binary": os.path.abspath(static),
        "static": is_static(static), "stripped_bytes": stripped_size(static)}
    print("start to first health 200: p50 %.1f ms, p99 %.1f ms (%d starts)" % (
        r["start_p50_s"] * 1e3, r["start_p99_s"] * 1e3, len(starts)))
    print("%s binary, stripped: %.2f MiB" % ("static" if r["static"] else "dynamic",
                                            r["stripped_bytes"] / (1 << 20)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
