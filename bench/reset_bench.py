#!/usr/bin/env python3
"""Guest reset between tenants (docs/PROTOCOL.md, "Reuse"; docs/BENCHMARKS.md,
"Reset"), each against the plain Unix way of doing the same work, in the
same run and on the same filesystem:

  files      a tenant left --files files (--file-kib each, 100 to a
             directory) in a reset path whose golden state is empty;
             `POST /v1/reset` (delete, then verify by a fresh walk) vs
             `rm -rf` of the same tree made in a sibling directory
  processes  a tenant left --procs setsid'd `sleep` processes (its exec
             already exited: they are found by the generation's cgroup, or
             by the subreaper tree); `POST /v1/reset` (kill, wait, verify)
             vs SIGKILL to as many `sleep` processes this script started,
             and waiting for them. Also on a second daemon started with
             `--reset-cgroup off` (the subreaper walk alone), same rounds.
  spawn      what joining the generation's cgroup costs an exec: --spawns
             starts of /bin/true (start, wait for the exit, one request
             each) on the cgroup daemon and on the `--reset-cgroup off`
             one, alternating

  overlay    (root and overlayfs only) the same --files tree, and one a tenth
             its size, left in a reset path of a second daemon started with
             `--reset-overlay auto`: the reset swaps the overlay's upper
             layer. Target: at most 50 ms, and not growing with the tree;
             shown beside the copying reset and `rm -rf` of the same run.
             First in each round (not after the disk-heavy rows); each size
             is timed twice a round, once first and once second after an
             untimed reset (medians of 2 x --rounds).

Rounds alternate the two sides. The reset is timed from the request to its
answer (the daemon's own duration_ms is recorded too).

Usage: bench/reset_bench.py [--agentd PATH] [--files 10000] [--file-kib 20]
                            [--procs 100] [--spawns 50] [--rounds 5] [--smoke]
                            [--json FILE]
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from typing import Any, Dict, List

from exec_bench import ROOT, TOKEN, Daemon

PER_DIR = 100


def make_tree(root: str, files: int, size: int) -> None:
    data = os.urandom(size)
    for i in range(files):
        d = os.path.join(root, "d%03d" % (i // PER_DIR))
        if i % PER_DIR == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "f%05d" % i), "wb") as f:
            f.write(data)


def timed_reset(d: Daemon, n: int) -> Dict[str, Any]:
    conn = d.conn()
    try:
        t0 = time.perf_counter()
        status, report = d.call(conn, "POST", "/v1/reset",
                                {"reset_id": "bench-%d-%d" % (os.getpid(), n),
                                 "next": {"token": TOKEN}})
        elapsed = time.perf_counter() - t0
    finally:
        conn.close()
    if status != 200 or not report.get("clean"):
        raise RuntimeError("reset: %d %s" % (status, report))
    return {"s": elapsed, "daemon_ms": report["duration_ms"], "report": report}


def leave_processes(d: Daemon, count: int, n: int) -> None:
    script = ('i=0; while [ $i -lt %d ]; do setsid sleep 1000 </dev/null >/dev/null 2>&1 & '
              'i=$((i+1)); done' % count)
    conn = d.conn()
    try:
        status, body = d.call(conn, "PUT", "/v1/execs/procs-%d?wait_ms=60000&until=exit" % n,
                              {"argv": ["/bin/sh", "-c", script]})
    finally:
        conn.close()
    if status != 201 or body["exit_code"] != 0:
        raise RuntimeError("could not leave processes: %d %s" % (status, body))


def timed_spawns(d: Daemon, count: int, tag: str) -> List[float]:
    out = []
    conn = d.conn()
    try:
        for i in range(count):
            t0 = time.perf_counter()
            status, body = d.call(conn, "PUT", "/v1/execs/%s-%d?wait_ms=60000&until=exit" % (tag, i),
                                  {"argv": ["/bin/true"]})
            out.append(time.perf_counter() - t0)
            if status != 201 or body["exit_code"] != 0:
                raise RuntimeError("spawn: %d %s" % (status, body))
    finally:
        conn.close()
    return out


def reset_mode(d: Daemon) -> Dict[str, Any]:
    conn = d.conn()
    try:
        status, health = d.call(conn, "GET", "/v1/health")
    finally:
        conn.close()
    return health.get("reset_processes", {})


def kill_baseline(count: int) -> float:
    procs = [subprocess.Popen(["sleep", "1000"], start_new_session=True,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for _ in range(count)]
    t0 = time.perf_counter()
    for p in procs:
        os.kill(p.pid, signal.SIGKILL)
    for p in procs:
        p.wait()
    return time.perf_counter() - t0


def overlay_available() -> bool:
    if os.geteuid() != 0:
        return False
    with open("/proc/filesystems") as f:
        return "\toverlay\n" in f.read()


def unmount_all(path: str) -> None:
    """Takes the overlay (or its tmpfs) the daemon leaves mounted at `path`."""
    while subprocess.run(["mountpoint", "-q", path]).returncode == 0:
        subprocess.run(["umount", "-l", path], check=True)


def close_overlay_daemon(d, overlay_path: str) -> None:
    """Stops a daemon run with --reset-overlay. It leaves its overlay mounted
    when it stops (a restart adopts it): taken off before its state dir goes."""
    d.proc.send_signal(signal.SIGTERM)
    d.proc.wait(60)
    unmount_all(overlay_path)
    unmount_all(os.path.join(d.tmp, "state", "reset-overlay", "0"))
    shutil.rmtree(d.tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentd", default=os.path.join(ROOT, "build", "daemon", "agentd"))
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--file-kib", type=int, default=20)
    ap.add_argument("--procs", type=int, default=100)
    ap.add_argument("--spawns", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--smoke", action="store_true", help="200 files, 10 processes, 1 round")
    ap.add_argument("--json", help="also write the measurements to this file")
    args = ap.parse_args()
    if args.smoke:
        args.files, args.procs, args.spawns, args.rounds = 200, 10, 5, 1
    size = args.file_kib << 10

    work = tempfile.mkdtemp(prefix="agentd-reset-bench-")
    reset_path = os.path.join(work, "workspace")
    os.mkdir(reset_path)
    d = Daemon(args.agentd, "--reset-path", reset_path)
    off = Daemon(args.agentd, "--reset-cgroup", "off")
    modes = {"cgroup_daemon": reset_mode(d), "off_daemon": reset_mode(off)}
    overlay_path = os.path.join(work, "overlay-workspace")
    os.mkdir(overlay_path)
    od = (Daemon(args.agentd, "--reset-path", overlay_path, "--reset-overlay", "auto")
          if overlay_available() else None)
    overlay: Dict[str, List[Any]] = {"agentd_s": [], "daemon_ms": [], "small_s": [],
                                     "small_daemon_ms": []}
    files: Dict[str, List[Any]] = {"agentd_s": [], "daemon_ms": [], "baseline_s": []}
    procs: Dict[str, List[Any]] = {"agentd_s": [], "daemon_ms": [], "baseline_s": [],
                                   "off_s": [], "off_daemon_ms": []}
    spawns: Dict[str, List[float]] = {"cgroup_s": [], "off_s": []}
    try:
        for n in range(args.rounds):
            if od:
                # First in the round, and each size timed once going first
                # and once going second (after an untimed reset): the first
                # reset after other work, the disk-heavy rows above all
                # (195 MiB written and deleted on the disk file system), is
                # slower whatever its size (docs/BENCHMARKS.md, "Reset with
                # overlays"); with the big tree always first that read as
                # growth.
                pair = ((args.files, "agentd_s"), (args.files // 10, "small_s"))
                for turn, order in enumerate((pair, pair[::-1])):
                    timed_reset(od, 10 * n + 5 + turn)
                    for count, key in order:
                        make_tree(overlay_path, count, size)
                        subprocess.run(["sync"], check=True)
                        r = timed_reset(od, 10 * n + 2 * turn + (key == "small_s"))
                        if r["report"]["removed"]["entries"] < count:
                            raise RuntimeError("the overlay reset removed too little: %s"
                                               % r["report"])
                        overlay[key].append(r["s"])
                        overlay["daemon_ms" if key == "agentd_s" else "small_daemon_ms"].append(
                            r["daemon_ms"])

            make_tree(reset_path, args.files, size)
            subprocess.run(["sync"], check=True)
            r = timed_reset(d, 2 * n)
            if r["report"]["removed"]["entries"] < args.files:
                raise RuntimeError("the reset removed too little: %s" % r["report"])
            files["agentd_s"].append(r["s"])
            files["daemon_ms"].append(r["daemon_ms"])

            other = os.path.join(work, "rm-%d" % n)
            make_tree(other, args.files, size)
            subprocess.run(["sync"], check=True)
            t0 = time.perf_counter()
            subprocess.run(["rm", "-rf", other], check=True)
            files["baseline_s"].append(time.perf_counter() - t0)

            leave_processes(d, args.procs, n)
            r = timed_reset(d, 2 * n + 1)
            if r["report"]["killed_processes"] < args.procs:
                raise RuntimeError("the reset killed too few: %s" % r["report"])
            procs["agentd_s"].append(r["s"])
            procs["daemon_ms"].append(r["daemon_ms"])
            procs["baseline_s"].append(kill_baseline(args.procs))

            leave_processes(off, args.procs, n)
            r = timed_reset(off, 2 * n + 1)
            if r["report"]["killed_processes"] < args.procs:
                raise RuntimeError("the reset killed too few: %s" % r["report"])
            procs["off_s"].append(r["s"])
            procs["off_daemon_ms"].append(r["daemon_ms"])

            for half in range(2):
                spawns["cgroup_s"] += timed_spawns(d, args.spawns // 2, "sp%d-%d" % (n, half))
                spawns["off_s"] += timed_spawns(off, args.spawns // 2, "sp%d-%d" % (n, half))
            # Untimed: the spawns' records go now, not inside the next
            # round's timed resets (which would then remove them too).
            timed_reset(d, 1000 + n)
            timed_reset(off, 1000 + n)
    finally:
        d.close()
        off.close()
        if od:
            close_overlay_daemon(od, overlay_path)
        shutil.rmtree(work, ignore_errors=True)

    med = statistics.median
    out = {"files": args.files, "file_bytes": size, "procs": args.procs, "rounds": args.rounds,
           "files_reset": files, "procs_reset": procs, "spawns": spawns, "modes": modes,
           "files_ratio": med(files["agentd_s"]) / med(files["baseline_s"]),
           "procs_ratio": med(procs["agentd_s"]) / med(procs["baseline_s"]),
           "procs_off_ratio": med(procs["off_s"]) / med(procs["baseline_s"]),
           "spawn_ratio": med(spawns["cgroup_s"]) / med(spawns["off_s"])}
    print("reset of %d files (%d MiB): %.1f ms; rm -rf: %.1f ms; %.2fx" % (
        args.files, args.files * size >> 20, med(files["agentd_s"]) * 1e3,
        med(files["baseline_s"]) * 1e3, out["files_ratio"]))
    print("reset of %d processes (%s): %.1f ms; kill + wait: %.1f ms; %.2fx" % (
        args.procs, modes["cgroup_daemon"].get("mode"), med(procs["agentd_s"]) * 1e3,
        med(procs["baseline_s"]) * 1e3, out["procs_ratio"]))
    print("  with --reset-cgroup off (%s): %.1f ms; %.2fx" % (
        modes["off_daemon"].get("mode"), med(procs["off_s"]) * 1e3, out["procs_off_ratio"]))
    print("exec of /bin/true (start and exit): %.2f ms in the generation's cgroup; "
          "%.2f ms without; %.2fx" % (med(spawns["cgroup_s"]) * 1e3, med(spawns["off_s"]) * 1e3,
                                      out["spawn_ratio"]))
    if od:
        out["overlay_reset"] = overlay
        out["overlay_size_ratio"] = med(overlay["agentd_s"]) / med(overlay["small_s"])
        print("overlay reset of %d files: %.1f ms (daemon's own %d ms); of %d files: %.1f ms "
              "(%d ms); %.2fx for 10x the files" % (
                  args.files, med(overlay["agentd_s"]) * 1e3, med(overlay["daemon_ms"]),
                  args.files // 10, med(overlay["small_s"]) * 1e3,
                  med(overlay["small_daemon_ms"]), out["overlay_size_ratio"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
