#!/usr/bin/env python3
"""Writes the seed corpora of the checkpoint, abi and reentry fuzz targets into tests/fuzz/corpus/TARGET/.

The checkpoint target reads each input twice: as a whole file (8-byte length, header, data) and as a header
alone. So its seeds hold both: small whole checkpoints of a miniature geometry (a few KiB, data zeroed), the
headers alone, and the first bytes of tests/data/tiny.safetensors when it exists. The abi target's first byte
picks the call (text encode, choose, pixels, samples, trainer step) and the rest its arguments; the reentry
target's first byte picks the outer call (bit 0: a local executor, else RAM; bit 1: deferred) and the rest is
a program of (action, argument) pairs, as reentry_fuzz.cpp reads them. tests/fuzz/corpus/abi also keeps the
inputs that found bugs (unknown_scalar_bits.bin, tall_image.bin), which this script does not write.
Standard library only.
Run from anywhere: python3 tests/fuzz/make_seeds.py
"""
import json
import pathlib
import struct

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fuzz/corpus/checkpoint"

# reentry_fuzz.cpp's actions, and the bits of a nested encode's argument.
YIELD, ENCODE, DRAIN, FREE_EXECUTOR, FREE_ARENA, FREE_MODEL, WAIT, RELEASE, POLL, CANCEL = range(10)
NO_EXECUTOR, OUTER_EXECUTOR, OTHER_RAM, OTHER_LOCAL = 0, 1, 3, 4
FRESH_ARENA, DEFERRED, WITH_HANDLER = 0x10, 0x20, 0x40
OUTER = 1  # the argument of a free, wait or release naming the outer call (0 names the current one)

SIZES = {"BF16": 2, "F32": 4}


def mini(modalities=True, heads=True):
    """Metadata and tensors of a miniature geometry (hidden 2, depth 1), optionally text only and headless."""
    meta = {"format": "uform", "uform.version": "1", "uform.depth": "1", "uform.hidden": "2", "uform.heads": "1",
            "uform.head_dim": "2", "uform.ffn_hidden": "1", "uform.norm_eps": "1e-06", "uform.rope.theta": "10000",
            "uform.rope.sections": "1,0,0", "uform.dimensions": "1"}
    tensors = [("embed.byte.weight", "BF16", [258, 2])]
    if modalities:
        meta.update({"uform.image.patch_side": "1", "uform.image.channels": "3", "uform.image.max_patches": "4",
                     "uform.image.mean": "0.5,0.5,0.5", "uform.image.std": "0.5,0.5,0.5",
                     "uform.video.tubelet_frames": "1", "uform.video.fps": "1", "uform.video.max_frames": "2",
                     "uform.video.max_patches_per_frame": "2", "uform.audio.sample_rate": "16000",
                     "uform.audio.n_fft": "2", "uform.audio.hop": "1", "uform.audio.mel_bins": "1",
                     "uform.audio.frames_per_patch": "1", "uform.audio.max_patches": "2"})
        tensors += [("embed.image.weight", "BF16", [2, 3]), ("embed.image.bias", "BF16", [2]),
                    ("embed.video.weight", "BF16", [2, 3]), ("embed.video.bias", "BF16", [2]),
                    ("embed.audio.weight", "BF16", [2, 1]), ("embed.audio.bias", "BF16", [2]),
                    ("frontend.audio.mel_filters", "F32", [1, 2])]
    tensors += [("blocks.0.attn_norm.weight", "BF16", [2]), ("blocks.0.attn.qkv.weight", "BF16", [6, 2]),
                ("blocks.0.attn.out.weight", "BF16", [2, 2]), ("blocks.0.mlp_norm.weight", "BF16", [2]),
                ("blocks.0.mlp.gate_up.weight", "BF16", [2, 2]), ("blocks.0.mlp.down.weight", "BF16", [2, 1]),
                ("final_norm.weight", "BF16", [2]), ("head.embedding.weight", "BF16", [1, 2])]
    if heads:
        meta.update({"uform.token_width": "1", "uform.choice.groups": "1"})
        tensors += [("head.token.weight", "BF16", [1, 2]), ("head.byte.weight", "BF16", [256, 2]),
                    ("head.choice.temperatures", "F32", [1])]
    return meta, tensors


