#!/usr/bin/env python3
"""Draws a training run's loss curves and its evaluation table as SVG, with the standard library alone.

    python3 tools/plot/plot_run.py --run target/wordnet-long [--evaluation DIR/evaluation.tsv] [--out DIR]

Reads `<run>/log.tsv` (docs/training/README.md: a row per training step and per validation) and, when given, the
`evaluation.tsv` that `uform-train evaluate` writes. Writes `loss.svg` (one panel per term: the training loss as means
over buckets of steps, the validation loss as points) and `evaluation.svg` (per figure of the table: the model, the
baseline and chance as bars). A resumed run repeats the steps after its last checkpoint; the later rows win.
"""

import argparse
import math
import os
import sys
from xml.sax.saxutils import escape

TERMS = ["loss", "masking", "contrastive", "late_interaction", "choices", "distill"]
TITLES = {
    "loss": "joint loss",
    "masking": "masking",
    "contrastive": "contrastive",
    "late_interaction": "late interaction",
    "choices": "choices",
    "distill": "distillation",
}
# A level worth drawing beside a term: the choice term of uniform answers over four letters.
REFERENCES = {"choices": (math.log(4), "chance, ln 4")}
TRAIN_COLOUR, VALIDATION_COLOUR = "#1f6fb4", "#d1495b"
BAR_COLOURS = [("model", "#1f6fb4"), ("baseline", "#8a8a8a"), ("chance", "#e0a030")]
FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'


def read_log(path):
    """The log's training and validation rows as {split: {step: {term: value}}}, later rows replacing earlier."""
    rows = {"train": {}, "validation": {}}
    with open(path, encoding="utf-8") as log:
        header = None
        for number, line in enumerate(log, 1):
            fields = line.rstrip("\n").split("\t")
            if line.startswith("#"):
                header = [name.lstrip("#") for name in fields]
                continue
            if header is None or len(fields) != len(header):
                raise SystemExit(f"{path}:{number}: expected the header's {len(header or [])} fields")
            record = dict(zip(header, fields))
            if record["split"] in rows:
                # Logs written before the distillation term have no column for it.
                rows[record["split"]][int(record["steps"])] = {t: float(record[t]) for t in TERMS if t in record}
    return rows


def bucket_means(series, bucket):
    """(middle step, mean) per bucket of `bucket` consecutive steps of {step: value}."""
    sums = {}
    for step, value in series.items():
        key = (step - 1) // bucket
        total, count = sums.get(key, (0.0, 0))
        sums[key] = (total + value, count + 1)
    return [(key * bucket + (bucket + 1) / 2, total / count) for key, (total, count) in sorted(sums.items())]


def nice_ticks(low, high, count=5):
    """Round tick values covering [low, high]."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def label(value):
    """A tick's text."""
    return f"{value:g}" if abs(value) < 1e5 else f"{value:.0e}"


def panel(x0, y0, width, height, title, train, validation, last_step, reference):
    """The SVG of one term's panel: axes, ticks, the training curve, the validation points and a reference line."""
    values = [v for _, v in train] + [v for _, v in validation]
    if reference:
        values.append(reference[0])
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    y_ticks = nice_ticks(low, high)
    x_ticks = nice_ticks(0, max(last_step, 1))
    left, right, top, bottom = 48, 22, 24, 30
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(step):
        return x0 + left + plot_w * step / x_ticks[-1]

    def y(value):
        return y0 + top + plot_h * (1 - (value - y_ticks[0]) / (y_ticks[-1] - y_ticks[0]))

    parts = [f'<text x="{x0 + left}" y="{y0 + 16}" font-size="13" font-weight="bold" {FONT}>{escape(title)}</text>']
    for tick in y_ticks:
        parts.append(f'<line x1="{x0 + left}" x2="{x0 + width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
                     f'stroke="#e6e6e6"/>')
        parts.append(f'<text x="{x0 + left - 4}" y="{y(tick) + 4:.1f}" font-size="10" text-anchor="end" {FONT}>'
                     f'{label(tick)}</text>')
    for tick in x_ticks:
        parts.append(f'<text x="{x(tick):.1f}" y="{y0 + height - bottom + 14}" font-size="10" text-anchor="middle" '
                     f'{FONT}>{label(tick)}</text>')
    parts.append(f'<rect x="{x0 + left}" y="{y0 + top}" width="{plot_w}" height="{plot_h}" fill="none" '
                 f'stroke="#999"/>')
    if reference:
        level, name = reference
        parts.append(f'<line x1="{x0 + left}" x2="{x0 + width - right}" y1="{y(level):.1f}" y2="{y(level):.1f}" '
                     f'stroke="#555" stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{x0 + left + 4}" y="{y(level) + 12:.1f}" font-size="10" fill="#555" {FONT}>'
                     f'{escape(name)}</text>')
    if train:
        points = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in train)
        parts.append(f'<polyline class="train" points="{points}" fill="none" stroke="{TRAIN_COLOUR}" '
                     f'stroke-width="1.5"/>')
    if validation:
        points = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in validation)
        parts.append(f'<polyline class="validation" points="{points}" fill="none" stroke="{VALIDATION_COLOUR}" '
                     f'stroke-width="1" stroke-dasharray="2 2"/>')
        for s, v in validation:
            parts.append(f'<circle cx="{x(s):.1f}" cy="{y(v):.1f}" r="2.5" fill="{VALIDATION_COLOUR}"/>')
    return parts


