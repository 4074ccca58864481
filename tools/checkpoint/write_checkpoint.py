#!/usr/bin/env python3
"""Write a reproducible, randomly initialised UForm checkpoint (see docs/model.md, "The checkpoint").

    python3 tools/checkpoint/write_checkpoint.py --out tests/data/tiny.safetensors
    python3 tools/checkpoint/write_checkpoint.py --geometry small --out /tmp/small.safetensors
    python3 tools/checkpoint/write_checkpoint.py --geometry tiny --check tests/data/tiny.safetensors

Python 3.11+ standard library only. The output is the same byte for byte on every Python version and
every little- or big-endian IEEE-754 machine:

- Random numbers. Each tensor has its own stream of uniform bytes,
  SHAKE-256(b"uform/20261129/" + tensor name), so no tensor depends on another or on the order in
  which they are drawn. The stream is read as little-endian 64-bit words; a word's low 52 bits `m`
  give `u1 = 1 - m / 2**52` (in (0, 1]) for even words and `u2 = m / 2**52` (in [0, 1)) for odd
  words. Each pair gives two standard normals by Box-Muller in double precision:
  `r = sqrt(-2 log u1)`, `z0 = r cos(2 pi u2)`, `z1 = r sin(2 pi u2)`, in the order z0, z1, ...;
  a tensor of n values keeps the first n. (log, cos and sin come from the platform's C library;
  a last-bit difference there could change a float32 only where the double lies within that bit of a
  float32 rounding boundary, so --check in CI is what pins the bytes.)
- Values, drawn in double precision, then rounded to float32 (round to nearest even, as
  `struct.pack('<f')` does), then to BF16 by round to nearest even on the float32 bit pattern:
  byte embeddings `z`; every linear weight `[out, in]` `(1 / sqrt(in)) * z`; every bias (drawn,
  not zero, so that the bias path is exercised) `(1 / sqrt(in)) * z` with the `in` of its weight;
  norm weights `1 + 0.1 * z`. `head.choice.temperatures` is F32 `[1, 2, ...]` (one per group).
- `frontend.audio.mel_filters` is F32 and equals what Whisper's `mel_filters.npz` holds,
  `librosa.filters.mel(sr=16000, n_fft=400, n_mels=80)` (Slaney mel scale, Slaney normalisation),
  computed in float64 with librosa's one rounding to float32 before the normalisation (librosa fills
  a float32 array with the triangles, then multiplies it in place by the float64 norms; rounding only
  at the end would differ from Whisper's file in 118 values by one ulp) and its -0.0 at [0, 0].
  The result is bit-identical to `mel_80` in whisper/assets/mel_filters.npz.
- Layout: `__metadata__` first (the keys in docs/model.md's order, all values strings, floats as `%.9g`),
  then the tensors in docs/model.md's order, their data contiguous in the same order; the JSON header is
  compact and padded with spaces to a multiple of 8 bytes.

Generating "tiny" takes well under a second; "small" (about 42 million values) about half a minute.
"""

import argparse
import hashlib
import json
import math
import operator
import struct
import sys
import time
from array import array
from itertools import repeat

SEED = 20261129

GEOMETRIES = {
    "tiny": {
        "depth": 2, "hidden": 64, "heads": 2, "head_dim": 32, "ffn_hidden": 192,
        "norm_eps": 1e-6, "rope_theta": 10000.0, "rope_sections": (4, 6, 6),
        "dimensions": 64, "token_width": 32, "choice_groups": 2,
        "image_patch_side": 8, "image_channels": 3, "image_max_patches": 64,
        "image_mean": (0.5, 0.5, 0.5), "image_std": (0.5, 0.5, 0.5),
        "video_tubelet_frames": 2, "video_fps": 1.0, "video_max_frames": 4,
        "video_max_patches_per_frame": 16,
        "audio_sample_rate": 16000, "audio_n_fft": 400, "audio_hop": 160, "audio_mel_bins": 80,
        "audio_frames_per_patch": 4, "audio_max_patches": 256,
    },
}
GEOMETRIES["small"] = dict(
    GEOMETRIES["tiny"],
    depth=12, hidden=512, heads=8, head_dim=64, ffn_hidden=1536, dimensions=512, token_width=128,
    rope_sections=(8, 12, 12), image_max_patches=256,
)

