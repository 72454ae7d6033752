"""The table of bench/run: every benchmark's JSON turned into rows of
measured median, p99, same-run baseline, ratio, target and whether it is met.

The targets are those of issue 12 (docs/BENCHMARKS.md, "The suite:
bench/run"). A ratio is always written so that the target reads as the
issue states it: time ratios (agentd / baseline, lower is better) for
latencies, throughput ratios (agentd / baseline, higher is better) for
transfers, and "times faster" (baseline time / agentd time) for the ranged
line read.
"""

import json
import os
import statistics
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional

MIB = 1 << 20


@dataclass
class Row:
    what: str
    measured: str
    p99: str = "—"
    baseline: str = "—"
    ratio: Optional[float] = None
    target: str = "—"  # e.g. "≤ 1.5×"; "—": shown for context, no target
    met: Optional[bool] = None
    value: Optional[float] = None  # the number the target applies to, when not the ratio
    group: str = ""  # the benchmark that made it (ROW_MAKERS' key): one chart per group


def ms(seconds: float) -> str:
    return "%.2f ms" % (seconds * 1e3)


def rate(bytes_per_s: float) -> str:
    return "%.0f MiB/s" % (bytes_per_s / MIB)


def mib(kib: float) -> str:
    return "%.1f MiB" % (kib / 1024)


def at_most(limit: float) -> Callable[[float], bool]:
    return lambda x: x <= limit


def at_least(limit: float) -> Callable[[float], bool]:
    return lambda x: x >= limit


def judged(row: Row, check: Callable[[float], bool]) -> Row:
    x = row.value if row.value is not None else row.ratio
    row.met = None if x is None else check(x)
    return row


def exec_rows(r: Dict[str, Any]) -> List[Row]:
    rows = []
    for rt in r["round_trip"]:
        on = "tmpfs" if rt["state_parent"] == "/dev/shm" else "ext4 (/tmp)"
        row = Row("exec round trip: start `/bin/true` and get its exit + output in one request "
                  "(start and wait), keep-alive loopback, driven from C; state on %s (%d runs; "
                  "start + long poll from C %s p50, from Python's http.client %s p50)" % (
                      on, rt["n"], ms(rt["two_requests_p50_us"] / 1e6),
                      ms(rt["python_p50_us"] / 1e6)),
                  ms(rt["agentd_p50_us"] / 1e6), ms(rt["agentd_p99_us"] / 1e6),
                  "fork+exec+wait %s (p99 %s)" % (ms(rt["baseline_p50_us"] / 1e6),
                                                  ms(rt["baseline_p99_us"] / 1e6)),
                  rt["agentd_p50_us"] / rt["baseline_p50_us"])
        if rt["state_parent"] == "/dev/shm":  # the default state directory, /run, is tmpfs
            row.target = "p50 ≤ 1.5×"
            judged(row, at_most(1.5))
        rows.append(row)
    for t in r["throughput"]:
        if t["state_parent"] != "/dev/shm":
            continue
        size = "%d MiB" % (t["size"] >> 20)
        rows.append(judged(Row(
            "output throughput, raw route (`stdout?follow=1`), %s printed by one exec "
            "(median of %d)" % (size, t["rounds"]),
            rate(t["raw_bytes_per_s"]), baseline="`head -c` → loopback TCP → `cat`: %s" %
            rate(t["baseline_bytes_per_s"]), ratio=t["raw_ratio"], target="≥ 0.7×"),
            at_least(0.7)))
        rows.append(judged(Row(
            "output throughput over SSE (`events`), %s" % size, rate(t["sse_bytes_per_s"]),
            baseline="raw route: %s" % rate(t["raw_bytes_per_s"]),
            ratio=t["sse_vs_raw_ratio"], target="≥ 0.5×"), at_least(0.5)))
    m = r["memory"]
    rows.append(judged(Row("daemon RSS idle", mib(m["idle_kib"]), target="≤ 4 MiB",
                           value=m["idle_kib"] / 1024), at_most(4)))
    rows.append(judged(Row("daemon RSS with %d running execs" % m["running_execs"],
                           mib(m["with_running_kib"]), target="≤ 64 MiB",
                           value=m["with_running_kib"] / 1024), at_most(64)))
    rows.append(judged(Row(
        "daemon RSS after a %d MiB print" % (m["print_bytes"] >> 20), mib(m["after_print_kib"]),
        baseline="idle: %s (+%.1f MiB)" % (mib(m["idle_kib"]),
                                           (m["after_print_kib"] - m["idle_kib"]) / 1024),
        target="≤ idle + 4 MiB", value=(m["after_print_kib"] - m["idle_kib"]) / 1024),
        at_most(4)))
    return rows


