"""bench/charts.py: the per-group SVG charts of bench/run. One bar per row
with a numeric target, drawn as the share of the target it uses (met left
of the line, missed right of it, whatever the target's direction), a
whisker over the last runs, and no chart for a group without targets."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import charts  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def row(group, what, ratio=None, target="—", value=None, measured="x"):
    return {"group": group, "what": what, "ratio": ratio, "target": target, "value": value,
            "measured": measured}


def bars(svg):
    tree = ET.fromstring(svg)
    return [(g.get("data-met"), g.find(SVG + "rect").get("width"), g.find(SVG + "line"))
            for g in tree.iter(SVG + "g")]


class ChartTest(unittest.TestCase):
    def test_targets_of_both_directions_and_on_values_are_read(self):
        self.assertEqual(charts.parse_target("p50 ≤ 1.5×"), ("<=", 1.5))
        self.assertEqual(charts.parse_target("≥ 3× faster"), (">=", 3.0))
        self.assertEqual(charts.parse_target("≤ 64 MiB"), ("<=", 64.0))
        self.assertIsNone(charts.parse_target("—"))
        self.assertIsNone(charts.parse_target("≤ idle + 4 MiB"))

    def test_share_is_below_one_exactly_when_the_target_is_met(self):
        self.assertAlmostEqual(charts.share(row("g", "a", 1.2, "≤ 1.5×")), 0.8)
        self.assertAlmostEqual(charts.share(row("g", "a", 0.4, "≥ 0.8×")), 2.0)
        self.assertAlmostEqual(charts.share(row("g", "a", None, "≤ 64 MiB", value=8.0)), 0.125)
        self.assertIsNone(charts.share(row("g", "a", 1.0)))

    def test_one_bar_per_row_with_a_target_coloured_by_the_verdict(self):
        rows = [row("exec", "met, lower is better", 1.2, "≤ 1.5×"),
                row("exec", "missed, higher is better", 0.4, "≥ 0.8×"),
                row("exec", "context only", 3.0)]
        svg = charts.chart("exec", rows, [])
        got = bars(svg)
        self.assertEqual([met for met, _, _ in got], ["yes", "no"])
        met_width, missed_width = float(got[0][1]), float(got[1][1])
        self.assertLess(met_width, missed_width, "the missed row uses twice its target")
        self.assertEqual([spread for _, _, spread in got], [None, None], "one run, no whisker")
        self.assertIn("1.20× (target ≤ 1.5×)", svg)

    def test_the_whisker_spans_the_last_runs_with_the_same_target(self):
        now = [row("fs", "read", 1.0, "≤ 1.5×")]
        earlier = [{"rows": [row("fs", "read", 1.8, "≤ 1.5×")]},
                   {"rows": [row("fs", "read", 0.6, "≤ 1.5×")]},
                   {"rows": [row("fs", "read", 3.0, "≤ 1.5×")]}]  # a fourth run: not counted
        (lo, hi, n), = charts.spreads("fs", now, earlier)
        self.assertEqual(n, 3)
        self.assertAlmostEqual(lo, 0.4)
        self.assertAlmostEqual(hi, 1.2)
        changed = [{"rows": [row("fs", "read", 9.0, "≤ 2×")]}]
        self.assertEqual(charts.spreads("fs", now, changed)[0][2], 1,
                         "a row whose target changed is not the same row")
        self.assertIsNotNone(bars(charts.chart("fs", now, earlier))[0][2])

    def test_a_group_without_targets_gets_no_chart_and_files_are_written_per_group(self):
        summary = {"machine": {"smoke": False},
                   "rows": [row("ssh", "orientation", 1.0), row("exec", "rt", 1.1, "≤ 1.5×")]}
        with tempfile.TemporaryDirectory() as out:
            written = charts.write_charts(out, summary, [])
            self.assertEqual([os.path.basename(p) for p in written], ["chart-exec.svg"])
            ET.parse(written[0])  # well-formed

    def test_history_is_read_newest_first_without_smoke_runs(self):
        with tempfile.TemporaryDirectory() as d:
            for name, smoke in (("summary-20261201-100000.json", False),
                                ("summary-20261202-100000.json", True),
                                ("summary-20261203-100000.json", False)):
                with open(os.path.join(d, name), "w") as f:
                    json.dump({"machine": {"smoke": smoke, "date": name}, "rows": []}, f)
            got = [h["machine"]["date"] for h in charts.load_history(d)]
            self.assertEqual(got, ["summary-20261203-100000.json",
                                   "summary-20261201-100000.json"])


def write_history(d, runs):
    os.makedirs(os.path.join(d, "history"), exist_ok=True)
    for i, rows in enumerate(runs):
        with open(os.path.join(d, "history", "summary-2026120%d-100000.json" % (i + 1)), "w") as f:
            json.dump({"machine": {"smoke": False, "commit": "c%d" % i}, "rows": rows}, f)


class HeldTest(unittest.TestCase):
    """bench/held.py: in how many of the last runs each row held."""

    def test_a_row_holds_only_when_met_in_every_run(self):
        import held
        runs = [[row("fs", "up", 0.9, "≥ 0.8×"), row("fs", "rt", 1.6, "≤ 1.5×")],
                [row("fs", "up", 0.85, "≥ 0.8×"), row("fs", "rt", 1.2, "≤ 1.5×")],
                [row("fs", "up", 1.1, "≥ 0.8×"), row("fs", "rt", 1.4, "≤ 1.5×")]]
        text, keys, missed = held.table([{"rows": r} for r in runs])
        self.assertEqual(len(keys), 2)
        self.assertEqual(missed, [("fs", 1, "≤ 1.5×")])
        self.assertIn("| fs | up | 0.90× | 0.85× | 1.10× | ≥ 0.8× | in all 3 |", text)
        self.assertIn("| 1.60× | 1.20× | 1.40× | ≤ 1.5× | in 2 of 3 |", text)

    def test_a_row_absent_from_a_run_or_with_a_changed_target_is_not_held(self):
        import held
        runs = [[row("fs", "up", 0.9, "≥ 0.8×"), row("s", "log", 2.5, "≥ 2.0×")],
                [row("fs", "up", 0.9, "≥ 0.7×"), row("s", "log", 2.5, "≥ 2.0×")],
                [row("fs", "up", 0.9, "≥ 0.8×")]]
        text, keys, missed = held.table([{"rows": r} for r in runs])
        self.assertIn(("s", 0, "≥ 2.0×"), missed, "left out of run 3")
        self.assertIn("| s | log | 2.50× | 2.50× | — | ≥ 2.0× | in 2 of 3 |", text)
        self.assertIn("| fs | up | 0.90× | — | 0.90× | ≥ 0.8× | in 2 of 3 |", text)
        self.assertIn(("fs", 0, "≥ 0.7×"), missed, "a changed target is another row")

    def test_a_row_whose_name_carries_its_figures_is_one_row(self):
        import held
        runs = [[row("exec", "rt (%.2f ms)" % t, 1.1, "≤ 1.5×")] for t in (0.7, 0.8, 0.9)]
        text, keys, missed = held.table([{"rows": r} for r in runs])
        self.assertEqual((len(keys), missed), (1, []))
        self.assertIn("| exec | rt (0.90 ms) | 1.10× | 1.10× | 1.10× | ≤ 1.5× | in all 3 |", text)

    def test_the_exit_status_says_whether_every_row_held(self):
        script = os.path.join(ROOT, "bench", "held.py")
        good = [[row("fs", "up", 0.9, "≥ 0.8×"), row("fs", "note", 3.0)]] * 3
        bad = good[:2] + [[row("fs", "up", 0.7, "≥ 0.8×")]]
        for runs, want in ((good[:2], 2), (good, 0), (bad, 1)):
            with tempfile.TemporaryDirectory() as d:
                write_history(d, runs)
                got = subprocess.run([sys.executable, script, d], capture_output=True, text=True)
                self.assertEqual(got.returncode, want, got.stdout + got.stderr)
                if want == 0:
                    self.assertIn("1 rows with a target; 1 held in all 3 runs", got.stdout)


class SummaryGroupTest(unittest.TestCase):
    def test_every_collected_row_names_its_benchmark(self):
        import summary
        with tempfile.TemporaryDirectory() as out:
            rows = summary.collect(out, ["exec", "search"])  # no results: one row each
        self.assertEqual([r.group for r in rows], ["exec", "search"])


if __name__ == "__main__":
    unittest.main()
