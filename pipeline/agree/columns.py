"""Every coefficient of :mod:`pipeline.agree.coefficients`, for each column of a matrix at once.

Used for the input level (one coefficient per input, across its systems) and for the
bootstrap of the system level (one column per resample, holding that resample's system
means): numpy over all columns instead of a Python call per column. The definitions are
those of :func:`pipeline.agree.coefficients.coefficient` (scipy's, mt-metrics-eval's); the
values equal them to rounding (1e-12). Kendall's variants and acc23 / tau23 compare every
pair of rows, O(rows^2) per column, in blocks of columns to bound memory.
"""

from __future__ import annotations

import numpy as np

# cells (rows^2 x columns) of one block of the pairwise comparisons
_BLOCK_CELLS = 4_000_000


def _pearson(X: np.ndarray, Z: np.ndarray, M: np.ndarray) -> np.ndarray:
    n = M.sum(axis=0).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.where(M, X, 0.0).sum(axis=0) / n
        mz = np.where(M, Z, 0.0).sum(axis=0) / n
        dx = np.where(M, X - mx, 0.0)
        dz = np.where(M, Z - mz, 0.0)
        sxx = (dx * dx).sum(axis=0)
        szz = (dz * dz).sum(axis=0)
        r = (dx * dz).sum(axis=0) / np.sqrt(sxx * szz)
    # constant columns (scipy: NaN), fewer than 2 values
    const = ~(_spread(X, M) & _spread(Z, M)) | (n < 2)
    r = np.clip(r, -1.0, 1.0)
    r[const] = np.nan
    return r


def _spread(X: np.ndarray, M: np.ndarray) -> np.ndarray:
    """True per column when its valid values are not all equal."""
    hi = np.where(M, X, -np.inf).max(axis=0)
    lo = np.where(M, X, np.inf).min(axis=0)
    return hi > lo


def _ranks(X: np.ndarray, M: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    filled = np.where(M, X, np.nan)
    return np.asarray(rankdata(filled, axis=0, nan_policy="omit"), dtype=np.float64)


def _pairs(X: np.ndarray, Z: np.ndarray, M: np.ndarray, name: str, epsilon: float
           ) -> np.ndarray:
    m, n = X.shape
    out = np.empty(n, dtype=np.float64)
    step = max(1, _BLOCK_CELLS // max(1, m * m))
    upper = np.triu(np.ones((m, m), dtype=bool), k=1)[:, :, None]
    for start in range(0, n, step):
        sl = slice(start, min(n, start + step))
        x, z, v = X[:, sl], Z[:, sl], M[:, sl]
        dx = x[:, None, :] - x[None, :, :]
        dz = z[:, None, :] - z[None, :, :]
        valid = v[:, None, :] & v[None, :, :] & upper
        xtie = (np.abs(dx) <= epsilon) if epsilon > 0 else (dx == 0)
        ztie = dz == 0
        total = valid.sum(axis=(0, 1)).astype(np.float64)
        t_x = (valid & xtie).sum(axis=(0, 1)).astype(np.float64)
        t_z = (valid & ztie).sum(axis=(0, 1)).astype(np.float64)
        t_xz = (valid & xtie & ztie).sum(axis=(0, 1)).astype(np.float64)
        sx = np.where(xtie, 0.0, np.sign(dx))
        s = (np.where(valid, sx * np.sign(dz), 0.0)).sum(axis=(0, 1))
        con = ((total - t_x - t_z + t_xz) + s) / 2
        dis = con - s
        with np.errstate(invalid="ignore", divide="ignore"):
            if name == "kendall":
                r = s / np.sqrt(total - t_x) / np.sqrt(total - t_z)
                r[(t_x == total) | (t_z == total)] = np.nan
            elif name == "kendall_c":
                size = v.sum(axis=0).astype(np.float64)
                classes = np.minimum(_distinct(x, v), _distinct(z, v)).astype(np.float64)
                r = 2 * s / (size**2 * (classes - 1) / classes)
                r[(t_x == total) | (t_z == total)] = np.nan
            elif name == "acc23":
                r = (con + t_xz) / total
            else:  # tau23
                r = (con + t_xz - dis - (t_x - t_xz) - (t_z - t_xz)) / total
        r[total == 0] = np.nan
        out[sl] = r
    return out


def _distinct(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Distinct valid values per column."""
    filled = np.where(v, x, np.inf)
    s = np.sort(filled, axis=0)
    new = np.r_[np.ones((1, s.shape[1]), dtype=bool), s[1:] != s[:-1]]
    return (new & np.isfinite(s)).sum(axis=0)


def column_coefficients(X: np.ndarray, Z: np.ndarray, name: str, *, epsilon: float = 0.0
                        ) -> np.ndarray:
    """A coefficient per column between X and Z, cells missing in either dropped.

    Args:
        X: metric scores, float (rows, columns), NaN for missing.
        Z: human scores, float (rows, columns), NaN for missing.
        name: a name of :data:`pipeline.agree.coefficients.COEFFICIENTS`.
        epsilon: metric-tie threshold of acc23 / tau23, >= 0.

    Returns:
        float (columns,): each column's coefficient, NaN where it is undefined (fewer than
        2 pairs of values; constant scores for pearson, spearman, kendall, kendall_c).

    """
    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    M = ~np.isnan(X) & ~np.isnan(Z)
    if name == "pearson":
        return _pearson(X, Z, M)
    if name == "spearman":
        r = _pearson(_ranks(X, M), _ranks(Z, M), M)
        r[~(_spread(X, M) & _spread(Z, M))] = np.nan
        return r
    out = _pairs(X, Z, M, name, epsilon)
    out[M.sum(axis=0) < 2] = np.nan
    return out
