"""SVG charts of bench/run: one per benchmark group, one bar per row that
has a numeric target, drawn as the share of its target it uses.

Every target reads "≤ L" (lower is better) or "≥ L" (higher is better), on
a ratio ("≤ 1.5×", "≥ 0.8×", "≥ 3× faster") or on a value the row carries
("≤ 64 MiB"). One axis serves them all: a bar is x / L for "≤" targets and
L / x for "≥" targets, so 1.0 is the line, a bar left of it is met and a
bar right of it is missed by that factor. The bar's label gives the number
as measured and the target as written.

The run-to-run spread: bench/run keeps each full run's summary.json in
DIR/history/; a whisker spans the lowest and highest share over the last
runs (the current one and up to HISTORY_RUNS - 1 before it) whose row at
the same place in the group has the same target. "Each row must hold in
three consecutive runs" is then visible at a glance: the whole whisker sits
left of the line.

Standard library only (the SVG is written as text); no plotting package.
"""

import json
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple
from xml.sax.saxutils import escape

HISTORY_RUNS = 3
TARGET = re.compile(r"([≤≥])\s*([0-9]+(?:\.[0-9]+)?)")

BAR_HEIGHT = 18
ROW_GAP = 10
LABEL_WIDTH = 430
PLOT_WIDTH = 360
RIGHT_TEXT = 170
TOP = 46
AXIS_MAX_FLOOR = 2.0  # the axis always shows 0 to at least twice the target


def parse_target(target: str) -> Optional[Tuple[str, float]]:
    """("<=", L) or (">=", L) from "p50 ≤ 1.5×", "≥ 3× faster", "≤ 64 MiB";
    None for "—" and targets that are not one bound ("≤ idle + 4 MiB")."""
    m = TARGET.search(target or "")
    if not m or "+" in target:
        return None
    return ("<=" if m.group(1) == "≤" else ">=", float(m.group(2)))


def share(row: Dict[str, Any]) -> Optional[float]:
    """The share of its target a row uses (1.0 = exactly at the line)."""
    bound = parse_target(row.get("target", ""))
    x = row.get("value") if row.get("value") is not None else row.get("ratio")
    if bound is None or x is None:
        return None
    op, limit = bound
    if op == "<=":
        return x / limit if limit > 0 else None
    return limit / x if x > 0 else float("inf")


