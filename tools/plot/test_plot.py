#!/usr/bin/env python3
"""Tests of plot_run.py on a hand-made log and table (well under a second): the later rows of a resumed run win, the
buckets average what they should, and both SVG files parse with a curve per term and a bar per figure.

    python3 tools/plot/test_plot.py
"""

import os
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ElementTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_run  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
HEADER = "#steps\tsplit\t" + "\t".join(plot_run.TERMS) + "\ttokens\tseconds\n"


def log_line(step, split, value, terms=len(plot_run.TERMS)):
    return f"{step}\t{split}\t" + "\t".join(str(value) for _ in range(terms)) + "\t100\t0.5\n"


class PlotTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.run = self.directory.name
        lines = [HEADER] + [log_line(s, "train", 10.0) for s in range(1, 5)]
        lines.append(log_line(4, "validation", 9.0))
        # Resumed at step 2: steps 3 and 4 run again with other losses, which replace the first ones.
        lines += [log_line(s, "train", 6.0) for s in (3, 4)]
        lines.append(log_line(4, "validation", 5.0))
        with open(os.path.join(self.run, "log.tsv"), "w", encoding="utf-8") as log:
            log.writelines(lines)
        self.table = os.path.join(self.run, "evaluation.tsv")
        with open(self.table, "w", encoding="utf-8") as table:
            table.write("#task\tscorer\tmetric\tmodel\tbaseline\tbaseline_value\tchance\ttarget\tmet\titems\tunit\n")
            table.write("synonym -> lemma\tembedding cosine\trecall@1\t0.25\tTF-IDF\t0.2\t0.001\t\tyes\t10\tshare\n")
            table.write("choices\ttext_choose\tECE, 15 bins\t0.04\t\t\t\t<= 0.050\tyes\t10\tplain\n")

    def tearDown(self):
        self.directory.cleanup()

    def test_later_rows_win_and_buckets_average(self):
        rows = plot_run.read_log(os.path.join(self.run, "log.tsv"))
        self.assertEqual(sorted(rows["train"]), [1, 2, 3, 4])
        self.assertEqual(rows["train"][3]["loss"], 6.0)
        self.assertEqual(rows["validation"][4]["choices"], 5.0)
        means = plot_run.bucket_means({s: r["loss"] for s, r in rows["train"].items()}, 2)
        self.assertEqual(means, [(1.5, 10.0), (3.5, 6.0)])

    def test_ticks_cover_the_range(self):
        ticks = plot_run.nice_ticks(1.3, 1.8)
        self.assertLessEqual(ticks[0], 1.3)
        self.assertGreaterEqual(ticks[-1], 1.8)
        self.assertEqual(plot_run.nice_ticks(0, 2000), [0, 500, 1000, 1500, 2000])

    def test_svgs_parse_with_a_curve_per_term_and_a_bar_per_figure(self):
        plot_run.main(["--run", self.run, "--evaluation", self.table, "--bucket", "2"])
        loss = ElementTree.parse(os.path.join(self.run, "loss.svg")).getroot()
        curves = [p.get("class") for p in loss.iter(f"{SVG}polyline")]
        self.assertEqual(curves.count("train"), len(plot_run.TERMS))
        self.assertEqual(curves.count("validation"), len(plot_run.TERMS))
        bars = ElementTree.parse(os.path.join(self.run, "evaluation.svg")).getroot()
        kinds = [r.get("class") for r in bars.iter(f"{SVG}rect") if r.get("class")]
        # Recall: model, baseline and chance; ECE: the model alone.
        self.assertEqual(kinds, ["model", "baseline", "chance", "model"])
        widths = [float(r.get("width")) for r in bars.iter(f"{SVG}rect") if r.get("class") == "model"]
        self.assertAlmostEqual(widths[0] / widths[1], 0.25 / 0.04, places=2)

    def test_a_log_from_before_the_distillation_term_draws_the_other_terms(self):
        older = [t for t in plot_run.TERMS if t != "distill"]
        with open(os.path.join(self.run, "log.tsv"), "w", encoding="utf-8") as log:
            log.write("#steps\tsplit\t" + "\t".join(older) + "\ttokens\tseconds\n")
            log.writelines(log_line(s, "train", 3.0, len(older)) for s in range(1, 5))
        plot_run.main(["--run", self.run, "--bucket", "2"])
        loss = ElementTree.parse(os.path.join(self.run, "loss.svg")).getroot()
        curves = [p.get("class") for p in loss.iter(f"{SVG}polyline")]
        self.assertEqual(curves.count("train"), len(older))

    def test_a_malformed_log_is_refused(self):
        with open(os.path.join(self.run, "log.tsv"), "a", encoding="utf-8") as log:
            log.write("5\ttrain\t1.0\n")
        with self.assertRaises(SystemExit):
            plot_run.read_log(os.path.join(self.run, "log.tsv"))


if __name__ == "__main__":
    unittest.main()
