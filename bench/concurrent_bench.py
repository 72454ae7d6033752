#!/usr/bin/env python3
"""Many execs started at once (docs/BENCHMARKS.md, "The suite: bench/run").

agentd: N `PUT /v1/execs/{id}` of /bin/true, pipelined on a few keep-alive
loopback connections without waiting for any answer, then one pipelined long
poll per exec; the time runs from the first request sent to the last exec
seen exited. Baseline: a C program that forks N children (each execs
/bin/true) before waiting for any, then reaps them all
(bench/fork_exec_baseline.c --concurrent). Rounds interleave the two.

Usage: bench/concurrent_bench.py [--agentd PATH] [--execs 1000] [--rounds 3]
                                 [--smoke] [--json FILE]
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import time
from typing import Any, Dict, List

from exec_bench import ROOT, TOKEN, Daemon, build_baseline

CONNECTIONS = 4


def request(method: str, target: str, body: bytes = b"") -> bytes:
    return (b"%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (method.encode(), target.encode(), TOKEN.encode(),
                                               len(body), body))


def read_responses(sock: socket.socket, count: int) -> List[bytes]:
    """Reads `count` Content-Length responses; returns their bodies, and
    fails on any status but 2xx."""
    buf = b""
    bodies: List[bytes] = []
    while len(bodies) < count:
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            head = buf[:end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(buf) >= end + 4 + length:
                status = int(head.split(" ", 2)[1])
                body = buf[end + 4:end + 4 + length]
                if not 200 <= status < 300:
                    raise RuntimeError("HTTP %d: %r" % (status, body[:200]))
                bodies.append(body)
                buf = buf[end + 4 + length:]
                continue
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise RuntimeError("connection closed after %d answers" % len(bodies))
        buf += chunk
    return bodies


def agentd_round(port: int, prefix: str, execs: int) -> float:
    """Seconds from the first start sent to the last exit seen."""
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(CONNECTIONS)]
    for s in socks:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ids = [["%s-%d" % (prefix, i) for i in range(c, execs, CONNECTIONS)]
           for c in range(CONNECTIONS)]
    starts = [b"".join(request("PUT", "/v1/execs/" + i, b'{"argv":["/bin/true"]}') for i in group)
              for group in ids]
    polls = [b"".join(request("GET", "/v1/execs/%s?wait_ms=30000" % i) for i in group)
             for group in ids]
    t0 = time.perf_counter()
    for s, data in zip(socks, starts):
        s.sendall(data)
    for s, group in zip(socks, ids):
        read_responses(s, len(group))
    for s, data in zip(socks, polls):
        s.sendall(data)
    for s, group in zip(socks, ids):
        for body in read_responses(s, len(group)):
            state = json.loads(body)
            if state["state"] != "exited" or state["exit_code"] != 0:
                raise RuntimeError("exec did not exit 0: %r" % state)
    seconds = time.perf_counter() - t0
    for s in socks:
        s.close()
    return seconds


def baseline_round(exe: str, execs: int) -> float:
    out = subprocess.run([exe, str(execs), "--concurrent"], capture_output=True, text=True,
                         check=True).stdout
    return float(out) / 1e6


def run(binary: str, execs: int, rounds: int) -> Dict[str, Any]:
    exe = build_baseline()
    # Spool on tmpfs, as the default state directory (/run/agentd) is; room
    # for every round's records, which stay until the daemon stops.
    d = Daemon(binary, "--max-execs", str(execs * (rounds + 2)),
               state_parent="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ours: List[float] = []
    base: List[float] = []
    try:
        agentd_round(d.port, "warm", min(execs, 50))
        for r in range(rounds):
            base.append(baseline_round(exe, execs))
            ours.append(agentd_round(d.port, "r%d" % r, execs))
    finally:
        d.close()
        shutil.rmtree(os.path.dirname(exe))
    return {"execs": execs, "rounds": rounds, "connections": CONNECTIONS,
            "agentd_s": ours, "baseline_s": base,
            "ratio": statistics.median(a / b for a, b in zip(ours, base))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentd", default=os.path.join(ROOT, "build", "daemon", "agentd"))
    ap.add_argument("--execs", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="20 execs, one round")
    ap.add_argument("--json", help="also write the measurements to this file")
    args = ap.parse_args()
    execs, rounds = (20, 1) if args.smoke else (args.execs, args.rounds)
    r = run(args.agentd, execs, rounds)
    print("%d concurrent execs: agentd %.3f s, fork+exec %.3f s (medians), ratio %.2f" % (
        execs, statistics.median(r["agentd_s"]), statistics.median(r["baseline_s"]), r["ratio"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
