#!/usr/bin/env python3
"""Average UForm checkpoints of one run into one (stochastic weight averaging).

    python3 tools/checkpoint/average.py --out mean.safetensors run-14500.safetensors run-15000.safetensors ...

Every tensor of the output is the uniform mean of the inputs' tensors of that name: BF16 values are widened to
double precision, summed, divided by the count and rounded to BF16 to nearest even (on the float32 pattern of the
double rounded to float32, as `write_checkpoint.py` rounds); F32 values are averaged in double precision and
rounded to F32. `trainer.step` is the last input's, not a mean. The inputs must hold the same tensors with the same
dtypes and shapes and the same metadata (one geometry); the output keeps that metadata and the inputs' tensor order.
Averaging only makes sense for checkpoints of one run late in its schedule, where the weights share one basin.
Python 3.11+ standard library only.
"""

import argparse
import array
import json
import struct
import sys

KEPT = {"trainer.step"}


def read(path):
    """A checkpoint's metadata, tensor headers and tensor bytes."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return read_bytes(data)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def read_bytes(data):
    """`read` over bytes in memory."""
    if len(data) < 8:
        raise ValueError("not a safetensors file")
    (size,) = struct.unpack_from("<Q", data, 0)
    if 8 + size > len(data):
        raise ValueError("its header runs past the end of the file")
    header = json.loads(data[8 : 8 + size])
    metadata = header.pop("__metadata__", {})
    return metadata, header, memoryview(data)[8 + size :]


def widen(dtype, raw):
    """The tensor's values as Python floats."""
    if dtype == "F32":
        values = array.array("f")
        values.frombytes(bytes(raw))
    elif dtype == "BF16":
        halves = array.array("H")
        halves.frombytes(bytes(raw))
        words = array.array("I", (h << 16 for h in halves))
        values = array.array("f")
        values.frombytes(words.tobytes())
    else:
        raise ValueError(f"cannot average a {dtype} tensor")
    if sys.byteorder != "little":
        raise ValueError("this tool reads little-endian machines' floats only")
    return values


def narrow(dtype, values):
    """Doubles rounded to the tensor's dtype, as bytes."""
    singles = array.array("f", values)  # to float32, nearest even
    if dtype == "F32":
        return singles.tobytes()
    words = array.array("I")
    words.frombytes(singles.tobytes())
    out = array.array("H")
    for w in words:
        if (w & 0x7F800000) == 0x7F800000 and (w & 0x007FFFFF):
            out.append((w >> 16) | 0x40)  # NaN stays NaN
        else:
            out.append(((w + 0x7FFF + ((w >> 16) & 1)) >> 16) & 0xFFFF)
    return out.tobytes()


def average(paths):
    """The mean checkpoint's bytes."""
    inputs = [read(p) for p in paths]
    metadata, header, _ = inputs[0]
    for path, (m, h, _) in zip(paths[1:], inputs[1:]):
        if m != metadata:
            raise ValueError(f"{path}: its metadata differs from {paths[0]}'s")
        if {k: (v["dtype"], v["shape"]) for k, v in h.items()} != {
            k: (v["dtype"], v["shape"]) for k, v in header.items()
        }:
            raise ValueError(f"{path}: its tensors differ from {paths[0]}'s in name, dtype or shape")
    names = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    out_header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name in names:
        dtype = header[name]["dtype"]
        if name in KEPT:
            _, h, body = inputs[-1]
            begin, end = h[name]["data_offsets"]
            blob = bytes(body[begin:end])
        else:
            total = None
            for _, h, body in inputs:
                begin, end = h[name]["data_offsets"]
                values = widen(dtype, body[begin:end])
                total = list(values) if total is None else [t + v for t, v in zip(total, values)]
            blob = narrow(dtype, [t / len(inputs) for t in total])
        out_header[name] = {"dtype": dtype, "shape": header[name]["shape"], "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(out_header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoints", nargs="+", help="checkpoints of one run, the last one's step kept")
    parser.add_argument("--out", required=True, help="where the mean checkpoint goes")
    args = parser.parse_args()
    if len(args.checkpoints) < 2:
        parser.error("averaging needs at least two checkpoints")
    try:
        data = average(args.checkpoints)
    except (OSError, ValueError) as e:
        sys.exit(f"average: {e}")
    with open(args.out, "wb") as f:
        f.write(data)
    print(f"average: the mean of {len(args.checkpoints)} checkpoints written to {args.out}")


if __name__ == "__main__":
    main()
