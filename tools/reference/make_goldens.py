#!/usr/bin/env python3
"""Writes the numerics goldens of `tests/data/goldens/` from `tests/data/tiny.safetensors` with the
independent PyTorch reference (`uform_reference.py`).

    /opt/uform-ref/bin/python tools/reference/make_goldens.py            # write
    /opt/uform-ref/bin/python tools/reference/make_goldens.py --check    # regenerate in memory, compare
    /opt/uform-ref/bin/python tools/reference/make_goldens.py --only video_sampling   # one golden alone

Every golden is a safetensors file of little-endian U8 / I64 / F32 / F64 tensors (inputs beside the
outputs), readable without Python or JSON libraries beyond a safetensors header reader. The layout of
each file is in tools/reference/README.md and in each file's `__metadata__["layout"]`.
All inputs are generated here deterministically (a 64-bit LCG, no numpy random streams), but for
`media.safetensors` and `video-sampling.safetensors`, whose inputs are the checked-in files of
`tests/data/media/` and `tests/data/video-sampling/` decoded by FFmpeg's command-line tools (`ffmpeg` and
`ffprobe` must be on the path).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import uform_reference as ref  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CHECKPOINT = os.path.join(ROOT, "tests", "data", "tiny.safetensors")
OUT = os.path.join(ROOT, "tests", "data", "goldens")
GOLDENS_VERSION = "1"


class Lcg:
    """x <- x * 6364136223846793005 + 1442695040888963407 (mod 2^64); outputs the high 32 bits."""

    def __init__(self, seed: int):
        self.x = seed & 0xFFFFFFFFFFFFFFFF

    def next32(self) -> int:
        self.x = (self.x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        return self.x >> 32

    def bytes(self, n: int, lo: int = 0, hi: int = 255) -> bytes:
        return bytes(lo + self.next32() % (hi - lo + 1) for _ in range(n))

    def uniform(self, n: int) -> np.ndarray:
        return np.array([self.next32() / 2**32 for _ in range(n)], dtype=np.float64)


def printable_text(n: int, seed: int) -> bytes:
    return Lcg(seed).bytes(n, 32, 126)


def test_image(h: int, w: int, c: int, seed: int) -> np.ndarray:
    """A smooth gradient per channel plus LCG noise of +-24, so resizing has structure to keep."""
    rng = Lcg(seed)
    y, x = np.mgrid[0:h, 0:w]
    planes = []
    for ch in range(c):
        base = (x * (97 + 31 * ch) / max(w - 1, 1) + y * (151 - 40 * ch) / max(h - 1, 1) + 60 * ch) % 256
        noise = np.array([rng.next32() % 49 for _ in range(h * w)], dtype=np.float64).reshape(h, w) - 24
        planes.append(np.clip(np.round(base + noise), 0, 255))
    return np.stack(planes, axis=2).astype(np.uint8)


def offsets(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def f32(t) -> np.ndarray:
    return t.detach().to(torch.float32).numpy() if isinstance(t, torch.Tensor) else np.asarray(t, np.float32)


def cat_rows(parts, width) -> np.ndarray:
    parts = [f32(p).reshape(-1, width) for p in parts]
    return np.concatenate(parts, axis=0) if parts else np.zeros((0, width), np.float32)


def common_metadata(model: ref.Model, kind: str, layout: str) -> dict:
    return {
        "uform.goldens": kind,
        "uform.goldens.version": GOLDENS_VERSION,
        "uform.version": ref.MODEL_VERSION,
        "checkpoint": "tests/data/tiny.safetensors",
        "checkpoint.sha256": model.sha256,
        "generator": "tools/reference/make_goldens.py (uform_reference.py " + ref.REFERENCE_VERSION + ")",
        "torch": torch.__version__,
        "precision": "F32 compute; every matrix product's inputs rounded to BF16 (nearest even)",
        "layout": layout,
    }


# ------------------------------------------------------------------------------------------- cases


TEXTS = [
    b"",
    b"x",
    b"a cat on a mat",
    "Größe: 大きい猫 🐈 naïve café".encode("utf-8"),
    printable_text(300, 1),
    printable_text(2048, 2),
]
TEXT_TOKEN_VECTOR_ITEMS = 5  # token vectors of the first 5 texts; the 2048-byte one left out for size

CHOOSE = [  # (prompt, legal bytes, group)
    (b"Is the sky blue? Answer y or n: ", b"yn", 0),
    (b"Is the sky blue? Answer y or n: ", b"yn", 1),
    (b"Pick one of A, B, C, D: ", b"ABCD", 0),
    (b"Pick one of A, B, C, D: ", b"ABCD", 1),
    (b"", b"01", 0),
    (b"bytes at the edges ", bytes([0, 128, 255]), 1),
    ("Größe? ".encode("utf-8") + printable_text(200, 3), b"DCBA", 0),
]

IMAGES = [  # (height, width, channels, seed)
    (37, 53, 3, 11),  # non-square, sides not multiples of 8: upsampled to a 6x9 grid
    (8, 8, 3, 12),  # one patch of pixels, upsampled to the full 8x8 grid
    (77, 77, 1, 13),  # grayscale; the grid is 8x8 only thanks to floor(x + 1e-6); downsampled
    (45, 100, 4, 14),  # RGBA (alpha dropped), downsampled to a 5x11 grid
]
IMAGE_PATCH_ITEMS = (0, 3)  # items whose patch vectors (the front-end's output) are stored

VIDEOS = [  # (height, width, timestamps, duration, seed)
    (24, 32, [0.0, 0.5, 1.0, 1.5, 2.0, 2.5], 3.0, 21),  # 1 fps over 3 s: frames 1, 3, 5; 3x4 grid as is
    (20, 28, [0.0, 0.9, 1.2, 2.6, 3.3, 4.4], 5.0, 22),  # irregular times: frames 0, 2, 2, 4 (max_frames 4)
    (16, 16, [0.0], 0.3, 23),  # shorter than the first sampling time: its first frame, one tubelet
]

AUDIO_RATE = 16000


def audio_cases():
    n = np.arange(AUDIO_RATE // 2, dtype=np.float64)
    tone = (0.5 * np.sin(2.0 * math.pi * 440.0 * n / AUDIO_RATE)).astype(np.float32)
    short = ((Lcg(31).uniform(100) - 0.5) * 0.6).astype(np.float32)
    return [tone, short, np.zeros(0, np.float32)]


# ------------------------------------------------------------------------------------------- files


def text_golden(m: ref.Model):
    out = m.encode_texts(TEXTS)
    offs = offsets([len(t) for t in TEXTS])
    tv_rows = int(offs[TEXT_TOKEN_VECTOR_ITEMS])
    layout = (
        "bytes U8[B]: the texts concatenated; offsets I64[n+1]: text i is bytes[offsets[i]:offsets[i+1]] "
        "and its tokens are the same rows of states; states F32[B,hidden]; "
        f"token_vectors F32[R,token_width]: the first R rows of the packed token vectors (R = offsets[{TEXT_TOKEN_VECTOR_ITEMS}], "
        "the last text left out for size); embeddings F32[n,dimensions] (an empty text's is exactly zero)"
    )
    tensors = [
        ("bytes", np.frombuffer(b"".join(TEXTS), np.uint8)),
        ("offsets", offs),
        ("states", cat_rows(out["states"], m.cfg.hidden)),
        ("token_vectors", cat_rows(out["token_vectors"], m.cfg.token_width)[:tv_rows]),
        ("embeddings", f32(out["embeddings"])),
    ]
    return "text.safetensors", tensors, common_metadata(m, "text", layout)


def choose_golden(m: ref.Model):
    prompts = [c[0] for c in CHOOSE]
    legal = [c[1] for c in CHOOSE]
    groups = [c[2] for c in CHOOSE]
    probs = m.text_choose(prompts, legal, groups)
    # the raw logits at the CHOOSE position, for debugging
    states = m.trunk([m.text_segment(p, choose=True) for p in prompts])
    logits = [m.byte_logits(s[-1:])[0][torch.tensor(list(lb))] for s, lb in zip(states, legal)]
    layout = (
        "prompt_bytes U8, prompt_offsets I64[n+1]; legal_bytes U8, legal_offsets I64[n+1]; groups I64[n]; "
        "temperatures F32[groups] (a copy of head.choice.temperatures); logits F32[L]: the byte head's logits "
        "at the CHOOSE position for each legal byte, before the temperature; probabilities F32[L], aligned "
        "with legal_bytes"
    )
    tensors = [
        ("prompt_bytes", np.frombuffer(b"".join(prompts), np.uint8)),
        ("prompt_offsets", offsets([len(p) for p in prompts])),
        ("legal_bytes", np.frombuffer(b"".join(legal), np.uint8)),
        ("legal_offsets", offsets([len(lb) for lb in legal])),
        ("groups", np.array(groups, np.int64)),
        ("temperatures", f32(m.temperatures)),
        ("logits", np.concatenate([f32(x) for x in logits])),
        ("probabilities", np.concatenate([f32(p) for p in probs])),
    ]
    return "choose.safetensors", tensors, common_metadata(m, "text_choose", layout)


def image_golden(m: ref.Model):
    imgs = [test_image(h, w, c, seed) for h, w, c, seed in IMAGES]
    out = m.encode_images(imgs)
    segs = out["segments"]
    layout = (
        "pixels U8: the images concatenated, each row-major HxWxC interleaved; pixel_offsets I64[n+1]; "
        "shapes I64[n,3]: (H, W, C), C = 1 gray, 3 RGB, 4 RGBA; grids I64[n,2]: (gh, gw); "
        "token_offsets I64[n+1]; states F32[N,hidden], tokens of an image in row-major grid order; "
        "embeddings F32[n,dimensions]; patches.I F32[gh*gw, p*p*3] for some items I: the normalised "
        "patch vectors fed to embed.image"
    )
    tensors = [
        ("pixels", np.concatenate([im.reshape(-1) for im in imgs])),
        ("pixel_offsets", offsets([im.size for im in imgs])),
        ("shapes", np.array([[h, w, c] for h, w, c, _ in IMAGES], np.int64)),
        ("grids", np.array([s.extras["grid"] for s in segs], np.int64)),
        ("token_offsets", offsets([s.tokens.shape[0] for s in segs])),
        ("states", cat_rows(out["states"], m.cfg.hidden)),
        ("embeddings", f32(out["embeddings"])),
    ]
    for i in IMAGE_PATCH_ITEMS:
        tensors.append((f"patches.{i}", f32(segs[i].extras["patches"])))
    return "image.safetensors", tensors, common_metadata(m, "image_encode_pixels", layout)


def video_golden(m: ref.Model):
    clips, all_frames, shapes, stamps, counts = [], [], [], [], []
    for h, w, ts, dur, seed in VIDEOS:
        frames = [test_image(h, w, 3, seed * 100 + k) for k in range(len(ts))]
        clips.append((frames, ts, dur))
        all_frames += frames
        shapes += [[h, w, 3]] * len(frames)
        stamps += ts
        counts.append(len(frames))
    out = m.encode_videos(clips)
    segs = out["segments"]
    layout = (
        "frames U8: every clip's decoded frames concatenated, each row-major HxWx3; frame_offsets I64[F+1] "
        "(bytes); frame_shapes I64[F,3]; timestamps F64[F]: presentation times in seconds; "
        "clip_frame_offsets I64[n+1]: clip i owns frames clip_frame_offsets[i]..[i+1]; durations F64[n]; "
        "taken I64, taken_offsets I64[n+1]: the indices (within the clip) of the sampled frames; "
        "grids I64[n,2]; token_offsets I64[n+1]; states F32[N,hidden], tokens ordered tubelet, row, col; "
        "embeddings F32[n,dimensions]"
    )
    tensors = [
        ("frames", np.concatenate([f.reshape(-1) for f in all_frames])),
        ("frame_offsets", offsets([f.size for f in all_frames])),
        ("frame_shapes", np.array(shapes, np.int64)),
        ("timestamps", np.array(stamps, np.float64)),
        ("clip_frame_offsets", offsets(counts)),
        ("durations", np.array([v[3] for v in VIDEOS], np.float64)),
        ("taken", np.concatenate([np.array(s.extras["taken"], np.int64) for s in segs])),
        ("taken_offsets", offsets([len(s.extras["taken"]) for s in segs])),
        ("grids", np.array([s.extras["grid"] for s in segs], np.int64)),
        ("token_offsets", offsets([s.tokens.shape[0] for s in segs])),
        ("states", cat_rows(out["states"], m.cfg.hidden)),
        ("embeddings", f32(out["embeddings"])),
    ]
    return "video.safetensors", tensors, common_metadata(m, "video (frames given)", layout)


def audio_golden(m: ref.Model):
    clips = audio_cases()
    out = m.encode_audio([(c, AUDIO_RATE) for c in clips])
    segs = out["segments"]
    mb = m.cfg.audio["mel_bins"]
    layout = (
        "samples F32: the mono clips concatenated; sample_offsets I64[n+1]; sample_rates I64[n]; "
        "log_mel F32[M,mel_bins], log_mel_offsets I64[n+1]: every clip's normalised log-mel frames "
        "(after zero-extension, before patching); token_offsets I64[n+1]; states F32[N,hidden]; "
        "embeddings F32[n,dimensions] (the empty clip's is exactly zero)"
    )
    tensors = [
        ("samples", np.concatenate(clips)),
        ("sample_offsets", offsets([len(c) for c in clips])),
        ("sample_rates", np.full(len(clips), AUDIO_RATE, np.int64)),
        ("log_mel", cat_rows([s.extras["log_mel"] for s in segs], mb)),
        ("log_mel_offsets", offsets([s.extras["log_mel"].shape[0] for s in segs])),
        ("token_offsets", offsets([s.tokens.shape[0] for s in segs])),
        ("states", cat_rows(out["states"], m.cfg.hidden)),
        ("embeddings", f32(out["embeddings"])),
    ]
    return "audio.safetensors", tensors, common_metadata(m, "audio_encode_samples", layout)


MEDIA = os.path.join(ROOT, "tests", "data", "media")
MEDIA_IMAGES = ["photo.jpg", "gray.png", "rgba.webp"]
MEDIA_VIDEOS = ["clip.mp4", "clip.webm"]
MEDIA_AUDIO = ["tone.wav", "tone.flac", "tone.mp3", "tone.opus"]
RAW_PIXELS = (29, 43, 41)  # height, width, seed: non-square, sides not multiples of 8, upsampled to 6x9
RAW_RATE = 44100
RAW_SECONDS = 0.1
# Items whose states are stored (the rest keep embeddings only, for size): the raw pixels and samples, and
# the lossless audio files, whose decoded samples are the same on every FFmpeg.
MEDIA_STATE_ITEMS = {"audio": (0, 1), "pixels": (0,), "samples": (0,)}


def raw_tone(rate: int, seconds: float) -> np.ndarray:
    """tools/reference/make_media.py's tone, its two channels averaged, as float32 mono samples."""
    t = np.arange(int(round(rate * seconds)), dtype=np.float64) / rate
    left = 0.40 * np.sin(2 * math.pi * 440 * t) + 0.15 * np.sin(2 * math.pi * 1320 * t)
    right = 0.30 * np.sin(2 * math.pi * 440 * t + 1.0) + 0.10 * np.sin(2 * math.pi * 660 * t)
    return ((left + right) / 2).astype(np.float32)


