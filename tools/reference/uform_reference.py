#!/usr/bin/env python3
"""An independent PyTorch reference of the UForm model, version 1 (`docs/model.md`).

Written from docs/model.md alone, not from the C++ core, so the two can check each other. CPU, float32
(or float64 for the self-check variant). Every matrix product of the model (the embedding linears of
the front-ends, the trunk's linears, q.k^T, softmax.v and the heads) rounds BOTH inputs to BF16 with
round-to-nearest-even (`x.bfloat16()`), multiplies in the compute precision and keeps the result
unrounded; everything else (residual stream, RMSNorm, RoPE, softmax, SiLU, pooling, normalisation,
the audio front-end's STFT and mel projection) stays in the compute precision.

Usage as a library:

    from uform_reference import Model
    m = Model("tests/data/tiny.safetensors")
    out = m.encode_texts([b"a cat", b""])            # dict: states, token_vectors, embeddings, ...
    probs = m.text_choose([b"Yes or no? "], [b"yn"], [0])

Command line:

    python uform_reference.py --selftest [--checkpoint tests/data/tiny.safetensors]

Choices this file makes where docs/model.md leaves room are marked "CHOICE:" and listed in README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import struct
import sys
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

REFERENCE_VERSION = "1"
MODEL_VERSION = "1"

MASK_TOKEN = 256
CHOOSE_TOKEN = 257

# F32 matrix products must be plain F32 GEMMs (no TF32 / BF16 shortcuts inside oneDNN).
torch.set_float32_matmul_precision("highest")


class CheckpointError(ValueError):
    """The file is not a valid UForm version 1 checkpoint."""


class Unsupported(Exception):
    """The checkpoint lacks what this call needs (docs/model.md's `unsupported`)."""


# --------------------------------------------------------------------------------------------------
# safetensors, parsed by hand so that every check is ours

_ST_DTYPES = {
    "BF16": (torch.bfloat16, 2),
    "F16": (torch.float16, 2),
    "F32": (torch.float32, 4),
    "F64": (torch.float64, 8),
    "U8": (torch.uint8, 1),
    "I8": (torch.int8, 1),
    "I16": (torch.int16, 2),
    "I32": (torch.int32, 4),
    "I64": (torch.int64, 8),
    "BOOL": (torch.bool, 1),
    "F8_E4M3": (torch.float8_e4m3fn, 1),
    "F8_E5M2": (torch.float8_e5m2, 1),
}


def read_safetensors(data: bytes):
    """Parses a safetensors buffer: returns (metadata dict, {name: (dtype string, tensor)})."""
    if len(data) < 8:
        raise CheckpointError("file shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise CheckpointError(f"header length {n} runs past the end of the file ({len(data)} bytes)")
    try:
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise CheckpointError("header is not a JSON object")
    metadata = header.pop("__metadata__", {}) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise CheckpointError("__metadata__ must map strings to strings")
    body = memoryview(data)[8 + n :]
    tensors = {}
    spans = []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise CheckpointError(f"tensor {name!r}: entry needs exactly dtype, shape, data_offsets")
        dt = info["dtype"]
        if dt not in _ST_DTYPES:
            raise CheckpointError(f"tensor {name!r}: unknown dtype {dt!r}")
        shape = info["shape"]
        if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise CheckpointError(f"tensor {name!r}: bad shape {shape!r}")
        off = info["data_offsets"]
        if (
            not isinstance(off, list)
            or len(off) != 2
            or not all(isinstance(o, int) for o in off)
            or not 0 <= off[0] <= off[1] <= len(body)
        ):
            raise CheckpointError(f"tensor {name!r}: data_offsets {off!r} outside the data")
        torch_dtype, size = _ST_DTYPES[dt]
        count = math.prod(shape)
        if off[1] - off[0] != count * size:
            raise CheckpointError(
                f"tensor {name!r}: {off[1] - off[0]} bytes for shape {shape} of {dt} ({count * size})"
            )
        spans.append((off[0], off[1], name))
        raw = bytes(body[off[0] : off[1]])
        if count == 0:
            t = torch.empty(shape, dtype=torch_dtype)
        else:
            t = torch.frombuffer(bytearray(raw), dtype=torch_dtype).reshape(shape).clone()
        tensors[name] = (dt, t)
    spans.sort()
    for (a0, a1, an), (b0, b1, bn) in zip(spans, spans[1:]):
        if b0 < a1 and a1 > a0 and b1 > b0:
            raise CheckpointError(f"tensors {an!r} and {bn!r} overlap")
    return metadata, tensors


_NP_TO_ST = {
    np.dtype(np.uint8): "U8",
    np.dtype(np.int64): "I64",
    np.dtype(np.float32): "F32",
    np.dtype(np.float64): "F64",
}


def write_safetensors(path: str, tensors: list, metadata: dict) -> int:
    """Writes [(name, numpy array)] in the given order, little-endian, header padded with spaces to a
    multiple of 8 bytes. Deterministic byte for byte. Returns the file size."""
    header = {"__metadata__": {k: str(v) for k, v in metadata.items()}}
    blobs = []
    offset = 0
    for name, arr in tensors:
        arr = np.ascontiguousarray(arr)
        st = _NP_TO_ST[arr.dtype]
        blob = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": st, "shape": list(arr.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((-len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    return 8 + len(text) + offset


# --------------------------------------------------------------------------------------------------
# the configuration from __metadata__


def _int(meta, key):
    try:
        v = int(meta[key])
    except KeyError:
        raise CheckpointError(f"__metadata__ lacks {key!r}") from None
    except ValueError:
        raise CheckpointError(f"__metadata__ {key!r}={meta[key]!r} is not an integer") from None
    return v


def _float(meta, key):
    try:
        return float(meta[key])
    except KeyError:
        raise CheckpointError(f"__metadata__ lacks {key!r}") from None
    except ValueError:
        raise CheckpointError(f"__metadata__ {key!r}={meta[key]!r} is not a number") from None


def _floats(meta, key, n=None):
    try:
        parts = [float(x) for x in meta[key].split(",")]
    except KeyError:
        raise CheckpointError(f"__metadata__ lacks {key!r}") from None
    except ValueError:
        raise CheckpointError(f"__metadata__ {key!r}={meta[key]!r} is not a list of numbers") from None
    if n is not None and len(parts) != n:
        raise CheckpointError(f"__metadata__ {key!r} needs {n} values, has {len(parts)}")
    return parts


@dataclass
class Config:
    depth: int
    hidden: int
    heads: int
    head_dim: int
    ffn_hidden: int
    norm_eps: float
    rope_theta: float
    rope_sections: tuple
    dimensions: int
    token_width: int
    choice_groups: int
    image: dict = field(default_factory=dict)  # empty when the checkpoint has no image keys
    video: dict = field(default_factory=dict)
    audio: dict = field(default_factory=dict)


def parse_config(meta: dict, names: set) -> Config:
    if meta.get("format") != "uform":
        raise CheckpointError(f"format is {meta.get('format')!r}, not 'uform'")
    if meta.get("uform.version") != MODEL_VERSION:
        raise CheckpointError(f"uform.version is {meta.get('uform.version')!r}, this reference reads 1")
    g = lambda k: _int(meta, "uform." + k)  # noqa: E731
    sections = tuple(int(round(x)) for x in _floats(meta, "uform.rope.sections", 3))
    cfg = Config(
        depth=g("depth"),
        hidden=g("hidden"),
        heads=g("heads"),
        head_dim=g("head_dim"),
        ffn_hidden=g("ffn_hidden"),
        norm_eps=_float(meta, "uform.norm_eps"),
        rope_theta=_float(meta, "uform.rope.theta"),
        rope_sections=sections,
        dimensions=g("dimensions"),
        token_width=g("token_width"),
        choice_groups=g("choice.groups"),
    )
    for k in ("depth", "hidden", "heads", "head_dim", "ffn_hidden", "dimensions", "token_width"):
        if getattr(cfg, k) <= 0:
            raise CheckpointError(f"uform.{k} must be positive")
    if cfg.choice_groups < 0:
        raise CheckpointError("uform.choice.groups must not be negative")
    if cfg.head_dim % 2 or sum(sections) != cfg.head_dim // 2 or min(sections) < 0:
        raise CheckpointError(f"uform.rope.sections {sections} must sum to head_dim/2 = {cfg.head_dim // 2}")
    # CHOICE: the video front-end sizes frames "as an image", so it reads the image keys (patch side,
    # channels, mean, std) too; they are required whenever images or video are present.
    if "embed.image.weight" in names or "embed.video.weight" in names:
        cfg.image = dict(
            patch_side=g("image.patch_side"),
            channels=g("image.channels"),
            max_patches=g("image.max_patches"),
            mean=_floats(meta, "uform.image.mean", 3),
            std=_floats(meta, "uform.image.std", 3),
        )
        if cfg.image["channels"] != 3:
            raise CheckpointError("this reference handles uform.image.channels = 3 only")
    if "embed.video.weight" in names:
        cfg.video = dict(
            tubelet_frames=g("video.tubelet_frames"),
            fps=_float(meta, "uform.video.fps"),
            max_frames=g("video.max_frames"),
            max_patches_per_frame=g("video.max_patches_per_frame"),
        )
    if "embed.audio.weight" in names:
        cfg.audio = dict(
            sample_rate=g("audio.sample_rate"),
            n_fft=g("audio.n_fft"),
            hop=g("audio.hop"),
            mel_bins=g("audio.mel_bins"),
            frames_per_patch=g("audio.frames_per_patch"),
            max_patches=g("audio.max_patches"),
        )
    return cfg


def expected_tensors(cfg: Config, names: set) -> dict:
    """name -> (dtype, shape, required) for every tensor docs/model.md lists."""
    H, hd, nh, ffn = cfg.hidden, cfg.head_dim, cfg.heads, cfg.ffn_hidden
    e = {
        "embed.byte.weight": ("BF16", [258, H], True),
        "final_norm.weight": ("BF16", [H], True),
        "head.embedding.weight": ("BF16", [cfg.dimensions, H], True),
        "head.token.weight": ("BF16", [cfg.token_width, H], False),
        "head.byte.weight": ("BF16", [256, H], False),
        "head.choice.temperatures": ("F32", [cfg.choice_groups], False),
    }
    for i in range(cfg.depth):
        p = f"blocks.{i}."
        e[p + "attn_norm.weight"] = ("BF16", [H], True)
        e[p + "attn.qkv.weight"] = ("BF16", [3 * nh * hd, H], True)
        e[p + "attn.out.weight"] = ("BF16", [H, nh * hd], True)
        e[p + "mlp_norm.weight"] = ("BF16", [H], True)
        e[p + "mlp.gate_up.weight"] = ("BF16", [2 * ffn, H], True)
        e[p + "mlp.down.weight"] = ("BF16", [H, ffn], True)
    if "embed.image.weight" in names:
        p, c = cfg.image["patch_side"], cfg.image["channels"]
        e["embed.image.weight"] = ("BF16", [H, p * p * c], True)
        e["embed.image.bias"] = ("BF16", [H], True)
    if "embed.video.weight" in names:
        p, c = cfg.image["patch_side"], cfg.image["channels"]
        e["embed.video.weight"] = ("BF16", [H, cfg.video["tubelet_frames"] * p * p * c], True)
        e["embed.video.bias"] = ("BF16", [H], True)
    if "embed.audio.weight" in names:
        a = cfg.audio
        e["embed.audio.weight"] = ("BF16", [H, a["frames_per_patch"] * a["mel_bins"]], True)
        e["embed.audio.bias"] = ("BF16", [H], True)
        e["frontend.audio.mel_filters"] = ("F32", [a["mel_bins"], a["n_fft"] // 2 + 1], True)
    # A bias without its weight is a tensor the metadata does not explain: refused below as unknown.
    # CHOICE: temperatures are required with a byte head when groups > 0 ("optional; with head.byte").
    if "head.byte.weight" in names and cfg.choice_groups > 0:
        e["head.choice.temperatures"] = ("F32", [cfg.choice_groups], True)
    return e


# --------------------------------------------------------------------------------------------------
# numerics helpers


_ROUNDING = [True]


@contextlib.contextmanager
def exact_arithmetic():
    """Within it, nothing rounds to BF16: products multiply their inputs as they are, so that an F64 model
    is smooth and `torch.autograd.gradcheck` can hold its gradients to finite differences."""
    _ROUNDING[0] = False
    try:
        yield
    finally:
        _ROUNDING[0] = True


def bf16_round(x: torch.Tensor) -> torch.Tensor:
    """Rounds to BF16 (round to nearest even) and back to x's dtype; the identity within exact_arithmetic()."""
    return x.to(torch.bfloat16).to(x.dtype) if _ROUNDING[0] else x


class _Bf16Product(torch.autograd.Function):
    """docs/model.md's product and its training rule: the forward rounds both inputs to BF16 and multiplies in
    their precision; the backward's two products (`dA = dC B^T`, `dB = A^T dC`) take the BF16-rounded
    incoming gradient and the same rounded inputs (docs/model.md, Training: "Backward products also take
    BF16-rounded inputs"). The rounding itself passes gradients unchanged (straight-through)."""

    @staticmethod
    def forward(ctx, a, b):
        a, b = bf16_round(a), bf16_round(b)
        ctx.save_for_backward(a, b)
        return torch.matmul(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        g = bf16_round(grad)
        return torch.matmul(g, b.transpose(-1, -2)), torch.matmul(a.transpose(-1, -2), g)


def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """docs/model.md's matrix product: both inputs rounded to BF16, the product in the inputs' precision.
    Differentiable (`_Bf16Product`); 2-D operands or batches of equal shape, no broadcasting."""
    return _Bf16Product.apply(a, b)


def linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x [n, in] times w [out, in] transposed, per the precision rule."""
    return mm(x, w.transpose(0, 1))


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + eps) * w


def l2_normalize(x: torch.Tensor) -> torch.Tensor:
    """Row-wise L2 normalisation; a zero row stays zero."""
    n = torch.sqrt(torch.sum(x * x, dim=-1, keepdim=True))
    return torch.where(n > 0, x / torch.where(n > 0, n, torch.ones_like(n)), torch.zeros_like(x))


def floor_eps(x: float) -> int:
    return math.floor(x + 1e-6)


def image_grid(height: int, width: int, patch: int, budget: int):
    """docs/model.md's aspect-preserving grid, in double precision, evaluated left to right as written."""
    s = math.sqrt(budget / ((height / patch) * (width / patch)))
    gh = max(1, min(floor_eps(height / patch * s), budget))
    gw = max(1, min(floor_eps(width / patch * s), floor_eps(budget / gh)))
    return gh, gw


@dataclass
class Segment:
    """One item's tokens before the trunk: embedded inputs [n, hidden] and positions [n, 3]."""

    tokens: torch.Tensor
    positions: torch.Tensor
    extras: dict = field(default_factory=dict)  # front-end intermediates, for goldens and debugging


# --------------------------------------------------------------------------------------------------
# decoding and resampling through FFmpeg
#
# The library decodes files with FFmpeg's libraries and resamples audio with libswresample at its defaults
# (docs/model.md). This reference calls the same code through the `ffmpeg` and `ffprobe` command-line tools
# (Debian 12's FFmpeg 5.1, the libraries the library links), so decoded pixels and samples are FFmpeg's.
# Only what docs/model.md fixes is done here in numpy/torch: replicating gray, dropping alpha, averaging the
# channels, choosing the video frames. `UFORM_FFMPEG` and `UFORM_FFPROBE` name other executables.

FFMPEG = os.environ.get("UFORM_FFMPEG", "ffmpeg")
FFPROBE = os.environ.get("UFORM_FFPROBE", "ffprobe")
# libswscale's flags for YUV to RGB: the `ffmpeg` tool's default, written out. They matter: a full-range
# 4:2:0 JPEG scales its chroma with this filter, and `bilinear` moves the tiny model's embedding of
# tests/data/media/photo.jpg to cosine 0.998; video's limited-range 4:2:0 takes the unscaled path unless
# `accurate_rnd` or `full_chroma_int` is added (0.9994 to 0.9999 then).
SWS_FLAGS = "bicubic"


def _run(cmd: list, stdin: bytes = None) -> bytes:
    import subprocess

    done = subprocess.run(cmd, input=stdin, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def ffmpeg_version() -> str:
    """The first line of `ffmpeg -version`, for the goldens' metadata."""
    return _run([FFMPEG, "-version"]).decode(errors="replace").splitlines()[0]


def _probe(path: str, kind: str, entries: str) -> dict:
    """ffprobe's JSON of the first stream of `kind` ("v" or "a") and the format."""
    out = _run([FFPROBE, "-v", "error", "-select_streams", f"{kind}:0", "-show_entries",
                f"stream={entries}:format=duration", "-of", "json", path])
    info = json.loads(out)
    if not info.get("streams"):
        raise ValueError(f"{path} has no {'video' if kind == 'v' else 'audio'} stream")
    return {**info["streams"][0], "format_duration": float(info.get("format", {}).get("duration", "nan"))}


def _decode_pixel_format(pix_fmt: str) -> tuple:
    """The raw format a picture is read in, and its channels: gray stays one channel (replicated later,
    exactly), formats with alpha are read as RGBA (alpha dropped later), the rest as RGB24 (for YUV,
    libswscale's conversion with SWS_FLAGS: the part that can differ by decoder)."""
    if pix_fmt.startswith(("gray", "ya", "monow", "monob")):
        return "gray", 1
    if pix_fmt.startswith(("rgba", "bgra", "argb", "abgr", "yuva", "gbrap")) or pix_fmt == "pal8":
        return "rgba", 4
    return "rgb24", 3


def decode_image(path: str) -> np.ndarray:
    """A JPEG, PNG or WebP file's first picture as uint8 [H, W, C], C = 1, 3 or 4 (FFmpeg's decoder)."""
    info = _probe(path, "v", "width,height,pix_fmt")
    fmt, c = _decode_pixel_format(info["pix_fmt"])
    h, w = int(info["height"]), int(info["width"])
    raw = _run([FFMPEG, "-v", "error", "-i", path, "-map", "0:v:0", "-frames:v", "1", "-sws_flags", SWS_FLAGS,
                "-f", "rawvideo", "-pix_fmt", fmt, "-"])
    if len(raw) != h * w * c:
        raise RuntimeError(f"{path}: {len(raw)} bytes of {fmt}, expected {h}x{w}x{c}")
    return np.frombuffer(raw, np.uint8).reshape(h, w, c).copy()


def frame_times(stamps: list, durations: list, time_base, average_rate=None):
    """docs/model.md's video times from a stream's integer ticks: each frame's presentation time in seconds after
    the first frame's, and the clip's end D (the last frame's time plus its duration), each the exact rational
    `ticks * time_base` rounded once to a double (Python's float of a Fraction), never a sum of rounded
    seconds. `stamps` are the frames' best-effort timestamps (None: unknown, the frame then starts where the
    previous one ended); `durations` their durations in ticks (None or <= 0: unknown, then the stream's average
    frame interval 1 / average_rate rounded to the nearest tick, as libavutil's av_rescale_q rounds, or 0)."""
    from fractions import Fraction

    tb = Fraction(time_base)
    interval = 0
    if average_rate is not None and Fraction(average_rate) > 0:
        exact = 1 / (Fraction(average_rate) * tb)
        interval = math.floor(exact + Fraction(1, 2))  # to nearest, halves away from zero (it is positive)
    origin = next((p for p in stamps[:1] if p is not None), 0)
    offsets, end = [], 0
    for pts, duration in zip(stamps, durations):
        offset = end if pts is None else pts - origin
        offsets.append(offset)
        end = offset + (duration if duration is not None and duration > 0 else interval)
    return [float(o * tb) for o in offsets], float(end * tb)


def sample_frames(timestamps: list, duration: float, fps: float, max_frames: int) -> list:
    """docs/model.md's video sampling: indices of the frames taken at t = (k + 0.5) / fps for k = 0, 1, ...
    while t < duration (the end D itself is outside), at most max_frames; the frame taken at t is the last one
    whose timestamp is <= t. Timestamps count from the first frame and, like D, are doubles from exact ticks
    (`frame_times`); t is computed in double and compared with them directly, so a t that equals a frame's
    time takes that frame. CHOICE: when no sampling time falls inside the clip, or no frame is at or before
    a time, the first frame is taken."""
    if len(timestamps) == 0:
        raise ValueError("a video needs at least one frame")
    order = sorted(range(len(timestamps)), key=lambda i: (timestamps[i], i))
    taken = []
    k = 0
    while len(taken) < max_frames:
        t = (k + 0.5) / fps
        if not t < duration:
            break
        best = order[0]
        for i in order:
            if timestamps[i] <= t:
                best = i
        taken.append(best)
        k += 1
    if not taken:
        taken = [order[0]]
    return taken


def decode_video(path: str):
    """An MP4 or WebM file's frames in presentation order: (frames uint8 [H, W, 3] each, their presentation
    times in seconds after the first frame's, the clip's end D in seconds). Every decoded frame is kept
    (`-fps_mode passthrough`), converted to RGB24 by libswscale with SWS_FLAGS; times and D come from
    ffprobe's per-frame `best_effort_timestamp` and duration in the stream's time base (`frame_times`), not
    from the container's duration."""
    info = _probe(path, "v", "width,height,time_base,avg_frame_rate")
    h, w = int(info["height"]), int(info["width"])
    raw = _run([FFMPEG, "-v", "error", "-i", path, "-map", "0:v:0", "-fps_mode", "passthrough",
                "-sws_flags", SWS_FLAGS, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
    frames = np.frombuffer(raw, np.uint8).reshape(-1, h, w, 3)
    out = _run([FFPROBE, "-v", "error", "-select_streams", "v:0", "-show_entries",
                "frame=best_effort_timestamp,duration,pkt_duration", "-of", "json", path])

    def ticks(frame: dict, *keys):
        # FFmpeg 5.1's ffprobe names a frame's duration pkt_duration; later ones, duration. Unknown: None.
        for key in keys:
            value = frame.get(key)
            if value not in (None, "", "N/A"):
                return int(value)
        return None

    listed = json.loads(out)["frames"]
    stamps = [ticks(f, "best_effort_timestamp") for f in listed]
    durations = [ticks(f, "duration", "pkt_duration") for f in listed]
    if len(stamps) != frames.shape[0]:
        raise RuntimeError(f"{path}: {frames.shape[0]} frames decoded but {len(stamps)} timestamps")
    rate = info.get("avg_frame_rate", "0/0")
    times, end = frame_times(stamps, durations, info["time_base"], None if rate.endswith("/0") else rate)
    return [f.copy() for f in frames], times, end


def decode_audio(path: str):
    """A WAV, FLAC, MP3 or Opus file's samples as float32 [n, channels] at its own rate, and the rate. FFmpeg's
    decoder (with its trimming of encoder delay and padding); integer samples become floats exactly."""
    info = _probe(path, "a", "sample_rate,channels")
    rate, channels = int(info["sample_rate"]), int(info["channels"])
    raw = _run([FFMPEG, "-v", "error", "-i", path, "-map", "0:a:0", "-f", "f32le", "-c:a", "pcm_f32le", "-"])
    return np.frombuffer(raw, "<f4").reshape(-1, channels).copy(), rate


def resample(samples: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Mono float32 samples resampled by libswresample at its default settings, flushed at the end: the
    `ffmpeg` tool's automatic `aresample`, float in and out. PyAV's `AudioResampler` (another FFmpeg's
    libswresample) gives the same bits on the goldens' clips; the self-test says so when PyAV is present."""
    x = np.ascontiguousarray(samples, dtype="<f4")
    if from_rate == to_rate or x.size == 0:
        return x.astype(np.float32)
    raw = _run([FFMPEG, "-v", "error", "-f", "f32le", "-ar", str(from_rate), "-ac", "1", "-i", "-",
                "-f", "f32le", "-c:a", "pcm_f32le", "-ar", str(to_rate), "-"], x.tobytes())
    return np.frombuffer(raw, "<f4").astype(np.float32)


def resample_pyav(samples: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """The same resampling through PyAV (its wheel's own FFmpeg), for comparison."""
    import fractions

    import av

    r = av.AudioResampler(format="flt", layout="mono", rate=to_rate)
    frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(samples, np.float32)[None, :], format="flt",
                                       layout="mono")
    frame.sample_rate, frame.pts, frame.time_base = from_rate, 0, fractions.Fraction(1, from_rate)
    out = r.resample(frame) + r.resample(None)
    return np.concatenate([o.to_ndarray().reshape(-1) for o in out]) if out else np.zeros(0, np.float32)


# --------------------------------------------------------------------------------------------------
# the model


class Model:
    def __init__(self, source, dtype: torch.dtype = torch.float32):
        """source: a path or the bytes of a checkpoint. dtype: the compute precision (F32 normally,
        F64 for the self-check variant); weights keep their BF16 values either way."""
        if isinstance(source, (bytes, bytearray)):
            data = bytes(source)
        else:
            with open(source, "rb") as f:
                data = f.read()
        self.sha256 = hashlib.sha256(data).hexdigest()
        meta, tensors = read_safetensors(data)
        names = set(tensors)
        cfg = parse_config(meta, names)
        expected = expected_tensors(cfg, names)
        for name in sorted(names - set(expected)):
            raise CheckpointError(f"tensor {name!r} is not part of a version 1 checkpoint with this metadata")
        for name, (dt, shape, required) in expected.items():
            if name not in tensors:
                if required:
                    raise CheckpointError(f"missing tensor {name!r}")
                continue
            got_dt, t = tensors[name]
            if got_dt != dt:
                raise CheckpointError(f"tensor {name!r} is {got_dt}, expected {dt}")
            if list(t.shape) != shape:
                raise CheckpointError(f"tensor {name!r} has shape {list(t.shape)}, metadata says {shape}")
        self.cfg = cfg
        self.meta = meta
        self.dtype = dtype
        self.w = {name: t.to(dtype) for name, (dt, t) in tensors.items()}
        # mel filters and temperatures are used in F32 whatever the compute precision
        if "frontend.audio.mel_filters" in tensors:
            self.mel_filters = tensors["frontend.audio.mel_filters"][1].to(torch.float32)
        if "head.choice.temperatures" in tensors:
            self.temperatures = tensors["head.choice.temperatures"][1].to(torch.float32)
        self._rope_freq = [
            cfg.rope_theta ** (-2.0 * j / cfg.head_dim) for j in range(cfg.head_dim // 2)
        ]
        st, sh, _ = cfg.rope_sections
        self._rope_axis = [0 if j < st else 1 if j < st + sh else 2 for j in range(cfg.head_dim // 2)]

    # ---------------------------------------------------------------------------- the trunk

    def rope_tables(self, positions: torch.Tensor):
        """positions [n, 3] int64 -> cos, sin [n, head_dim/2] in the compute precision.
        CHOICE: the angles and their cos/sin are computed in float64, then rounded once."""
        pos = positions.to(torch.float64)
        axis = torch.tensor(self._rope_axis, dtype=torch.long)
        freq = torch.tensor(self._rope_freq, dtype=torch.float64)
        angle = pos[:, axis] * freq[None, :]
        return torch.cos(angle).to(self.dtype), torch.sin(angle).to(self.dtype)

    @staticmethod
    def apply_rope(x, cos, sin):
        """x [n, heads, head_dim]; rotate-half pairs (j, j + head_dim/2)."""
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        c, s = cos[:, None, :], sin[:, None, :]
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)

    def trunk(self, segments: list) -> list:
        """Runs the packed segments through the trunk; returns each segment's STATES [n_i, hidden]."""
        cfg, w = self.cfg, self.w
        lengths = [int(s.tokens.shape[0]) for s in segments]
        total = sum(lengths)
        if total == 0:
            return [torch.zeros((0, cfg.hidden), dtype=self.dtype) for _ in segments]
        x = torch.cat([s.tokens.to(self.dtype) for s in segments if s.tokens.shape[0]], dim=0)
        pos = torch.cat([s.positions for s in segments if s.positions.shape[0]], dim=0)
        cos, sin = self.rope_tables(pos)
        nh, hd = cfg.heads, cfg.head_dim
        scale = math.sqrt(hd)
        for i in range(cfg.depth):
            p = f"blocks.{i}."
            n1 = rms_norm(x, w[p + "attn_norm.weight"], cfg.norm_eps)
            qkv = linear(n1, w[p + "attn.qkv.weight"])
            q = qkv[:, : nh * hd].reshape(total, nh, hd)
            k = qkv[:, nh * hd : 2 * nh * hd].reshape(total, nh, hd)
            v = qkv[:, 2 * nh * hd :].reshape(total, nh, hd)
            q = self.apply_rope(q, cos, sin)
            k = self.apply_rope(k, cos, sin)
            attn = torch.empty((total, nh * hd), dtype=self.dtype)
            start = 0
            for n in lengths:
                if n == 0:
                    continue
                qs = q[start : start + n].transpose(0, 1)  # [heads, n, hd]
                ks = k[start : start + n].transpose(0, 1)
                vs = v[start : start + n].transpose(0, 1)
                scores = mm(qs, ks.transpose(1, 2)) / scale
                probs = torch.softmax(scores, dim=-1)
                o = mm(probs, vs)  # [heads, n, hd]
                attn[start : start + n] = o.transpose(0, 1).reshape(n, nh * hd)
                start += n
            x = x + linear(attn, w[p + "attn.out.weight"])
            n2 = rms_norm(x, w[p + "mlp_norm.weight"], cfg.norm_eps)
            gu = linear(n2, w[p + "mlp.gate_up.weight"])
            gate, up = gu[:, : cfg.ffn_hidden], gu[:, cfg.ffn_hidden :]
            x = x + linear(F.silu(gate) * up, w[p + "mlp.down.weight"])
        h = rms_norm(x, w["final_norm.weight"], cfg.norm_eps)
        out, start = [], 0
        for n in lengths:
            out.append(h[start : start + n])
            start += n
        return out

    # ---------------------------------------------------------------------------- heads

    def embedding(self, states: torch.Tensor) -> torch.Tensor:
        if states.shape[0] == 0:
            return torch.zeros(self.cfg.dimensions, dtype=self.dtype)
        pooled = states.mean(dim=0, keepdim=True)
        return l2_normalize(linear(pooled, self.w["head.embedding.weight"]))[0]

    def token_vectors(self, states: torch.Tensor) -> torch.Tensor:
        if "head.token.weight" not in self.w:
            raise Unsupported("the checkpoint has no head.token.weight")
        if states.shape[0] == 0:
            return torch.zeros((0, self.cfg.token_width), dtype=self.dtype)
        return l2_normalize(linear(states, self.w["head.token.weight"]))

    def byte_logits(self, states: torch.Tensor) -> torch.Tensor:
        if "head.byte.weight" not in self.w:
            raise Unsupported("the checkpoint has no head.byte.weight")
        return linear(states, self.w["head.byte.weight"])

    def _outputs(self, segments, token_vectors=True):
        states = self.trunk(segments)
        out = {
            "states": states,
            "embeddings": torch.stack([self.embedding(s) for s in states]),
            "segments": segments,
        }
        if token_vectors and "head.token.weight" in self.w:
            out["token_vectors"] = [self.token_vectors(s) for s in states]
        return out

    # ---------------------------------------------------------------------------- text

    def text_segment(self, text: bytes, choose: bool = False) -> Segment:
        return self.token_segment(list(bytes(text)) + ([CHOOSE_TOKEN] if choose else []))

    def token_segment(self, ids: list) -> Segment:
        """A text segment from rows of `embed.byte.weight`: bytes, MASK (256) or CHOOSE (257)."""
        idx = torch.tensor(ids, dtype=torch.long)
        tokens = self.w["embed.byte.weight"][idx] if ids else torch.zeros((0, self.cfg.hidden), dtype=self.dtype)
        i = torch.arange(len(ids), dtype=torch.long)
        return Segment(tokens, torch.stack([i, i, i], dim=1))

    def encode_texts(self, texts: list) -> dict:
        """texts: a list of bytes (or str, encoded as UTF-8). One packed forward."""
        texts = [t.encode("utf-8") if isinstance(t, str) else bytes(t) for t in texts]
        return self._outputs([self.text_segment(t) for t in texts])

    def text_choose(self, prompts: list, legal: list, groups: list) -> list:
        """prompts: bytes; legal: the legal bytes of each item (bytes); groups: temperature group of
        each item. Returns, per item, the probabilities over its legal bytes (in their given order)."""
        if "head.byte.weight" not in self.w or self.cfg.choice_groups == 0:
            raise Unsupported("text_choose needs head.byte.weight and at least one choice group")
        prompts = [p.encode("utf-8") if isinstance(p, str) else bytes(p) for p in prompts]
        segments = [self.text_segment(p, choose=True) for p in prompts]
        states = self.trunk(segments)
        result = []
        for s, lb, g in zip(states, legal, groups):
            lb = list(bytes(lb))
            if not lb:
                raise ValueError("an item needs at least one legal byte")
            if not 0 <= g < self.cfg.choice_groups:
                raise ValueError(f"group {g} outside 0..{self.cfg.choice_groups - 1}")
            logits = self.byte_logits(s[-1:])[0]  # at the CHOOSE position
            sel = logits[torch.tensor(lb, dtype=torch.long)] / self.temperatures[g].to(self.dtype)
            result.append(torch.softmax(sel, dim=0))
        return result

    # ---------------------------------------------------------------------------- images

    def _need(self, name, what):
        if name not in self.w:
            raise Unsupported(f"the checkpoint has no {name}: {what} are unsupported")

    @staticmethod
    def pixels_to_rgb_float(pixels) -> torch.Tensor:
        """uint8 [H, W] or [H, W, C] with C in 1 (gray), 2 (gray + alpha), 3 (RGB), 4 (RGBA) ->
        float32 [3, H, W] with values 0..255. Grayscale replicates; alpha is dropped."""
        a = np.asarray(pixels)
        if a.dtype != np.uint8:
            raise ValueError("pixels must be uint8")
        if a.ndim == 2:
            a = a[:, :, None]
        if a.ndim != 3 or a.shape[2] not in (1, 2, 3, 4) or a.shape[0] == 0 or a.shape[1] == 0:
            raise ValueError(f"pixels of shape {a.shape} are not an image")
        if a.shape[2] in (1, 2):
            a = np.repeat(a[:, :, :1], 3, axis=2)
        else:
            a = a[:, :, :3]
        return torch.from_numpy(np.ascontiguousarray(a)).to(torch.float32).permute(2, 0, 1).contiguous()

    def _resize_normalize(self, rgb: torch.Tensor, gh: int, gw: int) -> torch.Tensor:
        """rgb float [3, H, W] (0..255) -> float [3, gh*p, gw*p] scaled to [0, 1] and normalised."""
        p = self.cfg.image["patch_side"]
        y = F.interpolate(
            rgb[None], size=(gh * p, gw * p), mode="bilinear", antialias=True, align_corners=False
        )[0]
        mean = torch.tensor(self.cfg.image["mean"], dtype=torch.float32)[:, None, None]
        std = torch.tensor(self.cfg.image["std"], dtype=torch.float32)[:, None, None]
        return (y / 255.0 - mean) / std

    def _patchify(self, img: torch.Tensor, gh: int, gw: int) -> torch.Tensor:
        """[C, gh*p, gw*p] -> [gh*gw, p*p*C], row-major over the grid, index (py*p + px)*C + c."""
        p = self.cfg.image["patch_side"]
        c = img.shape[0]
        t = img.permute(1, 2, 0).reshape(gh, p, gw, p, c).permute(0, 2, 1, 3, 4)
        return t.reshape(gh * gw, p * p * c)

    def image_segment(self, pixels) -> Segment:
        self._need("embed.image.weight", "images")
        cfg = self.cfg.image
        rgb = self.pixels_to_rgb_float(pixels)
        gh, gw = image_grid(rgb.shape[1], rgb.shape[2], cfg["patch_side"], cfg["max_patches"])
        patches = self._patchify(self._resize_normalize(rgb, gh, gw), gh, gw)
        tokens = linear(patches.to(self.dtype), self.w["embed.image.weight"]) + self.w["embed.image.bias"]
        r = torch.arange(gh, dtype=torch.long).repeat_interleave(gw)
        c = torch.arange(gw, dtype=torch.long).repeat(gh)
        pos = torch.stack([torch.zeros_like(r), r, c], dim=1)
        return Segment(tokens, pos, {"patches": patches, "grid": (gh, gw)})

    def encode_images(self, images: list) -> dict:
        return self._outputs([self.image_segment(im) for im in images])

    # ---------------------------------------------------------------------------- video

    def sample_video_frames(self, timestamps: list, duration: float) -> list:
        """Indices of the frames taken at the checkpoint's fps and max_frames (`sample_frames`)."""
        return sample_frames(timestamps, duration, self.cfg.video["fps"], self.cfg.video["max_frames"])

    def video_segment(self, frames: list, timestamps: list, duration: float) -> Segment:
        """frames: decoded frames as uint8 [H, W, C] arrays in presentation order; timestamps: their
        presentation times in seconds; duration: the clip's length in seconds."""
        self._need("embed.video.weight", "videos")
        icfg, vcfg = self.cfg.image, self.cfg.video
        p, T = icfg["patch_side"], vcfg["tubelet_frames"]
        taken = self.sample_video_frames(timestamps, duration)
        rgb = [self.pixels_to_rgb_float(frames[i]) for i in taken]
        gh, gw = image_grid(rgb[0].shape[1], rgb[0].shape[2], p, vcfg["max_patches_per_frame"])
        per_frame = [self._patchify(self._resize_normalize(x, gh, gw), gh, gw) for x in rgb]  # [gh*gw, p*p*C]
        n_tub = (len(per_frame) + T - 1) // T
        per_frame += [per_frame[-1]] * (n_tub * T - len(per_frame))
        # tubelet vector index ((f*p + py)*p + px)*C + c: the frames' patch vectors one after another
        tub = torch.stack(per_frame).reshape(n_tub, T, gh * gw, -1).permute(0, 2, 1, 3)
        tubelets = tub.reshape(n_tub * gh * gw, -1)
        tokens = linear(tubelets.to(self.dtype), self.w["embed.video.weight"]) + self.w["embed.video.bias"]
        ti = torch.arange(n_tub, dtype=torch.long).repeat_interleave(gh * gw)
        r = torch.arange(gh, dtype=torch.long).repeat_interleave(gw).repeat(n_tub)
        c = torch.arange(gw, dtype=torch.long).repeat(gh * n_tub)
        pos = torch.stack([ti, r, c], dim=1)
        return Segment(tokens, pos, {"tubelets": tubelets, "grid": (gh, gw), "taken": taken})

    def encode_videos(self, clips: list) -> dict:
        """clips: [(frames, timestamps, duration)]."""
        return self._outputs([self.video_segment(*c) for c in clips])

    # ---------------------------------------------------------------------------- audio

    def log_mel(self, samples: torch.Tensor) -> torch.Tensor:
        """Mono float32 samples at the model's rate (already zero-extended) -> [frames, mel_bins]."""
        a = self.cfg.audio
        window = torch.hann_window(a["n_fft"], periodic=True, dtype=torch.float32)
        X = torch.stft(
            samples, a["n_fft"], a["hop"], window=window, center=True, pad_mode="reflect", return_complex=True
        )
        power = X[:, :-1].abs() ** 2  # the last frame dropped, as Whisper does
        # CHOICE: the mel projection is part of the feature extraction, done in F32 like Whisper's,
        # not a model matrix product, so its inputs are not rounded to BF16.
        mel = self.mel_filters @ power
        log_spec = torch.clamp(mel, min=1e-10).log10()
        log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
        return ((log_spec + 4.0) / 4.0).transpose(0, 1).contiguous()

    def audio_segment(self, samples, sample_rate: int) -> Segment:
        """samples: float [n] (mono) or [n, channels]; sample_rate in Hz."""
        self._need("embed.audio.weight", "audio clips")
        a = self.cfg.audio
        x = torch.as_tensor(np.asarray(samples, dtype=np.float32))
        if x.ndim == 2:
            x = x.mean(dim=1)
        if x.ndim != 1:
            raise ValueError("samples must be [n] or [n, channels]")
        if x.shape[0] == 0:
            return Segment(
                torch.zeros((0, self.cfg.hidden), dtype=self.dtype),
                torch.zeros((0, 3), dtype=torch.long),
                {"log_mel": torch.zeros((0, a["mel_bins"])), "truncated": False},
            )
        if sample_rate != a["sample_rate"]:
            # docs/model.md: mono, then libswresample at its defaults (the channels are averaged above).
            x = torch.from_numpy(resample(x.numpy(), sample_rate, a["sample_rate"]))
        # docs/model.md: samples past max_patches * frames_per_patch * hop are dropped before the log-mel, so its
        # clamp (max - 8) is taken over the kept part. CHOICE (docs/decisions.md): a nonempty clip that
        # resamples to nothing is zero-extended like any short clip, never an empty item.
        budget = a["max_patches"] * a["frames_per_patch"] * a["hop"]
        truncated = x.shape[0] > budget
        x = x[:budget]
        min_len = a["n_fft"] // 2 + 1
        if x.shape[0] < min_len:
            x = torch.cat([x, torch.zeros(min_len - x.shape[0], dtype=x.dtype)])
        frames = self.log_mel(x)
        fpp, bins = a["frames_per_patch"], a["mel_bins"]
        n_patches = (frames.shape[0] + fpp - 1) // fpp
        padded = torch.zeros((n_patches * fpp, bins), dtype=torch.float32)
        padded[: frames.shape[0]] = frames
        patches = padded.reshape(n_patches, fpp * bins)
        patches = patches[: a["max_patches"]]
        tokens = linear(patches.to(self.dtype), self.w["embed.audio.weight"]) + self.w["embed.audio.bias"]
        i = torch.arange(patches.shape[0], dtype=torch.long)
        return Segment(tokens, torch.stack([i, i, i], dim=1), {"log_mel": frames, "patches": patches, "truncated": truncated})

    def encode_audio(self, clips: list) -> dict:
        """clips: [(samples, sample_rate)]."""
        return self._outputs([self.audio_segment(s, r) for s, r in clips])


# --------------------------------------------------------------------------------------------------
# agreement as docs/model.md measures it


def row_cosines(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a, b = a.double(), b.double()
    na, nb = a.norm(dim=-1), b.norm(dim=-1)
    cos = (a * b).sum(-1) / (na * nb)
    both_zero = (na == 0) & (nb == 0)
    return torch.where(both_zero, torch.ones_like(cos), torch.nan_to_num(cos, nan=0.0))


def rel_frobenius(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    d = b.norm().item()
    return (a - b).norm().item() / d if d > 0 else (0.0 if a.norm().item() == 0 else math.inf)


def rows_agree(a, b):
    """STATES / TOKEN_VECTORS rule: every row's cosine >= 0.999, relative Frobenius <= 1e-2."""
    if a.shape != b.shape:
        return False, f"shapes {tuple(a.shape)} vs {tuple(b.shape)}"
    if a.shape[0] == 0:
        return True, "empty"
    cmin = row_cosines(a, b).min().item()
    fro = rel_frobenius(a, b)
    mad = (a.double() - b.double()).abs().max().item()
    return cmin >= 0.999 and fro <= 1e-2, f"min row cos {cmin:.7f}, rel fro {fro:.2e}, max abs {mad:.2e}"


def embeddings_agree(a, b):
    """EMBEDDINGS rule: cosine >= 0.9999; a zero embedding must be exactly zero on both sides."""
    ok, worst = True, 1.0
    for x, y in zip(a, b):
        zx, zy = bool((x == 0).all()), bool((y == 0).all())
        if zx or zy:
            ok = ok and zx and zy
            continue
        c = row_cosines(x[None], y[None]).item()
        worst = min(worst, c)
        ok = ok and c >= 0.9999
    return ok, f"min cos {worst:.8f}"


# --------------------------------------------------------------------------------------------------
# self-tests


def _aa_bilinear_1d_weights(n_in: int, n_out: int):
    """An independent (numpy, float64) construction of the antialiased triangle-filter weights that
    PIL's BILINEAR and torch's interpolate(antialias=True, align_corners=False) use."""
    scale = n_in / n_out
    support = max(scale, 1.0)  # the triangle filter (support 1) widened by the scale when shrinking
    W = np.zeros((n_out, n_in))
    for i in range(n_out):
        center = (i + 0.5) * scale
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        ws = [max(0.0, 1.0 - abs((j - center + 0.5) / support)) for j in range(lo, hi)]
        tot = sum(ws)
        for j, wv in zip(range(lo, hi), ws):
            W[i, j] = wv / tot
    return W


def _check(results, name, ok, detail=""):
    results.append((name, bool(ok), detail))
    print(f"  [{'ok' if ok else 'FAIL'}] {name}{': ' + detail if detail else ''}", flush=True)


def _deterministic_text(n: int, seed: int) -> bytes:
    """Printable ASCII from a 64-bit LCG (Knuth's MMIX constants), the high bits picking 32..126."""
    x = seed & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        out.append(32 + ((x >> 33) % 95))
    return bytes(out)


def selftest(checkpoint: str) -> int:
    torch.set_num_threads(1)
    results = []
    m32 = Model(checkpoint)
    m64 = Model(checkpoint, dtype=torch.float64)
    cfg = m32.cfg
    print(f"torch {torch.__version__}, checkpoint {checkpoint} (sha256 {m32.sha256[:16]}...)")

    print("loader")
    with open(checkpoint, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])

    def mutated(fn):
        h = json.loads(json.dumps(header))
        fn(h)
        text = json.dumps(h).encode()
        text += b" " * ((-len(text)) % 8)
        return struct.pack("<Q", len(text)) + text + data[8 + n :]

    bad = {
        "format": lambda h: h["__metadata__"].__setitem__("format", "other"),
        "version 2": lambda h: h["__metadata__"].__setitem__("uform.version", "2"),
        "missing tensor": lambda h: h.pop("blocks.1.mlp.down.weight"),
        "missing key": lambda h: h["__metadata__"].pop("uform.ffn_hidden"),
        "hidden disagrees": lambda h: h["__metadata__"].__setitem__("uform.hidden", "32"),
        "sections": lambda h: h["__metadata__"].__setitem__("uform.rope.sections", "4,6,5"),
        "dtype": lambda h: h["embed.byte.weight"].__setitem__("dtype", "F16"),
        "offsets past end": lambda h: h["head.choice.temperatures"].__setitem__("data_offsets", [10**9, 10**9 + 8]),
    }
    for what, fn in bad.items():
        try:
            Model(mutated(fn))
            _check(results, f"refuses {what}", False, "accepted")
        except CheckpointError as e:
            _check(results, f"refuses {what}", True, str(e))
    _check(results, "accepts an unmodified re-serialised header", isinstance(Model(mutated(lambda h: None)), Model))

    print("front-end pieces")
    _check(results, "grid 64x64 / p8 / 64 -> 8x8", image_grid(64, 64, 8, 64) == (8, 8))
    _check(results, "grid 37x53 / p8 / 64 -> 6x9", image_grid(37, 53, 8, 64) == (6, 9), str(image_grid(37, 53, 8, 64)))
    _check(results, "grid 24x32 / p8 / 16 -> 3x4", image_grid(24, 32, 8, 16) == (3, 4))
    _check(results, "grid 77x77 / p8 / 64 -> 8x8 (7x7 without the 1e-6)", image_grid(77, 77, 8, 64) == (8, 8))
    _check(results, "grid 45x100 / p8 / 64 -> 5x11", image_grid(45, 100, 8, 64) == (5, 11))
    exact_short = [(h, w) for h in range(8, 400, 8) for w in range(8, 400, 8)
                   if (h // 8) * (w // 8) == 64 and image_grid(h, w, 8, 64) != (h // 8, w // 8)]
    _check(results, "every exact 64-patch grid is kept", not exact_short, str(exact_short[:3]))
    g = torch.Generator().manual_seed(1)
    for (hin, win, hout, wout) in [(37, 53, 48, 72), (90, 120, 48, 72), (8, 8, 64, 64), (24, 32, 24, 32), (5, 300, 16, 40)]:
        img = torch.randint(0, 256, (3, hin, win), generator=g).float()
        got = F.interpolate(img[None], size=(hout, wout), mode="bilinear", antialias=True, align_corners=False)[0]
        Wh, Ww = _aa_bilinear_1d_weights(hin, hout), _aa_bilinear_1d_weights(win, wout)
        want = np.einsum("oh,chw,pw->cop", Wh, img.double().numpy(), Ww)
        err = float(np.abs(got.double().numpy() - want).max())
        _check(results, f"interpolate(antialias) {hin}x{win}->{hout}x{wout} = separable triangle filter", err < 1e-3, f"max abs {err:.1e} (of 255)")
    # log-mel against numpy's FFT with explicit reflect padding
    a = cfg.audio
    t = np.arange(8000) / 16000.0
    tone = (0.5 * np.sin(2 * np.pi * 440.0 * t)).astype(np.float32)
    lm = m32.log_mel(torch.from_numpy(tone)).double().numpy()
    xp = np.pad(tone.astype(np.float64), a["n_fft"] // 2, mode="reflect")
    win = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(a["n_fft"]) / a["n_fft"])
    nfr = 1 + len(tone) // a["hop"]
    spec = np.stack([np.fft.rfft(xp[i * a["hop"] : i * a["hop"] + a["n_fft"]] * win) for i in range(nfr)], 1)
    pw = np.abs(spec[:, :-1]) ** 2
    lg = np.log10(np.maximum(m32.mel_filters.double().numpy() @ pw, 1e-10))
    lg = (np.maximum(lg, lg.max() - 8.0) + 4.0) / 4.0
    err = float(np.abs(lm - lg.T).max())
    _check(results, "log-mel = numpy F64 Whisper recipe", lm.shape == (50, 80) and err < 1e-3, f"shape {lm.shape}, max abs {err:.1e}")

    print("RoPE")
    x = torch.randn(5, cfg.heads, cfg.head_dim, generator=g, dtype=torch.float64)
    cos, sin = m64.rope_tables(torch.zeros((5, 3), dtype=torch.long))
    _check(results, "position 0 is the identity", torch.equal(m64.apply_rope(x, cos, sin), x))
    pos = torch.tensor([[3, 3, 3], [7, 7, 7], [10, 10, 10], [14, 14, 14]])
    cos, sin = m64.rope_tables(pos)
    qv = torch.randn(1, 1, cfg.head_dim, generator=g, dtype=torch.float64).expand(4, 1, -1)
    kv = torch.randn(1, 1, cfg.head_dim, generator=g, dtype=torch.float64).expand(4, 1, -1)
    rq, rk = m64.apply_rope(qv, cos, sin), m64.apply_rope(kv, cos, sin)
    d1 = (rq[1] * rk[0]).sum().item()  # positions 7 and 3
    d2 = (rq[3] * rk[2]).sum().item()  # positions 14 and 10
    _check(results, "text positions: q.k depends on the offset only", abs(d1 - d2) < 1e-9, f"{d1:.6f} vs {d2:.6f}")
    cos, sin = m64.rope_tables(torch.tensor([[0, 0, 1]]))
    r = m64.apply_rope(x[:1], cos, sin)
    st, sh, sw = cfg.rope_sections
    half = cfg.head_dim // 2
    moved = (r - x[:1]).abs().amax(dim=(0, 1))
    idx = list(range(st + sh, half)) + list(range(half + st + sh, 2 * half))
    _check(results, "position w moves only the w section's pairs",
           bool(moved[idx].min() > 0) and float(moved.sum() - moved[idx].sum()) == 0.0)

    print("text")
    texts = [b"", b"x", b"a cat on a mat", "Größe: 大きい猫 🐈 naïve café".encode(), _deterministic_text(300, 1), _deterministic_text(2048, 2)]
    packed = m32.encode_texts(texts)
    ok_states, ok_emb = True, True
    worst = 0.0
    for i, t in enumerate(texts):
        one = m32.encode_texts([t])
        d = (one["states"][0] - packed["states"][i]).abs().max().item() if len(t) else 0.0
        worst = max(worst, d, (one["embeddings"][0] - packed["embeddings"][i]).abs().max().item())
        ok_states &= d <= 1e-5
        ok_emb &= embeddings_agree(one["embeddings"], packed["embeddings"][i : i + 1])[0]
    _check(results, "packed text batch = items one by one", ok_states and ok_emb, f"max abs {worst:.1e}")
    _check(results, "empty text: no states, zero embedding",
           packed["states"][0].shape == (0, cfg.hidden) and bool((packed["embeddings"][0] == 0).all()))
    norms = torch.stack([packed["embeddings"][i].norm() for i in range(1, len(texts))])
    _check(results, "embeddings are unit vectors", bool(((norms - 1).abs() < 1e-5).all()))
    p64 = m64.encode_texts(texts)
    for i, t in enumerate(texts):
        ok, det = rows_agree(packed["states"][i], p64["states"][i])
        _check(results, f"F32 vs F64 states, text of {len(t)} bytes", ok, det)
        ok, det = rows_agree(packed["token_vectors"][i], p64["token_vectors"][i])
        _check(results, f"F32 vs F64 token vectors, text of {len(t)} bytes", ok, det)
    ok, det = embeddings_agree(packed["embeddings"], p64["embeddings"])
    _check(results, "F32 vs F64 text embeddings", ok, det)
    # attention never crosses a segment: changing one item leaves the others untouched
    alt = m32.encode_texts([b"a cat on a mat", b"zzzz"])
    ref = m32.encode_texts([b"a cat on a mat", b"qqqqqqqq"])
    _check(results, "segments do not see each other", torch.equal(alt["states"][0], ref["states"][0]))

    print("choose")
    prompts = [b"Is the sky blue? ", b"Pick one: ", b"", b"bytes at the edges "]
    legal = [b"yn", b"ABCD", b"01", bytes([0, 128, 255])]
    groups = [0, 1, 0, 1]
    c32 = m32.text_choose(prompts, legal, groups)
    c64 = m64.text_choose(prompts, legal, groups)
    one = [m32.text_choose([p], [l], [gg])[0] for p, l, gg in zip(prompts, legal, groups)]
    d = max((a - b.float()).abs().max().item() for a, b in zip(c32, c64))
    _check(results, "F32 vs F64 choice probabilities", d <= 2e-3, f"max abs {d:.1e}")
    d = max((a - b).abs().max().item() for a, b in zip(c32, one))
    _check(results, "packed choose = one by one", d <= 1e-6, f"max abs {d:.1e}")
    _check(results, "probabilities sum to 1", all(abs(p.sum().item() - 1) < 1e-5 for p in c32))
    t1 = m32.text_choose([b"Pick one: "], [b"ABCD"], [0])[0]
    t2 = m32.text_choose([b"Pick one: "], [b"ABCD"], [1])[0]
    T = m32.temperatures
    sharp = torch.softmax(torch.log(t2) * T[1] / T[0], 0)
    _check(results, "group temperatures divide the logits", (sharp - t1).abs().max().item() < 1e-5)

    print("images, video, audio")
    rng = np.random.default_rng(5)
    imgs = [rng.integers(0, 256, (37, 53, 3), dtype=np.uint8), rng.integers(0, 256, (8, 8, 3), dtype=np.uint8),
            rng.integers(0, 256, (90, 120), dtype=np.uint8), rng.integers(0, 256, (20, 30, 4), dtype=np.uint8)]
    i32, i64 = m32.encode_images(imgs), m64.encode_images(imgs)
    for k in range(len(imgs)):
        ok, det = rows_agree(i32["states"][k], i64["states"][k])
        _check(results, f"F32 vs F64 image {imgs[k].shape} states", ok, det)
    _check(results, "F32 vs F64 image embeddings", *embeddings_agree(i32["embeddings"], i64["embeddings"]))
    gray = imgs[2]
    e_gray = m32.encode_images([gray])["embeddings"][0]
    e_rgb = m32.encode_images([np.repeat(gray[:, :, None], 3, axis=2)])["embeddings"][0]
    _check(results, "grayscale = its three-channel replica", torch.equal(e_gray, e_rgb))
    rgba = imgs[3]
    _check(results, "alpha is dropped", torch.equal(m32.encode_images([rgba])["embeddings"][0],
                                                   m32.encode_images([rgba[:, :, :3].copy()])["embeddings"][0]))
    one = [m32.encode_images([im])["embeddings"][0] for im in imgs]
    _check(results, "packed images = one by one", *embeddings_agree(torch.stack(one), i32["embeddings"]))

    frames = [rng.integers(0, 256, (24, 32, 3), dtype=np.uint8) for _ in range(6)]
    stamps = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
    _check(results, "video sampling 1 fps over 3 s takes frames at 0.5, 1.5, 2.5 s",
           m32.sample_video_frames(stamps, 3.0) == [1, 3, 5])
    _check(results, "video sampling stops at max_frames", m32.sample_video_frames([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], 6.0) == [0, 1, 2, 3])
    _check(results, "a clip shorter than the first time gives its first frame", m32.sample_video_frames([0.0, 0.1], 0.3) == [0])
    # Exact hits and the end (docs/model.md, "Video geometry"): times from ticks rounded once, D from the last frame.
    mp4_times, mp4_end = frame_times([1024 * i for i in range(30)], [1024] * 30, "1/10240")
    _check(results, "10 fps at 1/10240: 6144 ticks are 0.6 s exactly (6144 * (1 / 10240) would be 0.6000000000000001)",
           mp4_times[6] == 0.6 and 6144 * (1 / 10240) != 0.6 and mp4_end == 3.0, f"{mp4_times[6]!r}, D {mp4_end!r}")
    _check(results, "fps 2.5 on the 10 fps clip takes the frames its sampling times hit: 2 6 10 14 18",
           sample_frames(mp4_times, mp4_end, 2.5, 5) == [2, 6, 10, 14, 18], str(sample_frames(mp4_times, mp4_end, 2.5, 5)))
    webm_stamps = [round(i * 1000 / 15) for i in range(30)]  # 0, 67, 133, 200, ... 1933 ms
    webm_times, webm_end = frame_times(webm_stamps, [66] * 30, "1/1000")
    _check(results, "fps 2.5 on the 15 fps clip at 1/1000: 3 9 15 21 27, D = 1.999 s",
           sample_frames(webm_times, webm_end, 2.5, 5) == [3, 9, 15, 21, 27] and webm_end == 1.999,
           f"{sample_frames(webm_times, webm_end, 2.5, 5)}, D {webm_end!r}")
    _check(results, "the end is not sampled: fps 0.5 on 3.0 s takes one frame (t = 1.0; t = 3.0 = D is outside)",
           sample_frames(mp4_times, mp4_end, 0.5, 5) == [10])
    _check(results, "fps 2.5 on 3.0 s stops before t = 3.0: seven frames",
           sample_frames(mp4_times, mp4_end, 2.5, 10) == [2, 6, 10, 14, 18, 22, 26])
    _check(results, "a first sampling time equal to D gives the first frame (fps 1/6 on 3.0 s)",
           sample_frames(mp4_times, mp4_end, 1 / 6, 5) == [0])
    shifted = frame_times([512 + 1024 * i for i in range(30)], [1024] * 30, "1/10240")
    _check(results, "times count from the first frame, not the stream's zero", shifted == (mp4_times, mp4_end))
    _check(results, "a frame without a duration lasts the average interval, rounded to a tick (15 fps at 1 ms: 67)",
           frame_times(webm_stamps, [66] * 29 + [None], "1/1000", "15/1")[1] == 2.0)
    _check(results, "a frame without a time starts where the previous one ended",
           frame_times([0, None, 2048], [1024, 1024, 1024], "1/10240")[0] == [0.0, 0.1, 0.2])
    v32 = m32.encode_videos([(frames, stamps, 3.0)])
    v64 = m64.encode_videos([(frames, stamps, 3.0)])
    seg = v32["segments"][0]
    _check(results, "3 frames -> 2 tubelets x 3x4 grid, the last repeating frame 3",
           seg.tokens.shape[0] == 24 and torch.equal(seg.extras["tubelets"][12:, :192], seg.extras["tubelets"][12:, 192:]))
    ok, det = rows_agree(v32["states"][0], v64["states"][0])
    _check(results, "F32 vs F64 video states", ok, det)
    _check(results, "F32 vs F64 video embeddings", *embeddings_agree(v32["embeddings"], v64["embeddings"]))

    clips = [(tone, 16000), (rng.standard_normal(100).astype(np.float32) * 0.1, 16000), (np.zeros(0, np.float32), 16000)]
    a32, a64 = m32.encode_audio(clips), m64.encode_audio(clips)
    _check(results, "0.5 s -> 50 frames -> 13 patches; 100 samples -> 1 frame -> 1 patch; empty -> none",
           [s.shape[0] for s in a32["states"]] == [13, 1, 0])
    for k in range(2):
        ok, det = rows_agree(a32["states"][k], a64["states"][k])
        _check(results, f"F32 vs F64 audio clip {k} states", ok, det)
    _check(results, "F32 vs F64 audio embeddings (empty clip exactly zero)", *embeddings_agree(a32["embeddings"], a64["embeddings"]))
    stereo = np.stack([tone, np.zeros_like(tone)], axis=1)
    _check(results, "stereo averages its channels",
           torch.equal(m32.encode_audio([(stereo, 16000)])["embeddings"][0], m32.encode_audio([(tone * 0.5, 16000)])["embeddings"][0]))
    import shutil

    if shutil.which(FFMPEG):
        for rate in (44100, 48000, 22050, 8000):
            n = rate // 10
            x = (0.4 * np.sin(2 * np.pi * 440.0 * np.arange(n) / rate)).astype(np.float32)
            y = resample(x, rate, 16000)
            _check(results, f"libswresample {rate} Hz -> 16 kHz: {n} samples -> 1600", y.shape == (1600,), str(y.shape))
            try:
                z = resample_pyav(x, rate, 16000)
                _check(results, f"PyAV's libswresample gives the same bits at {rate} Hz", np.array_equal(y, z),
                       f"max abs {float(np.abs(y - z[: len(y)]).max()) if len(z) == len(y) else len(z)}")
            except ImportError:
                print("  [skip] PyAV is not installed: no comparison of the two libswresamples")
        seg = m32.audio_segment(np.stack([tone, tone], axis=1), 44100)
        _check(results, "44.1 kHz audio is resampled (8000 samples at 44.1 kHz -> 0.18 s -> 18 frames -> 5 patches)",
               seg.tokens.shape[0] == 5 and seg.extras["log_mel"].shape[0] == 18, str(seg.extras["log_mel"].shape))
    else:
        print(f"  [skip] no {FFMPEG}: resampling and decoding are not checked")

    print("mixed segments in one trunk call")
    segs = [m32.text_segment(b"a cat"), m32.image_segment(imgs[0]), m32.audio_segment(tone, 16000)]
    together = m32.trunk(segs)
    apart = [m32.trunk([s])[0] for s in segs]
    d = max((a - b).abs().max().item() for a, b in zip(together, apart))
    _check(results, "text + image + audio packed = apart", d <= 1e-5, f"max abs {d:.1e}")

    failed = [r for r in results if not r[1]]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.normpath(os.path.join(here, "..", "..", "tests", "data", "tiny.safetensors"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", default=default)
    ap.add_argument("--selftest", action="store_true", help="run the self-checks and exit")
    ap.add_argument("--text", action="append", default=[], help="encode a text and print its embedding")
    args = ap.parse_args(argv)
    if args.selftest:
        return selftest(args.checkpoint)
    m = Model(args.checkpoint)
    out = m.encode_texts(args.text or ["a cat on a mat"])
    np.set_printoptions(precision=5, suppress=True, linewidth=120)
    for t, e in zip(args.text or ["a cat on a mat"], out["embeddings"]):
        print(repr(t), e.numpy()[:8], "...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
