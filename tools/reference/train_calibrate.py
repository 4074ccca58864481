"""Temperature calibration of the choice groups (docs/model.md, "Training", Choices): with the model frozen, each
group's `T_g` minimises the choice cross-entropy of the held-out items of that group; unfitted groups keep 1.

The cross-entropy in `beta = 1 / T`, `sum_items (logsumexp(beta z) - beta <t, z>)`, is convex, so its
derivative `sum_items (E_p[z] - E_t[z])` grows with beta and the fit is a bisection on it, in float64, in
`log beta` over `[ln 0.01, ln 100]` (T within [0.01, 100]), 200 halvings; a derivative that keeps its sign
over the range answers the end it points to. T is answered as F32.
"""

from __future__ import annotations

import math

import numpy as np

T_RANGE = (0.01, 100.0)


def _slope(beta: float, logits: list, targets: list) -> float:
    total = 0.0
    for z, t in zip(logits, targets):
        x = beta * z
        p = np.exp(x - x.max())
        p /= p.sum()
        total += float(p @ z - t @ z)
    return total


def fit_temperatures(logits: list, targets: list, groups: list, n_groups: int) -> np.ndarray:
    """logits: per held-out item its legal bytes' logits at CHOOSE (temperature 1); targets: its labels, one per
    legal byte; groups: its group. Answers F32 [n_groups]."""
    out = np.ones(n_groups, np.float32)
    for g in range(n_groups):
        zs = [np.asarray(z, np.float64) for z, gg in zip(logits, groups) if gg == g]
        ts = [np.asarray(t, np.float64) for t, gg in zip(targets, groups) if gg == g]
        if not zs:
            continue
        lo, hi = math.log(1 / T_RANGE[1]), math.log(1 / T_RANGE[0])
        if _slope(math.exp(lo), zs, ts) >= 0:
            beta = math.exp(lo)
        elif _slope(math.exp(hi), zs, ts) <= 0:
            beta = math.exp(hi)
        else:
            for _ in range(200):
                mid = (lo + hi) / 2
                if _slope(math.exp(mid), zs, ts) < 0:
                    lo = mid
                else:
                    hi = mid
            beta = math.exp((lo + hi) / 2)
        out[g] = np.float32(1 / beta)
    return out
