#!/usr/bin/env python3
"""Content search against grep and ripgrep (docs/BENCHMARKS.md, "Search").

The daemon's GET /v1/fs/search, `grep -rn` and `rg -n` search the same data
in the same run, each round of the daemon next to a round of each baseline,
with a warm page cache (one untimed pass of each first):

  tree   a source tree of --files files (100,000: 1,000 directories of 100
         files of ~2 KiB of C-like text), a literal that occurs in 1% of
         the files and a regular expression (an identifier pattern)
  log    one log file of --log-mib MiB (1024), the same two patterns

Every tool writes every match (path, line number, text) and the output is
read to its end: the daemon's NDJSON over a loopback HTTP connection (with
max_results and max_bytes raised so no bound cuts it), grep's and rg's
stdout through a pipe. The counts of matching lines must agree, else the
run fails. rg runs with its own defaults (its threads; no ignore files
exist in the data, and no hidden names). Ratios: baseline time / daemon
time (above 1: the daemon is faster).

With --agentd-b a second build runs in the same rounds (a daemon of each,
A, B, grep, rg in every round), so a change is judged against the same
baselines under the same load (the ratios and B/A are printed for both).

usage: bench/search_bench.py [--agentd build/daemon/agentd] [--agentd-b OTHER] [--rounds 3]
                             [--smoke] [--json FILE]
"""

import argparse
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from typing import Dict, List, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from lib import agentd_test  # noqa: E402

MiB = 1 << 20
LITERAL = "agentd_needle_marker"
REGEX = r"conf_[a-z]+_\d{3}\b"

WORDS = ("static int return struct const char void unsigned long buffer size count index value "
         "result status error config handle request response offset length table entry").split()


def text_line(rng: random.Random) -> str:
    return "    " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) + ";\n"