def _group(m: ref.Model, prefix: str, out: dict, extra: list) -> list:
    """One group's tensors: its extras, token offsets, embeddings, and the states of the chosen items."""
    segs = out["segments"]
    keep = MEDIA_STATE_ITEMS.get(prefix, ())
    tensors = list(extra) + [
        (f"{prefix}.token_offsets", offsets([s.tokens.shape[0] for s in segs])),
        (f"{prefix}.embeddings", f32(out["embeddings"])),
    ]
    if keep:
        tensors += [
            (f"{prefix}.state_items", np.array(keep, np.int64)),
            (f"{prefix}.states", cat_rows([out["states"][i] for i in keep], m.cfg.hidden)),
        ]
    return tensors


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _names(names: list) -> list:
    return [np.frombuffer("".join(names).encode("ascii"), np.uint8), offsets([len(n) for n in names])]


def media_golden(m: ref.Model):
    tensors = []

    images = [ref.decode_image(os.path.join(MEDIA, n)) for n in MEDIA_IMAGES]
    out = m.encode_images(images)
    files, file_offsets = _names(MEDIA_IMAGES)
    tensors += _group(m, "image", out, [
        ("image.files", files), ("image.file_offsets", file_offsets),
        ("image.shapes", np.array([im.shape for im in images], np.int64)),
        ("image.grids", np.array([s.extras["grid"] for s in out["segments"]], np.int64)),
    ])

    clips = [ref.decode_video(os.path.join(MEDIA, n)) for n in MEDIA_VIDEOS]
    out = m.encode_videos(clips)
    segs = out["segments"]
    files, file_offsets = _names(MEDIA_VIDEOS)
    tensors += _group(m, "video", out, [
        ("video.files", files), ("video.file_offsets", file_offsets),
        ("video.shapes", np.array([c[0][0].shape for c in clips], np.int64)),
        ("video.timestamps", np.concatenate([np.array(c[1], np.float64) for c in clips])),
        ("video.timestamp_offsets", offsets([len(c[1]) for c in clips])),
        ("video.durations", np.array([c[2] for c in clips], np.float64)),
        ("video.taken", np.concatenate([np.array(s.extras["taken"], np.int64) for s in segs])),
        ("video.taken_offsets", offsets([len(s.extras["taken"]) for s in segs])),
        ("video.grids", np.array([s.extras["grid"] for s in segs], np.int64)),
    ])

    decoded = [ref.decode_audio(os.path.join(MEDIA, n)) for n in MEDIA_AUDIO]
    out = m.encode_audio(decoded)
    files, file_offsets = _names(MEDIA_AUDIO)
    rate = m.cfg.audio["sample_rate"]
    tensors += _group(m, "audio", out, [
        ("audio.files", files), ("audio.file_offsets", file_offsets),
        ("audio.rates", np.array([r for _, r in decoded], np.int64)),
        ("audio.channels", np.array([x.shape[1] for x, _ in decoded], np.int64)),
        ("audio.decoded_lengths", np.array([x.shape[0] for x, _ in decoded], np.int64)),
        ("audio.resampled_lengths",
         np.array([len(ref.resample(x.mean(axis=1, dtype=np.float32), r, rate)) for x, r in decoded], np.int64)),
    ])

    h, w, seed = RAW_PIXELS
    pixels = test_image(h, w, 3, seed)
    out = m.encode_images([pixels])
    tensors += _group(m, "pixels", out, [
        ("pixels.pixels", pixels.reshape(-1)), ("pixels.shapes", np.array([[h, w, 3]], np.int64)),
        ("pixels.grids", np.array([out["segments"][0].extras["grid"]], np.int64)),
    ])

    samples = raw_tone(RAW_RATE, RAW_SECONDS)
    out = m.encode_audio([(samples, RAW_RATE)])
    tensors += _group(m, "samples", out, [
        ("samples.samples", samples), ("samples.sample_offsets", offsets([len(samples)])),
        ("samples.rates", np.array([RAW_RATE], np.int64)),
        ("samples.resampled_lengths", np.array([len(ref.resample(samples, RAW_RATE, rate))], np.int64)),
    ])

    layout = (
        "five groups image, video, audio (files in tests/data/media/), pixels (raw RGB), samples (raw mono "
        "F32 at 44.1 kHz); each has token_offsets I64[n+1], embeddings F32[n,dimensions], and for some "
        "items state_items I64[k] with states F32[rows of those items, hidden] in that order; file groups "
        "have files U8 (names concatenated) and file_offsets I64[n+1]; image.shapes I64[n,3] (H, W, C as "
        "decoded), image.grids I64[n,2]; video.shapes, timestamps F64 (every decoded frame's presentation "
        "time, s) with timestamp_offsets, durations F64[n], taken I64 with taken_offsets (sampled frame "
        "indices), grids; audio.rates, channels, decoded_lengths (per channel at the file's rate), "
        "resampled_lengths (mono at the model's rate) I64[n]; pixels.pixels U8 HxWx3, pixels.shapes, "
        "pixels.grids; samples.samples F32, sample_offsets, rates, resampled_lengths"
    )
    meta = common_metadata(m, "media (decoded by FFmpeg)", layout)
    meta["ffmpeg"] = ref.ffmpeg_version()
    meta["media.sha256"] = ",".join(n + ":" + _sha256(os.path.join(MEDIA, n)) for n in MEDIA_IMAGES + MEDIA_VIDEOS + MEDIA_AUDIO)
    return "media.safetensors", tensors, meta


