#!/usr/bin/env python3
"""Writes the small media files of `tests/data/media/` once, with the `ffmpeg` command-line tool.

    python3 tools/reference/make_media.py            # write the files (refuses to overwrite)
    python3 tools/reference/make_media.py --force    # write them again

The pictures and the tone are computed here from closed formulas (no random streams) and piped raw into
`ffmpeg` with every bit-exact switch it has (`-bitexact`, `-flags +bitexact`, one thread, no metadata),
so a rerun with the same FFmpeg and encoder libraries gives the same bytes. Other encoder versions give
other bytes: the files are generated once and checked in, and the goldens are made from the checked-in
files (`make_goldens.py` decodes them), never from this script's arrays.

    python3 tools/reference/make_media.py --only video-sampling   # one folder alone

It also writes the clips of `tests/data/video-sampling/`, whose frame `i` is a solid gray of level `8 * i`
(coded losslessly or nearly), so a test recovers which frame was taken from its pixels alone.

Needs numpy and an `ffmpeg` with libx264, libvpx, libwebp, libmp3lame and libopus (Debian 12's 5.1 has
them all). The files and why each one is there are listed in `tools/reference/README.md`.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "media")
SAMPLING_OUT = os.path.join(ROOT, "tests", "data", "video-sampling")

# Switches that keep encoder and muxer version strings and timestamps out of the files.
BITEXACT = ["-threads", "1", "-map_metadata", "-1", "-fflags", "+bitexact", "-flags:v", "+bitexact",
            "-flags:a", "+bitexact"]

VIDEO_SIZE = (48, 64)  # height, width: even, as 4:2:0 needs
VIDEO_FPS = 3  # frames at 0, 1/3, 2/3 ... s: no frame lands exactly on a sampling time (k + 0.5) s
VIDEO_SECONDS = 2
TONE_SECONDS = 0.5
SAMPLING_SIZE = (24, 32)  # height, width of the frame-numbered clips
SAMPLING_FRAMES = 30
SAMPLING_LEVEL = 8  # frame i is a solid gray of level 8 * i: 0 .. 232


def picture(height: int, width: int, phase: float) -> np.ndarray:
    """An RGB float picture in [0, 255]: two gradients, a soft disc and a diagonal band, so that resizing
    and lossy coding have structure to keep rather than noise to lose."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    u, v = x / max(width - 1, 1), y / max(height - 1, 1)
    r = 40 + 180 * u
    g = 30 + 200 * v
    b = 128 + 100 * np.sin(2 * math.pi * (u + v + phase))
    cx, cy = width * (0.3 + 0.4 * phase), height * 0.5
    disc = np.clip(1.5 - np.hypot(x - cx, y - cy) / (0.22 * min(height, width)), 0, 1)
    band = (np.abs((x - y * width / height) / width - 0.1 - phase) < 0.08).astype(np.float64)
    rgb = np.stack([r + 70 * disc - 60 * band, g - 90 * disc + 50 * band, b + 40 * disc], axis=2)
    return np.clip(rgb, 0, 255)


def u8(a: np.ndarray) -> np.ndarray:
    return np.round(a).astype(np.uint8)


def tone(rate: int, seconds: float) -> np.ndarray:
    """The stereo tone every audio file carries, float [n, 2] in [-1, 1]: 440 Hz in both channels with
    different amplitudes and phases, and a different overtone per channel, so averaging the channels
    matters."""
    t = np.arange(int(round(rate * seconds)), dtype=np.float64) / rate
    left = 0.40 * np.sin(2 * math.pi * 440 * t) + 0.15 * np.sin(2 * math.pi * 1320 * t)
    right = 0.30 * np.sin(2 * math.pi * 440 * t + 1.0) + 0.10 * np.sin(2 * math.pi * 660 * t)
    return np.stack([left, right], axis=1)


def s16(a: np.ndarray) -> np.ndarray:
    return np.clip(np.round(a * 32767), -32768, 32767).astype("<i2")


def ffmpeg(inputs: list, raw: bytes, output: list, path: str) -> None:
    """Runs `ffmpeg` with raw bytes on its standard input and writes `path`."""
    cmd = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", *inputs, "-i", "-", *BITEXACT, *output, path]
    subprocess.run(cmd, input=raw, check=True)


