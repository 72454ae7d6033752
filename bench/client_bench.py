#!/usr/bin/env python3
"""Client-library overhead: drives bench/client_bench against a fresh daemon.

client_bench runs the same work through agentd::client and through raw HTTP
on a plain keep-alive socket, interleaved in one process, and prints ratios:
  * Run("/bin/true") round trip (start, stream, wait, ack) vs raw PUT + long
    poll + ack;
  * an exec printing N MiB read through Client::Stream (binary frames from a
    daemon that has them, else SSE, decoded) vs the raw stdout route read by
    a plain socket.

  bench/client_bench.py [--build DIR] [--smoke] [--json FILE]
  (results in bench/results/client.json unless --json says otherwise)
"""
import argparse
import json
import os
import subprocess
import sys

from exec_bench import Daemon, HERE, ROOT, TOKEN


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", "--smoke", action="store_true", dest="smoke",
                    help="tiny sizes: checks that the benchmark works")
    ap.add_argument("--json", help="where to write the results (default bench/results/client.json)")
    args = ap.parse_args()
    rounds, mib = (20, 16) if args.smoke else (500, 1024)
    tmpfs = "/dev/shm" if os.path.isdir("/dev/shm") else None
    # Retention above the stream size: no byte is released while it is read.
    d = Daemon(os.path.join(args.build, "daemon", "agentd"), "--retention-stream-bytes",
               str(4 << 30), "--retention-total-bytes", str(8 << 30), state_parent=tmpfs)
    try:
        out = subprocess.run(
            [os.path.join(args.build, "bench", "client_bench"), "--url",
             "http://127.0.0.1:%d" % d.port, "--token", TOKEN, "--rounds", str(rounds),
             "--stream-mib", str(mib)], capture_output=True, text=True, check=True).stdout
    finally:
        d.close()
    r = json.loads(out)
    r["machine"] = {"cpus": os.cpu_count(), "kernel": os.uname().release,
                    "loadavg": os.getloadavg()}
    out_path = args.json or os.path.join(HERE, "results", "client.json")
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(r, f, indent=2)
    print("| measurement | through the client | raw HTTP | ratio |")
    print("|---|---|---|---|")
    print("| Run(/bin/true) p50 | %.3f ms | %.3f ms | %.2fx |" % (
        r["run_p50_ms"], r["raw_p50_ms"], r["run_ratio_p50"]))
    print("| Run(/bin/true) p99 | %.3f ms | %.3f ms | %.2fx |" % (
        r["run_p99_ms"], r["raw_p99_ms"], r["run_p99_ms"] / r["raw_p99_ms"]))
    print("| %d MiB stream (client Stream vs raw route) | %.0f MiB/s | %.0f MiB/s | %.2f |" % (
        mib, r["stream_client_mib_s"], r["stream_raw_mib_s"], r["stream_ratio"]))


if __name__ == "__main__":
    sys.exit(main())
