#!/usr/bin/env python3
"""UForm's text forward beside PyTorch (F32 and BF16) and ONNX Runtime (F32) on the same checkpoints, inputs and
thread counts, interleaved in one run; prints a table of medians and ratios (ours / the best other). `uform` is the
native class with BF16 weights, `uform-f32` the F32 FMA path, `uform-i8` and `uform-e4m3` the native class with the
trunk quantized at load (their line "against uform" gives their tokens/s over uform's on the small batch).

    /opt/uform-ref/bin/python tools/bench/text_compare.py [--build build/bench] [--cache build/bench] [--rounds 3]

Needs the RAM build's `uform_bench` (`cmake --build <build> --target uform_bench`) and a Python with
tools/bench/requirements.txt. Writes the small checkpoint (tools/checkpoint/write_checkpoint.py) and the ONNX
exports into the cache folder when they are missing. Each framework's measurement runs in a process of its own
(tools/bench/text_worker.py for the Python ones), so each peak RSS is that framework's; every round runs every
framework once per case, in a rotated order. See tools/bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
WORKER = os.path.join(ROOT, "tools", "bench", "text_worker.py")
TINY = os.path.join(ROOT, "tests", "data", "tiny.safetensors")
FRAMEWORKS = ["uform", "uform-f32", "torch-f32", "torch-bf16", "onnx"]
# uform_bench's --classes for each of our frameworks; "uform-i8" and "uform-e4m3" are opt-in.
UFORM_CLASSES = {"uform": "native", "uform-f32": "f32", "uform-i8": "i8", "uform-e4m3": "e4m3"}
# (name, geometry, texts, bytes per text, threads, timed calls: None for --repeats). uform_bench times 20 and 100
# times its --repeats on the two tiny cases, so they get TINY_REPEATS; it runs one query on the small geometry beside
# each small batch (20 times its --repeats), so uform's "small 1x16" comes from the batch's run.
CASES = [
    ("tiny 8x64", "tiny", 8, 64, 1, 200),
    ("tiny 1x16", "tiny", 1, 16, 1, 1000),
    ("small 32x256", "small", 32, 256, 1, None),
    ("small 32x256", "small", 32, 256, 2, None),
    ("small 1x16", "small", 1, 16, 2, 60),
]
TINY_REPEATS = 10
# uform_bench's GEMM: rows, depth, columns.
GEMM_SHAPE = (2048, 512, 2048)
GEMM_LABEL = "GEMM " + "x".join(map(str, GEMM_SHAPE))


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def geometry(path: str) -> dict:
    """The `uform.*` metadata of a checkpoint, from its safetensors header."""
    with open(path, "rb") as file:
        size = int.from_bytes(file.read(8), "little")
        metadata = json.loads(file.read(size))["__metadata__"]
    return {key[len("uform.") :]: value for key, value in metadata.items() if key.startswith("uform.")}


def flops_per_call(meta: dict, texts: int, length: int) -> float:
    """Useful FLOPs of one embedding call, as uform_bench counts them: per token, 2 per parameter of the trunk's
    linears and 4 * length * attention width for q.k^T and softmax.v; per text, the embedding head."""
    depth, hidden, ffn = int(meta["depth"]), int(meta["hidden"]), int(meta["ffn_hidden"])
    attention = int(meta["heads"]) * int(meta["head_dim"])
    parameters = hidden * 3 * attention + attention * hidden + hidden * 2 * ffn + ffn * hidden
    per_token = depth * (2 * parameters + 4 * length * attention)
    return texts * length * per_token + texts * 2 * hidden * int(meta["dimensions"])


def run(command: list, threads: int) -> str:
    """Runs `command` with the OpenMP and MKL pools limited to `threads`; returns its standard output."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    done = subprocess.run(command, check=False, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stderr[-2000:]}")
    return done.stdout


def write_small_checkpoint(path: str):
    """Writes the small geometry's checkpoint to `path` with tools/checkpoint/write_checkpoint.py, unless it exists."""
    if os.path.exists(path):
        return
    print(f"writing {path} (a few minutes)", flush=True)
    script = os.path.join(ROOT, "tools", "checkpoint", "write_checkpoint.py")
    run([sys.executable, script, "--geometry", "small", "--out", path], 1)


