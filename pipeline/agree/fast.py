"""Kendall's tau-b on many bootstrap resamples at once, from resample counts.

A bootstrap resample of ``X[system, input]`` repeats rows and columns; a repeated system is
tied with itself in both the metric and the human score. So tau-b on a resample is a
function of the original matrices and of how often each row (``w``) and column (``v``)
appears in it, and needs no copy of the data:

- **input level**: for input c, with ``S_ab = sign(x_a - x_b) sign(z_a - z_b)`` (0 for
  a tie), ``Ex_ab = [x_a == x_b]``, ``Ez_ab = [z_a == z_b]`` (a == b included),
  concordant minus discordant pairs ``= w' S w / 2``, pairs tied in x ``= (w' Ex w -
  N) / 2`` with ``N = sum w``, all pairs ``N (N - 1) / 2``. Stacked over inputs and
  resamples these are matrix products (``(inputs, rows^2) @ (rows^2, resamples)``), exact
  in float32 (integers below 2^24); the level's value is the mean over the resampled
  inputs (each counted ``v_c`` times) where tau-b is defined, as nlpstats computes it.
- **global level**: over all cells, each weighted ``w_a v_c``: the cells sorted by the
  metric once; per resample a Fenwick tree over the human score's ranks sums the weights
  of the earlier cells below and above each cell (Knight 1966, "A Computer Method for
  Calculating Kendall's Tau with Ungrouped Data", JASA, with weights): O(cells log cells)
  per resample, compiled with numba, resamples in parallel.

Both equal :func:`pipeline.agree.levels.correlate` on ``X[rows][:, cols]`` to rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_BLOCK_BYTES = 64 << 20  # memory of one block of the input-level products


def _counts(index: np.ndarray | None, size: int, n_resamples: int) -> np.ndarray:
    if index is None:
        return np.ones((n_resamples, size))
    out = np.zeros((n_resamples, size))
    np.add.at(out, (np.arange(n_resamples)[:, None], index), 1.0)
    return out


def input_kendall(X: np.ndarray, Z: np.ndarray, rows: np.ndarray | None,
                  cols: np.ndarray | None, n_resamples: int) -> np.ndarray:
    """Input-level tau-b of every resample (module docstring).

    Args:
        X: metric, float (systems, inputs), NaN for missing.
        Z: human scores, same shape.
        rows: int (resamples, systems) resampled rows, or None.
        cols: int (resamples, inputs) resampled columns, or None.
        n_resamples: resamples.

    Returns:
        float (resamples,), NaN where no resampled input has a defined tau-b.

    """
    m, n = X.shape
    W = _counts(rows, m, n_resamples).astype(np.float32)  # (R, m)
    V = _counts(cols, n, n_resamples)  # (R, n)
    valid = ~np.isnan(X) & ~np.isnan(Z)
    total = np.zeros((n_resamples, n))
    per = np.zeros((n_resamples, n))
    block_cols = max(1, _BLOCK_BYTES // (3 * 4 * m * m))
    block_r = max(1, _BLOCK_BYTES // (4 * m * m))
    for c0 in range(0, n, block_cols):
        cs = slice(c0, min(n, c0 + block_cols))
        x, z, ok = X[:, cs], Z[:, cs], valid[:, cs]
        pair_ok = ok[:, None, :] & ok[None, :, :]
        dx = x[:, None, :] - x[None, :, :]
        dz = z[:, None, :] - z[None, :, :]
        with np.errstate(invalid="ignore"):
            S = np.where(pair_ok, np.sign(dx) * np.sign(dz), 0.0)
        Ex = (pair_ok & (dx == 0)).astype(np.float32)
        Ez = (pair_ok & (dz == 0)).astype(np.float32)
        k = S.shape[2]
        S2 = np.ascontiguousarray(S.reshape(m * m, k).T, dtype=np.float32)  # (k, m^2)
        Ex2 = np.ascontiguousarray(Ex.reshape(m * m, k).T)
        Ez2 = np.ascontiguousarray(Ez.reshape(m * m, k).T)
        okf = ok.astype(np.float32)  # (m, k)
        for r0 in range(0, n_resamples, block_r):
            rs = slice(r0, min(n_resamples, r0 + block_r))
            w = W[rs]  # (b, m)
            outer = (w[:, :, None] * w[:, None, :]).reshape(w.shape[0], m * m).T  # (m^2, b)
            num = (S2 @ outer).astype(np.float64) / 2  # (k, b)
            N = (okf.T @ w.T).astype(np.float64)  # (k, b)
            pairs = (N * N - N) / 2
            tx = ((Ex2 @ outer).astype(np.float64) - N) / 2
            tz = ((Ez2 @ outer).astype(np.float64) - N) / 2
            with np.errstate(invalid="ignore", divide="ignore"):
                tau = num / np.sqrt(pairs - tx) / np.sqrt(pairs - tz)
            tau[(pairs - tx <= 0) | (pairs - tz <= 0)] = np.nan
            tau = tau.T  # (b, k)
            defined = ~np.isnan(tau)
            vv = V[rs, cs]
            per[rs, cs] = np.where(defined, tau, 0.0) * vv
            total[rs, cs] = defined * vv
    with np.errstate(invalid="ignore", divide="ignore"):
        out = per.sum(axis=1) / total.sum(axis=1)
    out[total.sum(axis=1) == 0] = np.nan
    return out


_KERNEL: dict[str, Any] = {}


def _global_kernel() -> Any:
    if "cd" in _KERNEL:
        return _KERNEL["cd"]
    from numba import njit, prange

    @njit(parallel=True, cache=True, nogil=True)
    def weighted_cd(group_start, zrank, cell_row, cell_col, W, V, n_z):  # pragma: no cover
        R = W.shape[0]
        n_groups = group_start.shape[0] - 1
        out = np.zeros(R, dtype=np.int64)
        for r in prange(R):
            tree = np.zeros(n_z + 1, dtype=np.int64)
            inserted = np.int64(0)
            acc = np.int64(0)
            for g in range(n_groups):
                for i in range(group_start[g], group_start[g + 1]):
                    wi = np.int64(W[r, cell_row[i]]) * np.int64(V[r, cell_col[i]])
                    if wi == 0:
                        continue
                    # weights inserted with a smaller human rank, and with a larger one
                    below = np.int64(0)
                    j = zrank[i]  # 0-based rank; prefix over ranks < zrank[i]
                    while j > 0:
                        below += tree[j]
                        j -= j & (-j)
                    upto = np.int64(0)
                    j = zrank[i] + 1
                    while j > 0:
                        upto += tree[j]
                        j -= j & (-j)
                    acc += wi * (below - (inserted - upto))
                for i in range(group_start[g], group_start[g + 1]):
                    wi = np.int64(W[r, cell_row[i]]) * np.int64(V[r, cell_col[i]])
                    if wi == 0:
                        continue
                    j = zrank[i] + 1
                    while j <= n_z:
                        tree[j] += wi
                        j += j & (-j)
                    inserted += wi
            out[r] = acc
        return out

    _KERNEL["cd"] = weighted_cd
    return weighted_cd


def _tied_pairs(groups: np.ndarray, weights: np.ndarray, n_groups: int) -> np.ndarray:
    """Return float (R,): sum over groups of G (G - 1) / 2 with G the group's weight."""
    out = np.zeros(weights.shape[0])
    for r in range(weights.shape[0]):
        g = np.bincount(groups, weights=weights[r], minlength=n_groups)
        out[r] = (g * (g - 1) / 2).sum()
    return out


