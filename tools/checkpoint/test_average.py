#!/usr/bin/env python3
"""Tests of average.py: the mean of known tensors, BF16's nearest-even rounding, the kept step, and refusals."""

import json
import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import average  # noqa: E402

TINY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "tiny.safetensors")


def bf16(values):
    return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:] for v in values)


def checkpoint(tensors, metadata=None):
    """Safetensors bytes of {name: (dtype, shape, raw)}."""
    header, blobs, offset = {"__metadata__": metadata or {"format": "uform"}}, [], 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def tensors(data):
    metadata, header, body = average.read_bytes(data)
    return metadata, {k: (v["dtype"], v["shape"], bytes(body[slice(*v["data_offsets"])])) for k, v in header.items()}


class Average(unittest.TestCase):
    def write(self, data):
        f = tempfile.NamedTemporaryFile(suffix=".safetensors", delete=False)
        f.write(data)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_means_round_to_nearest_even_and_keep_the_last_step(self):
        a = self.write(checkpoint({
            "w": ("BF16", [4], bf16([1.0, 2.0, 1.0, -3.0])),
            "s": ("F32", [1], struct.pack("<f", 0.5)),
            "trainer.step": ("F32", [1], struct.pack("<f", 100.0)),
        }))
        b = self.write(checkpoint({
            "w": ("BF16", [4], bf16([2.0, 2.0, 1.0078125, -3.0])),
            "s": ("F32", [1], struct.pack("<f", 1.0)),
            "trainer.step": ("F32", [1], struct.pack("<f", 200.0)),
        }))
        _, out = tensors(average.average([a, b]))
        # 1.00390625 lies halfway between 1 and the next BF16 value, 1.0078125: nearest even keeps 1.
        self.assertEqual(out["w"][2], bf16([1.5, 2.0, 1.0, -3.0]))
        self.assertEqual(out["s"][2], struct.pack("<f", 0.75))
        self.assertEqual(out["trainer.step"][2], struct.pack("<f", 200.0))

    def test_a_checkpoint_averaged_with_itself_is_itself(self):
        with open(TINY, "rb") as f:
            data = f.read()
        metadata, ours = tensors(average.average([TINY, TINY, TINY]))
        theirs_metadata, theirs = tensors(data)
        self.assertEqual(metadata, theirs_metadata)
        self.assertEqual(ours, theirs)

    def test_checkpoints_of_other_shapes_or_geometries_are_refused(self):
        a = self.write(checkpoint({"w": ("BF16", [2], bf16([1.0, 2.0]))}))
        b = self.write(checkpoint({"w": ("BF16", [1, 2], bf16([1.0, 2.0]))}))
        c = self.write(checkpoint({"w": ("BF16", [2], bf16([1.0, 2.0]))}, {"format": "uform", "uform.depth": "2"}))
        d = self.write(checkpoint({"w": ("I8", [2], b"\x01\x02")}))
        for other in (b, c):
            with self.assertRaises(ValueError):
                average.average([a, other])
        with self.assertRaises(ValueError):
            average.average([d, d])
        with self.assertRaises(ValueError):
            average.average([self.write(b"\x01")])


if __name__ == "__main__":
    unittest.main()