def client_rows(r: Dict[str, Any]) -> List[Row]:
    return [
        judged(Row("one-shot exec through the client library: `Run(/bin/true)`",
                   ms(r["run_p50_ms"] / 1e3), ms(r["run_p99_ms"] / 1e3),
                   "raw HTTP PUT with wait + ack: %s (p99 %s)" % (
                       ms(r["raw_p50_ms"] / 1e3), ms(r["raw_p99_ms"] / 1e3)),
                   r["run_ratio_p50"], "≤ 1.1×"), at_most(1.1)),
        Row("output read through the client library's `Stream` (SSE, decoded), %d MiB" % (
            r["stream_bytes"] >> 20), "%.0f MiB/s" % r["stream_client_mib_s"],
            baseline="raw route by a socket: %.0f MiB/s" % r["stream_raw_mib_s"],
            ratio=r["stream_ratio"]),
    ]


def language_client_rows(language: str, by_hand: str, r: Dict[str, Any]) -> List[Row]:
    """The rows of issue 25 for the Python or TypeScript client."""
    rows = [
        judged(Row("one-shot exec through the %s client: `run([\"true\"])`" % language,
                   ms(r["run_p50_ms"] / 1e3), ms(r["run_p99_ms"] / 1e3),
                   "the same requests (PUT with wait + ack) by hand with %s, one keep-alive "
                   "connection: %s (p99 %s)" % (by_hand, ms(r["raw_p50_ms"] / 1e3),
                                                ms(r["raw_p99_ms"] / 1e3)),
                   r["run_ratio_p50"], "≤ 1.3×"), at_most(1.3)),
        judged(Row("output read through the %s client's `stream` (SSE, decoded), %d MiB" % (
            language, r["stream_bytes"] >> 20), "%.0f MiB/s" % r["stream_client_mib_s"],
            baseline="raw route (`stdout`) read with %s: %.0f MiB/s" % (
                by_hand, r["stream_raw_mib_s"]),
            ratio=r["stream_ratio"], target="≥ 0.5×"), at_least(0.5)),
    ]
    rows.append(Row("for orientation: the events route read without decoding (output bytes), "
                    "what the daemon's SSE delivers to any client", "%.0f MiB/s" % r["sse_undecoded_mib_s"],
                    baseline="raw route: %.0f MiB/s" % r["stream_raw_mib_s"],
                    ratio=r["sse_undecoded_mib_s"] / r["stream_raw_mib_s"]))
    if "b64_decode_mib_s" in r:
        rows.append(Row("for orientation: %s's base64 decoder alone on the same bytes" % language,
                        "%.0f MiB/s" % r["b64_decode_mib_s"],
                        baseline="raw route: %.0f MiB/s" % r["stream_raw_mib_s"],
                        ratio=r["b64_decode_mib_s"] / r["stream_raw_mib_s"]))
    return rows


def health_rows(r: Dict[str, Any]) -> List[Row]:
    return [judged(Row(
        "health requests, wrk -t2 -c64 keep-alive, %d s × %d" % (r["seconds"], r["rounds"]),
        "%.0f req/s (p50 %.2f ms)" % (r["agentd_rps"], r["agentd_p50_ms"]),
        "%.2f ms" % r["agentd_p99_ms"],
        "nginx, static file: %.0f req/s" % r["nginx_rps"], r["ratio"], "≥ 0.8×"),
        at_least(0.8))]


