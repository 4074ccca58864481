#!/usr/bin/env python3
"""UForm's file verbs beside a PyTorch pipeline on the same small checkpoint, files and thread counts, decode
included, interleaved in one run; prints a table of medians and ratios (uform / PyTorch).

    /opt/uform-ref/bin/python tools/bench/media_compare.py [--build build/bench] [--cache build/bench] [--rounds 3]

Needs the RAM build's `uform_media_bench` (`cmake --build <build> --target uform_media_bench`), a Python with
tools/bench/requirements.txt and the `ffmpeg` command (for the MP3 files). Writes into the cache folder, when they
are missing, the small checkpoint and the inputs, in `media/`: 640 x 480 JPEG files of quality 90 with
photograph-like structure, and 10 s recordings at 44.1 kHz in stereo, as 16-bit WAV and as 192 kbit/s MP3, all
deterministic. Every round runs both frameworks on every case and thread count, in a rotated order, each in a
process of its own (tools/bench/media_worker.py for PyTorch). See tools/bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
import wave

import numpy as np
from compare import ROOT, json_lines, load_average, run, write_small_checkpoint
from PIL import Image

WORKER = os.path.join(ROOT, "tools", "bench", "media_worker.py")
FRAMEWORKS = ["uform", "torch"]
CASES = ["images", "wav", "mp3"]
WIDTH, HEIGHT, QUALITY = 640, 480, 90
RATE, CHANNELS, CLIP_SECONDS, MP3_BITRATE = 44100, 2, 10, "192k"


def smooth_field(rng: np.random.Generator, channels: int) -> np.ndarray:
    """A [HEIGHT, WIDTH, channels] field of values about 0..1 with texture at every scale, as photographs have: random
    grids of 3 x 4 up to 192 x 256 cells, each bicubically enlarged to the full size and weighted by the square root
    of its cell size, plus a grain of one pixel."""
    field = np.zeros((HEIGHT, WIDTH, channels), np.float32)
    for octave in range(7):
        rows, columns = 3 << octave, 4 << octave
        for channel in range(channels):
            cells = Image.fromarray(rng.standard_normal((rows, columns)).astype(np.float32), mode="F")
            field[:, :, channel] += np.asarray(cells.resize((WIDTH, HEIGHT), Image.BICUBIC)) * 2 ** (-octave / 2)
    field += 0.1 * rng.standard_normal(field.shape).astype(np.float32)
    return 0.5 + 0.12 * field


def write_image(path: str, seed: int):
    """A deterministic 640 x 480 JPEG: a shared luminance field tinted by weaker per-channel ones, lit by a gradient
    and crossed by a few hard-edged discs (edges and flat areas, as objects give)."""
    rng = np.random.default_rng(seed)
    pixels = smooth_field(rng, 1) + 0.4 * (smooth_field(rng, 3) - 0.5)
    rows, columns = np.mgrid[0:HEIGHT, 0:WIDTH]
    pixels *= (0.7 + 0.5 * columns / WIDTH)[:, :, None]
    for _ in range(6):
        y, x, radius = rng.uniform(0, HEIGHT), rng.uniform(0, WIDTH), rng.uniform(20, 120)
        disc = (rows - y) ** 2 + (columns - x) ** 2 < radius**2
        pixels[disc] = 0.5 * pixels[disc] + 0.5 * rng.uniform(0, 1, 3)
    rgb = np.clip(np.rint(pixels * 255), 0, 255).astype(np.uint8)
    Image.fromarray(rgb, mode="RGB").save(path, quality=QUALITY)


def write_wav(path: str, seed: int):
    """A deterministic 10 s stereo recording at 44.1 kHz, 16-bit: notes of a few harmonics with vibrato and decay,
    over a quiet noise floor, panned apart."""
    rng = np.random.default_rng(seed)
    t = np.arange(RATE * CLIP_SECONDS) / RATE
    left, right = (0.01 * rng.standard_normal(t.size) for _ in range(CHANNELS))
    for start in np.arange(0, CLIP_SECONDS, 0.5):
        pitch, pan = 110 * 2 ** rng.uniform(0, 3), rng.uniform(0.2, 0.8)
        local = t - start
        envelope = np.where(local >= 0, np.exp(-3 * np.maximum(local, 0)), 0.0)
        phase = 2 * np.pi * pitch * t + 0.3 * np.sin(2 * np.pi * 5 * t)
        note = envelope * sum(np.sin(k * phase) / k for k in range(1, 5))
        left, right = left + 0.15 * (1 - pan) * note, right + 0.15 * pan * note
    samples = np.clip(np.rint(np.stack([left, right], axis=1) * 32767), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as file:
        file.setnchannels(CHANNELS)
        file.setsampwidth(2)
        file.setframerate(RATE)
        file.writeframes(samples.tobytes())


def write_inputs(folder: str, images: int, clips: int):
    """Writes the missing inputs of the benchmark into `folder`."""
    os.makedirs(folder, exist_ok=True)
    for i in range(images):
        path = os.path.join(folder, f"image_{i:02d}.jpg")
        if not os.path.exists(path):
            write_image(path, 1000 + i)
    for i in range(clips):
        wav, mp3 = (os.path.join(folder, f"clip_{i:02d}.{extension}") for extension in ("wav", "mp3"))
        if not os.path.exists(wav):
            write_wav(wav, 2000 + i)
        if not os.path.exists(mp3):
            command = ["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", wav, "-map_metadata", "-1"]
            command += ["-fflags", "+bitexact", "-flags:a", "+bitexact", "-c:a", "libmp3lame", "-b:a", MP3_BITRATE, mp3]
            subprocess.run(command, check=True)


class Comparison:
    """The runs of one comparison and what they measured."""

    def __init__(self, args):
        self.args = args
        self.bench = os.path.join(args.build, "bench", "uform_media_bench")
        self.small = os.path.join(args.cache, "small.safetensors")
        self.media = os.path.join(args.cache, "media")
        self.samples = {}  # (framework, case, threads) -> [{"seconds", "audio_seconds", "peak_rss_mib", ...}]

    def embeddings_path(self, framework: str, case: str) -> str:
        """Where a framework's embeddings of `case` go, as `uform_media_bench --embeddings` names them."""
        return os.path.join(self.media, "embeddings", framework, f"{case}.f32")

    def embeddings(self, framework: str, case: str, rows: int) -> np.ndarray:
        """The embeddings a framework wrote for `case`, one row per item."""
        return np.fromfile(self.embeddings_path(framework, case), np.float32).reshape(rows, -1)

    def prepare(self):
        """Writes the checkpoint and the inputs where they are missing, and the folders of the embeddings."""
        if not os.path.exists(self.bench):
            sys.exit(f"no {self.bench}: build it with `cmake --build {self.args.build} --target uform_media_bench`")
        write_small_checkpoint(self.small)
        write_inputs(self.media, self.args.images, self.args.clips)
        for framework in FRAMEWORKS:
            os.makedirs(os.path.join(self.media, "embeddings", framework), exist_ok=True)

    def measure(self, framework: str, case: str, threads: int, keep: bool):
        """One framework on one case; `keep` writes its embeddings for the agreement check."""
        common = ["--images", str(self.args.images), "--clips", str(self.args.clips)]
        common += ["--threads", str(threads), "--repeats", str(self.args.repeats)]
        if framework == "uform":
            command = [self.bench, "--json", "--model", self.small, "--media", self.media, "--only", case] + common
            command += ["--embeddings", os.path.dirname(self.embeddings_path("uform", case))] if keep else []
            records = json_lines(run(command, threads))
            record = next(record for record in records if record["kind"] == "media")
            peak = next(record["peak_mib"] for record in records if record["kind"] == "rss")
            sample = {"seconds": record["seconds_per_call"], "peak_rss_mib": peak}
            sample.update(tokens=record["tokens"], audio_seconds=record.get("audio_seconds", 0.0))
        else:
            command = [sys.executable, WORKER, "--checkpoint", self.small, "--media", self.media, "--case", case]
            command += common + (["--embeddings", self.embeddings_path("torch", case)] if keep else [])
            sample = json_lines(run(command, threads))[-1]
        self.samples.setdefault((framework, case, threads), []).append(sample)

    def measure_all(self):
        """Every round: every case and thread count, both frameworks in an order rotated by the round."""
        for round_index in range(self.args.rounds):
            print(f"round {round_index + 1} of {self.args.rounds}, load {load_average()}", flush=True)
            shift = round_index % len(FRAMEWORKS)
            for case in CASES:
                for threads in self.args.threads:
                    for framework in FRAMEWORKS[shift:] + FRAMEWORKS[:shift]:
                        keep = round_index == 0 and threads == self.args.threads[0]
                        self.measure(framework, case, threads, keep)

    def median(self, framework: str, case: str, threads: int, field: str = "seconds"):
        """The median of `field` over the rounds, None where nothing was measured."""
        samples = [sample[field] for sample in self.samples.get((framework, case, threads), [])]
        return statistics.median(samples) if samples else None

    def report(self):
        """Prints the table of medians and ratios, then each case's tokens and the cosines of its embeddings."""
        width = 13
        print(f"\nmedians of {self.args.rounds} rounds; ratio = uform / PyTorch, higher is better")
        print(f"{'':52}" + "".join(f"{name:>{width}}" for name in FRAMEWORKS) + f"{'ratio':>{width}}")

        def row(title, values, higher_is_better=True, digits=1):
            cells = "".join(f"{v:>{width},.{digits}f}" for v in values)
            ours, theirs = values
            ratio = ours / theirs if higher_is_better else theirs / ours
            print(f"{title:52}{cells}{f'{ratio:.2f}x':>{width}}")

        for case in CASES:
            what = (
                f"{self.args.images} JPEG {WIDTH}x{HEIGHT}"
                if case == "images"
                else f"{self.args.clips} {case.upper()} x {CLIP_SECONDS} s"
            )
            for threads in self.args.threads:
                title = f"{what}, {threads} thread{'s' if threads > 1 else ''}"
                seconds = [self.median(framework, case, threads) for framework in FRAMEWORKS]
                if case == "images":
                    row(f"{title}, images/s", [self.args.images / s for s in seconds])
                else:
                    row(f"{title}, audio s/s", [self.args.clips * CLIP_SECONDS / s for s in seconds])
                peaks = [self.median(framework, case, threads, "peak_rss_mib") for framework in FRAMEWORKS]
                row("  peak RSS, MiB", peaks, False, 0)
        print()
        for case in CASES:
            rows = self.args.images if case == "images" else self.args.clips
            ours, theirs = (self.embeddings(framework, case, rows) for framework in FRAMEWORKS)
            cosines = (ours * theirs).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
            calls = [self.samples[(framework, case, self.args.threads[0])][0] for framework in FRAMEWORKS]
            decoded = ", ".join(
                f"{framework} {call['tokens']:.0f} tokens"
                + ("" if case == "images" else f", {call['audio_seconds']:.3f} s")
                for framework, call in zip(FRAMEWORKS, calls)
            )
            print(f"{case}: per call {decoded}; embedding cosines {cosines.min():.5f} to {cosines.max():.5f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "bench"), help="the RAM build folder")
    parser.add_argument("--cache", default=os.path.join(ROOT, "build", "bench"), help="the checkpoint and the inputs")
    parser.add_argument("--rounds", type=int, default=3, help="runs of every case; 0 only writes the inputs")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per run, after one warm-up call")
    parser.add_argument("--threads", default="1,2", help="thread counts, each run by every framework")
    parser.add_argument("--images", type=int, default=16, help="JPEG files in the image batch")
    parser.add_argument("--clips", type=int, default=8, help="recordings in each audio batch")
    args = parser.parse_args()
    args.threads = [int(count) for count in args.threads.split(",")]
    comparison = Comparison(args)
    comparison.prepare()
    if not args.rounds:
        return 0
    start = time.time()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {load_average()}", flush=True)
    comparison.measure_all()
    comparison.report()
    print(f"{time.time() - start:.0f} s; load at the end {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
