"""The trainer's random numbers: SplitMix64 streams, counter-based, in numpy, reproducible bit for bit.

The C++ trainer implements the same generator (`docs/decisions.md`, "Training"), so a seed gives the same
weights and the same masks on both sides:

- A *stream* is named by a seed and a label (bytes): its state is `seed XOR FNV-1a-64(label)`.
- Draw `k` of a stream (`k = 0, 1, ...`) is SplitMix64's output for the state `s + (k + 1) * GAMMA`
  (mod 2^64), GAMMA = 0x9E3779B97F4A7C15, mixed by `z ^= z >> 30; z *= 0xBF58476D1CE4E5B9;
  z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31`: the k-th output of `splitmix64_next` started
  at `s`. Being counter-based, any draw can be computed on its own (a tensor's elements in parallel).
- A *standard normal* from draws `6e .. 6e + 5` (for element `e`): the twelve 32-bit halves `u`
  (high half first) of those six words give `z = sum(u) / 2^32 - 6` (Irwin-Hall with twelve terms: mean 0,
  variance 1, within +-6). Every operation is exact in double precision (the sum is a multiple of 2^-32
  below 12), so no libm function enters and both sides agree to the last bit; Box-Muller's log and cos
  are not correctly rounded on every platform (numpy's `log` differs from glibc's in the last bit for
  about 0.35% of doubles).
- A *uniform integer* below `n` from a draw `w`: `((w >> 32) * n) >> 32` (exact integer arithmetic).
- A *uniform real* in [0, 1) from a draw `w`: `(w >> 11) / 2^53`.
"""

from __future__ import annotations

import numpy as np

GAMMA = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1


def fnv1a64(label: bytes) -> int:
    """FNV-1a, 64-bit, of the label's bytes."""
    h = 0xCBF29CE484222325
    for b in label:
        h = ((h ^ b) * 0x100000001B3) & _MASK64
    return h


def _mix(z: np.ndarray) -> np.ndarray:
    z = z.copy()
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


class Stream:
    """A named SplitMix64 stream; `draws(start, count)` gives draws `start .. start + count - 1` as uint64."""

    def __init__(self, seed: int, label: str | bytes):
        label = label.encode() if isinstance(label, str) else bytes(label)
        self.state = (int(seed) ^ fnv1a64(label)) & _MASK64
        self.next_index = 0

    def draws(self, start: int, count: int) -> np.ndarray:
        k = np.arange(start + 1, start + 1 + count, dtype=np.uint64)
        with np.errstate(over="ignore"):
            return _mix(np.uint64(self.state) + k * np.uint64(GAMMA))

    def take(self, count: int) -> np.ndarray:
        """The next `count` draws of the stream, advancing it."""
        out = self.draws(self.next_index, count)
        self.next_index += count
        return out

    def below(self, n: int) -> int:
        """The next draw as a uniform integer in [0, n)."""
        w = int(self.take(1)[0])
        return ((w >> 32) * n) >> 32

    def real(self) -> float:
        """The next draw as a uniform real in [0, 1)."""
        return float(int(self.take(1)[0]) >> 11) / 2.0**53


def standard_normals(seed: int, label: str | bytes, count: int) -> np.ndarray:
    """`count` standard normals (float64, Irwin-Hall of twelve 32-bit uniforms) of the stream (seed, label)."""
    w = Stream(seed, label).draws(0, 6 * count).reshape(count, 6)
    halves = np.concatenate([w >> np.uint64(32), w & np.uint64(0xFFFFFFFF)], axis=1).astype(np.float64)
    return halves.sum(axis=1) / 2.0**32 - 6.0