def global_kendall(X: np.ndarray, Z: np.ndarray, rows: np.ndarray | None,
                   cols: np.ndarray | None, n_resamples: int) -> np.ndarray:
    """Global tau-b of every resample (module docstring).

    Args:
        X: metric, float (systems, inputs), NaN for missing.
        Z: human scores, same shape.
        rows: int (resamples, systems) resampled rows, or None.
        cols: int (resamples, inputs) resampled columns, or None.
        n_resamples: resamples.

    Returns:
        float (resamples,), NaN where every resampled cell ties in x or in z.

    """
    m, n = X.shape
    W = _counts(rows, m, n_resamples).astype(np.int64)
    V = _counts(cols, n, n_resamples).astype(np.int64)
    ok = ~np.isnan(X) & ~np.isnan(Z)
    a, c = np.nonzero(ok)
    x, z = X[a, c], Z[a, c]
    order = np.lexsort((z, x))
    a, c, x, z = a[order], c[order], x[order], z[order]
    _, zrank = np.unique(z, return_inverse=True)
    n_z = int(zrank.max()) + 1 if zrank.size else 0
    new_x = np.r_[True, x[1:] != x[:-1]] if x.size else np.zeros(0, bool)
    group_start = np.r_[np.flatnonzero(new_x), x.size].astype(np.int64)
    xgroup = np.cumsum(new_x) - 1
    kernel = _global_kernel()
    tau = np.empty(n_resamples)
    step = max(1, (32 << 20) // (8 * max(1, a.size)))
    for r0 in range(0, n_resamples, step):
        rs = slice(r0, min(n_resamples, r0 + step))
        cd = kernel(group_start, zrank.astype(np.int64), a.astype(np.int64),
                    c.astype(np.int64), W[rs], V[rs], n_z).astype(np.float64)
        weights = (W[rs][:, a] * V[rs][:, c]).astype(np.float64)  # (block, cells)
        N = weights.sum(axis=1)
        pairs = N * (N - 1) / 2
        tx = _tied_pairs(xgroup, weights, int(group_start.size - 1))
        tz = _tied_pairs(zrank, weights, n_z)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = cd / np.sqrt(pairs - tx) / np.sqrt(pairs - tz)
        t[(pairs - tx <= 0) | (pairs - tz <= 0)] = np.nan
        tau[rs] = t
    return tau
