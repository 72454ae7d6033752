#!/usr/bin/env python3
"""Exec engine benchmarks (docs/BENCHMARKS.md, "Exec engine").

Each measurement runs against a baseline in the same run, on the same
machine, and is reported as a ratio:

  round trip  start /bin/true, wait for its exit, read its output (one
              long poll), over HTTP on loopback; vs a C fork+exec+wait loop
  throughput  one exec printing 1 GiB, read over the raw route (follow) and
              over SSE; vs `head -c 1G /dev/zero | cat > /dev/null`
  memory      daemon RSS idle, with 1,000 running execs, after a 2 GiB print

Usage: bench/exec_bench.py [--agentd build/daemon/agentd] [--quick]
Writes bench/results/exec.json and prints a Markdown table.
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
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOKEN = "bench-token"
GIB = 1 << 30


class Daemon:
    def __init__(self, binary, *flags):
        self.tmp = tempfile.mkdtemp(prefix="agentd-bench-")
        self.proc = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--state-dir", os.path.join(self.tmp, "state"),
             "--log-level", "warn", "--token-file", self._token_file()] + list(flags),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.port = self._find_port()

    def _token_file(self):
        path = os.path.join(self.tmp, "token")
        with open(path, "w") as f:
            f.write(TOKEN)
        os.chmod(path, 0o600)
        return path

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
        self.proc.wait(30)
        shutil.rmtree(self.tmp, ignore_errors=True)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def baseline_fork_exec(n):
    tmp = tempfile.mkdtemp()
    exe = os.path.join(tmp, "fork_exec_baseline")
    subprocess.run(["cc", "-O2", "-o", exe, os.path.join(HERE, "fork_exec_baseline.c")],
                   check=True)
    out = subprocess.run([exe, str(n)], capture_output=True, text=True, check=True).stdout
    shutil.rmtree(tmp)
    return json.loads(out)


def round_trip(d, n):
    conn = d.conn()
    latencies = []
    for i in range(n):
        t0 = time.perf_counter()
        s, _ = d.call(conn, "PUT", "/v1/execs/rt-%d" % i, {"argv": ["/bin/true"]})
        assert s == 201, s
        s, obj = d.call(conn, "GET", "/v1/execs/rt-%d?stdout_from=0&stderr_from=0&wait_ms=10000" % i)
        assert obj["state"] == "exited" and obj["exit_code"] == 0, obj
        latencies.append((time.perf_counter() - t0) * 1e6)
        d.call(conn, "POST", "/v1/execs/rt-%d/ack" % i)
    conn.close()
    return {"n": n, "p50_us": percentile(latencies, 50), "p99_us": percentile(latencies, 99)}


def baseline_pipe(size):
    t0 = time.perf_counter()
    subprocess.run("head -c %d /dev/zero | cat > /dev/null" % size, shell=True, check=True)
    return size / (time.perf_counter() - t0)


def read_until_close(d, path, body):
    """Starts the exec, then reads `path` with Connection: close until EOF;
    returns (bytes on the wire, seconds from start to the end)."""
    conn = d.conn()
    t0 = time.perf_counter()
    s, _ = d.call(conn, "PUT", path.split("?")[0].rsplit("/", 1)[0], body)
    assert s == 201, s
    conn.close()
    sock = socket.create_connection(("127.0.0.1", d.port))
    sock.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                  "Connection: close\r\n\r\n" % (path, TOKEN)).encode())
    buf = bytearray(4 << 20)
    view = memoryview(buf)
    total = 0
    tail = b""
    while True:
        n = sock.recv_into(view)
        if n == 0:
            break
        total += n
        tail = (tail + bytes(view[max(0, n - 64):n]))[-64:]
    seconds = time.perf_counter() - t0
    sock.close()
    return total, seconds, tail


def throughput(d, size):
    raw_bytes, raw_s, tail = read_until_close(
        d, "/v1/execs/tp-raw/stdout?follow=1",
        {"argv": ["head", "-c", str(size), "/dev/zero"]})
    assert tail.endswith(b"0\r\n\r\n"), tail
    assert raw_bytes >= size, raw_bytes
    sse_bytes, sse_s, tail = read_until_close(
        d, "/v1/execs/tp-sse/events",
        {"argv": ["head", "-c", str(size), "/dev/zero"]})
    assert b"id: %d:0" % size in tail, tail
    return {"raw_bytes_per_s": size / raw_s, "sse_bytes_per_s": size / sse_s,
            "sse_wire_bytes": sse_bytes}


def memory(binary, running):
    d = Daemon(binary, "--retention-stream-bytes", str(256 << 20))
    try:
        conn = d.conn()
        d.call(conn, "GET", "/v1/execs")
        idle = d.rss_kib()
        for i in range(running):
            s, _ = d.call(conn, "PUT", "/v1/execs/m-%d" % i, {"argv": ["sleep", "600"]})
            assert s == 201
        with_running = d.rss_kib()
        for i in range(running):
            d.call(conn, "POST", "/v1/execs/m-%d/kill" % i, {"signal": "KILL"})
        deadline = time.monotonic() + 120
        while any(e["state"] != "exited" for e in d.call(conn, "GET", "/v1/execs")[1]["execs"]):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        after_kill = d.rss_kib()
        s, _ = d.call(conn, "PUT", "/v1/execs/big", {"argv": ["head", "-c", str(2 * GIB),
                                                               "/dev/zero"]})
        while d.call(conn, "GET", "/v1/execs/big?wait_ms=10000")[1]["state"] != "exited":
            pass
        after_print = d.rss_kib()
        conn.close()
        return {"idle_kib": idle, "running_execs": running, "with_running_kib": with_running,
                "after_kill_kib": after_kill, "after_2gib_print_kib": after_print}
    finally:
        d.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentd", default=os.path.join(ROOT, "build", "daemon", "agentd"))
    ap.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = ap.parse_args()
    n = 200 if args.quick else 1000
    size = (64 << 20) if args.quick else GIB
    running = 100 if args.quick else 1000

    results = {"machine": {"cpus": os.cpu_count(), "kernel": os.uname().release}}
    results["fork_exec_baseline"] = baseline_fork_exec(n)
    # Retention large enough that no byte is released while being read.
    d = Daemon(args.agentd, "--retention-stream-bytes", str(4 * GIB),
               "--retention-total-bytes", str(8 * GIB), "--max-execs", str(n + 10))
    try:
        results["round_trip"] = round_trip(d, n)
        results["pipe_baseline_bytes_per_s"] = baseline_pipe(size)
        results["throughput"] = throughput(d, size)
    finally:
        d.close()
    results["memory"] = memory(args.agentd, running)

    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "exec.json"), "w") as f:
        json.dump(results, f, indent=2)

    b, r, t, m = (results["fork_exec_baseline"], results["round_trip"], results["throughput"],
                  results["memory"])
    pipe = results["pipe_baseline_bytes_per_s"]
    mib = lambda x: "%.0f MiB/s" % (x / (1 << 20))
    print("| measurement | agentd | baseline | ratio |")
    print("|---|---|---|---|")
    print("| exec round trip p50 | %.0f µs | %.0f µs | %.1fx |" % (r["p50_us"], b["p50_us"],
                                                                 r["p50_us"] / b["p50_us"]))
    print("| exec round trip p99 | %.0f µs | %.0f µs | %.1fx |" % (r["p99_us"], b["p99_us"],
                                                                 r["p99_us"] / b["p99_us"]))
    print("| %d MiB output, raw follow | %s | %s | %.2f |" % (
        size >> 20, mib(t["raw_bytes_per_s"]), mib(pipe), t["raw_bytes_per_s"] / pipe))
    print("| %d MiB output, SSE | %s | %s | %.2f |" % (
        size >> 20, mib(t["sse_bytes_per_s"]), mib(pipe), t["sse_bytes_per_s"] / pipe))
    print("| RSS idle | %.1f MiB | | |" % (m["idle_kib"] / 1024))
    print("| RSS with %d running execs | %.1f MiB | | +%.1f MiB |" % (
        m["running_execs"], m["with_running_kib"] / 1024,
        (m["with_running_kib"] - m["idle_kib"]) / 1024))
    print("| RSS after a 2 GiB print | %.1f MiB | | +%.1f MiB vs idle |" % (
        m["after_2gib_print_kib"] / 1024, (m["after_2gib_print_kib"] - m["idle_kib"]) / 1024))


if __name__ == "__main__":
    sys.exit(main())
