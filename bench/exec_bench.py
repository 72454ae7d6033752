#!/usr/bin/env python3
"""Exec engine benchmarks (docs/BENCHMARKS.md, "Exec engine").

Every measurement runs beside its baseline in the same run, on the same
machine, interleaved in rounds so load from other work hits both alike, and
is reported as a ratio:

  round trip  start /bin/true, wait for its exit and read its output (one
              long poll) over HTTP on loopback; vs a C fork+exec+wait loop.
              With the state directory on tmpfs (as /run usually is) and on
              the disk file system of /tmp.
  throughput  one exec printing 1 GiB, read over the raw route (follow=1)
              and over SSE; vs `head -c 1G /dev/zero` through a loopback
              TCP connection into `cat > /dev/null`.
  memory      daemon RSS idle, after a 2 GiB print, with 1,000 running execs.

Usage: bench/exec_bench.py [--agentd build/daemon/agentd] [--smoke]
                           [--state-on tmpfs,disk] [--json FILE]
Writes bench/results/exec.json (or FILE) and prints a Markdown table.
"""

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from loopback import socket_pipeline

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOKEN = "bench-token"
GIB = 1 << 30


class Daemon:
    def __init__(self, binary, *flags, state_parent=None):
        self.tmp = tempfile.mkdtemp(prefix="agentd-bench-", dir=state_parent)
        token = os.path.join(self.tmp, "token")
        with open(token, "w") as f:
            f.write(TOKEN)
        os.chmod(token, 0o600)
        self.proc = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--state-dir", os.path.join(self.tmp, "state"),
             "--log-level", "warn", "--token-file", token] + list(flags),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.port = self._find_port()
        except RuntimeError:
            # Not left running: a daemon that was slow to listen (its start
            # walks a large --workdir) kept serving after the bench failed.
            self.close()
            raise

    def _find_port(self):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
            for line in out.splitlines():
                if "pid=%d," % self.proc.pid in line:
                    return int(line.split()[3].rsplit(":", 1)[1])
            time.sleep(0.05)
        raise RuntimeError("daemon did not listen")

    def conn(self, timeout=600):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def call(self, conn, method, path, body=None):
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers={"Authorization": "Bearer " + TOKEN})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, json.loads(data) if data else None

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])

    def close(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)
        shutil.rmtree(self.tmp, ignore_errors=True)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def build_baseline(name="fork_exec_baseline"):
    """Compiles bench/NAME.c into a temporary directory; returns the path."""
    tmp = tempfile.mkdtemp()
    exe = os.path.join(tmp, name)
    subprocess.run(["cc", "-O2", "-o", exe, os.path.join(HERE, name + ".c")], check=True)
    return exe


def fork_exec_round(exe, n):
    out = subprocess.run([exe, str(n)], capture_output=True, text=True, check=True).stdout
    return [float(x) for x in out.split()]


def exec_round(d, conn, first, n):
    latencies = []
    for i in range(first, first + n):
        t0 = time.perf_counter()
        s, _ = d.call(conn, "PUT", "/v1/execs/rt-%d" % i, {"argv": ["/bin/true"]})
        assert s == 201, s
        s, obj = d.call(conn, "GET",
                        "/v1/execs/rt-%d?stdout_from=0&stderr_from=0&wait_ms=10000" % i)
        assert obj["state"] == "exited" and obj["exit_code"] == 0, obj
        latencies.append((time.perf_counter() - t0) * 1e6)
        d.call(conn, "POST", "/v1/execs/rt-%d/ack" % i)  # keeps the table small
    return latencies


def c_exec_round(driver, d, first, n, mode="one"):
    """exec_round_trip.c from C: `one` request (the start that waits) or
    `two` (start, then the long poll of exec_round)."""
    out = subprocess.run([driver, str(d.port), TOKEN, str(first), str(n), mode],
                         capture_output=True, text=True, check=True).stdout
    return [float(x) for x in out.split()]


