#!/usr/bin/env python3
"""Filesystem and tree benchmarks for agentd (docs/BENCHMARKS.md, "Filesystem
and trees").

Each measurement runs the daemon's route and a plain-Unix baseline on the same
data in the same run:

  tree      tar upload / download of 10,000 small files plus a few large ones,
            against `tar c | tar x` through a loopback TCP socket
  file      single-file upload / download throughput, against `cat` through a
            loopback TCP socket
  lines     a ranged line read near the end of a 1 GiB file, against
            `sed -n 'A,Bp'`

The baselines pass socket descriptors straight to tar and cat (no copying
relay in between). Data lives on a tmpfs when the script can mount one (root),
so the disk does not dominate; the daemon still fsyncs every write. Each
measurement is the median of --runs runs with a warm page cache, each run of
the daemon next to a run of its baseline. --json FILE writes every time;
--smoke runs tiny sizes once (bench/run --smoke).

usage: bench/fs_bench.py [--bin build/daemon/agentd] [--runs 3] [--smoke] [--json FILE]
                         [tree file lines]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from typing import Callable, Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from lib import agentd_test  # noqa: E402
from loopback import socket_pipeline  # noqa: E402

MiB = 1 << 20
GiB = 1 << 30


def url(daemon, route, **params):
    return "http://127.0.0.1:%d%s?%s" % (daemon.port, route, urllib.parse.urlencode(params))


def curl(daemon, *args):
    cmd = ["curl", "-sS", "--fail", "-H", "Authorization: Bearer " + daemon.token] + list(args)
    return cmd


def agentctl(daemon, tool, *args):
    """`agentctl cp ...` against the daemon: the project's own client, which
    reads and writes in 256 KiB blocks where curl reads 16 KiB at a time."""
    env = dict(os.environ, AGENTD_URL="http://127.0.0.1:%d" % daemon.port,
               AGENTD_TOKEN=daemon.token)
    subprocess.run([tool, "cp"] + list(args), check=True, env=env, stdout=subprocess.DEVNULL)


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(runs: int, ours: Callable[[], None], theirs: Callable[[], None],
                setup: Optional[Callable[[], None]] = None) -> Dict[str, List[float]]:
    """Times `ours` and `theirs` alternately, `runs` times each, so load from
    other work on the machine hits both alike; returns both lists of seconds."""
    times: Dict[str, List[float]] = {"daemon_s": [], "baseline_s": []}
    for _ in range(runs):
        for key, fn in (("daemon_s", ours), ("baseline_s", theirs)):
            if setup:
                setup()
            times[key].append(timed(fn))
    return times


def reset_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)


def make_tree(root, small=10_000, large=3, large_size=64 * MiB):
    rnd = open("/dev/urandom", "rb")
    for i in range(small):
        d = os.path.join(root, "pkg%02d" % (i % 50), "mod%03d" % (i % 200))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "file%05d.txt" % i), "wb") as f:
            f.write(rnd.read(512 + (i * 37) % 3584))
    for i in range(large):
        with open(os.path.join(root, "large%d.bin" % i), "wb") as f:
            for _ in range(large_size // MiB):
                f.write(rnd.read(MiB))
    rnd.close()


def tree_size(root):
    total, files = 0, 0
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            total += os.lstat(os.path.join(dirpath, name)).st_size
            files += 1
    return files, total


def bench_tree(daemon, work, runs, small=10_000, large=3, large_size=64 * MiB, tool=None):
    """Four pairs: each daemon pipeline and the plain-tar pipeline that does
    the same job through a loopback socket."""
    src = os.path.join(work, "tree-src")
    dst = os.path.join(work, "tree-dst")
    archive = os.path.join(work, "tree.tar")
    make_tree(src, small, large, large_size)
    files, size = tree_size(src)
    tar_c = ["tar", "-C", src, "-cf", "-", "."]
    tar_x = ["tar", "-C", dst, "-xf", "-"]
    subprocess.run(["tar", "-C", src, "-cf", archive, "."], check=True)
    upload_url = url(daemon, "/v1/fs/tar", path=dst)
    download_url = url(daemon, "/v1/fs/tar", path=src)

    def piped(first, second):
        a = subprocess.Popen(first, stdout=subprocess.PIPE)
        subprocess.run(second, stdin=a.stdout, check=True, stdout=subprocess.DEVNULL)
        a.stdout.close()
        if a.wait() != 0:
            raise RuntimeError("%s failed" % first[0])

    pairs = {
        # tree on disk -> tree on disk
        "upload": (lambda: piped(tar_c, curl(daemon, "-T", "-", upload_url)),
                   lambda: socket_pipeline(tar_c, tar_x)),
        # an archive file -> tree: the extraction side alone
        "upload from file": (lambda: subprocess.run(curl(daemon, "-T", archive, "-o", "/dev/null",
                                                         upload_url), check=True),
                             lambda: socket_pipeline(["cat", archive], tar_x)),
        # tree -> tree
        "download": (lambda: piped(curl(daemon, download_url), tar_x),
                     lambda: socket_pipeline(tar_c, tar_x)),
        # tree -> /dev/null: the archiving side alone
        "download to null": (lambda: subprocess.run(curl(daemon, "-o", "/dev/null", download_url),
                                                    check=True),
                             lambda: socket_pipeline(tar_c, ["cat"])),
    }
    if tool:
        # The same trees through the project's client (libarchive on both ends).
        pairs["upload (agentctl)"] = (lambda: agentctl(daemon, tool, src, ":" + dst),
                                      lambda: socket_pipeline(tar_c, tar_x))
        pairs["download (agentctl)"] = (lambda: agentctl(daemon, tool, ":" + src, dst),
                                        lambda: socket_pipeline(tar_c, tar_x))
    setup = lambda: reset_dir(dst)  # noqa: E731
    results = {}
    for name, (ours, theirs) in pairs.items():
        results[name] = interleaved(runs, ours, theirs, setup)
    shutil.rmtree(src)
    shutil.rmtree(dst, ignore_errors=True)
    os.unlink(archive)
    return files, size, results


def bench_file(daemon, work, runs, size=GiB, tool=None):
    src = os.path.join(work, "file-src.bin")
    dst = os.path.join(work, "file-dst.bin")
    with open(src, "wb") as f, open("/dev/urandom", "rb") as rnd:
        block = rnd.read(min(16 * MiB, size))
        for _ in range(size // len(block)):
            f.write(block)

    def clean():
        if os.path.exists(dst):
            os.unlink(dst)

    def daemon_upload():
        subprocess.run(curl(daemon, "-T", src, "-o", "/dev/null",
                            url(daemon, "/v1/fs/file", path=dst)), check=True)

    def daemon_download():
        subprocess.run(curl(daemon, "-o", dst, url(daemon, "/v1/fs/file", path=src)), check=True)

    def baseline():
        with open(dst, "wb") as out:
            socket_pipeline(["cat", src], ["cat"], consumer_stdout=out)

    # The baseline runs once per round for each direction, next to it.
    results = {"upload": interleaved(runs, daemon_upload, baseline, clean),
               "download": interleaved(runs, daemon_download, baseline, clean)}
    if tool:
        results["upload (agentctl)"] = interleaved(
            runs, lambda: agentctl(daemon, tool, src, ":" + dst), baseline, clean)
        results["download (agentctl)"] = interleaved(
            runs, lambda: agentctl(daemon, tool, ":" + src, dst), baseline, clean)
    os.unlink(src)
    clean()
    return size, results


def bench_lines(daemon, work, runs, size=GiB):
    path = os.path.join(work, "lines.txt")
    line_count = 0
    with open(path, "wb") as f:
        per_chunk = min(100_000, size // 64)
        chunk = b"".join(b"%09d some text of a log line, padded out to look real ....\n" % i
                         for i in range(per_chunk))
        while f.tell() < size:
            f.write(chunk)
            line_count += per_chunk
    start, end = line_count - 50, line_count - 10
    with open(path, "rb") as f:  # warm the page cache
        while f.read(64 * MiB):
            pass

    def daemon_lines():
        out = subprocess.run(curl(daemon, url(daemon, "/v1/fs/file", path=path,
                                              start_line=start, end_line=end)),
                             check=True, stdout=subprocess.PIPE).stdout
        assert out.count(b"\n") == end - start + 1

    def sed_lines():
        subprocess.run(["sed", "-n", "%d,%dp" % (start, end), path], check=True,
                       stdout=subprocess.DEVNULL)

    results = interleaved(runs, daemon_lines, sed_lines)
    actual = os.path.getsize(path)
    os.unlink(path)
    return actual, line_count, start, end, results


def ratio(ours: List[float], theirs: List[float]) -> float:
    """Median of the per-round ratios daemon time / baseline time."""
    return statistics.median(a / b for a, b in zip(ours, theirs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                      "daemon", "agentd"))
    parser.add_argument("--agentctl", help="also measure `agentctl cp` (default: cli/agentctl "
                        "beside --bin's build, when it exists)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes and one run: checks that the benchmark works")
    parser.add_argument("--json", help="also write the measurements to this file")
    parser.add_argument("which", nargs="*", default=["tree", "file", "lines"])
    args = parser.parse_args()
    agentd_test.AGENTD_BIN = os.path.abspath(args.bin)
    tool = args.agentctl or os.path.join(os.path.dirname(os.path.abspath(args.bin)), "..", "cli",
                                         "agentctl")
    tool = os.path.abspath(tool) if os.access(tool, os.X_OK) else None
    runs = 1 if args.smoke else args.runs
    tree_sizes = (200, 1, MiB) if args.smoke else (10_000, 3, 64 * MiB)
    data_size = 8 * MiB if args.smoke else GiB

    work = tempfile.mkdtemp(prefix="agentd-bench-")
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4g", "tmpfs", work]).returncode == 0
    daemon = agentd_test.Daemon()
    out: Dict[str, object] = {"data_on": "tmpfs" if mounted else "disk", "runs": runs}
    try:
        print("# agentd filesystem benchmarks (%s, %d CPUs, data on %s, median of %d)" %
              (os.uname().release, os.cpu_count(), out["data_on"], runs))
        if "tree" in args.which:
            files, size, r = bench_tree(daemon, work, runs, *tree_sizes, tool=tool)
            out["tree"] = {"files": files, "bytes": size, "pairs": r}
            print("\ntree: %d files, %.0f MiB (daemon vs tar through a socket)" %
                  (files, size / MiB))
            for name, t in r.items():
                ours, theirs = statistics.median(t["daemon_s"]), statistics.median(t["baseline_s"])
                print("  %-19s %6.2f s (%6.0f files/s)  vs %6.2f s  ratio %.2f" %
                      (name, ours, files / ours, theirs, ratio(t["daemon_s"], t["baseline_s"])))
        if "file" in args.which:
            size, r = bench_file(daemon, work, runs, data_size, tool=tool)
            out["file"] = {"bytes": size, **r}
            print("\nfile: %.0f MiB (vs cat through a socket)" % (size / MiB))
            for name, t in r.items():
                ours = statistics.median(t["daemon_s"])
                print("  %-19s %6.2f s  %6.0f MiB/s  ratio %.2f" %
                      (name, ours, size / MiB / ours, ratio(t["daemon_s"], t["baseline_s"])))
        if "lines" in args.which:
            size, count, start, end, r = bench_lines(daemon, work, runs, data_size)
            out["lines"] = {"bytes": size, "lines": count, "start": start, "end": end, **r}
            print("\nlines %d-%d of %d in a %.0f MiB file" % (start, end, count, size / MiB))
            ours, sed = statistics.median(r["daemon_s"]), statistics.median(r["baseline_s"])
            print("  daemon %6.3f s, sed %6.3f s, ratio %.2f" %
                  (ours, sed, ratio(r["daemon_s"], r["baseline_s"])))
    finally:
        daemon.close()
        if mounted:
            subprocess.run(["umount", "-l", work])
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