SAMPLING = os.path.join(ROOT, "tests", "data", "video-sampling")
SAMPLING_CLIPS = ["frames-10fps.mp4", "frames-15fps.webm"]  # frame i a solid gray of level 8 * i (make_media.py)
SAMPLING_CASES = [  # (clip, fps, max_frames): sampling times that land exactly on frames, and at the clip's end
    (0, 2.5, 5),  # 0.2, 0.6, ... 1.8 s at 10 fps, 1/10240: frames 2 6 10 14 18
    (1, 2.5, 5),  # the same times at 15 fps, 1/1000 (frames at 0, 67, 133, 200 ms ...): frames 3 9 15 21 27
    (0, 2.5, 10),  # the eighth time is 3.0 s = D, outside: seven frames
    (0, 0.5, 5),  # 1.0 s, then 3.0 s = D, outside: one frame
    (0, 1 / 6, 5),  # the first time is 3.0 s = D: no time inside, so the first frame
    (1, 1.25, 5),  # 0.4, 1.2 s, then 2.0 s > D = 1.999 s (the last frame at 1.933 s lasts 66 ms)
]


def video_sampling_golden(m: ref.Model):
    clips = [ref.decode_video(os.path.join(SAMPLING, n)) for n in SAMPLING_CLIPS]
    for name, (frames, _, _) in zip(SAMPLING_CLIPS, clips):  # the clips are what make_media.py says they are
        levels = [int(f.mean() / 8 + 0.5) for f in frames]
        if levels != list(range(len(frames))) or any(int(f.max()) - int(f.min()) > 2 for f in frames):
            raise RuntimeError(f"{name}: frame i is not a solid gray of level 8 * i")
    taken = [ref.sample_frames(clips[c][1], clips[c][2], fps, n) for c, fps, n in SAMPLING_CASES]
    layout = (
        "files U8 (clip names under tests/data/video-sampling/, concatenated), file_offsets I64[c+1]; "
        "timestamps F64 (every decoded frame's time in seconds after the first frame's) with timestamp_offsets "
        "I64[c+1]; durations F64[c] (D: the last frame's time plus its duration); cases: case.clip I64[n], "
        "case.fps F64[n], case.max_frames I64[n]; taken I64 with taken_offsets I64[n+1]: the indices of the "
        "frames each case samples (frame i of a clip is a solid gray of level 8 * i)"
    )
    files, file_offsets = _names(SAMPLING_CLIPS)
    tensors = [
        ("files", files), ("file_offsets", file_offsets),
        ("timestamps", np.concatenate([np.array(c[1], np.float64) for c in clips])),
        ("timestamp_offsets", offsets([len(c[1]) for c in clips])),
        ("durations", np.array([c[2] for c in clips], np.float64)),
        ("case.clip", np.array([c for c, _, _ in SAMPLING_CASES], np.int64)),
        ("case.fps", np.array([fps for _, fps, _ in SAMPLING_CASES], np.float64)),
        ("case.max_frames", np.array([n for _, _, n in SAMPLING_CASES], np.int64)),
        ("taken", np.concatenate([np.array(t, np.int64) for t in taken])),
        ("taken_offsets", offsets([len(t) for t in taken])),
    ]
    meta = common_metadata(m, "video sampling (decoded by FFmpeg)", layout)
    meta["ffmpeg"] = ref.ffmpeg_version()
    meta["media.sha256"] = ",".join(n + ":" + _sha256(os.path.join(SAMPLING, n)) for n in SAMPLING_CLIPS)
    return "video-sampling.safetensors", tensors, meta