def group_rows(rows: Sequence[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row.get("group") or "other", []).append(row)
    return groups


def spreads(group: str, rows: List[Dict[str, Any]],
            history: Sequence[Dict[str, Any]]) -> List[Tuple[float, float, int]]:
    """Per row of `group`: (lowest share, highest share, runs counted) over
    the current run and the earlier `history` summaries (newest first)."""
    out = []
    earlier = [group_rows(h.get("rows", [])).get(group, []) for h in history]
    for i, row in enumerate(rows):
        values = [share(row)]
        for old in earlier[:HISTORY_RUNS - 1]:
            if i < len(old) and old[i].get("target") == row.get("target"):
                values.append(share(old[i]))
        values = [v for v in values if v is not None]
        out.append((min(values), max(values), len(values)) if values else (0.0, 0.0, 0))
    return out


def _number(row: Dict[str, Any]) -> str:
    if row.get("value") is not None:
        return row.get("measured") or "%.2f" % row["value"]
    return "%.2f×" % row["ratio"]


def chart(group: str, rows: List[Dict[str, Any]], history: Sequence[Dict[str, Any]],
          title_note: str = "") -> Optional[str]:
    """The SVG text of one group's chart; None when no row has a target."""
    charted = [r for r in rows if share(r) is not None]
    if not charted:
        return None
    spread = spreads(group, charted, history)
    finite = [s for lo, hi, _ in spread for s in (lo, hi) if s != float("inf")]
    axis_max = max([AXIS_MAX_FLOOR] + [v * 1.1 for v in finite])
    width = LABEL_WIDTH + PLOT_WIDTH + RIGHT_TEXT
    height = TOP + len(charted) * (BAR_HEIGHT + ROW_GAP) + 40

    def x_of(v: float) -> float:
        return LABEL_WIDTH + min(v, axis_max) / axis_max * PLOT_WIDTH

    runs = max(n for _, _, n in spread)
    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
        'font-family="sans-serif" font-size="12">' % (width, height),
        '<title>bench/run %s: share of target per row</title>' % escape(group),
        '<text x="8" y="18" font-size="14" font-weight="bold">%s</text>' % escape(group),
        '<text x="8" y="34" fill="#555">share of target (bar: this run; whisker: lowest to '
        'highest of the last %d run%s)%s</text>' % (runs, "" if runs == 1 else "s",
                                                    escape(title_note)),
    ]
    line_x = x_of(1.0)
    for i, (row, (lo, hi, _)) in enumerate(zip(charted, spread)):
        y = TOP + i * (BAR_HEIGHT + ROW_GAP)
        s = share(row)
        met = s <= 1.0
        what = row["what"] if len(row["what"]) <= 68 else row["what"][:65] + "..."
        out.append('<g class="row" data-met="%s">' % ("yes" if met else "no"))
        out.append('<title>%s</title>' % escape(row["what"]))
        out.append('<text x="8" y="%d">%s</text>' % (y + 13, escape(what)))
        out.append('<rect class="bar" x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>' % (
            LABEL_WIDTH, y, x_of(s) - LABEL_WIDTH, BAR_HEIGHT, "#3a8f3a" if met else "#c0392b"))
        if hi > lo:
            mid = y + BAR_HEIGHT / 2
            out.append('<line class="spread" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" '
                       'stroke="#222" stroke-width="1.5"/>' % (x_of(lo), x_of(hi), mid, mid))
            for v in (lo, hi):
                out.append('<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#222"/>' % (
                    x_of(v), x_of(v), mid - 5, mid + 5))
        out.append('<text x="%d" y="%d">%s (target %s)</text>' % (
            LABEL_WIDTH + PLOT_WIDTH + 8, y + 13, escape(_number(row)), escape(row["target"])))
        out.append('</g>')
    bottom = TOP + len(charted) * (BAR_HEIGHT + ROW_GAP)
    out.append('<line class="target" x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#000" '
               'stroke-dasharray="4 3"/>' % (line_x, line_x, TOP - 4, bottom))
    for tick in range(0, int(axis_max) + 1):
        out.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%d</text>' % (
            x_of(tick), bottom + 16, tick))
    out.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">1 = at the target; '
               'left of it met</text>' % (line_x, bottom + 32))
    out.append('</svg>')
    return "\n".join(out) + "\n"


def load_history(history_dir: str, exclude: str = "") -> List[Dict[str, Any]]:
    """Earlier full runs' summaries, newest first (file names sort by time)."""
    if not os.path.isdir(history_dir):
        return []
    docs = []
    for name in sorted(os.listdir(history_dir), reverse=True):
        path = os.path.join(history_dir, name)
        if not name.endswith(".json") or os.path.abspath(path) == os.path.abspath(exclude):
            continue
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if not doc.get("machine", {}).get("smoke"):
            docs.append(doc)
    return docs


def write_charts(out_dir: str, summary: Dict[str, Any],
                 history: Sequence[Dict[str, Any]]) -> List[str]:
    """Writes DIR/chart-GROUP.svg for every group with a target; returns the paths."""
    written = []
    note = " (smoke sizes: says nothing about speed)" if summary.get("machine", {}).get(
        "smoke") else ""
    for group, rows in group_rows(summary.get("rows", [])).items():
        svg = chart(group, rows, history, note)
        if svg is None:
            continue
        path = os.path.join(out_dir, "chart-%s.svg" % group)
        with open(path, "w", encoding="utf-8") as f:
            f.write(svg)
        written.append(path)
    return written
