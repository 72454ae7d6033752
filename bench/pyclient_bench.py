#!/usr/bin/env python3
"""Python client overhead (issue 25): agentd_client beside the same requests
made by hand with http.client on one keep-alive connection, interleaved in
one run, reported as ratios.

  run     Client.run(["true"]) vs PUT /v1/execs/{id} with start and wait
          (stdout_from, stderr_from, wait_ms, until=exit) plus POST ack,
          each answer decoded with json.loads: the fewest requests that
          give a command's exit and output and mark it read.
  stream  one exec's 1 GiB of retained stdout read through Client.stream
          (binary frames from a daemon that has them, else SSE with base64:
          docs/PROTOCOL.md, "Frames") vs the raw route
          GET /v1/execs/{id}/stdout read with http.client into a buffer.
          The exec has exited before either read, so both read the same
          spool file and neither waits for a producer. Beside them, the
          speed of CPython's base64 decoder alone on the same bytes: the
          SSE events carry base64, so no client of that form is faster.

  bench/pyclient_bench.py [--agentd build/daemon/agentd] [--smoke] [--json FILE]
  (results in bench/results/pyclient.json unless --json says otherwise)
"""
import argparse
import base64
import binascii
import http.client
import json
import os
import statistics
import sys
import time

from client_report import write_and_print
from exec_bench import Daemon, HERE, ROOT, TOKEN, pct

sys.path.insert(0, os.path.join(ROOT, "client", "python"))
import agentd_client as ac  # noqa: E402

WAIT_MS = 30000