GOLDENS = [text_golden, choose_golden, image_golden, video_golden, audio_golden, media_golden, video_sampling_golden]


def _split(data, offs):
    """The rows of `data` that the boundaries `offs` cut."""
    return [data[offs[i] : offs[i + 1]] for i in range(len(offs) - 1)]


class _Verifier:
    """Reads the goldens of `folder` back, one file per method, recomputes them with the F64 reference `m`, and
    prints each comparison, counting the failures."""

    def __init__(self, m: ref.Model, folder: str, load_file):
        self.m = m
        self.folder = folder
        self.load_file = load_file
        self.failures = 0

    def load(self, name: str) -> dict:
        """The tensors of the golden `name`, read with the `safetensors` package (not our reader)."""
        return self.load_file(os.path.join(self.folder, name))

    def report(self, name, ok, detail):
        """Prints one comparison's verdict, counting it when it failed."""
        self.failures += not ok
        print(f"  [{'ok' if ok else 'FAIL'}] {name}: {detail}")

    def rows(self, name, got, want_list, offs, limit=None):
        """Holds each item's stored rows to the recomputed ones (`rows_agree`), up to the row `limit`."""
        want = [torch.from_numpy(x) for x in _split(got, offs)]
        for i, (a, b) in enumerate(zip(want, want_list)):
            if limit is not None and offs[i + 1] > limit:
                break
            ok, det = ref.rows_agree(b, a)
            self.report(f"{name} item {i}", ok, det)

    def embeddings(self, name, out, stored):
        """Holds the recomputed embeddings to the stored ones (`embeddings_agree`)."""
        self.report(name, *ref.embeddings_agree(out["embeddings"], torch.from_numpy(stored).double()))

    def text(self):
        """text.safetensors: states, token vectors and embeddings."""
        g = self.load("text.safetensors")
        texts = [x.tobytes() for x in _split(g["bytes"], g["offsets"])]
        out = self.m.encode_texts(texts)
        self.rows("text states", g["states"], out["states"], g["offsets"])
        self.rows("text token_vectors", g["token_vectors"], out["token_vectors"], g["offsets"],
                  g["token_vectors"].shape[0])
        self.embeddings("text embeddings", out, g["embeddings"])

    def choose(self):
        """choose.safetensors: the choice probabilities."""
        g = self.load("choose.safetensors")
        probs = self.m.text_choose([x.tobytes() for x in _split(g["prompt_bytes"], g["prompt_offsets"])],
                                   [x.tobytes() for x in _split(g["legal_bytes"], g["legal_offsets"])],
                                   list(g["groups"]))
        d = float(np.abs(np.concatenate([p.numpy() for p in probs]) - g["probabilities"]).max())
        self.report("choice probabilities", d <= 2e-3, f"max abs {d:.1e}")

    def image(self):
        """image.safetensors: grids, states, embeddings and patches."""
        g = self.load("image.safetensors")
        imgs = [x.reshape(tuple(s)) for x, s in zip(_split(g["pixels"], g["pixel_offsets"]), g["shapes"])]
        out = self.m.encode_images(imgs)
        self.report("image grids", [list(s.extras["grid"]) for s in out["segments"]] == g["grids"].tolist(),
                    str(g["grids"].tolist()))
        self.rows("image states", g["states"], out["states"], g["token_offsets"])
        self.embeddings("image embeddings", out, g["embeddings"])
        for k in g:
            if k.startswith("patches."):
                d = float(np.abs(out["segments"][int(k.split(".")[1])].extras["patches"].numpy() - g[k]).max())
                self.report(f"image {k}", d <= 1e-5, f"max abs {d:.1e}")

    def video(self):
        """video.safetensors: the sampled frames, states and embeddings."""
        g = self.load("video.safetensors")
        frames = [x.reshape(tuple(s)) for x, s in zip(_split(g["frames"], g["frame_offsets"]), g["frame_shapes"])]
        cfo = g["clip_frame_offsets"]
        clips = [(frames[cfo[i] : cfo[i + 1]], list(g["timestamps"][cfo[i] : cfo[i + 1]]), float(g["durations"][i]))
                 for i in range(len(cfo) - 1)]
        out = self.m.encode_videos(clips)
        taken = [list(map(int, x)) for x in _split(g["taken"], g["taken_offsets"])]
        self.report("video sampled frames", [s.extras["taken"] for s in out["segments"]] == taken, str(taken))
        self.rows("video states", g["states"], out["states"], g["token_offsets"])
        self.embeddings("video embeddings", out, g["embeddings"])

    def video_sampling(self):
        """video-sampling.safetensors: the frames taken, sampled again from the stored times."""
        g = self.load("video-sampling.safetensors")
        to = g["timestamp_offsets"]
        taken = [list(map(int, x)) for x in _split(g["taken"], g["taken_offsets"])]
        again = [ref.sample_frames(list(g["timestamps"][to[c] : to[c + 1]]), float(g["durations"][c]), float(fps),
                                   int(n))
                 for c, fps, n in zip(g["case.clip"], g["case.fps"], g["case.max_frames"])]
        self.report("video sampling from the stored times", again == taken, str(taken))

    def audio(self):
        """audio.safetensors: log-mel features, states and embeddings."""
        g = self.load("audio.safetensors")
        clips = list(zip(_split(g["samples"], g["sample_offsets"]), map(int, g["sample_rates"])))
        out = self.m.encode_audio(clips)
        lm = np.concatenate([s.extras["log_mel"].numpy() for s in out["segments"]])
        d = float(np.abs(lm - g["log_mel"]).max())
        self.report("audio log_mel", d <= 1e-5, f"max abs {d:.1e}")
        self.rows("audio states", g["states"], out["states"], g["token_offsets"])
        self.embeddings("audio embeddings", out, g["embeddings"])

    def media(self):
        """media.safetensors: the shipped media files decoded again, and raw pixels and samples."""
        m, g = self.m, self.load("media.safetensors")

        def names(prefix):
            return [x.tobytes().decode("ascii") for x in _split(g[prefix + ".files"], g[prefix + ".file_offsets"])]

        outs = {
            "image": m.encode_images([ref.decode_image(os.path.join(MEDIA, n)) for n in names("image")]),
            "video": m.encode_videos([ref.decode_video(os.path.join(MEDIA, n)) for n in names("video")]),
            "audio": m.encode_audio([ref.decode_audio(os.path.join(MEDIA, n)) for n in names("audio")]),
            "pixels": m.encode_images([g["pixels.pixels"].reshape(tuple(g["pixels.shapes"][0]))]),
            "samples": m.encode_audio([(x, int(r)) for x, r in zip(_split(g["samples.samples"],
                                                                          g["samples.sample_offsets"]),
                                                                   g["samples.rates"])]),
        }
        for prefix, out in outs.items():
            tokens = [s.tokens.shape[0] for s in out["segments"]]
            self.report(f"media {prefix} tokens", offsets(tokens).tolist() == g[prefix + ".token_offsets"].tolist(),
                        str(tokens))
            self.embeddings(f"media {prefix} embeddings", out, g[prefix + ".embeddings"])
            if prefix + ".state_items" in g:
                keep = [int(i) for i in g[prefix + ".state_items"]]
                self.rows("media " + prefix + " states", g[prefix + ".states"], [out["states"][i] for i in keep],
                          offsets([tokens[i] for i in keep]))