def make_tree(root: str, files: int, rng: random.Random) -> None:
    per_dir = 100
    for i in range(files):
        d = os.path.join(root, "d%04d" % (i // per_dir))
        if i % per_dir == 0:
            os.makedirs(d, exist_ok=True)
        lines = [text_line(rng) for _ in range(40)]
        if i % 100 == 7:
            lines[rng.randrange(40)] = "    int %s = 1;\n" % LITERAL
        if i % 50 == 3:
            lines[rng.randrange(40)] = "    x = conf_%s_%03d;\n" % (rng.choice(WORDS), i % 1000)
        with open(os.path.join(d, "f%03d.c" % (i % per_dir)), "w") as f:
            f.writelines(lines)


def make_log(path: str, size: int, rng: random.Random) -> None:
    block_lines = []
    for k in range(20000):
        line = "2026-12-03T03:%02d:%02d.%03dZ INFO worker=%d %s" % (
            k // 60 % 60, k % 60, k % 1000, k % 64, text_line(rng).strip() + "\n")
        if k == 4321:
            line = line.rstrip("\n") + " " + LITERAL + "\n"
        if k % 997 == 0:
            line = line.rstrip("\n") + " conf_table_%03d\n" % (k % 1000)
        block_lines.append(line)
    block = "".join(block_lines).encode()
    with open(path, "wb") as f:
        written = 0
        while written < size:
            f.write(block)
            written += len(block)


def daemon_search(daemon, path: str, pattern: str, fixed: bool) -> int:
    params = {"path": path, "pattern": pattern, "max_results": "100000",
              "max_bytes": str(1 << 30), "timeout_ms": "600000"}
    if fixed:
        params["fixed"] = "1"
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=900)
    try:
        conn.request("GET", "/v1/fs/search?" + urllib.parse.urlencode(params),
                     headers={"Authorization": "Bearer " + daemon.token})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError("search answered %d: %r" % (resp.status, resp.read()[:300]))
        data = resp.read()
    finally:
        conn.close()
    lines = data.split(b"\n")
    summary = json.loads(lines[-2])
    if summary.get("type") != "summary" or summary.get("bound"):
        raise RuntimeError("the search was cut: %r" % summary)
    return summary["matches"]


def tool_search(argv: List[str]) -> int:
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if p.returncode not in (0, 1):
        raise RuntimeError("%s exited with %d" % (argv[0], p.returncode))
    return p.stdout.count(b"\n")


def timed(fn) -> Tuple[float, int]:
    t0 = time.perf_counter()
    n = fn()
    return time.perf_counter() - t0, n


def bench(daemons, path: str, rounds: int) -> Dict[str, Dict[str, object]]:
    out: Dict[str, Dict[str, object]] = {}
    for name, pattern, fixed in (("literal", LITERAL, True), ("regex", REGEX, False)):
        runs = {
            "agentd": lambda: daemon_search(daemons[0], path, pattern, fixed),
            "grep": lambda: tool_search(["grep", "-rn"] + (["-F"] if fixed else ["-E"]) +
                                        ["-e", pattern.replace(r"\d", "[0-9]"), path]),
            "rg": lambda: tool_search(["rg", "-n", "--no-heading"] + (["-F"] if fixed else []) +
                                      ["-e", pattern, path]),
        }
        if len(daemons) > 1:
            runs["agentd_b"] = lambda: daemon_search(daemons[1], path, pattern, fixed)
        counts = {k: fn() for k, fn in runs.items()}  # warm-up, untimed
        if len(set(counts.values())) != 1:
            raise RuntimeError("%s: the tools disagree on the matching lines: %r" % (name, counts))
        times: Dict[str, List[float]] = {k: [] for k in runs}
        for _ in range(rounds):
            for k, fn in runs.items():
                times[k].append(timed(fn)[0])
        out[name] = {"matches": counts["agentd"], **{k + "_s": v for k, v in times.items()}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agentd", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                     "daemon", "agentd"))
    ap.add_argument("--agentd-b", help="a second build, measured in the same rounds")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--log-mib", type=int, default=1024)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    for tool in ("grep", "rg"):
        if not shutil.which(tool):
            sys.exit("search_bench: %s is missing (scripts/install-deps installs ripgrep)" % tool)
    if args.smoke:
        args.files, args.log_mib, args.rounds = 300, 4, 1
    agentd_test.AGENTD_BIN = os.path.abspath(args.agentd)
    rng = random.Random(22)
    work = tempfile.mkdtemp(prefix="agentd-search-bench-")
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3g", "tmpfs", work]).returncode == 0
    daemons = [agentd_test.Daemon()]
    if args.agentd_b:
        daemons.append(agentd_test.Daemon(binary=os.path.abspath(args.agentd_b)))
    result: Dict[str, object] = {"data_on": "tmpfs" if mounted else "disk", "rounds": args.rounds,
                                 "files": args.files, "log_bytes": args.log_mib * MiB,
                                 "rg": subprocess.run(["rg", "--version"], capture_output=True,
                                                      text=True).stdout.split("\n")[0]}
    result["load_before"] = os.getloadavg()
    try:
        tree = os.path.join(work, "tree")
        make_tree(tree, args.files, rng)
        result["tree"] = bench(daemons, tree, args.rounds)
        shutil.rmtree(tree)
        logdir = os.path.join(work, "log")
        os.makedirs(logdir)
        make_log(os.path.join(logdir, "app.log"), args.log_mib * MiB, rng)
        result["log"] = bench(daemons, logdir, args.rounds)
    finally:
        for daemon in daemons:
            daemon.close()
        if mounted:
            subprocess.run(["umount", "-l", work])
        shutil.rmtree(work, ignore_errors=True)
    result["load_after"] = os.getloadavg()
    print("load average (1, 5, 15 min): before %s, after %s" % (
        " ".join("%.1f" % x for x in result["load_before"]),  # type: ignore[union-attr]
        " ".join("%.1f" % x for x in result["load_after"])))  # type: ignore[union-attr]
    for data in ("tree", "log"):
        for name, r in result[data].items():  # type: ignore[union-attr]
            a, g, rg = (statistics.median(r[k]) for k in ("agentd_s", "grep_s", "rg_s"))
            print("%-4s %-7s %6d matches  agentd %7.3f s  grep -rn %7.3f s (%.2fx)  rg %7.3f s "
                  "(%.2fx)" % (data, name, r["matches"], a, g, g / a, rg, rg / a))
            if "agentd_b_s" in r:
                b = statistics.median(r["agentd_b_s"])
                print("%-4s %-7s %6s          B      %7.3f s  grep -rn            (%.2fx)  rg"
                      "            (%.2fx)  B/A time %.2f" % (data, name, "", b, g / b, rg / b, b / a))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
