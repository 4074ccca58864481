"""docs/model.md's optimiser ("Training", Optimiser): the schedule, the gradient norm and clipping, and
PyTorch's own `torch.optim.AdamW` (beta1 0.9, beta2 0.95, eps 1e-8, bias correction, decoupled decay on the
2-D weights other than embed.byte.weight), stepped with the scheduled rate."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from train_model import decays

BETAS = (0.9, 0.95)
EPS = 1e-8


@dataclass
class Schedule:
    """The C API's `uform_schedule_t` with its zeros replaced by the defaults."""

    steps: int = 10000
    warmup_steps: int = 100
    learning_rate: float = 1e-3
    min_learning_rate: float = 1e-5
    weight_decay: float = 0.01
    clip_norm: float = 1.0

    def rate(self, k: int) -> float:
        """Step k's rate (from 0), in double: linear warm-up `lr (k + 1) / warmup` while `k < warmup`, then
        cosine from lr to min over `max(1, steps - warmup)` steps, min from step `steps` on (also when
        warm-up does not end before `steps`)."""
        lr, lo = self.learning_rate, self.min_learning_rate
        if k < self.warmup_steps:
            return lr * (k + 1) / self.warmup_steps
        if k >= self.steps:
            return lo
        span = max(1, self.steps - self.warmup_steps)
        return lo + (lr - lo) * (1 + math.cos(math.pi * (k - self.warmup_steps) / span)) / 2


def gradient_norm(params: dict) -> float:
    """The L2 norm over every trained tensor's gradient (absent gradients count as zero), squares summed in
    float64 tensor by tensor in the order of `params`."""
    total = 0.0
    for p in params.values():
        if p.grad is not None:
            total += float((p.grad.double() ** 2).sum())
    return math.sqrt(total)


def clip(params: dict, norm: float, clip_norm: float) -> float:
    """Scales every gradient by `min(1, clip_norm / norm)` (as an F32 factor); answers the factor."""
    factor = 1.0 if norm <= clip_norm else clip_norm / norm
    if factor < 1.0:
        for p in params.values():
            if p.grad is not None:
                p.grad.mul_(torch.tensor(factor, dtype=p.grad.dtype))
    return factor


class Optimizer:
    """AdamW over a model's masters in two groups (decayed, not decayed); `step(k)` applies step k's rate."""

    def __init__(self, params: dict, schedule: Schedule):
        self.params, self.schedule = params, schedule
        decayed = [p for n, p in params.items() if decays(n, p.shape)]
        plain = [p for n, p in params.items() if not decays(n, p.shape)]
        self.adamw = torch.optim.AdamW(
            [{"params": decayed, "weight_decay": schedule.weight_decay}, {"params": plain, "weight_decay": 0.0}],
            lr=schedule.learning_rate, betas=BETAS, eps=EPS, foreach=False, fused=False)

    def step(self, k: int) -> dict:
        """Gradient norm, clipping, then AdamW at rate(k) on every tensor (a missing gradient is zero, so decay
        and the moments still apply). Answers the norm before clipping and the rate."""
        norm = gradient_norm(self.params)
        clip(self.params, norm, self.schedule.clip_norm)
        for p in self.params.values():
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        lr = self.schedule.rate(k)
        for group in self.adamw.param_groups:
            group["lr"] = lr
        self.adamw.step()
        self.adamw.zero_grad(set_to_none=True)
        return {"gradient_norm": norm, "learning_rate": lr}
