#!/usr/bin/env python3
"""Single-file download A/B (docs/BENCHMARKS.md, "Filesystem and trees"):
two agentctl builds download the same 1 GiB file from one daemon, round by
round, with `cat SRC | loopback TCP | cat > DST` (the fs_bench.py baseline)
in the same rounds; the order of A and B alternates between rounds. Data on
a tmpfs (root). Reported per client: the median of the per-round ratios
cat time / client time (fs_bench.py's "x of baseline", the row's figure),
the median wall time, and the client's own CPU time (user + system from
wait4, per GiB), which load from other work moves far less than wall time.

Usage: bench/download_ab.py A_AGENTCTL B_AGENTCTL [--agentd build/daemon/agentd]
       [--rounds 7] [--mib 1024]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, HERE)
from lib import agentd_test  # noqa: E402
from loopback import socket_pipeline  # noqa: E402

MiB = 1 << 20


def run_timed(argv, env):
    """(wall seconds, child user+system seconds) of one run of argv."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError("%s failed: %d" % (" ".join(argv), proc.returncode))
    return wall, usage.ru_utime + usage.ru_stime


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--agentd", default=os.path.join(HERE, "..", "build", "daemon", "agentd"))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--mib", type=int, default=1024)
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="agentd-download-ab-")
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4g", "tmpfs", work]).returncode == 0
    daemon = None
    try:
        src = os.path.join(work, "src.bin")
        dst = os.path.join(work, "dst.bin")
        with open(src, "wb") as f, open("/dev/urandom", "rb") as rnd:
            block = rnd.read(16 * MiB)
            for _ in range(max(1, args.mib // 16)):
                f.write(block)
        size = os.path.getsize(src)
        daemon = agentd_test.Daemon(binary=os.path.abspath(args.agentd))
        env = dict(os.environ, AGENTD_URL="http://127.0.0.1:%d" % daemon.port,
                   AGENTD_TOKEN=daemon.token)

        def clean():
            if os.path.exists(dst):
                os.unlink(dst)

        def cat():
            with open(dst, "wb") as out:
                socket_pipeline(["cat", src], ["cat"], consumer_stdout=out)

        tools = {"A": os.path.abspath(args.a), "B": os.path.abspath(args.b)}
        # One unmeasured download each: the daemon hashes the file once for
        # its ETag and keeps the tag; every measured round then finds it.
        for tool in tools.values():
            clean()
            run_timed([tool, "cp", ":" + src, dst], env)
        walls = {"A": [], "B": [], "cat": []}
        cpus = {"A": [], "B": []}
        ratios = {"A": [], "B": []}
        for r in range(args.rounds):
            order = ["A", "B"] if r % 2 == 0 else ["B", "A"]
            clean()
            t0 = time.perf_counter()
            cat()
            cat_s = time.perf_counter() - t0
            walls["cat"].append(cat_s)
            for name in order:
                clean()
                wall, cpu = run_timed([tools[name], "cp", ":" + src, dst], env)
                if os.path.getsize(dst) != size:
                    raise RuntimeError("%s downloaded %d of %d bytes" %
                                       (name, os.path.getsize(dst), size))
                walls[name].append(wall)
                cpus[name].append(cpu)
                ratios[name].append(cat_s / wall)
        gib = size / (1 << 30)
        print("# %d MiB, %d rounds, data on %s, load %s; A=%s B=%s" %
              (size // MiB, args.rounds, "tmpfs" if mounted else "disk",
               " ".join("%.2f" % x for x in os.getloadavg()), args.a, args.b))
        print("cat via loopback TCP: median %.3f s/GiB [%s]" %
              (statistics.median(walls["cat"]) / gib,
               " ".join("%.2f" % x for x in walls["cat"])))
        for name in ("A", "B"):
            print("agentctl %s: %.2fx of cat (median of per-round ratios) [%s]; "
                  "%.3f s/GiB wall, client CPU %.3f s/GiB" %
                  (name, statistics.median(ratios[name]),
                   " ".join("%.2f" % x for x in ratios[name]),
                   statistics.median(walls[name]) / gib, statistics.median(cpus[name]) / gib))
        print("B/A: ratio %.2f, wall %.2f, client CPU %.2f" %
              (statistics.median(ratios["B"]) / statistics.median(ratios["A"]),
               statistics.median(walls["B"]) / statistics.median(walls["A"]),
               statistics.median(cpus["B"]) / statistics.median(cpus["A"])))
    finally:
        if daemon:
            daemon.close()
        if mounted:
            subprocess.run(["umount", "-l", work])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