def fs_rows(r: Dict[str, Any]) -> List[Row]:
    rows = []
    med = statistics.median

    def speedup(t: Dict[str, List[float]]) -> float:
        """Throughput ratio agentd / baseline = baseline time / agentd time."""
        return med(b / a for a, b in zip(t["daemon_s"], t["baseline_s"]))

    if "tree" in r:
        tree = r["tree"]
        what = "%d files, %.0f MiB" % (tree["files"], tree["bytes"] / MIB)
        # key: (what, its baseline, whether the target is judged on it).
        # The target is judged on the project's own client (agentctl); curl
        # is shown for orientation: a generic client that adds a process
        # between the socket and tar and moves 16 KiB at a time.
        labels = {"upload": ("tree upload (`tar c | curl -T -`), " + what,
                             "`tar c | tar x`", False),
                  "download": ("tree download (`curl | tar x`), " + what, "`tar c | tar x`",
                               False),
                  "upload from file": ("tree upload from an archive file (extraction alone)",
                                       "`cat archive | tar x`", False),
                  "download to null": ("tree download to /dev/null (archiving alone)",
                                       "`tar c | cat`", False),
                  "upload (agentctl)": ("tree upload (`agentctl cp DIR :DIR`), " + what,
                                        "`tar c | tar x`", True),
                  "download (agentctl)": ("tree download (`agentctl cp :DIR DIR`), " + what,
                                          "`tar c | tar x`", True)}
        for key, (label, base, targeted) in labels.items():
            if key not in tree["pairs"]:
                continue  # agentctl rows need the CLI built
            t = tree["pairs"][key]
            row = Row(label, "%.2f s" % med(t["daemon_s"]),
                      baseline="%s via loopback TCP: %.2f s" % (base, med(t["baseline_s"])),
                      ratio=speedup(t))
            if targeted:
                row.target = "≥ 0.8×"
                judged(row, at_least(0.8))
            rows.append(row)
    if "file" in r:
        f = r["file"]
        size = f["bytes"]
        for key in ("upload", "download", "upload (agentctl)", "download (agentctl)"):
            if key not in f:
                continue
            t = f[key]
            direction, _, via = key.partition(" ")
            # Which upload pays for the new content's SHA-256: curl's PUT
            # answers the tag, agentctl cp sends etag=0 (docs/PROTOCOL.md).
            tag = ""
            if direction == "upload":
                tag = ", no tag: `etag=0`" if via else ", answers the tag"
            row = Row("single-file %s, %d MiB (`%s`%s)" % (direction, size >> 20,
                                                          via.strip("()") or "curl", tag),
                      rate(size / med(t["daemon_s"])),
                      baseline="`cat` via loopback TCP: %s" % rate(size / med(t["baseline_s"])),
                      ratio=speedup(t))
            if via:  # judged on agentctl, as the tree rows
                row.target = "≥ 0.8×"
                judged(row, at_least(0.8))
            rows.append(row)
    if "lines" in r:
        li = r["lines"]
        rows.append(judged(Row(
            "ranged line read, lines %d-%d of a %d MiB file" % (li["start"], li["end"],
                                                                li["bytes"] >> 20),
            ms(med(li["daemon_s"])), baseline="`sed -n 'A,Bp'`: %s" % ms(med(li["baseline_s"])),
            ratio=speedup(li), target="≥ 3× faster"), at_least(3)))
    return rows


def concurrent_rows(r: Dict[str, Any]) -> List[Row]:
    med = statistics.median
    return [judged(Row(
        "%d execs started concurrently (pipelined on %d connections), to all exited" % (
            r["execs"], r["connections"]), ms(med(r["agentd_s"])),
        baseline="%d fork+exec in a C loop, then wait: %s" % (r["execs"],
                                                               ms(med(r["baseline_s"]))),
        ratio=r["ratio"], target="≤ 2×"), at_most(2))]


def startup_rows(r: Dict[str, Any]) -> List[Row]:
    return [
        judged(Row("daemon start to first health 200 (%d starts)" % len(r["start_s"]),
                   ms(r["start_p50_s"]), ms(r["start_p99_s"]),
                   "spawn of `/bin/true` to exit from the same script: %s" % ms(
                       r["spawn_true_p50_s"]), target="≤ 20 ms",
                   value=r["start_p50_s"] * 1e3), at_most(20)),
        judged(Row("%s stripped `agentd` size" % ("static" if r["static"] else "DYNAMIC"),
                   "%.2f MiB" % (r["stripped_bytes"] / MIB), target="≤ 5 MiB",
                   value=r["stripped_bytes"] / MIB if r["static"] else 1e9), at_most(5.0)),
    ]


