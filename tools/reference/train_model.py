"""docs/model.md's model as a trainable PyTorch module (docs/model.md, "Training", Parameters and Precision).

The forward is `uform_reference.Model`'s, run on BF16 copies of F32 master tensors: every trained tensor
enters the forward as `bf16(master)` through a straight-through rounding (its gradient reaches the master
unchanged), every product rounds its inputs to BF16 and accumulates in the compute precision, and the
backward's products round theirs (`uform_reference._Bf16Product`). Within
`uform_reference.exact_arithmetic()` nothing rounds, for gradcheck in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

import uform_reference as ref
from train_batch import Batch
from train_random import standard_normals

FIXED = ("frontend.audio.mel_filters", "head.choice.temperatures")
SCALARS = ("trainer.contrastive.log_scale", "trainer.contrastive.bias", "trainer.late_interaction.log_scale")
SCALE_CAP = 100.0


class _StraightThroughBf16(torch.autograd.Function):
    """Forward: the value rounded to BF16 (nearest even); backward: the gradient unchanged."""

    @staticmethod
    def forward(ctx, x):
        return ref.bf16_round(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


def decays(name: str, shape) -> bool:
    """docs/model.md: decoupled weight decay on the 2-D weights other than embed.byte.weight."""
    return len(shape) == 2 and name != "embed.byte.weight"


def scalar_inits(form: str) -> dict:
    """The trainer.* scalars' initial values (docs/model.md): InfoNCE ln(1/0.07) and 0, sigmoid ln 10 and -10."""
    sigmoid = form == "sigmoid"
    return {
        "trainer.contrastive.log_scale": math.log(10.0) if sigmoid else math.log(1 / 0.07),
        "trainer.contrastive.bias": -10.0 if sigmoid else 0.0,
        "trainer.late_interaction.log_scale": math.log(1 / 0.07),
    }


def seeded_value(name: str, shape, seed: int) -> np.ndarray:
    """The seeded initial value of a model tensor, F32 (docs/decisions.md, "Training"): embed.byte.weight
    N(0, 1); other 2-D weights N(0, 1) * (1 / sqrt(fan_in)), the product in double, then rounded to F32;
    biases 0; norm weights 1. Normals from `train_random.standard_normals(seed, name, count)` row-major."""
    count = math.prod(shape)
    if name.endswith(".bias"):
        return np.zeros(shape, np.float32)
    if len(shape) == 1:
        return np.ones(shape, np.float32)
    z = standard_normals(seed, name, count)
    std = 1.0 if name == "embed.byte.weight" else 1.0 / math.sqrt(shape[1])
    return (z * std).astype(np.float32).reshape(shape)


@dataclass
class Forward:
    """What the losses read from one forward of a batch: pooled unit embeddings `z` [N, dimensions];
    per late-interaction item its token vectors; per masked item its byte logits at the chosen positions
    and the original bytes; per choice item the logits of its legal bytes at CHOOSE (temperature 1)."""

    z: torch.Tensor
    token_vectors: dict
    mask_logits: dict
    mask_targets: dict
    choice_logits: dict


class TrainableModel(ref.Model):
    """The reference model with F32 master tensors (`self.params`, every checkpoint tensor except FIXED, and
    the three trainer.* scalars as shape [1]). `seed` replaces the checkpoint's weights by the seeded rule
    (the geometry, mel filters and temperatures still come from the checkpoint)."""

    def __init__(self, checkpoint, dtype=torch.float32, form: str = "info-nce", seed: int | None = None):
        super().__init__(checkpoint, dtype=dtype)
        self.params = {}
        for name, t in self.w.items():
            if name in FIXED:
                continue
            value = t if seed is None else torch.from_numpy(seeded_value(name, tuple(t.shape), seed))
            self.params[name] = value.to(dtype).clone().requires_grad_(True)
        for name, v in scalar_inits(form).items():
            self.params[name] = torch.tensor([v], dtype=torch.float32).to(dtype).requires_grad_(True)

    def scale(self, name: str) -> torch.Tensor:
        """`min(exp(log_scale), 100)`; its gradient is zero above the cap (torch.clamp's, which passes it at 100)."""
        return torch.clamp(torch.exp(self.params[name][0]), max=SCALE_CAP)

    def _bind_weights(self):
        """Points the inference forward at BF16 copies of the masters (straight-through to them)."""
        self.w = {n: _StraightThroughBf16.apply(p) for n, p in self.params.items() if not n.startswith("trainer.")}

    def segment(self, item, mask) -> ref.Segment:
        """An item's segment: a text with its masked positions replaced, a choice item followed by CHOOSE."""
        if item.modality == "text":
            ids = list(item.text)
            for pos, token in mask or ():
                ids[pos] = token
            return self.token_segment(ids + ([ref.CHOOSE_TOKEN] if item.is_choice else []))
        if item.modality == "image":
            return self.image_segment(item.pixels)
        if item.modality == "video":
            return self.video_segment(item.frames, item.timestamps, item.duration)
        if item.modality == "audio":
            return self.audio_segment(item.samples, item.sample_rate)
        raise ValueError(f"unknown modality {item.modality!r}")

    def forward(self, batch: Batch, masks: dict, items=None) -> Forward:
        """One packed forward of `batch.items` (or of the indices `items`, as one device of a split batch);
        `masks` maps a masked item to its (position, input token) list. Embeddings pool every state of the
        segment (a choice item's CHOOSE included); an empty item's embedding is zero and has no gradient.
        The rows of `z` follow the items forwarded."""
        self._bind_weights()
        ids = list(range(len(batch.items))) if items is None else list(items)
        segs = [self.segment(batch.items[i], masks.get(i)) for i in ids]
        states = self.trunk(segs)
        out = Forward(torch.stack([self.embedding(s) for s in states]), {}, {}, {}, {})
        for i, s in zip(ids, states):
            item = batch.items[i]
            if batch.side_of(i) != "none":
                out.token_vectors[i] = self.token_vectors(s)
            if masks.get(i):
                pos = torch.tensor([p for p, _ in masks[i]], dtype=torch.long)
                out.mask_logits[i] = self.byte_logits(s[pos])
                out.mask_targets[i] = torch.tensor([item.text[p] for p, _ in masks[i]], dtype=torch.long)
            if item.is_choice:
                legal = torch.tensor(list(item.choices), dtype=torch.long)
                out.choice_logits[i] = self.byte_logits(s[-1:])[0][legal]
        return out