def header(meta, tensors):
    """The header JSON padded with spaces to 8 bytes, and the data section's size."""
    doc, cursor = {"__metadata__": meta}, 0
    for name, dtype, shape in tensors:
        size = SIZES[dtype]
        for d in shape:
            size *= d
        doc[name] = {"dtype": dtype, "shape": shape, "data_offsets": [cursor, cursor + size]}
        cursor += size
    text = json.dumps(doc, separators=(",", ":")).encode()
    return text + b" " * (-len(text) % 8), cursor


def abi_seeds():
    """One plain call per verb, with a little data for each choice the target reads."""
    names = ["text_encode", "text_choose", "image_pixels", "audio_samples", "trainer_step"]
    return {f"{name}.bin": bytes([verb]) + bytes((i * 37 + verb) % 251 for i in range(48))
            for verb, name in enumerate(names)}


def reentry_seeds():
    """Programs of the misuses a progress handler can commit inside a call (drains, frees of the handles running
    calls hold, waits on, releases and polls of their outcomes), nested calls on each executor, deep nesting and a
    cancel."""
    misuses = [DRAIN, OUTER_EXECUTOR, FREE_EXECUTOR, OUTER, FREE_ARENA, OUTER, FREE_MODEL, 0,
               WAIT, OUTER, RELEASE, OUTER, POLL, OUTER]
    programs = {
        "nested_encode": [0, ENCODE, FRESH_ARENA | NO_EXECUTOR],
        "misuses_blocking_ram": [0] + misuses,
        "misuses_deferred_local": [3] + misuses,
        "nested_on_ram_frees_outer": [1, ENCODE, FRESH_ARENA | WITH_HANDLER | OTHER_RAM] + misuses,
        "nesting_past_8": [0] + [ENCODE, FRESH_ARENA | WITH_HANDLER] * 11,
        "pending_on_local": [0, ENCODE, FRESH_ARENA | DEFERRED | OTHER_LOCAL, YIELD, 0, POLL, 0],
        "nested_cancelled": [2, ENCODE, FRESH_ARENA | WITH_HANDLER | OTHER_LOCAL, CANCEL, 0],
    }
    return {f"{name}.bin": bytes(program) for name, program in programs.items()}


def write(target, seeds):
    out = ROOT / "tests/fuzz/corpus" / target
    out.mkdir(parents=True, exist_ok=True)
    for name, data in seeds.items():
        (out / name).write_bytes(data)
        print(f"{(out / name).relative_to(ROOT)}: {len(data)} bytes")


def main():
    write("abi", abi_seeds())
    write("reentry", reentry_seeds())
    OUT.mkdir(parents=True, exist_ok=True)
    seeds = {}
    for name, args in {"mini": (True, True), "mini_text": (False, False)}.items():
        text, data = header(*mini(*args))
        seeds[f"{name}.safetensors"] = struct.pack("<Q", len(text)) + text + bytes(data)
        seeds[f"{name}_header.json"] = text
    seeds["empty_object.json"] = b"{}"
    seeds["escapes.json"] = ('{"__metadata__":{"format":"uform","uform.version":"1","n":"\\u00e9\\ud83d\\ude00'
                             '\\n\\"\\\\\\/"},"x":[1,-2.5e+3,true,false,null,{}]}').encode()
    tiny = ROOT / "tests/data/tiny.safetensors"
    if tiny.exists():
        raw = tiny.read_bytes()
        (length,) = struct.unpack("<Q", raw[:8])
        seeds["tiny_prefix.bin"] = raw[:8 + length]
        seeds["tiny_header.json"] = raw[8:8 + length]
    for name, data in seeds.items():
        (OUT / name).write_bytes(data)
        print(f"{OUT.relative_to(ROOT) / name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
