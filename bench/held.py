#!/usr/bin/env python3
"""bench/held.py DIR: does each row hold in the last N consecutive runs?

Issue 27 judges a row by "holds in three consecutive bench/run runs on an
idle machine", not by one run. bench/run keeps each full run's summary in
DIR/history/ (bench/charts.py); this reads the newest N of them (smoke runs
are never kept) and prints one markdown line per row with a target: its
figure in each run, oldest first, the target and in how many runs it held.
A row is the same row across runs when it stands at the same place in its
group with the same target (as bench/charts.py's whiskers read them: some
rows' names carry their run's own figures); a changed target starts a new
row, and the name shown is the newest run's. A row missing from a run (a group left
out with --only, a benchmark that failed) counts as not held there.

Exits 0 when every row held in all N runs, 1 when one did not, 2 when
there are fewer than N runs to read.
"""

import argparse
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from charts import group_rows, load_history, share  # noqa: E402

Key = Tuple[str, int, str]  # group, place in the group, target


def figure(row: Dict[str, Any]) -> str:
    if row.get("value") is not None:
        return row.get("measured") or "%.2f" % row["value"]
    return "%.2f×" % row["ratio"]


def verdict(held: int, runs: int) -> str:
    if held == runs:
        return "in all %d" % runs
    if held == 0:
        return "in none"
    return "in %d of %d" % (held, runs)


def table(runs: Sequence[Dict[str, Any]]) -> Tuple[str, List[Key], List[Key]]:
    """The markdown table over `runs` (oldest first), the keys of all its
    rows and those of the rows that did not hold in every run."""
    order: List[Key] = []
    cells: Dict[Key, List[Optional[Dict[str, Any]]]] = {}
    names: Dict[Key, str] = {}
    for i, run in enumerate(runs):
        for group, rows in group_rows(run.get("rows", [])).items():
            for place, row in enumerate(rows):
                if share(row) is None:
                    continue
                key = (group, place, row.get("target", ""))
                if key not in cells:
                    order.append(key)
                    cells[key] = [None] * len(runs)
                cells[key][i] = row
                names[key] = row.get("what", "")
    head = "| group | row | %s | target | held |\n|---|---|%s---|---|\n" % (
        " | ".join("run %d" % (i + 1) for i in range(len(runs))), "---|" * len(runs))
    lines, missed = [], []
    for key in order:
        got = cells[key]
        held = sum(1 for r in got if r is not None and share(r) <= 1.0)
        if held < len(runs):
            missed.append(key)
        shown = [figure(r) if r is not None else "—" for r in got]
        lines.append("| %s | %s | %s | %s | %s |" % (key[0], names[key], " | ".join(shown), key[2],
                                                     verdict(held, len(runs))))
    return head + "\n".join(lines) + "\n", order, missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="the --out directory of bench/run (reads DIR/history/)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    newest_first = load_history(os.path.join(args.dir, "history"))
    if len(newest_first) < args.runs:
        print("bench/held: %d full runs in %s, %d needed" %
              (len(newest_first), os.path.join(args.dir, "history"), args.runs),
              file=sys.stderr)
        return 2
    runs = list(reversed(newest_first[:args.runs]))
    text, rows, missed = table(runs)
    for i, run in enumerate(runs):
        m = run.get("machine", {})
        print("run %d: %s, commit %s, load %s" % (i + 1, m.get("date", "?"), m.get("commit", "?"),
                                                  " -> ".join("%.1f" % l[0] for l in (
                                                      m.get("loadavg_at_start"),
                                                      m.get("loadavg_at_end")) if l)))
    print()
    print(text)
    print("%d rows with a target; %d held in all %d runs" % (len(rows), len(rows) - len(missed),
                                                             args.runs))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