def loss_svg(rows, bucket):
    """The loss curves' SVG document."""
    train, validation = rows["train"], rows["validation"]
    last_step = max(list(train) + list(validation) + [1])
    width, height, columns = 360, 220, 3
    logged = [t for t in TERMS if any(t in r for r in list(train.values()) + list(validation.values()))]
    panels = len(logged)
    total_h = 40 + height * math.ceil(panels / columns)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width * columns}" height="{total_h}" '
             f'viewBox="0 0 {width * columns} {total_h}">',
             f'<rect width="100%" height="100%" fill="white"/>',
             f'<text x="10" y="22" font-size="14" {FONT}>Training terms by step: training loss as means over '
             f'{bucket} steps (<tspan fill="{TRAIN_COLOUR}">blue</tspan>), validation loss '
             f'(<tspan fill="{VALIDATION_COLOUR}">red points</tspan>)</text>']
    for index, term in enumerate(logged):
        x0, y0 = width * (index % columns), 40 + height * (index // columns)
        series = bucket_means({s: r[term] for s, r in train.items()}, bucket)
        points = sorted((s, r[term]) for s, r in validation.items())
        parts += panel(x0, y0, width, height, TITLES[term], series, points, last_step, REFERENCES.get(term))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def read_evaluation(path):
    """The evaluation table's rows as dicts."""
    with open(path, encoding="utf-8") as table:
        lines = table.read().splitlines()
    if not lines or not lines[0].startswith("#"):
        raise SystemExit(f"{path}: not an evaluation table (no header)")
    header = [name.lstrip("#") for name in lines[0].split("\t")]
    rows = []
    for number, line in enumerate(lines[1:], 2):
        fields = line.split("\t")
        if len(fields) != len(header):
            raise SystemExit(f"{path}:{number}: expected {len(header)} fields")
        rows.append(dict(zip(header, fields)))
    return rows


def evaluation_svg(rows):
    """The evaluation table's SVG document: per row, bars for the model, the baseline and chance on one 0-1 axis."""
    label_w, bar_w, bar_h, gap = 380, 420, 9, 10
    width = label_w + bar_w + 90
    height = 60 + len(rows) * (3 * bar_h + gap) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}">',
             f'<rect width="100%" height="100%" fill="white"/>',
             f'<text x="10" y="22" font-size="14" {FONT}>Evaluation on the test split: '
             + " ".join(f'<tspan fill="{c}">{n}</tspan>' for n, c in BAR_COLOURS)
             + ' (recall and accuracy in %, ECE as is)</text>']
    y = 44
    for tick in range(0, 11, 2):
        x = label_w + bar_w * tick / 10
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 4}" y2="{height - 30}" stroke="#eee"/>')
        parts.append(f'<text x="{x:.1f}" y="{height - 14}" font-size="10" text-anchor="middle" {FONT}>'
                     f'{tick / 10:g}</text>')
    for row in rows:
        share = row["unit"] == "share"
        name = f'{row["task"]} · {row["scorer"]} · {row["metric"]}'
        block = 3 * bar_h
        parts.append(f'<text x="{label_w - 8}" y="{y + block / 2 + 4:.1f}" font-size="11" text-anchor="end" '
                     f'{FONT}>{escape(name)}</text>')
        for offset, (kind, colour) in enumerate(BAR_COLOURS):
            text = row["model"] if kind == "model" else row["baseline_value"] if kind == "baseline" else row["chance"]
            if not text:
                continue
            value = float(text)
            length = bar_w * min(max(value, 0.0), 1.0)
            top = y + offset * bar_h
            shown = f"{100 * value:.2f}%" if share else f"{value:.3f}"
            parts.append(f'<rect class="{kind}" x="{label_w}" y="{top}" width="{max(length, 0.5):.1f}" '
                         f'height="{bar_h - 1}" fill="{colour}"/>')
            parts.append(f'<text x="{label_w + length + 4:.1f}" y="{top + bar_h - 1.5:.1f}" font-size="9" '
                         f'{FONT}>{shown}</text>')
        y += block + gap
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write(path, text):
    """Writes `text` to `path` atomically."""
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, help="the run directory holding log.tsv")
    parser.add_argument("--evaluation", help="an evaluation.tsv that `uform-train evaluate` wrote")
    parser.add_argument("--out", help="where the SVG files go (default: the run directory)")
    parser.add_argument("--bucket", type=int, default=0,
                        help="training steps per plotted mean (default: about 100 points in all)")
    options = parser.parse_args(argv)
    out = options.out or options.run
    os.makedirs(out, exist_ok=True)
    rows = read_log(os.path.join(options.run, "log.tsv"))
    steps = max(list(rows["train"]) + [1])
    bucket = options.bucket or max(1, steps // 100)
    write(os.path.join(out, "loss.svg"), loss_svg(rows, bucket))
    written = ["loss.svg"]
    if options.evaluation:
        write(os.path.join(out, "evaluation.svg"), evaluation_svg(read_evaluation(options.evaluation)))
        written.append("evaluation.svg")
    print(f"plot_run: wrote {', '.join(written)} into {out} ({len(rows['train'])} training steps, "
          f"{len(rows['validation'])} validations)")


if __name__ == "__main__":
    main(sys.argv[1:])
