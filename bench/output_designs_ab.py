#!/usr/bin/env python3
"""The output route's candidate designs in one A/B run (issue 27;
docs/BENCHMARKS.md, "Output designs").

bench/output_designs_ab.c models each design of the daemon's data path,
from `head -c SIZE /dev/zero` to a reader over loopback TCP; this script
builds it and runs every design in each round, in a rotated order, so load
that comes and goes hits all of them alike. A design's ratio is the median
of its per-round ratios to the baseline of the same round:

  socket    head's stdout is the socket: the baseline (keeps nothing)
  spool     today's daemon: pipe -> splice into a spool file -> sendfile
  tee       pipe -> tee(2) into a second pipe spliced to the socket, the
            original spliced into the spool (sendfile from the spool when
            the follower falls behind)
  file      the child writes the spool file itself (O_APPEND); the server
            follows it by inotify and sendfile()s
  sse       SSE events as the daemon makes them (pread, base64 in JSON), one
            per write
  ssebatch  the same events in writes of about --batch bytes
  ssemap    as ssebatch, base64 encoded straight from a mapping of the spool
            (no pread copy)

Usage: bench/output_designs_ab.py [--size BYTES] [--rounds N] [--smoke]
                                  [--spool-dir /dev/shm] [--batch BYTES]
                                  [--designs socket,spool,...] [--json FILE]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from exec_bench import build_baseline  # noqa: E402

DESIGNS = ["socket", "spool", "tee", "file", "sse", "ssebatch", "ssemap"]
GIB = 1 << 30


def run_design(exe, design, size, spool_dir, batch):
    """One transfer; returns its output bytes per second."""
    out = subprocess.run([exe, design, str(size), spool_dir, str(batch)], capture_output=True,
                         text=True, check=True).stdout.split()
    seconds, got = float(out[0]), int(out[1])
    # Raw designs deliver exactly the bytes; SSE at least their base64.
    expected = size if not design.startswith("sse") else size * 4 // 3
    assert got >= expected and (design.startswith("sse") or got == size), (design, got)
    return size / seconds


def measure(exe, designs, size, rounds, spool_dir, batch):
    rates = {d: [] for d in designs}
    for r in range(rounds):
        order = designs[r % len(designs):] + designs[:r % len(designs)]
        for d in order:
            rates[d].append(run_design(exe, d, size, spool_dir, batch))
    return rates


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=GIB, help="bytes per transfer (1 GiB)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--smoke", action="store_true", help="8 MiB, one round: checks it works")
    ap.add_argument("--spool-dir", default="/dev/shm" if os.path.isdir("/dev/shm") else "/tmp",
                    help="where the spool files go (tmpfs, as the daemon's state usually is)")
    ap.add_argument("--batch", type=int, default=1 << 20, help="ssebatch: bytes per write")
    ap.add_argument("--designs", default=",".join(DESIGNS))
    ap.add_argument("--json", help="where to write the results")
    args = ap.parse_args()
    size, rounds = (8 << 20, 1) if args.smoke else (args.size, args.rounds)
    designs = [d for d in args.designs.split(",") if d]
    if designs[0] != "socket" or set(designs) - set(DESIGNS):
        ap.error("--designs must start with socket and name only: %s" % ", ".join(DESIGNS))

    exe = build_baseline("output_designs_ab")
    load_start = os.getloadavg()
    try:
        rates = measure(exe, designs, size, rounds, args.spool_dir, args.batch)
    finally:
        shutil.rmtree(os.path.dirname(exe))
    med = statistics.median
    base = rates["socket"]
    result = {"size": size, "rounds": rounds, "spool_dir": args.spool_dir, "batch": args.batch,
              "loadavg_at_start": load_start, "loadavg_at_end": os.getloadavg(),
              "designs": {d: {"rounds": rates[d], "bytes_per_s": med(rates[d]),
                              "ratio": med(x / b for x, b in zip(rates[d], base))}
                          for d in designs}}
    if "spool" in designs:
        for d in designs:
            result["designs"][d]["ratio_to_spool"] = med(
                x / s for x, s in zip(rates[d], rates["spool"]))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)

    print("%d MiB per transfer, %d rounds, spool in %s; load average %.1f at the start, "
          "%.1f at the end" % (size >> 20, rounds, args.spool_dir, load_start[0],
                               result["loadavg_at_end"][0]))
    print("| design | median MiB/s | per round | ratio to socket | ratio to spool |")
    print("|---|---|---|---|---|")
    for d in designs:
        r = result["designs"][d]
        print("| %s | %.0f | %s | %.2f | %s |" % (
            d, r["bytes_per_s"] / (1 << 20), " ".join("%.0f" % (x / (1 << 20)) for x in r["rounds"]),
            r["ratio"], "%.2f" % r["ratio_to_spool"] if "ratio_to_spool" in r else "—"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