class Raw:
    """The requests of a run, by hand, on one keep-alive connection."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.auth = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}

    def call(self, method, target, body=None):
        self.conn.request(method, target, body=body, headers=self.auth)
        resp = self.conn.getresponse()
        doc = json.loads(resp.read())
        if resp.status // 100 != 2:
            raise RuntimeError("%s %s: %d %r" % (method, target, resp.status, doc))
        return doc

    def run_true(self, exec_id):
        doc = self.call("PUT", "/v1/execs/%s?stdout_from=0&stderr_from=0&wait_ms=%d&until=exit"
                        % (exec_id, WAIT_MS), b'{"argv": ["true"]}')
        assert doc["state"] == "exited" and doc["stdout"]["next"] == 0, doc
        self.call("POST", "/v1/execs/%s/ack" % exec_id, b"{}")

    def read_stdout(self, exec_id, buf, route="stdout"):
        self.conn.request("GET", "/v1/execs/%s/%s" % (exec_id, route), headers=self.auth)
        resp = self.conn.getresponse()
        assert resp.status == 200, resp.status
        view, total = memoryview(buf), 0
        while True:
            n = resp.readinto(view)
            if not n:
                return total
            total += n


def bench_run(d, rounds, block):
    c = ac.Client("http://127.0.0.1:%d" % d.port, TOKEN)
    raw = Raw(d.port)
    for i in range(20):  # warm-up: connections, the protocol check, caches
        c.run(["true"])
        raw.run_true("warm-%d" % i)
    client_ms, raw_ms, n = [], [], 0
    while len(client_ms) < rounds:
        for _ in range(block):
            t0 = time.perf_counter()
            r = c.run(["true"])
            client_ms.append((time.perf_counter() - t0) * 1e3)
            assert r.exit_code == 0 and r.exec.acked, r
        for _ in range(block):
            n += 1
            t0 = time.perf_counter()
            raw.run_true("raw-%d" % n)
            raw_ms.append((time.perf_counter() - t0) * 1e3)
    c.close()
    return client_ms, raw_ms


def bench_stream(d, size, rounds):
    c = ac.Client("http://127.0.0.1:%d" % d.port, TOKEN)
    raw = Raw(d.port)
    exec_id = ac.mint_exec_id("big")
    c.start_exec(exec_id, ["head", "-c", str(size), "/dev/zero"])
    info = c.wait_exec(exec_id, 600)
    assert info.exit_code == 0 and info.stdout_bytes == size, info
    buf = bytearray(1 << 20)
    client_rates, raw_rates, sse_rates = [], [], []
    for _ in range(rounds):
        # The event stream read without decoding: what the daemon's SSE
        # route delivers, a bound on any client of it (output bytes/s).
        t0 = time.perf_counter()
        raw.read_stdout(exec_id, buf, "events")
        sse_rates.append(size / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        got = raw.read_stdout(exec_id, buf)
        raw_rates.append(got / (time.perf_counter() - t0))
        assert got == size, got
        t0 = time.perf_counter()
        got = 0
        for ev in c.stream(exec_id):
            if isinstance(ev, ac.OutputEvent):
                got += len(ev.data)
        client_rates.append(got / (time.perf_counter() - t0))
        assert got == size, got
    c.close()
    return client_rates, raw_rates, sse_rates


def b64_ceiling(size):
    """Bytes per second CPython's base64 decoder alone turns the SSE route's
    128 KiB events into: a bound on any client of that route in this Python."""
    block = base64.b64encode(bytes(128 << 10)).decode("ascii")
    n = max(1, size // (128 << 10))
    t0 = time.perf_counter()
    for _ in range(n):
        binascii.a2b_base64(block)
    return n * (128 << 10) / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentd", default=os.path.join(ROOT, "build", "daemon", "agentd"))
    ap.add_argument("--quick", "--smoke", action="store_true", dest="smoke",
                    help="tiny sizes: checks that the benchmark works")
    ap.add_argument("--json", help="where to write the results (default bench/results/pyclient.json)")
    args = ap.parse_args()
    rounds, block, size, stream_rounds = (20, 10, 16 << 20, 1) if args.smoke else \
        (1000, 50, 1 << 30, 3)
    tmpfs = "/dev/shm" if os.path.isdir("/dev/shm") else None
    # Retention above the stream size: no byte is released while it is read.
    d = Daemon(args.agentd, "--retention-stream-bytes", str(4 << 30),
               "--retention-total-bytes", str(8 << 30), state_parent=tmpfs)
    try:
        client_ms, raw_ms = bench_run(d, rounds, block)
        client_rates, raw_rates, sse_rates = bench_stream(d, size, stream_rounds)
        ceiling = b64_ceiling(size)
    finally:
        d.close()
    mib = float(1 << 20)
    r = {
        "run_p50_ms": statistics.median(client_ms), "run_p99_ms": pct(client_ms, 99),
        "raw_p50_ms": statistics.median(raw_ms), "raw_p99_ms": pct(raw_ms, 99),
        "runs": len(client_ms),
        "stream_bytes": size,
        "stream_client_mib_s": statistics.median(client_rates) / mib,
        "stream_raw_mib_s": statistics.median(raw_rates) / mib,
        # Per round: each round reads both ways, so load hits both alike.
        "stream_ratio": statistics.median(c / w for c, w in zip(client_rates, raw_rates)),
        "b64_decode_mib_s": ceiling / mib,
        "sse_undecoded_mib_s": statistics.median(sse_rates) / mib,
        "stream_rounds": [{"client_mib_s": c / mib, "raw_mib_s": w / mib}
                          for c, w in zip(client_rates, raw_rates)],
        "python": sys.version.split()[0],
    }
    r["run_ratio_p50"] = r["run_p50_ms"] / r["raw_p50_ms"]
    write_and_print(r, args.json or os.path.join(HERE, "results", "pyclient.json"),
                    "Python client", "http.client by hand", size)
    print("| base64 decode alone (binascii), same bytes | %.0f MiB/s | | %.2fx |" % (
        r["b64_decode_mib_s"], r["b64_decode_mib_s"] / r["stream_raw_mib_s"]))


if __name__ == "__main__":
    sys.exit(main())