def search_rows(r: Dict[str, Any]) -> List[Row]:
    """Search speed as times faster than each baseline (baseline time / agentd
    time): at least 2x grep -rn and 0.7x rg (issue 22)."""
    rows: List[Row] = []
    sizes = {"tree": "%d-file source tree" % r["files"],
             "log": "%d MiB log" % (r["log_bytes"] // MIB)}
    for data in ("tree", "log"):
        for kind, t in r[data].items():
            ours = statistics.median(t["agentd_s"])
            what = "search speed (`GET /v1/fs/search`), %s, %s, %d matching lines" % (
                sizes[data], kind, t["matches"])
            for tool, want in (("grep -rn", 2.0), ("rg", 0.7)):
                theirs = statistics.median(t[("grep" if tool == "grep -rn" else "rg") + "_s"])
                rows.append(judged(Row(what + " vs `%s`" % tool, ms(ours),
                                       baseline="`%s`: %s" % (tool, ms(theirs)),
                                       ratio=theirs / ours, target="≥ %.1f×" % want),
                                   at_least(want)))
    return rows


def reset_rows(r: Dict[str, Any]) -> List[Row]:
    """Guest reset (issue 20): within 1.5x of the plain Unix way. For files
    the issue's baseline is `rm -rf` plus `tar x` of the golden tree; this
    one's golden tree is empty, so `rm -rf` alone (a harder baseline)."""
    med = statistics.median
    f, p = r["files_reset"], r["procs_reset"]
    overlay: List[Row] = []
    if "overlay_reset" in r:  # root and overlayfs: the fast path, at most 50 ms whatever the size
        o = r["overlay_reset"]
        overlay = [
            judged(Row("reset with --reset-overlay auto: %d files (%d MiB) swapped out and"
                       " verified (daemon's own %.1f ms)" % (
                           r["files"], r["files"] * r["file_bytes"] >> 20, med(o["daemon_ms"])),
                       ms(med(o["agentd_s"])), baseline="the copying reset of the same run: %s" % (
                           ms(med(f["agentd_s"]))), target="≤ 50 ms",
                       value=med(o["agentd_s"]) * 1e3), at_most(50)),
            judged(Row("reset with --reset-overlay auto: %d files vs %d (independent of size)" % (
                r["files"], r["files"] // 10), ms(med(o["agentd_s"])),
                baseline="%d files: %s" % (r["files"] // 10, ms(med(o["small_s"]))),
                ratio=r["overlay_size_ratio"], target="≤ 1.5×"), at_most(1.5)),
        ]
    return overlay + [
        judged(Row("reset: %d files (%d MiB) a tenant left in a reset path, removed and verified"
                   " (daemon's own %.1f ms)" % (r["files"], r["files"] * r["file_bytes"] >> 20,
                                                med(f["daemon_ms"])),
                   ms(med(f["agentd_s"])), baseline="`rm -rf` of the same tree: %s" % ms(
                       med(f["baseline_s"])), ratio=r["files_ratio"], target="≤ 1.5×"),
               at_most(1.5)),
        judged(Row("reset: %d setsid'd processes a tenant left, killed and verified"
                   " (daemon's own %.1f ms)" % (r["procs"], med(p["daemon_ms"])),
                   ms(med(p["agentd_s"])), baseline="SIGKILL and wait for %d `sleep`s: %s" % (
                       r["procs"], ms(med(p["baseline_s"]))), ratio=r["procs_ratio"],
                   target="≤ 1.5×"), at_most(1.5)),
    ]


def holder_rows(r: Dict[str, Any]) -> List[Row]:
    """The exec holder (issue 24): its cost against --exec-holder off, same run."""
    rt, tp, m = r["round_trip"], r["throughput"], r["memory"]
    on, off = m["on"], m["off"]
    n = m["running_execs"]
    return [
        judged(Row("holder: exec round trip (start and wait, /bin/true, tmpfs, from C), holder "
                   "on; to fork+exec+wait %s" % ms(rt["baseline_p50_us"] / 1e6),
                   ms(rt["holder_p50_us"] / 1e6), ms(rt["holder_p99_us"] / 1e6),
                   baseline="fork+exec+wait", ratio=rt["holder_p50_us"] / rt["baseline_p50_us"],
                   target="≤ 1.5×"), at_most(1.5)),
        Row("holder: the same round trip, holder on vs --exec-holder off (%s)" % ms(
            rt["off_p50_us"] / 1e6), ms(rt["holder_p50_us"] / 1e6),
            baseline="holder off: %s" % ms(rt["off_p50_us"] / 1e6),
            ratio=rt["holder_p50_us"] / rt["off_p50_us"]),
        Row("holder: %d MiB of output over the raw route, holder on vs off" % (tp["size"] >> 20),
            rate(tp["holder_bytes_per_s"]), baseline="holder off: %s" % rate(
                tp["off_bytes_per_s"]), ratio=tp["ratio"]),
        Row("holder: memory per running exec (%d `sleep`s): daemon RSS, kernel stacks" % n,
            "%.1f + %.1f KiB" % ((on["with_running_kib"] - on["idle_kib"]) / n,
                                 on["kernel_stack_delta_kib"] / n),
            baseline="holder off: %.1f + %.1f KiB" % (
                (off["with_running_kib"] - off["idle_kib"]) / n,
                off["kernel_stack_delta_kib"] / n)),
        Row("holder: after a daemon crash, the memory each holder keeps mapped (the dead "
            "daemon's, one copy shared by all %d)" % m["after_crash_holders"],
            mib(m["after_crash_holder_rss_kib"])),
    ]


def upgrade_rows(r: Dict[str, Any]) -> List[Row]:
    """Upgrade in place (issue 24): the longest wait of a new request."""
    rows = []
    for name in ("idle", "busy"):
        u = r[name]
        failed = (", %d of %d probes got no answer" % (u["probe_errors"], u["probe_errors"] + sum(
            e["probes"] for e in u["each"]))) if u["probe_errors"] else ""
        rows.append(Row("upgrade in place with %d running execs: longest wait of a new request "
                        "(health on a fresh connection, %d upgrades; `agentd --upgrade` %s%s)" % (
                            u["execs"], u["rounds"], ms(u["command_p50_s"]), failed),
                        ms(u["pause_p50_s"]), "max %s" % ms(u["pause_max_s"]),
                        baseline="cold start to first health: %s" % ms(r["cold_start_p50_s"]),
                        ratio=u["pause_p50_s"] / r["cold_start_p50_s"],
                        met=False if u["probe_errors"] else None))
    return rows


# bench/output_designs_ab.c's models of the output route (issue 27).
DESIGN_NAMES = {
    "spool": "pipe, splice into the spool, sendfile (today's raw route)",
    "tee": "pipe, tee(2) to the socket, splice into the spool",
    "file": "the child writes the spool file, sendfile (breaks the contract)",
    "sse": "SSE from the spool, one event per write (today's)",
    "ssebatch": "SSE from the spool, events batched into 1 MiB writes",
    "ssemap": "SSE batched, encoded from a mapping of the spool (no pread)",
}


def designs_rows(r: Dict[str, Any]) -> List[Row]:
    base = r["designs"]["socket"]["bytes_per_s"]
    return [Row("for orientation, output design model (%d MiB): %s" % (r["size"] >> 20,
                                                                      DESIGN_NAMES[name]),
                rate(d["bytes_per_s"]), baseline="`head -c` into the socket: %s" % rate(base),
                ratio=d["ratio"])
            for name, d in r["designs"].items() if name in DESIGN_NAMES]


def ssh_rows(r: Dict[str, Any]) -> List[Row]:
    return [
        Row("for orientation: `ssh HOST /bin/true` through a ControlMaster (%d runs)" % r["runs"],
            ms(r["true_p50_s"]), ms(r["true_p99_s"])),
        Row("for orientation: `ssh HOST head -c %d MiB` through a ControlMaster" % (
            r["bytes"] >> 20), rate(r["bytes_per_s"])),
    ]


# Benchmark name -> how its JSON becomes rows, in the order of the table.
ROW_MAKERS: Dict[str, Callable[[Dict[str, Any]], List[Row]]] = {
    "exec": exec_rows,
    "client": client_rows,
    "pyclient": lambda r: language_client_rows("Python", "http.client", r),
    "tsclient": lambda r: language_client_rows("TypeScript", "node:http", r),
    "health": health_rows,
    "fs": fs_rows,
    "concurrent": concurrent_rows,
    "startup": startup_rows,
    "search": search_rows,
    "reset": reset_rows,
    "holder": holder_rows,
    "upgrade": upgrade_rows,
    "designs": designs_rows,
    "ssh": ssh_rows,
}
# Run only when asked or when their tool is there (not a project dependency).
OPTIONAL = {"ssh": "/usr/sbin/sshd"}


def collect(out_dir: str, names: List[str]) -> List[Row]:
    rows: List[Row] = []
    for name in names:
        path = os.path.join(out_dir, name + ".json")
        if os.path.exists(path):
            with open(path) as f:
                made = ROW_MAKERS[name](json.load(f))
        else:
            made = [Row("%s: no result (the benchmark failed)" % name, "—", met=False)]
        for row in made:
            row.group = name
        rows += made
    return rows


def markdown(rows: List[Row]) -> str:
    lines = ["| what | measured (median) | p99 | baseline, same run (median) | ratio | target "
             "| met |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        met = "—" if r.met is None else ("yes" if r.met else "**no**")
        ratio = "—" if r.ratio is None else "%.2f×" % r.ratio
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            r.what, r.measured, r.p99, r.baseline, ratio, r.target, met))
    return "\n".join(lines) + "\n"


def as_json(rows: List[Row]) -> List[Dict[str, Any]]:
    return [asdict(r) for r in rows]