def verify(checkpoint: str, folder: str) -> int:
    """Reads the goldens with the `safetensors` package (not our reader), rebuilds every input from the
    stored tensors alone, recomputes with the F64 variant of the reference, and applies docs/model.md's
    agreement rules, as a C++ test would."""
    from safetensors.numpy import load_file

    v = _Verifier(ref.Model(checkpoint, dtype=torch.float64), folder, load_file)
    for step in (v.text, v.choose, v.image, v.video, v.video_sampling, v.audio, v.media):
        step()
    print(f"verify: {'all agree' if not v.failures else str(v.failures) + ' FAILED'}")
    return 1 if v.failures else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", default=CHECKPOINT)
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--check", action="store_true", help="regenerate into a temporary folder and compare bytes")
    ap.add_argument("--only", action="append", choices=[g.__name__.removesuffix("_golden") for g in GOLDENS],
                    help="write (or check) this golden alone; may be repeated")
    ap.add_argument("--verify", action="store_true",
                    help="read the goldens back and hold the F64 variant to docs/model.md's agreement rules")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # one summation order, so the files are reproducible
    if args.verify:
        return verify(args.checkpoint, args.out)
    m = ref.Model(args.checkpoint)
    target = tempfile.mkdtemp() if args.check else args.out
    os.makedirs(target, exist_ok=True)
    written, differ = {}, []
    for make in GOLDENS:
        if args.only and make.__name__.removesuffix("_golden") not in args.only:
            continue
        name, tensors, meta = make(m)
        size = ref.write_safetensors(os.path.join(target, name), tensors, meta)
        written[name] = size
        desc = ", ".join(f"{n} {a.dtype}{list(a.shape)}" for n, a in tensors)
        print(f"{name}: {size} bytes: {desc}")
        if args.check:
            with open(os.path.join(target, name), "rb") as f1, open(os.path.join(args.out, name), "rb") as f2:
                a, b = f1.read(), f2.read()
            if a != b:
                differ.append(name)
                print(f"  differs from {args.out}/{name} (sha256 {hashlib.sha256(a).hexdigest()[:12]} vs {hashlib.sha256(b).hexdigest()[:12]})")
    # The size limit covers every golden: those not regenerated (--only) count as they are in --out.
    kept = [n for n in (os.listdir(args.out) if os.path.isdir(args.out) else []) if n.endswith(".safetensors")]
    total = sum(written.values()) + sum(os.path.getsize(os.path.join(args.out, n)) for n in kept if n not in written)
    media = sum(os.path.getsize(os.path.join(MEDIA, n)) for n in MEDIA_IMAGES + MEDIA_VIDEOS + MEDIA_AUDIO)
    media += sum(os.path.getsize(os.path.join(SAMPLING, n)) for n in SAMPLING_CLIPS)
    print(f"total {total} bytes of goldens and {media} of media ({(total + media) / 2**20:.3f} MiB)")
    if total + media >= 2**20:
        print("goldens and media exceed 1 MiB", file=sys.stderr)
        return 1
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
