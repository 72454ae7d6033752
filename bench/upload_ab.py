#!/usr/bin/env python3
"""Single-file upload A/B (docs/BENCHMARKS.md, "Filesystem and trees"): a
daemon of each of two builds, the same 1 GiB file uploaded to each, round by
round in alternation, with `cat` through a loopback TCP connection (the
fs_bench.py baseline) in the same rounds. Data on a tmpfs (root). Each
upload's wall time and the daemon's CPU time (utime + stime from
/proc/PID/stat) are recorded; on a loaded machine the CPU per GiB is the
steadier figure.

Usage: bench/upload_ab.py A_AGENTD B_AGENTD [--agentctl PATH]... [--rounds 5]
       [--mib 1024] [--no-tag]
Each client (curl -T, and every --agentctl given) uploads to both daemons
in every round. Prints medians per client and daemon, and B/A. --no-tag
adds a client `curl -T` to `PUT /v1/fs/file?...&etag=0` (no ETag answered,
nothing hashed; both daemons must know the parameter), so the tag's cost
shows as curl against curl[etag=0] in the same rounds.
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
from proc_cpu import cpu_seconds  # noqa: E402

MiB = 1 << 20


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--agentctl", action="append", default=[])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--mib", type=int, default=1024)
    p.add_argument("--no-tag", action="store_true")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="agentd-upload-ab-")
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=6g", "tmpfs", work]).returncode == 0
    daemons = {}
    try:
        src = os.path.join(work, "src.bin")
        dst = os.path.join(work, "dst.bin")
        with open(src, "wb") as f, open("/dev/urandom", "rb") as rnd:
            block = rnd.read(16 * MiB)
            for _ in range(args.mib // 16):
                f.write(block)
        for name, binary in (("A", args.a), ("B", args.b)):
            daemons[name] = agentd_test.Daemon(binary=os.path.abspath(binary))

        def clean():
            if os.path.exists(dst):
                os.unlink(dst)

        def curl(d, query=""):
            return lambda: subprocess.run(
                ["curl", "-sS", "--fail", "-H", "Authorization: Bearer " + d.token, "-T", src,
                 "-o", "/dev/null",
                 "http://127.0.0.1:%d/v1/fs/file?path=%s%s" % (d.port, dst, query)],
                check=True)

        def agentctl(tool, d):
            env = dict(os.environ, AGENTD_URL="http://127.0.0.1:%d" % d.port,
                       AGENTD_TOKEN=d.token)
            return lambda: subprocess.run([tool, "cp", src, ":" + dst], check=True, env=env,
                                          stdout=subprocess.DEVNULL)

        def cat():
            with open(dst, "wb") as out:
                socket_pipeline(["cat", src], ["cat"], consumer_stdout=out)

        clients = [("curl", curl)]
        if args.no_tag:
            clients.append(("curl[etag=0]", lambda d: curl(d, "&etag=0")))
        clients += [("agentctl[%d]" % i, (lambda t: lambda d: agentctl(t, d))(t))
                                      for i, t in enumerate(args.agentctl)]
        times, cpus, cats = {}, {}, []
        for r in range(args.rounds):
            order = ["A", "B"] if r % 2 == 0 else ["B", "A"]
            for cname, make in clients:
                for dname in order:
                    d = daemons[dname]
                    clean()
                    fn = make(d)
                    c0 = cpu_seconds(d.proc.pid)
                    t0 = time.perf_counter()
                    fn()
                    t = time.perf_counter() - t0
                    c = cpu_seconds(d.proc.pid) - c0
                    assert os.path.getsize(dst) == args.mib * MiB
                    times.setdefault((cname, dname), []).append(t)
                    cpus.setdefault((cname, dname), []).append(c)
            clean()
            t0 = time.perf_counter()
            cat()
            cats.append(time.perf_counter() - t0)
        gib = args.mib / 1024
        cat_s = statistics.median(cats)
        print("# %d MiB, %d rounds, data on %s, load %s; A=%s B=%s" %
              (args.mib, args.rounds, "tmpfs" if mounted else "disk",
               "%.1f" % os.getloadavg()[0], args.a, args.b))
        print("cat via loopback TCP: median %.3f s (%.0f MiB/s) [%s]" %
              (cat_s, args.mib / cat_s, " ".join("%.2f" % x for x in cats)))
        for cname, _ in clients:
            row = {}
            for dname in ("A", "B"):
                t = statistics.median(times[(cname, dname)])
                c = statistics.median(cpus[(cname, dname)])
                row[dname] = (t, c)
                print("%-12s %s: %.3f s (%4.0f MiB/s, %.2fx of cat)  daemon CPU %.2f s/GiB  [%s]" %
                      (cname, dname, t, args.mib / t, cat_s / t, c / gib,
                       " ".join("%.2f" % x for x in times[(cname, dname)])))
            print("%-12s B/A time %.2f, CPU %.2f" % (cname, row["B"][0] / row["A"][0],
                                                     row["B"][1] / max(row["A"][1], 1e-9)))
    finally:
        for d in daemons.values():
            d.close()
        if mounted:
            subprocess.run(["umount", "-l", work])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
