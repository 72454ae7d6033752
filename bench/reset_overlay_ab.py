#!/usr/bin/env python3
"""The overlay reset of two builds of agentd in the same run (docs/BENCHMARKS.md,
"Reset with overlays"): a daemon of each build with `--reset-overlay auto` on
a reset path of its own; each round the tenant leaves reset_bench.py's tree
of --files files (--file-kib each) and one a tenth its size in each path,
and the reset swaps the overlay. Rounds interleave the builds and alternate
which size goes first, so load from other work hits both alike. Timed as in
reset_bench.py: from the request to its answer (the daemon's own
duration_ms beside it).

Prints, per build, the medians of both sizes and their ratio (the
`bench/run` row "10000 files vs 1000 (independent of size)"), and the load
average before and after.

Usage: bench/reset_overlay_ab.py A_AGENTD B_AGENTD [--files 10000]
                                 [--file-kib 20] [--rounds 15] [--json FILE]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from exec_bench import Daemon  # noqa: E402
from reset_bench import (close_overlay_daemon, make_tree, overlay_available,  # noqa: E402
                         timed_reset)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--file-kib", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--json")
    args = ap.parse_args()
    if not overlay_available():
        sys.exit("needs root and overlayfs")
    size = args.file_kib << 10
    sizes = (args.files, args.files // 10)
    work = tempfile.mkdtemp(prefix="agentd-reset-ab-")
    daemons = {}
    out = {k: {n: {"s": [], "daemon_ms": []} for n in sizes} for k in ("a", "b")}
    load_before = os.getloadavg()
    try:
        for key in ("a", "b"):
            path = os.path.join(work, key)
            os.mkdir(path)
            daemons[key] = (Daemon(getattr(args, key), "--reset-path", path,
                                   "--reset-overlay", "auto"), path)
        n = 0
        for r in range(args.rounds):
            for key in (("a", "b") if r % 2 == 0 else ("b", "a")):
                d, path = daemons[key]
                for count in (sizes if r % 4 < 2 else sizes[::-1]):
                    make_tree(path, count, size)
                    subprocess.run(["sync"], check=True)
                    res = timed_reset(d, n)
                    n += 1
                    if res["report"]["removed"]["entries"] < count:
                        raise RuntimeError("removed too little: %s" % res["report"])
                    out[key][count]["s"].append(res["s"])
                    out[key][count]["daemon_ms"].append(res["daemon_ms"])
    finally:
        for d, path in daemons.values():
            close_overlay_daemon(d, path)
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()

    med = statistics.median
    big, small = sizes
    print("load average before %.2f %.2f %.2f, after %.2f %.2f %.2f" % (load_before + load_after))
    for key in ("a", "b"):
        o = out[key]
        o["ratio"] = med(o[big]["s"]) / med(o[small]["s"])
        print("%s %s: %d files %.2f ms (daemon's own %.1f ms), %d files %.2f ms (%.1f ms); %.2fx"
              % (key.upper(), getattr(args, key), big, med(o[big]["s"]) * 1e3,
                 med(o[big]["daemon_ms"]), small, med(o[small]["s"]) * 1e3,
                 med(o[small]["daemon_ms"]), o["ratio"]))
    print("B/A at %d files: %.2f; at %d files: %.2f" % (
        big, med(out["b"][big]["s"]) / med(out["a"][big]["s"]),
        small, med(out["b"][small]["s"]) / med(out["a"][small]["s"])))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"load_before": load_before, "load_after": load_after, "files": big,
                       "file_bytes": size, "rounds": args.rounds, "a": args.a, "b": args.b,
                       "results": out}, f, indent=2)


if __name__ == "__main__":
    main()
