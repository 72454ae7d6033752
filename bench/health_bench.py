#!/usr/bin/env python3
"""Health requests under keep-alive load, agentd against nginx
(docs/BENCHMARKS.md, "The suite: bench/run").

wrk (-t2 -c64, keep-alive) drives `GET /v1/health` of agentd and, in the
same rounds, Debian's nginx serving a static file with the same bytes as
agentd's health answer, both on loopback. nginx runs from a private
configuration in a temporary directory: Debian's defaults (worker_processes
auto, sendfile on) except that the access log is off (agentd logs no
request at --log-level warn) and keep-alive connections are never closed
for their request count (wrk would otherwise reconnect every 1,000
requests). Reports requests/s and wrk's latency percentiles, median of the
rounds; the ratio is agentd's requests/s over nginx's.

Usage: bench/health_bench.py [--agentd PATH] [--seconds 5] [--rounds 3]
                             [--nginx-workers auto] [--smoke] [--json FILE]
"""

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from typing import Any, Dict, List

from exec_bench import ROOT, Daemon
from loopback import free_port

NGINX_CONF = """
worker_processes {workers};
daemon off;
master_process on;
user root;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    default_type application/json;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {tmp}/www;
    }}
}}
"""


class Nginx:
    """Debian's nginx on a free loopback port, serving `body` as /health.json."""

    def __init__(self, body: bytes, workers: str = "auto") -> None:
        self.tmp = tempfile.mkdtemp(prefix="agentd-nginx-")
        self.port = free_port()
        os.makedirs(os.path.join(self.tmp, "www"))
        with open(os.path.join(self.tmp, "www", "health.json"), "wb") as f:
            f.write(body)
        conf = os.path.join(self.tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(tmp=self.tmp, port=self.port, workers=workers))
        self.proc = subprocess.Popen(["nginx", "-c", conf, "-p", self.tmp],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("nginx did not start (see its error.log)")
            time.sleep(0.02)

    def _answers(self) -> bool:
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
            c.request("GET", "/health.json")
            ok = c.getresponse().status == 200
            c.close()
            return ok
        except OSError:
            return False

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: fast shutdown of master and workers
            self.proc.wait(30)
        shutil.rmtree(self.tmp, ignore_errors=True)


UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def wrk(url: str, seconds: int) -> Dict[str, float]:
    out = subprocess.run(["wrk", "-t2", "-c64", "-d%ds" % seconds, "--latency", url],
                         capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError("wrk saw errors:\n" + out)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not rps:
        raise RuntimeError("no Requests/sec in wrk's output:\n" + out)
    r = {"requests_per_s": float(rps.group(1))}
    for p in ("50", "99"):
        m = re.search(r"^\s+%s%%\s+([\d.]+)(us|ms|s)$" % p, out, re.M)
        if not m:
            raise RuntimeError("no %s%% latency in wrk's output:\n%s" % (p, out))
        r["p%s_ms" % p] = float(m.group(1)) * UNITS[m.group(2)]
    return r


def run(binary: str, seconds: int, rounds: int, workers: str) -> Dict[str, Any]:
    d = Daemon(binary)
    nginx = None
    try:
        c = d.conn()
        c.request("GET", "/v1/health")
        body = c.getresponse().read()
        c.close()
        nginx = Nginx(body, workers)
        agentd_url = "http://127.0.0.1:%d/v1/health" % d.port
        nginx_url = "http://127.0.0.1:%d/health.json" % nginx.port
        ours: List[Dict[str, float]] = []
        theirs: List[Dict[str, float]] = []
        for _ in range(rounds):
            theirs.append(wrk(nginx_url, seconds))
            ours.append(wrk(agentd_url, seconds))
    finally:
        if nginx:
            nginx.close()
        d.close()
    med = statistics.median
    return {"seconds": seconds, "rounds": rounds, "body_bytes": len(body),
            "nginx_workers": workers,
            "agentd": ours, "nginx": theirs,
            "agentd_rps": med(r["requests_per_s"] for r in ours),
            "nginx_rps": med(r["requests_per_s"] for r in theirs),
            "agentd_p50_ms": med(r["p50_ms"] for r in ours),
            "agentd_p99_ms": med(r["p99_ms"] for r in ours),
            "nginx_p50_ms": med(r["p50_ms"] for r in theirs),
            "ratio": med(a["requests_per_s"] / b["requests_per_s"]
                         for a, b in zip(ours, theirs))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentd", default=os.path.join(ROOT, "build", "daemon", "agentd"))
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nginx-workers", default="auto",
                    help="nginx's worker_processes (Debian's default: auto, one per CPU)")
    ap.add_argument("--smoke", action="store_true", help="one round of one second")
    ap.add_argument("--json", help="also write the measurements to this file")
    args = ap.parse_args()
    seconds, rounds = (1, 1) if args.smoke else (args.seconds, args.rounds)
    r = run(args.agentd, seconds, rounds, args.nginx_workers)
    print("health, wrk -t2 -c64: agentd %.0f req/s (p50 %.2f ms, p99 %.2f ms), "
          "nginx %.0f req/s, ratio %.2f" % (r["agentd_rps"], r["agentd_p50_ms"],
                                           r["agentd_p99_ms"], r["nginx_rps"], r["ratio"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