def raw_video(pix_fmt: str, height: int, width: int, rate: int = 1) -> list:
    return ["-f", "rawvideo", "-pix_fmt", pix_fmt, "-s", f"{width}x{height}", "-r", str(rate)]


def raw_audio(rate: int, channels: int) -> list:
    return ["-f", "s16le", "-ar", str(rate), "-ac", str(channels)]


def make(folder: str) -> list:
    """Writes every file into `folder`; answers [(name, what it exercises)]."""
    made = []

    # A non-square RGB JPEG whose sides are not multiples of the 8-pixel patch: 45x77 -> a 6x10 grid.
    img = u8(picture(45, 77, 0.0))
    ffmpeg(raw_video("rgb24", 45, 77), img.tobytes(), ["-frames:v", "1", "-c:v", "mjpeg", "-q:v", "3",
                                                        "-pix_fmt", "yuvj420p"], os.path.join(folder, "photo.jpg"))
    made.append(("photo.jpg", "RGB JPEG 77x45 (4:2:0), sides not multiples of the patch"))

    # A grayscale PNG, 33x50: one channel replicated to three.
    gray = u8(picture(33, 50, 0.25).mean(axis=2))
    ffmpeg(raw_video("gray", 33, 50), gray.tobytes(), ["-frames:v", "1", "-c:v", "png", "-pix_fmt", "gray"],
           os.path.join(folder, "gray.png"))
    made.append(("gray.png", "grayscale PNG 50x33"))

    # An RGBA WebP, 30x46, lossless (exact pixels on every decoder), alpha from 16 to 255: alpha dropped.
    rgb = u8(picture(30, 46, 0.5))
    alpha = u8(16 + 239 * np.linspace(0, 1, 46)[None, :].repeat(30, axis=0))
    rgba = np.concatenate([rgb, alpha[:, :, None]], axis=2)
    ffmpeg(raw_video("rgba", 30, 46), rgba.tobytes(), ["-frames:v", "1", "-c:v", "libwebp", "-lossless", "1",
                                                        "-pix_fmt", "bgra"],
           os.path.join(folder, "rgba.webp"))
    made.append(("rgba.webp", "lossless RGBA WebP 46x30"))

    # Two-second clips at 3 fps, 64x48, the disc and band moving: H.264 in MP4, VP8 in WebM.
    h, w = VIDEO_SIZE
    frames = np.stack([u8(picture(h, w, k / (VIDEO_FPS * VIDEO_SECONDS))) for k in range(VIDEO_FPS * VIDEO_SECONDS)])
    common = raw_video("rgb24", h, w, VIDEO_FPS)
    ffmpeg(common, frames.tobytes(), ["-c:v", "libx264", "-preset", "medium", "-crf", "20", "-bf", "0",
                                      "-pix_fmt", "yuv420p", "-x264-params", "threads=1:sliced-threads=0",
                                      "-movflags", "+faststart"], os.path.join(folder, "clip.mp4"))
    made.append(("clip.mp4", "H.264 (4:2:0) in MP4, 64x48, 3 fps, 2 s"))
    ffmpeg(common, frames.tobytes(), ["-c:v", "libvpx", "-b:v", "0", "-crf", "12", "-deadline", "good",
                                      "-cpu-used", "1", "-auto-alt-ref", "0", "-pix_fmt", "yuv420p"],
           os.path.join(folder, "clip.webm"))
    made.append(("clip.webm", "VP8 (4:2:0) in WebM, 64x48, 3 fps, 2 s"))

    # The same tone in four containers, half a second each; small rates where the format allows, so the
    # lossless files stay small. WAV: mono 8-bit at 22.05 kHz (the channels averaged here, then rounded).
    # FLAC: stereo 16-bit at 16 kHz, the model's rate (no resampling). MP3: stereo at 44.1 kHz. Opus:
    # stereo at 48 kHz (its only rate).
    mono22 = tone(22050, TONE_SECONDS).mean(axis=1)
    wav = np.clip(np.round(128 + mono22 * 127), 0, 255).astype(np.uint8)
    ffmpeg(["-f", "u8", "-ar", "22050", "-ac", "1"], wav.tobytes(), ["-c:a", "pcm_u8"],
           os.path.join(folder, "tone.wav"))
    made.append(("tone.wav", "PCM 8-bit mono WAV, 22.05 kHz"))
    ffmpeg(raw_audio(16000, 2), s16(tone(16000, TONE_SECONDS)).tobytes(),
           ["-c:a", "flac", "-compression_level", "12"], os.path.join(folder, "tone.flac"))
    made.append(("tone.flac", "FLAC 16-bit stereo, 16 kHz (the model's rate)"))
    ffmpeg(raw_audio(44100, 2), s16(tone(44100, TONE_SECONDS)).tobytes(),
           ["-c:a", "libmp3lame", "-b:a", "48k"], os.path.join(folder, "tone.mp3"))
    made.append(("tone.mp3", "MP3 stereo, 44.1 kHz, 48 kb/s"))
    ffmpeg(raw_audio(48000, 2), s16(tone(48000, TONE_SECONDS)).tobytes(), ["-c:a", "libopus", "-b:a", "32k"],
           os.path.join(folder, "tone.opus"))
    made.append(("tone.opus", "Opus stereo in Ogg, 48 kHz, 32 kb/s"))
    return made


