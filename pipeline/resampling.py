"""Compiled kernels of the bootstrap (see :mod:`pipeline.stats` for what they compute).

Counter-based Poisson / flip weights drawn per example and resample, their exact weighted
column sums, and the rounding of values to the exact-summation grid. Loaded through
:func:`pipeline.compiled.kernel` (compiled ahead of time at install), so that an aggregate
imports no numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _mix64(x):  # pragma: no cover - compiled
    # SplitMix64 finalizer (Steele, Lea & Flood 2014).
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True)
def stream_keys(hashes, stream, out):  # pragma: no cover - compiled
    """out[i] = mix64(hashes[i] ^ stream[0]) (stream: one uint64, as an array)."""
    s = stream[0]
    for i in range(len(hashes)):
        out[i] = _mix64(hashes[i] ^ s)


@njit(cache=True, nogil=True)
def _draw(keys, b0, nb, word, th, flip, w, words, counts):  # pragma: no cover - compiled
    # w (4, block): the weights of resamples 4*word .. 4*word+3 for examples b0 .. b0+nb-1.
    # The words are drawn first, then their 16-bit lanes are compared as uint16 (16 to a
    # vector), then spread to one row per lane.
    c = np.uint64(word + 1) * np.uint64(0x9E3779B97F4A7C15)
    for i in range(nb):
        words[i] = _mix64(keys[b0 + i] + c)
    lanes = words[:nb].view(np.uint16)  # little-endian: lane l of word i at 4 * i + l
    if flip:
        half = np.uint16(32768)
        for j in range(4 * nb):
            counts[j] = lanes[j] >= half
    else:
        t0, t1, t2, t3 = np.uint16(th[0]), np.uint16(th[1]), np.uint16(th[2]), np.uint16(th[3])
        t4, t5, t6, t7 = np.uint16(th[4]), np.uint16(th[5]), np.uint16(th[6]), np.uint16(th[7])
        for j in range(4 * nb):
            u = lanes[j]
            counts[j] = ((u >= t0) + (u >= t1) + (u >= t2) + (u >= t3)
                         + (u >= t4) + (u >= t5) + (u >= t6) + (u >= t7))
    for i in range(nb):
        for lane in range(4):
            w[lane, i] = counts[4 * i + lane]


@njit(cache=True, nogil=True, fastmath=True)
def _tile4x4(w, xt, b0, nb, q0, acc, r0):  # pragma: no cover - compiled
    # acc[q0 + a, r0 + b] += sum_i w[b, i] * xt[q0 + a, b0 + i]: 16 exact sums in registers
    # (fastmath lets the loop vectorise; the sums are exact, so their order does not matter)
    s00 = s01 = s02 = s03 = 0.0
    s10 = s11 = s12 = s13 = 0.0
    s20 = s21 = s22 = s23 = 0.0
    s30 = s31 = s32 = s33 = 0.0
    w0, w1, w2, w3 = w[0], w[1], w[2], w[3]
    x0 = xt[q0, b0:b0 + nb]
    x1 = xt[q0 + 1, b0:b0 + nb]
    x2 = xt[q0 + 2, b0:b0 + nb]
    x3 = xt[q0 + 3, b0:b0 + nb]
    for i in range(nb):
        a, b, c, d = w0[i], w1[i], w2[i], w3[i]
        e, f, g, h = x0[i], x1[i], x2[i], x3[i]
        s00 += a * e
        s01 += b * e
        s02 += c * e
        s03 += d * e
        s10 += a * f
        s11 += b * f
        s12 += c * f
        s13 += d * f
        s20 += a * g
        s21 += b * g
        s22 += c * g
        s23 += d * g
        s30 += a * h
        s31 += b * h
        s32 += c * h
        s33 += d * h
    acc[q0, r0] += s00
    acc[q0, r0 + 1] += s01
    acc[q0, r0 + 2] += s02
    acc[q0, r0 + 3] += s03
    acc[q0 + 1, r0] += s10
    acc[q0 + 1, r0 + 1] += s11
    acc[q0 + 1, r0 + 2] += s12
    acc[q0 + 1, r0 + 3] += s13
    acc[q0 + 2, r0] += s20
    acc[q0 + 2, r0 + 1] += s21
    acc[q0 + 2, r0 + 2] += s22
    acc[q0 + 2, r0 + 3] += s23
    acc[q0 + 3, r0] += s30
    acc[q0 + 3, r0 + 1] += s31
    acc[q0 + 3, r0 + 2] += s32
    acc[q0 + 3, r0 + 3] += s33


@njit(cache=True, nogil=True, fastmath=True)
def _tile4x1(w, xt, b0, nb, q, acc, r0):  # pragma: no cover - compiled
    s0 = s1 = s2 = s3 = 0.0
    w0, w1, w2, w3 = w[0], w[1], w[2], w[3]
    x = xt[q, b0:b0 + nb]
    for i in range(nb):
        e = x[i]
        s0 += w0[i] * e
        s1 += w1[i] * e
        s2 += w2[i] * e
        s3 += w3[i] * e
    acc[q, r0] += s0
    acc[q, r0 + 1] += s1
    acc[q, r0 + 2] += s2
    acc[q, r0 + 3] += s3


@njit(cache=True, nogil=True, fastmath=True)
def _totals(w, nb, tot, r0):  # pragma: no cover - compiled
    for lane in range(4):
        s = 0.0
        for i in range(nb):
            s += w[lane, i]
        tot[r0 + lane] += s


@njit(cache=True, nogil=True)
def weighted_sums(xt, keys, first_word, n_words, th, flip, acc, tot):  # pragma: no cover
    """acc[q, 4j + l] += sum_i w_l(i, first_word + j) * xt[q, i]; tot[4j + l] += sum_i w."""
    # xt (k, n) on the exact grid; acc (k, 4 * n_words) and tot (4 * n_words,) zeroed.
    k, n = xt.shape
    w = np.empty((4, 1024))
    words = np.empty(1024, dtype=np.uint64)
    counts = np.empty(4 * 1024, dtype=np.uint8)
    for b0 in range(0, n, 1024):
        nb = min(1024, n - b0)
        for j in range(n_words):
            _draw(keys, b0, nb, first_word + j, th, flip, w, words, counts)
            r0 = 4 * j
            _totals(w, nb, tot, r0)
            q = 0
            while q + 4 <= k:
                _tile4x4(w, xt, b0, nb, q, acc, r0)
                q += 4
            while q < k:
                _tile4x1(w, xt, b0, nb, q, acc, r0)
                q += 1


@njit(cache=True, nogil=True)
def column_max_abs(values, out):  # pragma: no cover - compiled
    """out[q] = max(out[q], max_i |values[i, q]|)."""
    n, k = values.shape
    for i in range(n):
        for q in range(k):
            a = abs(values[i, q])
            if a > out[q]:
                out[q] = a


@njit(cache=True, nogil=True)
def round_transposed(values, scales, out):  # pragma: no cover - compiled
    """out[q, i] = rint(values[i, q] * 2**s_q) / 2**s_q: exact scalings, one rounding."""
    n, k = values.shape
    for i in range(n):
        for q in range(k):
            out[q, i] = np.rint(values[i, q] * scales[q]) / scales[q]