BIG_ENDIAN = sys.byteorder == "big"


def fmt_float(x):
    return "%.9g" % x


def metadata(g):
    """The `__metadata__` map, keys in docs/model.md's order, every value a string."""
    floats = lambda xs: ",".join(fmt_float(x) for x in xs)
    return {
        "format": "uform",
        "uform.version": "1",
        "uform.depth": str(g["depth"]),
        "uform.hidden": str(g["hidden"]),
        "uform.heads": str(g["heads"]),
        "uform.head_dim": str(g["head_dim"]),
        "uform.ffn_hidden": str(g["ffn_hidden"]),
        "uform.norm_eps": fmt_float(g["norm_eps"]),
        "uform.rope.theta": fmt_float(g["rope_theta"]),
        "uform.rope.sections": ",".join(str(s) for s in g["rope_sections"]),
        "uform.dimensions": str(g["dimensions"]),
        "uform.token_width": str(g["token_width"]),
        "uform.choice.groups": str(g["choice_groups"]),
        "uform.image.patch_side": str(g["image_patch_side"]),
        "uform.image.channels": str(g["image_channels"]),
        "uform.image.max_patches": str(g["image_max_patches"]),
        "uform.image.mean": floats(g["image_mean"]),
        "uform.image.std": floats(g["image_std"]),
        "uform.video.tubelet_frames": str(g["video_tubelet_frames"]),
        "uform.video.fps": fmt_float(g["video_fps"]),
        "uform.video.max_frames": str(g["video_max_frames"]),
        "uform.video.max_patches_per_frame": str(g["video_max_patches_per_frame"]),
        "uform.audio.sample_rate": str(g["audio_sample_rate"]),
        "uform.audio.n_fft": str(g["audio_n_fft"]),
        "uform.audio.hop": str(g["audio_hop"]),
        "uform.audio.mel_bins": str(g["audio_mel_bins"]),
        "uform.audio.frames_per_patch": str(g["audio_frames_per_patch"]),
        "uform.audio.max_patches": str(g["audio_max_patches"]),
    }


# --- random numbers -------------------------------------------------------------------------------

# Maps the second-highest byte of a little-endian 64-bit word to 0xF0 | its low nibble, so that with
# the highest byte set to 0x3F the word is the double 1 + m / 2**52 for its low 52 bits m.
_EXPONENT_NIBBLE = bytes(0xF0 | (b & 0x0F) for b in range(256))


def standard_normals(name, n):
    """n standard normal doubles drawn for the tensor `name` (see the module docstring)."""
    pairs = (n + 1) // 2
    words = bytearray(hashlib.shake_256(b"uform/%d/%s" % (SEED, name.encode())).digest(16 * pairs))
    words[6::8] = words[6::8].translate(_EXPONENT_NIBBLE)
    words[7::8] = b"\x3f" * (2 * pairs)
    ones = array("d")
    ones.frombytes(words)  # every value is 1 + m / 2**52, exactly
    if BIG_ENDIAN:
        ones.byteswap()
    u1 = map(operator.sub, repeat(2.0), ones[0::2])
    u2 = map(operator.sub, ones[1::2], repeat(1.0))
    radius = list(map(math.sqrt, map(operator.mul, repeat(-2.0), map(math.log, u1))))
    angle = list(map(operator.mul, repeat(2.0 * math.pi), u2))
    z = [0.0] * (2 * pairs)
    z[0::2] = map(operator.mul, radius, map(math.cos, angle))
    z[1::2] = map(operator.mul, radius, map(math.sin, angle))
    del z[n:]
    return z


