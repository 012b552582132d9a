"""Compiled hash kernels for partitioning example ids (see :mod:`pipeline.io.partition`).

FNV-1a 64 over bytes, then the SplitMix64 finalizer (Steele, Lea & Flood 2014), which
spreads low-entropy inputs; the finalizer is the bootstrap's own (:mod:`pipeline.resampling`),
one copy for both. Loaded through :func:`pipeline.compiled.kernel`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pipeline.resampling import _mix64

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


@njit(cache=True, nogil=True)
def hash_bytes(offsets, data, out):
    """out[i] = mix64(FNV-1a 64 of data[offsets[i]:offsets[i + 1]]), i < len(out)."""
    for i in range(len(out)):
        h = _FNV_OFFSET
        for j in range(offsets[i], offsets[i + 1]):
            h = (h ^ np.uint64(data[j])) * _FNV_PRIME
        out[i] = _mix64(h)


@njit(cache=True, nogil=True)
def hash_ints(values, out):
    """out[i] = mix64(values[i]) (uint64 views of int64 ids)."""
    for i in range(len(out)):
        out[i] = _mix64(values[i])
