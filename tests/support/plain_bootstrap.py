"""The documented resampling weights, written plainly in Python integers (a test oracle).

Independent of the compiled kernels in :mod:`pipeline.stats`: the README's definition of the
Poisson(1) and fair-flip weights, computed one word at a time.
"""

from __future__ import annotations

import math

import numpy as np

_M = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15
STREAMS = {"poisson": 0x5DEECE66D1CE4E5B, "flip": 0x2545F4914F6CDD1D}


def plain_mix64(x: int) -> int:
    """SplitMix64's finalizer on a Python int."""
    x &= _M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M
    return x ^ (x >> 31)


def _poisson_thresholds() -> list[int]:
    cdf, out = 0.0, []
    for m in range(8):
        cdf += math.exp(-1.0) / math.factorial(m)
        out.append(round(cdf * 65536))
    return out


def plain_weights(hashes: list[int], *, seed: int, count: int, kind: str) -> np.ndarray:
    """Weights (count, n): resample r of example i from lane r % 4 of word r // 4."""
    stream = plain_mix64(seed ^ STREAMS[kind])
    thresholds = _poisson_thresholds()
    out = np.zeros((count, len(hashes)))
    for i, h in enumerate(hashes):
        key = plain_mix64(h ^ stream)
        for r in range(count):
            word = plain_mix64(key + (r // 4 + 1) * _GAMMA)
            u = (word >> (16 * (r % 4))) & 0xFFFF
            out[r, i] = sum(u >= t for t in thresholds) if kind == "poisson" else u >= 32768
    return out


def plain_poisson_weights(hashes: list[int], *, seed: int, count: int) -> np.ndarray:
    """Poisson(1) bootstrap weights (count, n)."""
    return plain_weights(hashes, seed=seed, count=count, kind="poisson")
