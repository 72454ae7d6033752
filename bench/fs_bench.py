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
measurement is the median of --runs runs with a warm page cache.

usage: bench/fs_bench.py [--bin build/daemon/agentd] [--runs 3] [tree file lines]
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from lib import agentd_test  # noqa: E402

MiB = 1 << 20
GiB = 1 << 30


def url(daemon, route, **params):
    return "http://127.0.0.1:%d%s?%s" % (daemon.port, route, urllib.parse.urlencode(params))


def curl(daemon, *args):
    cmd = ["curl", "-sS", "--fail", "-H", "Authorization: Bearer " + daemon.token] + list(args)
    return cmd


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_time(runs, fn, setup=None):
    times = []
    for _ in range(runs):
        if setup:
            setup()
        times.append(timed(fn))
    return statistics.median(times)


def socket_pipeline(producer_argv, consumer_argv):
    """Runs producer | consumer with a loopback TCP connection as the pipe."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    accepted = {}

    def accept():
        accepted["conn"], _ = listener.accept()

    t = threading.Thread(target=accept)
    t.start()
    sender = socket.create_connection(("127.0.0.1", port))
    t.join()
    receiver = accepted["conn"]
    consumer = subprocess.Popen(consumer_argv, stdin=receiver.fileno(), stdout=subprocess.DEVNULL)
    producer = subprocess.Popen(producer_argv, stdout=sender.fileno())
    sender.close()
    receiver.close()
    listener.close()
    if producer.wait() != 0 or consumer.wait() != 0:
        raise RuntimeError("baseline pipeline failed")


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


def bench_tree(daemon, work, runs):
    """Four pairs: each daemon pipeline and the plain-tar pipeline that does
    the same job through a loopback socket."""
    src = os.path.join(work, "tree-src")
    dst = os.path.join(work, "tree-dst")
    archive = os.path.join(work, "tree.tar")
    make_tree(src)
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
    setup = lambda: reset_dir(dst)  # noqa: E731
    results = {}
    for name, (ours, theirs) in pairs.items():
        results[name] = (median_time(runs, ours, setup), median_time(runs, theirs, setup))
    shutil.rmtree(src)
    shutil.rmtree(dst, ignore_errors=True)
    os.unlink(archive)
    return files, size, results


def bench_file(daemon, work, runs, size=GiB):
    src = os.path.join(work, "file-src.bin")
    dst = os.path.join(work, "file-dst.bin")
    with open(src, "wb") as f, open("/dev/urandom", "rb") as rnd:
        block = rnd.read(16 * MiB)
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
            socket_pipeline_to_file(["cat", src], out)

    results = {
        "upload": median_time(runs, daemon_upload, clean),
        "download": median_time(runs, daemon_download, clean),
        "baseline": median_time(runs, baseline, clean),
    }
    os.unlink(src)
    clean()
    return size, results


def socket_pipeline_to_file(producer_argv, out_file):
    """producer | cat > out_file, through a loopback socket."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    accepted = {}
    t = threading.Thread(target=lambda: accepted.setdefault("c", listener.accept()[0]))
    t.start()
    sender = socket.create_connection(("127.0.0.1", port))
    t.join()
    receiver = accepted["c"]
    consumer = subprocess.Popen(["cat"], stdin=receiver.fileno(), stdout=out_file)
    producer = subprocess.Popen(producer_argv, stdout=sender.fileno())
    sender.close()
    receiver.close()
    listener.close()
    if producer.wait() != 0 or consumer.wait() != 0:
        raise RuntimeError("baseline pipeline failed")


def bench_lines(daemon, work, runs, size=GiB):
    path = os.path.join(work, "lines.txt")
    line_count = 0
    with open(path, "wb") as f:
        chunk = b"".join(b"%09d some text of a log line, padded out to look real ....\n" % i
                         for i in range(100_000))
        per_chunk = 100_000
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

    results = {"daemon": median_time(runs, daemon_lines), "sed": median_time(runs, sed_lines)}
    actual = os.path.getsize(path)
    os.unlink(path)
    return actual, line_count, start, end, results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                      "daemon", "agentd"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("which", nargs="*", default=["tree", "file", "lines"])
    args = parser.parse_args()
    agentd_test.AGENTD_BIN = os.path.abspath(args.bin)

    work = tempfile.mkdtemp(prefix="agentd-bench-")
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4g", "tmpfs", work]).returncode == 0
    daemon = agentd_test.Daemon()
    try:
        print("# agentd filesystem benchmarks (%s, %d CPUs, data on %s, median of %d)" %
              (os.uname().release, os.cpu_count(), "tmpfs" if mounted else "disk", args.runs))
        if "tree" in args.which:
            files, size, r = bench_tree(daemon, work, args.runs)
            print("\ntree: %d files, %.0f MiB (daemon vs tar through a socket)" %
                  (files, size / MiB))
            for name, (ours, theirs) in r.items():
                print("  %-17s %6.2f s (%6.0f files/s)  vs %6.2f s  ratio %.2f" %
                      (name, ours, files / ours, theirs, ours / theirs))
        if "file" in args.which:
            size, r = bench_file(daemon, work, args.runs)
            print("\nfile: %.0f MiB" % (size / MiB))
            for name in ("upload", "download", "baseline"):
                print("  %-9s %6.2f s  %6.0f MiB/s  ratio %.2f" %
                      (name, r[name], size / MiB / r[name], r[name] / r["baseline"]))
        if "lines" in args.which:
            size, count, start, end, r = bench_lines(daemon, work, args.runs)
            print("\nlines %d-%d of %d in a %.0f MiB file" % (start, end, count, size / MiB))
            for name in ("daemon", "sed"):
                print("  %-9s %6.3f s  %6.0f MiB/s scanned  ratio %.2f" %
                      (name, r[name], size / MiB / r[name], r[name] / r["sed"]))
    finally:
        daemon.close()
        if mounted:
            subprocess.run(["umount", "-l", work])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
