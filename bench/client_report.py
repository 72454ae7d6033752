"""The Python and TypeScript client benchmarks' one report: the results as
JSON (with the machine they ran on) and the markdown rows both print."""

import json
import os


def write_and_print(r, out_path, client, by_hand, size):
    """Writes `r` to `out_path` and prints the rows common to both clients:
    run p50/p99 against the same requests by hand, the stream against the
    raw route, and the events route read undecoded."""
    r["machine"] = {"cpus": os.cpu_count(), "kernel": os.uname().release,
                    "loadavg": os.getloadavg()}
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(r, f, indent=2)
    print("| measurement | %s | %s | ratio |" % (client, by_hand))
    print("|---|---|---|---|")
    print("| run([\"true\"]) p50 | %.3f ms | %.3f ms | %.2fx |" % (
        r["run_p50_ms"], r["raw_p50_ms"], r["run_ratio_p50"]))
    print("| run([\"true\"]) p99 | %.3f ms | %.3f ms | %.2fx |" % (
        r["run_p99_ms"], r["raw_p99_ms"], r["run_p99_ms"] / r["raw_p99_ms"]))
    print("| %d MiB stream (client stream vs raw route) | %.0f MiB/s | %.0f MiB/s | %.2fx |" % (
        size >> 20, r["stream_client_mib_s"], r["stream_raw_mib_s"], r["stream_ratio"]))
    print("| events route read undecoded (output bytes) | %.0f MiB/s | | %.2fx |" % (
        r["sse_undecoded_mib_s"], r["sse_undecoded_mib_s"] / r["stream_raw_mib_s"]))