def round_trip(binary, exe, driver, n, rounds, state_parent):
    """The daemon's round trip driven from C (the target's row: both sides
    in C) with the start that waits; for orientation, the same as start plus
    long poll from C, and from Python's http.client."""
    d = Daemon(binary, "--ack-ttl-sec", "0", state_parent=state_parent)
    try:
        conn = d.conn()
        exec_round(d, conn, 10**6, 20)  # warm up
        c_exec_round(driver, d, 2 * 10**6, 20)
        base, ours, two, python = [], [], [], []
        for r in range(rounds):
            base += fork_exec_round(exe, n // rounds)
            ours += c_exec_round(driver, d, r * n, n // rounds)
            two += c_exec_round(driver, d, 4 * 10**6 + r * n, max(1, n // rounds // 2), "two")
            python += exec_round(d, conn, 3 * 10**6 + r * n, max(1, n // rounds // 4))
        conn.close()
    finally:
        d.close()
    return {"n": len(ours), "state_parent": state_parent,
            "agentd_p50_us": pct(ours, 50), "agentd_p99_us": pct(ours, 99),
            "two_requests_n": len(two), "two_requests_p50_us": pct(two, 50),
            "python_n": len(python), "python_p50_us": pct(python, 50),
            "baseline_p50_us": pct(base, 50), "baseline_p99_us": pct(base, 99)}


def baseline_socket(size):
    """`head -c SIZE /dev/zero` through a loopback TCP connection into `cat`:
    the same producer and the same kernel path as the daemon's output, with
    no spool and no HTTP."""
    t0 = time.perf_counter()
    socket_pipeline(["head", "-c", str(size), "/dev/zero"], ["cat"])
    return size / (time.perf_counter() - t0)


def stream_exec(d, exec_id, path, size):
    """Starts an exec printing `size` bytes, reads `path` (Connection: close)
    to EOF; returns (bytes per second of output, wire bytes, last bytes)."""
    conn = d.conn()
    t0 = time.perf_counter()
    s, _ = d.call(conn, "PUT", "/v1/execs/" + exec_id,
                  {"argv": ["head", "-c", str(size), "/dev/zero"]})
    assert s == 201, s
    conn.close()
    sock = socket.create_connection(("127.0.0.1", d.port))
    sock.sendall(("GET /v1/execs/%s/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                  "Connection: close\r\n\r\n" % (exec_id, path, TOKEN)).encode())
    buf = bytearray(4 << 20)
    view = memoryview(buf)
    total, tail = 0, b""
    while True:
        n = sock.recv_into(view)
        if n == 0:
            break
        total += n
        tail = (tail + bytes(view[max(0, n - 64):n]))[-64:]
    seconds = time.perf_counter() - t0
    sock.close()
    return size / seconds, total, tail


def throughput(binary, size, rounds, state_parent):
    # Retention above the size: no byte is released while it is read.
    d = Daemon(binary, "--retention-stream-bytes", str(4 * GIB), "--retention-total-bytes",
               str(8 * GIB), "--ack-ttl-sec", "0", state_parent=state_parent)
    base, raw, sse = [], [], []
    try:
        conn = d.conn()
        for r in range(rounds):
            base.append(baseline_socket(size))
            rate, wire, tail = stream_exec(d, "raw-%d" % r, "stdout?follow=1", size)
            assert tail.endswith(b"0\r\n\r\n") and wire >= size, (wire, tail)
            raw.append(rate)
            rate, wire, tail = stream_exec(d, "sse-%d" % r, "events", size)
            assert b"id: %d:0" % size in tail, tail
            sse.append(rate)
            for exec_id in ("raw-%d" % r, "sse-%d" % r):
                d.call(conn, "POST", "/v1/execs/%s/ack" % exec_id)
        conn.close()
    finally:
        d.close()
    med = statistics.median
    return {"size": size, "rounds": rounds, "state_parent": state_parent,
            "baseline_rounds": base, "raw_rounds": raw, "sse_rounds": sse,
            "baseline_bytes_per_s": med(base), "raw_bytes_per_s": med(raw),
            "sse_bytes_per_s": med(sse),
            "raw_ratio": med(r / b for r, b in zip(raw, base)),
            "sse_ratio": med(s / b for s, b in zip(sse, base)),
            "sse_vs_raw_ratio": med(s / r for s, r in zip(sse, raw))}


def wait_all_exited(d, conn):
    deadline = time.monotonic() + 300
    while any(e["state"] != "exited" for e in d.call(conn, "GET", "/v1/execs")[1]["execs"]):
        assert time.monotonic() < deadline
        time.sleep(0.1)


def memory(binary, running, print_size):
    """RSS idle, then after one exec printed `print_size` bytes (compared with
    idle: output must not stay in the daemon), then with `running` execs
    alive at once."""
    d = Daemon(binary, "--max-execs", str(running + 10))  # default retention: 256 MiB/stream
    try:
        conn = d.conn()
        d.call(conn, "GET", "/v1/execs")
        idle = d.rss_kib()
        d.call(conn, "PUT", "/v1/execs/big", {"argv": ["head", "-c", str(print_size), "/dev/zero"]})
        while d.call(conn, "GET", "/v1/execs/big?wait_ms=10000")[1]["state"] != "exited":
            pass
        after_print = d.rss_kib()
        for i in range(running):
            s, _ = d.call(conn, "PUT", "/v1/execs/m-%d" % i, {"argv": ["sleep", "600"]})
            assert s == 201, s
        with_running = d.rss_kib()
        for i in range(running):
            d.call(conn, "POST", "/v1/execs/m-%d/kill" % i, {"signal": "KILL"})
        wait_all_exited(d, conn)
        conn.close()
        return {"idle_kib": idle, "print_bytes": print_size, "after_print_kib": after_print,
                "running_execs": running, "with_running_kib": with_running}
    finally:
        d.close()


STATE_PARENTS = {"tmpfs": "/dev/shm", "disk": "/tmp"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentd", default=os.path.join(ROOT, "build", "daemon", "agentd"))
    ap.add_argument("--quick", "--smoke", action="store_true", dest="smoke",
                    help="tiny sizes: checks that the benchmark works")
    ap.add_argument("--state-on", default="tmpfs,disk",
                    help="comma-separated: where the state directory lives (tmpfs, disk)")
    ap.add_argument("--json", help="where to write the results (default bench/results/exec.json)")
    args = ap.parse_args()
    n, rounds = (40, 2) if args.smoke else (1000, 5)
    size = (16 << 20) if args.smoke else GIB
    throughput_rounds = 1 if args.smoke else 3
    running = 20 if args.smoke else 1000
    print_size = (16 << 20) if args.smoke else 2 * GIB
    parents = [STATE_PARENTS[k] for k in args.state_on.split(",")
               if os.path.isdir(STATE_PARENTS[k])]

    exe = build_baseline()
    driver = build_baseline("exec_round_trip")
    results = {"machine": {"cpus": os.cpu_count(), "kernel": os.uname().release,
                           "loadavg_at_start": os.getloadavg()}}
    results["round_trip"] = [round_trip(args.agentd, exe, driver, n, rounds, parent)
                             for parent in parents]
    results["throughput"] = [throughput(args.agentd, size, throughput_rounds, parent)
                             for parent in parents]
    results["memory"] = memory(args.agentd, running, print_size)
    results["machine"]["loadavg_at_end"] = os.getloadavg()
    shutil.rmtree(os.path.dirname(exe))
    shutil.rmtree(os.path.dirname(driver))

    out = args.json or os.path.join(HERE, "results", "exec.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=2)

    mib = lambda x: "%.0f MiB/s" % (x / (1 << 20))
    print("| measurement | agentd | baseline | ratio |")
    print("|---|---|---|---|")
    for r in results["round_trip"]:
        for p in ("p50", "p99"):
            a, b = r["agentd_%s_us" % p], r["baseline_%s_us" % p]
            print("| round trip %s, state on %s | %.2f ms | %.2f ms | %.2fx |" % (
                p, r["state_parent"], a / 1000, b / 1000, a / b))
    for t in results["throughput"]:
        for kind in ("raw", "sse"):
            print("| %d MiB output, %s, spool on %s | %s | %s (socket) | %.2f |" % (
                t["size"] >> 20, kind, t["state_parent"], mib(t["%s_bytes_per_s" % kind]),
                mib(t["baseline_bytes_per_s"]), t["%s_ratio" % kind]))
    m = results["memory"]
    print("| RSS idle | %.1f MiB | | |" % (m["idle_kib"] / 1024))
    print("| RSS after a %d MiB print | %.1f MiB | idle | +%.1f MiB |" % (
        m["print_bytes"] >> 20, m["after_print_kib"] / 1024,
        (m["after_print_kib"] - m["idle_kib"]) / 1024))
    print("| RSS with %d running execs | %.1f MiB | idle | +%.1f MiB |" % (
        m["running_execs"], m["with_running_kib"] / 1024,
        (m["with_running_kib"] - m["idle_kib"]) / 1024))


if __name__ == "__main__":
    sys.exit(main())
