"""The raters' own agreement: the ceiling a metric's agreement is read against.

- Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability",
  Annenberg School for Communication): ``alpha = 1 - D_o / D_e`` from the coincidence
  matrix of the values the raters gave each unit (units with fewer than 2 values
  dropped), with the ``interval`` distance ``(c - k)^2`` or the ``ordinal`` one
  ``(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2``. Equal to the ``krippendorff`` package.
- Each rater against the mean of the others: the rater's scores take the metric's place,
  at the same level and coefficient as the metric (see :mod:`pipeline.agree.levels`).
"""

from __future__ import annotations

import numpy as np

ALPHA_KINDS = ("interval", "ordinal")


def krippendorff_alpha(ratings: np.ndarray, kind: str = "interval") -> float:
    """Krippendorff's alpha of raters over units.

    Args:
        ratings: float (raters, units), NaN where a rater gave no value.
        kind: ``interval`` or ``ordinal`` (module docstring).

    Returns:
        alpha, <= 1 (1: perfect agreement; 0: chance; negative: systematic disagreement);
        NaN when fewer than 2 pairable values or a single distinct value.

    Raises:
        ValueError: an unknown kind.

    """
    if kind not in ALPHA_KINDS:
        raise ValueError(f"unknown alpha kind {kind!r}; choose among {ALPHA_KINDS}")
    R = np.asarray(ratings, dtype=np.float64)
    values = np.unique(R[~np.isnan(R)])
    if values.size < 2:
        return float("nan")
    k = values.size
    # counts[u, v]: how many raters gave unit u the value v
    counts = np.zeros((R.shape[1], k))
    for row in R:
        ok = ~np.isnan(row)
        np.add.at(counts, (np.flatnonzero(ok), np.searchsorted(values, row[ok])), 1.0)
    m_u = counts.sum(axis=1)
    counts = counts[m_u >= 2]
    m_u = m_u[m_u >= 2]
    if counts.size == 0:
        return float("nan")
    # coincidences o[c, k] = sum_u (n_uc n_uk - [c == k] n_uc) / (m_u - 1)
    weighted = counts / (m_u - 1)[:, None]
    o = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if kind == "interval":
        delta = (values[:, None] - values[None, :]) ** 2
    else:
        cum = np.cumsum(n_c)
        lo = np.minimum.outer(np.arange(k), np.arange(k))
        hi = np.maximum.outer(np.arange(k), np.arange(k))
        between = cum[hi] - np.where(lo > 0, cum[lo - 1], 0.0)
        delta = (between - (n_c[:, None] + n_c[None, :]) / 2) ** 2
    d_o = (o * delta).sum()
    d_e = (np.outer(n_c, n_c) * delta).sum() / (n - 1)
    if d_e == 0:
        return float("nan")
    return float(1 - d_o / d_e)


def leave_one_out(ratings: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each rater's scores and the mean of the other raters' (the rater's "human score").

    Args:
        ratings: float (raters, systems, inputs), NaN where a rater gave no value.

    Returns:
        One ``(rater, others' mean)`` pair of float (systems, inputs) matrices per rater;
        a cell none of the others rated is NaN.

    """
    R = np.asarray(ratings, dtype=np.float64)
    ok = ~np.isnan(R)
    total = np.where(ok, R, 0.0).sum(axis=0)
    count = ok.sum(axis=0)
    out = []
    for r in range(R.shape[0]):
        rest_n = count - ok[r]
        with np.errstate(invalid="ignore", divide="ignore"):
            rest = (total - np.where(ok[r], R[r], 0.0)) / rest_n
        rest[rest_n == 0] = np.nan
        out.append((R[r], rest))
    return out