def json_lines(text: str) -> list:
    """The JSON objects among the lines of `text`."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


class Comparison:
    """The runs of one comparison and what they measured."""

    def __init__(self, args):
        self.args = args
        self.bench = os.path.join(args.build, "bench", "uform_bench")
        self.small = os.path.join(args.cache, "small.safetensors")
        self.samples = {}  # (framework, case label, threads) -> [{"seconds", "peak_rss_mib", ...}]
        self.ceilings = {}  # threads -> [GFLOP/s]
        self.gemm = {}  # (kernel, threads) -> [GFLOP/s]
        self.gemm_paired = {}  # (kernel, threads) -> [% of a ceiling measured just before each call]
        self.torch_gemm = {}  # threads -> [GFLOP/s of PyTorch's F32 torch.mm on the same shape]
        self.weights_mib = {}  # framework -> packed weights of the small model

    def checkpoint(self, name: str) -> str:
        return TINY if name == "tiny" else self.small

    def onnx_path(self, name: str, texts: int, length: int) -> str:
        return os.path.join(self.args.cache, "onnx", f"{name}_{texts}x{length}.onnx")

    def prepare(self):
        """Writes the small checkpoint and the ONNX exports where they are missing or older than the checkpoint."""
        if not os.path.exists(self.bench):
            sys.exit(f"no {self.bench}: build it with `cmake --build {self.args.build} --target uform_bench`")
        os.makedirs(os.path.join(self.args.cache, "onnx"), exist_ok=True)
        write_small_checkpoint(self.small)
        if "onnx" not in self.args.frameworks:
            return
        for _, name, texts, length, _, _ in CASES:
            path, source = self.onnx_path(name, texts, length), self.checkpoint(name)
            if os.path.exists(path) and os.path.getmtime(path) >= os.path.getmtime(source):
                continue
            print(f"exporting {path}", flush=True)
            command = [sys.executable, WORKER, "export", "--checkpoint", source, "--out", path]
            result = json_lines(run(command + ["--texts", str(texts), "--bytes", str(length)], 2))[-1]
            print(
                f"  embedding cosines against the reference: torch F32 {result['cosine_f32']:.6f}, "
                f"torch BF16 {result['cosine_bf16']:.6f}, ONNX Runtime {result['cosine_onnx']:.6f}",
                flush=True,
            )

    def uform(self, framework: str, parts: str, threads: str, repeats: int) -> list:
        """Runs uform_bench; records its ceilings and returns its records."""
        command = [self.bench, "--json", "--only", parts, "--threads", threads, "--classes", UFORM_CLASSES[framework]]
        command += ["--small", self.small, "--tiny", TINY, "--repeats", str(repeats)]
        records = json_lines(run(command, max(int(count) for count in threads.split(","))))
        for record in records:
            if record["kind"] == "ceiling":
                self.ceilings.setdefault(int(record["threads"]), []).append(record["gflops_cpu"])
        return records

    def measure(self, framework: str, label: str, name: str, texts: int, length: int, threads: int, calls: int):
        """One framework on one case; tiny cases of uform come from one run of the bench."""
        key = (framework, label, threads)
        if framework.startswith("uform"):
            if (name == "tiny" and label != CASES[0][0]) or label == "small 1x16":
                return  # measured with the first tiny case, or with the small batch
            records = self.uform(framework, name, str(threads), TINY_REPEATS if calls else self.args.repeats)
            peak = next(record["peak_mib"] for record in records if record["kind"] == "rss")
            for record in records:
                if record["kind"] == "forward":
                    case = f"{name} {int(record['texts'])}x{int(record['bytes'])}"
                    sample = {"seconds": record["us_per_call"] * 1e-6, "peak_rss_mib": peak}
                    if record.get("over_stream"):  # time / streaming the packed weights once; 0: unmeasured
                        sample["over_stream"] = record["over_stream"]
                    self.samples.setdefault((framework, case, threads), []).append(sample)
                    self.weights_mib[framework] = record["weights_mib"]
            return
        calls = calls or self.args.repeats
        common = ["--texts", str(texts), "--bytes", str(length), "--threads", str(threads), "--repeats", str(calls)]
        if framework == "onnx":
            command = [sys.executable, WORKER, "onnx", "--model", self.onnx_path(name, texts, length)]
        else:
            command = [sys.executable, WORKER, "torch", "--checkpoint", self.checkpoint(name)]
            command += ["--bf16"] if framework == "torch-bf16" else []
        self.samples.setdefault(key, []).append(json_lines(run(command + common, threads))[-1])

    def measure_all(self):
        frameworks = self.args.frameworks
        for round_index in range(self.args.rounds):
            print(f"round {round_index + 1} of {self.args.rounds}, load {load_average()}", flush=True)
            for label, name, texts, length, threads, calls in CASES:
                shift = round_index % len(frameworks)
                for framework in frameworks[shift:] + frameworks[:shift]:
                    self.measure(framework, label, name, texts, length, threads, calls)
            if any(framework.startswith("uform") for framework in frameworks):
                for record in self.uform("uform", "gemm", "1,2", 3 * self.args.repeats):
                    key = (record.get("kernel"), int(record.get("threads", 0)))
                    if record["kind"] == "gemm":
                        self.gemm.setdefault(key, []).append(record["gflops_wall"])
                    elif record["kind"] == "gemm_paired":
                        self.gemm_paired.setdefault(key, []).append(record["percent_ceiling"])
            if "torch-f32" in frameworks:
                for threads in (1, 2):
                    command = [sys.executable, WORKER, "gemm", "--shape", "x".join(map(str, GEMM_SHAPE))]
                    command += ["--threads", str(threads), "--repeats", str(3 * self.args.repeats)]
                    seconds = json_lines(run(command, threads))[-1]["seconds"]
                    self.torch_gemm.setdefault(threads, []).append(2 * math.prod(GEMM_SHAPE) / seconds * 1e-9)

    def median(self, framework: str, label: str, threads: int, field: str = "seconds"):
        """The median of `field` over the rounds, None where nothing was measured."""
        samples = [sample[field] for sample in self.samples.get((framework, label, threads), []) if field in sample]
        return statistics.median(samples) if samples else None

    def report(self):
        frameworks, width = self.args.frameworks, 13
        ceiling = {threads: statistics.median(values) for threads, values in self.ceilings.items()}
        ours = {}  # what the targets need: (measure, case label, threads) -> {framework: value}
        print(f"\nmedians of {self.args.rounds} rounds; ratio = uform against the best other, higher is better")
        print(f"{'':36}" + "".join(f"{name:>{width}}" for name in frameworks) + f"{'ratio':>{width}}")

        def row(title, values, higher_is_better=True, digits=0):
            cells = "".join(f"{'-' if v is None else f'{v:,.{digits}f}':>{width}}" for v in values.values())
            mine, others = values.get("uform"), [v for f, v in values.items() if not f.startswith("uform") and v]
            ratio = ""
            if mine and others:
                ratio = f"{mine / max(others) if higher_is_better else min(others) / mine:.2f}x"
            print(f"{title:36}{cells}{ratio:>{width}}")

        for label, name, texts, length, threads, _ in CASES:
            seconds = {f: self.median(f, label, threads) for f in frameworks}
            title = f"{label}, {threads} thread{'s' if threads > 1 else ''}"
            if texts == 1:
                ours[("us", label, threads)] = values = {f: s and s * 1e6 for f, s in seconds.items()}
                row(f"{title}, us/call", values, False, 1)
                values = {f: self.median(f, label, threads, "over_stream") for f in frameworks}
                if any(values.values()):
                    row("  / streaming the weights once", values, False, 2)
            elif name == "tiny":
                ours[("calls", label, threads)] = values = {f: s and 1 / s for f, s in seconds.items()}
                row(f"{title}, calls/s", values)
            else:
                ours[("tokens", label, threads)] = values = {f: s and texts * length / s for f, s in seconds.items()}
                row(f"{title}, tokens/s", values)
                flops = flops_per_call(geometry(self.small), texts, length)
                ours[("percent", label, threads)] = values = {
                    f: s and 100 * flops / s * 1e-9 / ceiling[threads] for f, s in seconds.items()
                }
                row(f"  % of the F32 ceiling, {ceiling[threads]:.0f} GFLOP/s", values, digits=1)
                ours[("rss", label, threads)] = values = {
                    f: self.median(f, label, threads, "peak_rss_mib") for f in frameworks
                }
                row("  peak RSS, MiB", values, False)
                values = {f: self.median(f, label, threads, "rss_after_import_mib") for f in frameworks}
                row("  RSS after the imports, MiB", values, False)
        print()
        for threads, value in sorted(ceiling.items()):
            print(f"F32 FMA ceiling, {threads} thread(s): {value:.1f} GFLOP/s (FMA loop, CPU time)")
        gemm = {key: statistics.median(values) for key, values in sorted(self.gemm.items())}
        for (kernel, threads), gflops in gemm.items():
            print(
                f"{GEMM_LABEL}, {kernel}, {threads} thread(s): {gflops:.1f} GFLOP/s, "
                f"{100 * gflops / ceiling[threads]:.1f}% of the F32 ceiling"
            )
        for threads, values in sorted(self.torch_gemm.items()):
            gflops = statistics.median(values)
            print(
                f"{GEMM_LABEL}, PyTorch F32 torch.mm, {threads} thread(s): {gflops:.1f} GFLOP/s, "
                f"{100 * gflops / ceiling[threads]:.1f}% of the F32 ceiling"
            )
        paired = {key: statistics.median(values) for key, values in sorted(self.gemm_paired.items())}
        for (kernel, threads), percent in paired.items():
            print(
                f"{GEMM_LABEL}, {kernel}, {threads} thread(s): {percent:.1f}% of a ceiling measured just before "
                "each call (median)"
            )
        for framework, mib in self.weights_mib.items():
            print(f"{framework}: packed weights of the small model {mib:.1f} MiB")
        for framework in ("uform-i8", "uform-e4m3"):
            values = ours.get(("tokens", "small 32x256", 2), {})
            if values.get(framework) and values.get("uform"):
                print(f"{framework} against uform, small 32x256, 2 threads: {values[framework] / values['uform']:.2f}x tokens/s")
        self.targets(ours, gemm, paired, ceiling)

    def targets(self, ours: dict, gemm: dict, paired: dict, ceiling: dict):
        """Prints each of the text forward's targets with what was measured and whether it is met."""
        if "uform" not in self.args.frameworks:
            return
        small, tiny = CASES[2][0], CASES[0][0]
        others = [v for f, v in ours[("tokens", small, 2)].items() if not f.startswith("uform") and v]
        checks = [("small, 2 threads: >= 75% of the F32 ceiling", ours[("percent", small, 2)]["uform"], 75, "%")]
        if others:
            ratio = ours[("tokens", small, 2)]["uform"] / max(others)
            checks.insert(0, ("small, 2 threads: >= 1.3x the best other", ratio, 1.3, "x"))
        for threads in (1, 2):
            title = f"GEMM alone, F32, {threads} thread{'s' if threads > 1 else ''}: >= 85% of the ceiling"
            checks.append((f"{title} (the run's)", 100 * gemm[("f32_fma", threads)] / ceiling[threads], 85, "%"))
            if ("f32_fma", threads) in paired:
                checks.append((f"{title} (paired)", paired[("f32_fma", threads)], 85, "%"))
        if ours[("calls", tiny, 1)].get("onnx"):
            ratio = ours[("calls", tiny, 1)]["uform"] / ours[("calls", tiny, 1)]["onnx"]
            checks.append(("tiny 8x64, 1 thread: >= 2x ONNX Runtime's calls/s", ratio, 2, "x"))
        print("\ntargets")
        for title, value, bound, unit in checks:
            print(f"  {title}: {value:.2f}{unit}, {'met' if value >= bound else 'NOT met'}")
        latency = ours[("us", CASES[1][0], 1)]["uform"]
        print(f"  tiny 1x16, 1 thread: <= 100 us per call: {latency:.1f} us, {'met' if latency <= 100 else 'NOT met'}")
        limit = self.weights_mib["uform"] + 96
        peak = ours[("rss", small, 2)]["uform"]
        print(
            f"  small peak RSS <= packed weights + 96 MiB ({limit:.0f}): {peak:.0f} MiB, "
            f"{'met' if peak <= limit else 'NOT met'}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "bench"), help="the RAM build folder")
    parser.add_argument("--cache", default=os.path.join(ROOT, "build", "bench"), help="checkpoints and ONNX files")
    parser.add_argument("--rounds", type=int, default=3, help="runs of every framework on every case")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls of a small case (tiny: 40x and 200x)")
    known = FRAMEWORKS + ["uform-i8", "uform-e4m3"]
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="a subset of " + ",".join(known))
    args = parser.parse_args()
    args.frameworks = args.frameworks.split(",")
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
