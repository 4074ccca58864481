#!/usr/bin/env python3
"""Copies one Fashion-MNIST test image per class from a prepared data directory into tests/data/media.

    python3 tools/data/fashion_media.py                      # from target/data (tools/data/prepare.py)
    python3 tools/data/fashion_media.py DIR                  # from another data directory

Each class's image is the first of its test group in items.tsv (the lowest image index of that class), so the
choice involves no looking at the pictures. The copies are named `fashion-<class>.png`, with the class's label
lowered and its spaces and slashes made dashes; the folder search test (tests/ram_shipped_model.rs) queries each
class by its test caption template and expects its image first.
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEDIA = os.path.join(ROOT, "tests", "data", "media")


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        f.readline()
        return [line.rstrip("\n").split("\t") for line in f]


def slug(label):
    return label.lower().replace("/", "-").replace(" ", "-")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=os.path.join(ROOT, "target", "data"))
    args = parser.parse_args()

    groups = read_tsv(os.path.join(args.data, "groups.tsv"))
    items = read_tsv(os.path.join(args.data, "items.tsv"))
    for group, split, source, _key, first, count, label, *_ in groups:
        if source != "fashion-mnist" or split != "test":
            continue
        images = [row for row in items[int(first) : int(first) + int(count)] if row[3] == "image"]
        if not images or images[0][1] != group:
            sys.exit(f"fashion_media: the test group of {label!r} lists no image in items.tsv")
        with open(os.path.join(args.data, images[0][5]), "rb") as f:
            data = f.read()
        target = os.path.join(MEDIA, f"fashion-{slug(label)}.png")
        with open(target + ".tmp", "wb") as f:
            f.write(data)
        os.replace(target + ".tmp", target)
        print(f"{images[0][5]} -> {os.path.relpath(target, ROOT)} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