def bf16_bytes(values):
    """Little-endian BF16 of doubles: to float32 (nearest even), then to BF16 (nearest even)."""
    f32 = array("f", values)
    bits = array("I")
    bits.frombytes(f32.tobytes())
    # round to nearest even on the bit pattern: add 0x7FFF plus the lowest kept bit, drop 16 bits
    lsb = map(operator.and_, map(operator.rshift, bits, repeat(16)), repeat(1))
    rounded = map(operator.add, map(operator.add, bits, repeat(0x7FFF)), lsb)
    out = array("H", map(operator.rshift, rounded, repeat(16)))
    if BIG_ENDIAN:
        out.byteswap()
    return out.tobytes()


def f32_bytes(values):
    out = array("f", values)
    if BIG_ENDIAN:
        out.byteswap()
    return out.tobytes()


def scaled_normals(name, n, std):
    z = standard_normals(name, n)
    return z if std == 1.0 else list(map(operator.mul, repeat(std), z))


# --- the mel filterbank ---------------------------------------------------------------------------

_F_SP = 200.0 / 3
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = math.log(6.4) / 27.0


def hz_to_mel(f):
    if f >= _MIN_LOG_HZ:
        return _MIN_LOG_MEL + math.log(f / _MIN_LOG_HZ) / _LOGSTEP
    return f / _F_SP


def mel_to_hz(m):
    if m >= _MIN_LOG_MEL:
        return _MIN_LOG_HZ * math.exp(_LOGSTEP * (m - _MIN_LOG_MEL))
    return _F_SP * m


def linspace(start, stop, num):
    """numpy.linspace(start, stop, num) as numpy computes it: start + k * step, last = stop."""
    step = (stop - start) / (num - 1)
    return [k * step + start for k in range(num - 1)] + [stop]


