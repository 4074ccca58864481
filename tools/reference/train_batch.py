"""A training step's batch: its items, bags, edges, late-interaction sides and choices, checked as the
C++ trainer checks them, and the masking of its texts (docs/model.md, "Training", "Masking").

Items are decoded already (text bytes, pixels, frames, samples), so the reference needs no FFmpeg; the
golden writer stores them beside the batch description.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from train_random import Stream
from uform_reference import MASK_TOKEN

SIDES = ("none", "query", "document")


@dataclass
class Item:
    """One item: `modality` is text, image, video or audio. Text: `text`; image: `pixels` uint8 [H, W, C];
    video: `frames` (uint8 [H, W, 3] each), `timestamps` (s), `duration` (s); audio: `samples` float32 (mono)
    at `sample_rate`. `choices` (legal bytes) and `targets` (one per legal byte) make a text a choice item."""

    modality: str
    text: bytes = b""
    pixels: np.ndarray | None = None
    frames: list | None = None
    timestamps: list | None = None
    duration: float = 0.0
    samples: np.ndarray | None = None
    sample_rate: int = 0
    choices: bytes = b""
    targets: tuple = ()

    @property
    def is_choice(self) -> bool:
        return bool(self.choices)

    @property
    def is_maskable(self) -> bool:
        """docs/model.md: every non-empty text is masked, except items with choices."""
        return self.modality == "text" and not self.is_choice and len(self.text) > 0


@dataclass
class Batch:
    """A step's items and their relations. Edges are `(i, j, weight)` listed from `i`; a set whose weights
    are all None weighs every edge 1 (the C API's empty `weights`). `bags[i]` is item i's bag (None: each
    item in its own); `sides[i]` in SIDES (None: all none)."""

    items: list
    bags: list | None = None
    attract: list = field(default_factory=list)
    repel: list = field(default_factory=list)
    ignore: list = field(default_factory=list)
    sides: list | None = None

    def __post_init__(self):
        n = len(self.items)
        if self.bags is not None and len(self.bags) != n:
            raise ValueError(f"bags has {len(self.bags)} entries for {n} items")
        if self.sides is not None and (len(self.sides) != n or not all(s in SIDES for s in self.sides)):
            raise ValueError("sides needs one of none, query, document per item")
        for kind in ("attract", "repel", "ignore"):
            for i, j, w in getattr(self, kind):
                if not (0 <= i < n and 0 <= j < n) or i == j:
                    raise ValueError(f"{kind} edge {i} -> {j}: items out of range or the item itself")
                if w is not None and not (math.isfinite(w) and w > 0):
                    raise ValueError(f"{kind} edge {i} -> {j}: weight {w} is not finite and positive")
        for k, it in enumerate(self.items):
            if it.is_choice:
                if it.modality != "text" or len(it.targets) != len(it.choices):
                    raise ValueError(f"item {k}: choices need a text and one target per legal byte")
                if any(not (math.isfinite(t) and t >= 0) for t in it.targets) or abs(sum(it.targets) - 1) > 1e-5:
                    raise ValueError(f"item {k}: choice targets must be non-negative and sum to 1")

    def bag_of(self, i: int):
        return ("own", i) if self.bags is None else ("bag", self.bags[i])

    def side_of(self, i: int) -> str:
        return "none" if self.sides is None else self.sides[i]


def sample_mask(seed: int, step: int, item: int, text: bytes, ratio: float = 0.15, mean_span: float = 3.0) -> list:
    """docs/model.md's masking of one text, drawn from the stream (seed, "mask/{step}/{item}"); returns the chosen
    positions, ascending, as (position, input token) with the token MASK (256), a byte, or the original byte.

    `target = max(1, floor(ratio * n))` chosen bytes (ratio and mean_span are the F32 configuration values,
    computed in double). Until `target` are chosen: a start `below(n)`, then a span length 1 extended by one
    while `real() < 1 - 1 / mean_span` (geometric with mean `mean_span`); the span's positions from the start,
    clipped at the text's end, are taken in order while fewer than `target` are chosen (a position already
    chosen is skipped). Then per chosen position, ascending: `u = real()`, `u < 0.8` MASK, `u < 0.9` the byte
    `below(256)` (one more draw), else the original byte."""
    n = len(text)
    if n == 0:
        return []
    ratio, mean_span = float(np.float32(ratio)), float(np.float32(mean_span))
    target = max(1, math.floor(ratio * n))
    keep_going = 1.0 - 1.0 / mean_span
    rng = Stream(seed, f"mask/{step}/{item}")
    chosen = set()
    while len(chosen) < target:
        start = rng.below(n)
        length = 1
        while rng.real() < keep_going:
            length += 1
        for pos in range(start, min(start + length, n)):
            if len(chosen) < target:
                chosen.add(pos)
    out = []
    for pos in sorted(chosen):
        u = rng.real()
        token = MASK_TOKEN if u < 0.8 else rng.below(256) if u < 0.9 else text[pos]
        out.append((pos, token))
    return out
