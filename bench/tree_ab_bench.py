#!/usr/bin/env python3
"""Tree download through `agentctl cp :DIR DIR`, two builds side by side
(docs/BENCHMARKS.md, "Tree download: where the time went").

fs_bench.py's tree (10,000 small files plus three 64 MiB ones) on a tmpfs,
a daemon of each build, each build's own `agentctl`, and `tar c | tar x`
through a loopback TCP socket in the same rounds; the order within a round
rotates, so load from other work hits all three alike. Besides wall time it
reports process CPU time (the robust figure on a loaded machine): the
`agentctl` process (user + system, from wait4), the daemon's (from
/proc/PID/stat, before and after) and both `tar`s together.

Usage: bench/tree_ab_bench.py A_BUILD_DIR B_BUILD_DIR [--rounds 9] [--small N]
(a build dir holds daemon/agentd and cli/agentctl). Prints medians and B/A.
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from fs_bench import MiB, make_tree, reset_dir  # noqa: E402
from lib import agentd_test  # noqa: E402
from loopback import socket_pipeline  # noqa: E402
from proc_cpu import cpu_seconds  # noqa: E402



def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(fn, daemon=None):
    """(wall s, children CPU s, daemon CPU s) of one call."""
    d0 = cpu_seconds(daemon.proc.pid) if daemon else 0.0
    c0 = children_cpu()
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    c1 = children_cpu()
    d1 = cpu_seconds(daemon.proc.pid) if daemon else 0.0
    return wall, c1 - c0, d1 - d0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--large", type=int, default=3)
    args = ap.parse_args()
    builds = [os.path.abspath(x) for x in (args.a, args.b)]
    work = tempfile.mkdtemp(prefix="agentd-treeab-")
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4g", "tmpfs", work]).returncode == 0
    daemons = []
    try:
        src, dst = os.path.join(work, "src"), os.path.join(work, "dst")
        make_tree(src, args.small, args.large, 64 * MiB)
        for b in builds:
            daemons.append(agentd_test.Daemon(binary=os.path.join(b, "daemon", "agentd")))

        def agentctl(k):
            d = daemons[k]
            env = dict(os.environ, AGENTD_URL="http://127.0.0.1:%d" % d.port,
                       AGENTD_TOKEN=d.token)
            tool = os.path.join(builds[k], "cli", "agentctl")
            return lambda: subprocess.run([tool, "cp", ":" + src, dst], check=True, env=env,
                                          stdout=subprocess.DEVNULL)

        def tar():
            socket_pipeline(["tar", "-C", src, "-cf", "-", "."], ["tar", "-C", dst, "-xf", "-"])

        runs = {"tar": (tar, None), "A": (agentctl(0), daemons[0]),
                "B": (agentctl(1), daemons[1])}
        order = ["tar", "A", "B"]
        got = {k: [] for k in order}
        for r in range(args.rounds + 1):  # round 0 warms up and is dropped
            for k in order[r % 3:] + order[:r % 3]:
                reset_dir(dst)
                fn, daemon = runs[k]
                m = measure(fn, daemon)
                if r:
                    got[k].append(m)
        print("# %d files + %d x 64 MiB on %s, %d rounds, load %.1f at the end" % (
            args.small, args.large, "tmpfs" if mounted else "disk", args.rounds,
            os.getloadavg()[0]))
        med = statistics.median
        tw = [m[0] for m in got["tar"]]
        print("tar c | tar x: wall %.3f s, CPU of both tars %.3f s" % (
            med(tw), med(m[1] for m in got["tar"])))
        for k in ("A", "B"):
            w = [m[0] for m in got[k]]
            print("%s: wall %.3f s, ratio to tar %.2f (rounds %s); CPU agentctl %.3f s, "
                  "daemon %.3f s, sum %.3f s" % (
                      k, med(w), med(t / x for t, x in zip(tw, w)),
                      " ".join("%.2f" % (t / x) for t, x in zip(tw, w)),
                      med(m[1] for m in got[k]), med(m[2] for m in got[k]),
                      med(m[1] + m[2] for m in got[k])))
        a, b = got["A"], got["B"]
        print("B/A: wall %.3f, agentctl CPU %.3f, daemon CPU %.3f (medians of round ratios)" % (
            med(y[0] / x[0] for x, y in zip(a, b)),
            med(y[1] / x[1] for x, y in zip(a, b)),
            med(y[2] / max(x[2], 1e-9) for x, y in zip(a, b))))
    finally:
        for d in daemons:
            d.close()
        if mounted:
            subprocess.run(["umount", "-l", work])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