def numbered_frames(count: int) -> bytes:
    """`count` solid gray RGB frames of SAMPLING_SIZE, frame i at level SAMPLING_LEVEL * i, as raw bytes."""
    h, w = SAMPLING_SIZE
    return np.repeat(np.arange(count, dtype=np.uint8) * SAMPLING_LEVEL, h * w * 3).tobytes()


def make_sampling(folder: str) -> list:
    """Writes the frame-numbered clips into `folder`; answers [(name, what it exercises)]. Their time bases are
    chosen so that docs/model.md's sampling times fall exactly on frames whose times are inexact in binary:
    1/10240 s (MP4's `-video_track_timescale`) at 10 fps, and WebM's 1/1000 s at 15 fps (frames at rounded
    milliseconds, 0, 67, 133, 200, ...)."""
    h, w = SAMPLING_SIZE
    made = []
    ffmpeg(raw_video("rgb24", h, w, 10), numbered_frames(SAMPLING_FRAMES),
           ["-c:v", "libx264", "-preset", "medium", "-qp", "0", "-bf", "0", "-pix_fmt", "yuv420p",
            "-x264-params", "threads=1:sliced-threads=0", "-video_track_timescale", "10240",
            "-movflags", "+faststart"], os.path.join(folder, "frames-10fps.mp4"))
    made.append(("frames-10fps.mp4", "H.264 (lossless) in MP4, 32x24, 10 fps, 3 s, time base 1/10240"))
    ffmpeg(raw_video("rgb24", h, w, 15), numbered_frames(SAMPLING_FRAMES),
           ["-c:v", "libvpx", "-b:v", "0", "-crf", "4", "-qmin", "0", "-qmax", "4", "-deadline", "good",
            "-cpu-used", "1", "-auto-alt-ref", "0", "-pix_fmt", "yuv420p"],
           os.path.join(folder, "frames-15fps.webm"))
    made.append(("frames-15fps.webm", "VP8 (near-lossless) in WebM, 32x24, 15 fps, 2 s, time base 1/1000"))
    return made


FOLDERS = {"media": (OUT, make), "video-sampling": (SAMPLING_OUT, make_sampling)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT, help="the folder of the media files")
    ap.add_argument("--sampling-out", default=SAMPLING_OUT, help="the folder of the frame-numbered clips")
    ap.add_argument("--only", choices=sorted(FOLDERS), help="write one folder alone")
    ap.add_argument("--force", action="store_true", help="overwrite files that exist")
    args = ap.parse_args(argv)
    folders = {"media": args.out, "video-sampling": args.sampling_out}
    chosen = [args.only] if args.only else list(FOLDERS)
    for name in chosen:
        folder = folders[name]
        if not args.force and os.path.isdir(folder) and os.listdir(folder):
            print(f"{folder} is not empty: the media are generated once (pass --force to write them again)",
                  file=sys.stderr)
            return 1
    total = 0
    for name in chosen:
        folder = folders[name]
        os.makedirs(folder, exist_ok=True)
        for file, what in FOLDERS[name][1](folder):
            with open(os.path.join(folder, file), "rb") as f:
                data = f.read()
            total += len(data)
            print(f"{name}/{file}: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:16]}: {what}")
    print(f"total {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