def to_f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def mel_filters(sample_rate, n_fft, n_mels):
    """librosa.filters.mel(sr=sample_rate, n_fft=n_fft, n_mels=n_mels) (htk=False, norm='slaney',
    fmin=0, fmax=sr/2, dtype float32), row-major [n_mels, n_fft // 2 + 1]."""
    fft_freqs = linspace(0.0, sample_rate / 2, 1 + n_fft // 2)
    mel_f = [mel_to_hz(m) for m in linspace(hz_to_mel(0.0), hz_to_mel(sample_rate / 2), n_mels + 2)]
    fdiff = [b - a for a, b in zip(mel_f, mel_f[1:])]
    out = []
    for i in range(n_mels):
        enorm = 2.0 / (mel_f[i + 2] - mel_f[i])
        for f in fft_freqs:
            lower = -(mel_f[i] - f) / fdiff[i]
            upper = (mel_f[i + 2] - f) / fdiff[i + 1]
            w = min(lower, upper)
            # numpy.maximum(0, w) as librosa calls it keeps w = -0.0 (at [0, 0]), as Whisper's file has
            out.append(to_f32(w if w >= 0.0 else 0.0) * enorm)
    return out


# --- the checkpoint -------------------------------------------------------------------------------


def tensors(g):
    """Yields (name, dtype, shape, data bytes) in file order."""
    hidden = g["hidden"]

    def linear(name, out_features, in_features):
        data = scaled_normals(name, out_features * in_features, 1.0 / math.sqrt(in_features))
        return name, "BF16", [out_features, in_features], bf16_bytes(data)

    def bias(name, out_features, in_features):
        data = scaled_normals(name, out_features, 1.0 / math.sqrt(in_features))
        return name, "BF16", [out_features], bf16_bytes(data)

    def norm(name):
        data = map(operator.add, repeat(1.0), scaled_normals(name, hidden, 0.1))
        return name, "BF16", [hidden], bf16_bytes(data)

    yield "embed.byte.weight", "BF16", [258, hidden], bf16_bytes(standard_normals("embed.byte.weight", 258 * hidden))
    p, c = g["image_patch_side"], g["image_channels"]
    frontends = (
        ("image", p * p * c),
        ("video", g["video_tubelet_frames"] * p * p * c),
        ("audio", g["audio_frames_per_patch"] * g["audio_mel_bins"]),
    )
    for modality, fan_in in frontends:
        yield linear(f"embed.{modality}.weight", hidden, fan_in)
        yield bias(f"embed.{modality}.bias", hidden, fan_in)
    n_fft, mels = g["audio_n_fft"], g["audio_mel_bins"]
    filters = mel_filters(g["audio_sample_rate"], n_fft, mels)
    yield "frontend.audio.mel_filters", "F32", [mels, n_fft // 2 + 1], f32_bytes(filters)
    inner = g["heads"] * g["head_dim"]
    for i in range(g["depth"]):
        yield norm(f"blocks.{i}.attn_norm.weight")
        yield linear(f"blocks.{i}.attn.qkv.weight", 3 * inner, hidden)
        yield linear(f"blocks.{i}.attn.out.weight", hidden, inner)
        yield norm(f"blocks.{i}.mlp_norm.weight")
        yield linear(f"blocks.{i}.mlp.gate_up.weight", 2 * g["ffn_hidden"], hidden)
        yield linear(f"blocks.{i}.mlp.down.weight", hidden, g["ffn_hidden"])
    yield norm("final_norm.weight")
    yield linear("head.embedding.weight", g["dimensions"], hidden)
    yield linear("head.token.weight", g["token_width"], hidden)
    yield linear("head.byte.weight", 256, hidden)
    groups = g["choice_groups"]
    yield "head.choice.temperatures", "F32", [groups], f32_bytes(float(k + 1) for k in range(groups))


def checkpoint(g):
    """The whole file as bytes, and the (name, begin, end) of each part for error messages."""
    assert sum(g["rope_sections"]) * 2 == g["head_dim"], "rope.sections must sum to head_dim / 2"
    header = {"__metadata__": metadata(g)}
    blobs, offset = [], 0
    sizes = {"BF16": 2, "F32": 4}
    for name, dtype, shape, data in tensors(g):
        assert len(data) == math.prod(shape) * sizes[dtype], name
        assert offset % sizes[dtype] == 0, f"{name} would be misaligned"
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    start = 8 + len(text)
    parts = [("header", 0, start)] + [
        (name, start + entry["data_offsets"][0], start + entry["data_offsets"][1])
        for name, entry in header.items() if name != "__metadata__"
    ]
    return struct.pack("<Q", len(text)) + text + b"".join(blobs), parts


def check(path, expected, parts):
    try:
        with open(path, "rb") as f:
            actual = f.read()
    except OSError as e:
        return f"cannot read {path}: {e}"
    if actual == expected:
        return None
    common = min(len(actual), len(expected))
    first = next((i for i in range(common) if actual[i] != expected[i]), common)
    where = next((name for name, begin, end in parts if begin <= first < end), "past the end")
    return (f"{path} is stale: {len(actual)} bytes, expected {len(expected)}; first difference at "
            f"byte {first} ({where}). Regenerate it with --out.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--geometry", choices=sorted(GEOMETRIES), default="tiny")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--out", metavar="PATH", help="write the checkpoint to PATH")
    action.add_argument("--check", metavar="PATH", help="fail unless PATH holds exactly this checkpoint")
    args = parser.parse_args()

    began = time.perf_counter()
    data, parts = checkpoint(GEOMETRIES[args.geometry])
    took = time.perf_counter() - began
    if args.check:
        problem = check(args.check, data, parts)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 1
        print(f"{args.check}: up to date ({args.geometry}, {len(data)} bytes)")
        return 0
    with open(args.out, "wb") as f:
        f.write(data)
    print(f"wrote {args.out}: {args.geometry}, {len(parts) - 1} tensors, {len(data)} bytes, "
          f"sha256 {hashlib.sha256(data).hexdigest()}, {took:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
