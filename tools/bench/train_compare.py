#!/usr/bin/env python3
"""UForm's training step beside PyTorch's (eager F32 and BF16 autocast) on the same checkpoint, texts, bags and
thread count, interleaved in one run; prints tokens per second, peak RSS and the ratios against PyTorch.

    /opt/uform-ref/bin/python tools/bench/train_compare.py [--build build/bench] [--cache build/bench] [--rounds 2]

Needs the RAM build's `uform_train_bench` (`cmake --build <build> --target uform_train_bench`) unless
`--frameworks` leaves `uform` out, and a Python with tools/bench/requirements.txt. Writes the small checkpoint
(tools/checkpoint/write_checkpoint.py) into the cache folder when it is missing, and first checks PyTorch's step
against tools/reference/train_model.py (`train_worker.py check`). Each measurement runs in a process of its own
(tools/bench/train_worker.py for PyTorch), so each peak RSS is that framework's; every round runs every framework
once, in a rotated order. See tools/bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

from compare import ROOT, json_lines, load_average, run, write_small_checkpoint

WORKER = os.path.join(ROOT, "tools", "bench", "train_worker.py")
FRAMEWORKS = ["uform", "torch-f32", "torch-bf16"]
# The trainer's targets: tokens/s at least SPEED times the best PyTorch's, peak RSS at most MEMORY times PyTorch's.
SPEED, MEMORY = 2.0, 0.5
# How far PyTorch's F32 step may depart from the reference's unrounded one (loss and gradients, relative), which
# agree to about 2e-6.
CHECK_BOUND = 1e-4


class Comparison:
    """The runs of one comparison and what they measured."""

    def __init__(self, args):
        self.args = args
        self.bench = os.path.join(args.build, "bench", "uform_train_bench")
        self.small = os.path.join(args.cache, "small.safetensors")
        # framework -> [{"seconds", "cpu_seconds", "peak_rss_mib", "step_peak_rss_mib", "loss_first", ...}]
        self.samples = {}

    def prepare(self):
        """Writes the small checkpoint where it is missing and checks PyTorch's step against the reference."""
        if "uform" in self.args.frameworks and not os.path.exists(self.bench):
            sys.exit(f"no {self.bench}: build it with `cmake --build {self.args.build} --target uform_train_bench`")
        os.makedirs(self.args.cache, exist_ok=True)
        write_small_checkpoint(self.small)
        command = [sys.executable, WORKER, "check", "--checkpoint", self.small, "--texts", "4", "--bytes", "32"]
        check = json_lines(run(command, self.args.threads))[-1]
        print(
            f"PyTorch's F32 step against tools/reference/train_model.py (4 texts x 32 bytes, no BF16 rounding): loss "
            f"{check['loss']:.7f} against {check['loss_reference']:.7f}, gradients within "
            f"{check['gradient_relative']:.1e} and updated weights within {check['weights_relative']:.1e} of each "
            "tensor's largest magnitude",
            flush=True,
        )
        loss_error = abs(check["loss"] - check["loss_reference"]) / abs(check["loss_reference"])
        if loss_error > CHECK_BOUND or check["gradient_relative"] > CHECK_BOUND:
            sys.exit(f"PyTorch's step departs from the reference by more than {CHECK_BOUND}: it would time other maths")

    def measure(self, framework: str):
        """One framework's steps in a process of its own."""
        args = self.args
        shape = ["--texts", str(args.texts), "--bytes", str(args.bytes), "--threads", str(args.threads)]
        shape += ["--steps", str(args.steps)]
        if framework == "uform":
            records = json_lines(run([self.bench, "--json", "--model", self.small] + shape, args.threads))
            train = next(record for record in records if record["kind"] == "train")
            rss = next(record for record in records if record["kind"] == "rss")
            ceiling = next(record for record in records if record["kind"] == "ceiling")
            sample = {
                "ceiling_gflops": ceiling["gflops_per_s"],
                "ceiling_path": ceiling["path"],
                "product_flops": train["product_flops"],
                "percent_ceiling_cpu": train["percent_ceiling_cpu"],
                "seconds": train["seconds_per_step"],
                "cpu_seconds": train["cpu_seconds_per_step"],
                "loss_first": train["loss_first"],
                "loss_last": train["loss_last"],
                "peak_rss_mib": rss["peak_mib"],
                "step_peak_rss_mib": rss["step_peak_mib"],
            }
        else:
            command = [sys.executable, WORKER, "step", "--checkpoint", self.small] + shape
            sample = json_lines(run(command + (["--bf16"] if framework == "torch-bf16" else []), args.threads))[-1]
        self.samples.setdefault(framework, []).append(sample)

    def measure_all(self):
        frameworks = self.args.frameworks
        for round_index in range(self.args.rounds):
            print(f"round {round_index + 1} of {self.args.rounds}, load {load_average()}", flush=True)
            shift = round_index % len(frameworks)
            for framework in frameworks[shift:] + frameworks[:shift]:
                self.measure(framework)

    def median(self, framework: str, field: str):
        """The median of `field` over the rounds, None where nothing was measured."""
        samples = [sample[field] for sample in self.samples.get(framework, []) if sample.get(field) is not None]
        return statistics.median(samples) if samples else None

    def report(self):
        args, frameworks, width = self.args, self.args.frameworks, 13
        tokens = args.texts * args.bytes
        print(
            f"\none training step, {args.texts} texts x {args.bytes} bytes, bags of two, InfoNCE, AdamW, "
            f"{args.threads} thread(s); medians of {args.rounds} rounds of {args.steps} steps"
        )
        print(f"{'':30}" + "".join(f"{name:>{width}}" for name in frameworks) + f"{'ratio':>{width}}")
        values = {}

        def row(title, key, cells, higher_is_better, digits=0):
            """One row; the ratio is uform's against PyTorch's best (speed) or smallest (memory), none for None."""
            values[key] = cells
            text = "".join(f"{'-' if v is None else f'{v:,.{digits}f}':>{width}}" for v in cells.values())
            mine, others = cells.get("uform"), [v for f, v in cells.items() if f != "uform" and v]
            ratio = ""
            if mine and others and higher_is_better is not None:
                ratio = f"{mine / max(others) if higher_is_better else mine / min(others):.2f}x"
            print(f"{title:30}{text}{ratio:>{width}}")

        seconds = {f: self.median(f, "seconds") for f in frameworks}
        row("tokens/s", "tokens", {f: s and tokens / s for f, s in seconds.items()}, True)
        row("seconds per step", "seconds", seconds, False, 2)
        row("  CPU seconds per step", "cpu", {f: self.median(f, "cpu_seconds") for f in frameworks}, False, 2)
        row("peak RSS, MiB", "rss", {f: self.median(f, "peak_rss_mib") for f in frameworks}, False)
        step_rss = {f: self.median(f, "step_peak_rss_mib") for f in frameworks}
        row("  from the first step, MiB", "step_rss", step_rss, False)
        row("loss of the warm-up step", "loss", {f: self.median(f, "loss_first") for f in frameworks}, None, 4)
        for framework in frameworks:
            steps = [f"{tokens / sample['seconds']:,.0f}" for sample in self.samples.get(framework, [])]
            print(f"  {framework} tokens/s by round: {', '.join(steps)}")
        self.targets(values)

    def targets(self, values: dict):
        """Prints the trainer's two targets with what was measured and whether each is met."""
        speed, rss = values["tokens"], values["rss"]
        others = [f for f in self.args.frameworks if f != "uform" and speed.get(f)]
        if not speed.get("uform") or not others:
            return
        best = max(others, key=lambda f: speed[f])
        smallest = min(others, key=lambda f: rss[f])
        ratio, share = speed["uform"] / speed[best], rss["uform"] / rss[smallest]
        print("\ntargets")
        print(
            f"  tokens/s >= {SPEED}x the best PyTorch's ({best}): {ratio:.2f}x, "
            f"{'met' if ratio >= SPEED else 'NOT met'}"
        )
        print(
            f"  peak RSS <= {MEMORY}x PyTorch's smallest ({smallest}): {share:.2f}x, "
            f"{'met' if share <= MEMORY else 'NOT met'}"
        )
        ceiling, flops = self.median("uform", "ceiling_gflops"), self.median("uform", "product_flops")
        path = next((sample["ceiling_path"] for sample in self.samples.get("uform", [])), "")
        if ceiling and flops:
            wanted = self.median(best, "seconds") / SPEED
            print(
                f"  the step's products: {flops * 1e-12:.2f} TFLOP; the machine's ceiling on {path}, "
                f"{self.args.threads} thread(s): {ceiling:,.0f} GFLOP/s, so the products alone take >= {flops / (ceiling * 1e9):.2f} s "
                f"against the {wanted:.2f} s a step at {SPEED}x {best} allows; uform's products ran at "
                f"{self.median('uform', 'percent_ceiling_cpu'):.0f}% of the ceiling over its CPU time"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "bench"), help="the RAM build folder")
    parser.add_argument("--cache", default=os.path.join(ROOT, "build", "bench"), help="where the small checkpoint is")
    parser.add_argument("--rounds", type=int, default=2, help="runs of every framework")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per run, after one warm-up step")
    parser.add_argument("--texts", type=int, default=32, help="texts per step, an even count")
    parser.add_argument("--bytes", type=int, default=256, help="bytes per text")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="a subset of " + ",".join(FRAMEWORKS))
    args = parser.parse_args()
    args.frameworks = args.frameworks.split(",")
    if not set(args.frameworks) <= set(FRAMEWORKS):
        parser.error(f"--frameworks takes a subset of {','.join(FRAMEWORKS)}")
    comparison = Comparison(args)
    comparison.prepare()
    start = time.time()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {load_average()}", flush=True)
    comparison.measure_all()
    comparison.report()
    print(f"{time.time() - start:.0f} s; load at the end {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
