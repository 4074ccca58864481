#!/usr/bin/env python3
"""Writes the bad media beside this script from the well-formed `ok.*` files (made with the ffmpeg CLI, see
README.md): halves (truncated), garbled bytes (corrupt), a text file named .jpg, PNGs claiming a zero size and
100000 x 100000 pixels. Deterministic: rerunning rewrites the same bytes."""
import pathlib
import struct
import zlib

here = pathlib.Path(__file__).parent


def png(width, height, idat):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


for source in sorted(here.glob("ok.*")):
    data = source.read_bytes()
    extension = source.suffix
    (here / f"truncated{extension}").write_bytes(data[: len(data) // 2])
    # The middle fifth, except where the format has no redundancy there: a WAV's samples are any bytes (garble its
    # format chunk instead) and a lossy WebP's partitions decode whatever they hold (garble its frame header).
    begin, end = {".wav": (22, 24), ".webp": (30, 60)}.get(extension, (len(data) * 2 // 5, len(data) * 3 // 5))
    garbled = bytearray(data)
    for i in range(begin, end):
        garbled[i] = (i * 151 + 77) & 0xFF
    (here / f"corrupt{extension}").write_bytes(bytes(garbled))

(here / "text.jpg").write_bytes(b"This is a text file, not a JPEG.\n")
(here / "zero.png").write_bytes(png(0, 16, zlib.compress(b"")))
(here / "bomb.png").write_bytes(png(100_000, 100_000, zlib.compress(b"\0" * 1024)))
