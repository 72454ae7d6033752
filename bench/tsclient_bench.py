#!/usr/bin/env python3
"""TypeScript client overhead (issue 25): compiles client/ts with its locked
tsc and runs bench/tsclient_bench.mjs against a fresh daemon. That script
interleaves, in one Node.js process:

  run     Client.run(["true"]) vs PUT /v1/execs/{id} with start and wait plus
          POST ack by hand with node:http on one keep-alive connection (the
          fewest requests that give a command's exit and output and mark it
          read), each answer JSON-decoded;
  stream  one exited exec's 1 GiB of retained stdout read through
          Client.stream (binary frames from a daemon that has them, else
          SSE with base64) vs the raw route
          GET /v1/execs/{id}/stdout read with node:http.

  bench/tsclient_bench.py [--agentd build/daemon/agentd] [--node node] [--smoke] [--json FILE]
  (results in bench/results/tsclient.json unless --json says otherwise)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from client_report import write_and_print
from exec_bench import Daemon, HERE, ROOT, TOKEN

TS_DIR = os.path.join(ROOT, "client", "ts")


def node_binary(given):
    for candidate in ([given] if given else []) + [shutil.which("node"),
                                                   "/usr/local/lib/agentd-deps/node/bin/node"]:
        if candidate and os.path.exists(candidate):
            return candidate
    raise SystemExit("no Node.js: run scripts/install-deps")


def compile_client(node, out):
    """The client as the tests build it (client/ts/run-tests): ES modules in `out`."""
    subprocess.run([node, os.path.join(TS_DIR, "node_modules", "typescript", "bin", "tsc"), "-p",
                    os.path.join(TS_DIR, "tsconfig.json"), "--outDir", out], check=True)
    with open(os.path.join(out, "package.json"), "w") as f:
        f.write('{"type": "module"}\n')
    return os.path.join(out, "src", "index.js")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentd", default=os.path.join(ROOT, "build", "daemon", "agentd"))
    ap.add_argument("--node")
    ap.add_argument("--quick", "--smoke", action="store_true", dest="smoke",
                    help="tiny sizes: checks that the benchmark works")
    ap.add_argument("--json", help="where to write the results (default bench/results/tsclient.json)")
    args = ap.parse_args()
    runs, block, size, rounds = (20, 10, 16 << 20, 1) if args.smoke else (1000, 50, 1 << 30, 3)
    node = node_binary(args.node)
    build = tempfile.mkdtemp(prefix="agentd-tsbench-")
    tmpfs = "/dev/shm" if os.path.isdir("/dev/shm") else None
    try:
        index = compile_client(node, build)
        # Retention above the stream size: no byte is released while it is read.
        d = Daemon(args.agentd, "--retention-stream-bytes", str(4 << 30),
                   "--retention-total-bytes", str(8 << 30), state_parent=tmpfs)
        try:
            out = subprocess.run(
                [node, os.path.join(HERE, "tsclient_bench.mjs"), index,
                 "http://127.0.0.1:%d" % d.port, TOKEN, str(runs), str(block), str(size),
                 str(rounds)], capture_output=True, text=True, check=True).stdout
        finally:
            d.close()
    finally:
        shutil.rmtree(build, ignore_errors=True)
    r = json.loads(out)
    write_and_print(r, args.json or os.path.join(HERE, "results", "tsclient.json"),
                    "TypeScript client", "node:http by hand", size)

if __name__ == "__main__":
    sys.exit(main())
