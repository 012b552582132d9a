"""Agreement coefficients between two paired vectors: a metric's scores and human scores.

Every function takes ``x`` (the metric, float (n,)) and ``z`` (the human score, float
(n,)), already free of missing values, and returns a float in [-1, 1] ([0, 1] for
``acc23``), or NaN where the coefficient is undefined (:func:`why_undefined` says why).
Definitions:

- ``pearson``, ``spearman``: :func:`scipy.stats.pearsonr`, :func:`scipy.stats.spearmanr`
  (average ranks for ties), called as they are, so the values equal scipy's at full
  precision.
- ``kendall`` (tau-b, the default) and ``kendall_c`` (tau-c, Stuart's): scipy's
  :func:`scipy.stats.kendalltau` with ``variant="b"`` / ``"c"``, O(n log n) (a merge
  sort), so a global coefficient over 100,000 examples takes milliseconds.
- ``acc23`` and ``tau23``: Deutsch, Foster and Freitag (2023), "Ties Matter:
  Meta-Evaluating Modern Metrics with Pairwise Accuracy and Tie Calibration", EMNLP, as
  mt-metrics-eval's ``stats.KendallVariants``: over all pairs, ``acc23 = (C + T_xz) /
  N`` and ``tau23 = (C + T_xz - D - T_x - T_z) / N`` with C, D the concordant and
  discordant pairs, T_xz the pairs tied in both, T_x / T_z the pairs tied in the metric
  only / the human score only, N all pairs. ``epsilon`` > 0 counts metric differences
  ``|dx| <= epsilon`` as ties (O(n^2) pairs); :func:`tie_calibration` searches the
  epsilon that maximises the coefficient (mt-metrics-eval's ``tau_optimization``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

COEFFICIENTS = ("pearson", "spearman", "kendall", "kendall_c", "acc23", "tau23")
DEFAULT_COEFFICIENT = "kendall"
# pairs a metric-tie threshold (epsilon > 0) is computed over, at most (O(n^2) memory)
MAX_EPSILON_PAIRS = 50_000_000


def _constant(v: np.ndarray) -> bool:
    return v.size == 0 or bool(np.all(v == v[0]))


def why_undefined(x: np.ndarray, z: np.ndarray, coefficient: str) -> str | None:
    """Why a coefficient is undefined on these vectors, or None when it is defined.

    Args:
        x: metric scores, float (n,), no NaN.
        z: human scores, float (n,), no NaN.
        coefficient: one of :data:`COEFFICIENTS`.

    Returns:
        ``"fewer than 2 values"``, ``"constant metric"``, ``"constant human score"``, or
        None. ``acc23`` and ``tau23`` are defined on constant vectors (every pair a tie).

    """
    if x.size < 2:
        return "fewer than 2 values"
    if coefficient in ("acc23", "tau23"):
        return None
    if _constant(x):
        return "constant metric"
    if _constant(z):
        return "constant human score"
    return None


def _scipy(name: str) -> Callable[[np.ndarray, np.ndarray], float]:
    from scipy import stats

    if name == "pearson":
        return lambda x, z: float(stats.pearsonr(x, z)[0])
    if name == "spearman":
        return lambda x, z: float(stats.spearmanr(x, z)[0])
    variant = "b" if name == "kendall" else "c"
    return lambda x, z: float(stats.kendalltau(x, z, variant=variant)[0])


def pair_counts(x: np.ndarray, z: np.ndarray) -> tuple[int, int, int, int, int]:
    """Kendall's sufficient statistics over all pairs, in O(n log n).

    Args:
        x: metric scores, float (n,).
        z: human scores, float (n,).

    Returns:
        ``(concordant, discordant, tied in x only, tied in z only, tied in both)``, pair
        counts summing to n(n-1)/2.

    """
    n = x.size
    total = n * (n - 1) // 2
    if n < 2:
        return 0, 0, 0, 0, 0

    def tied_pairs(*columns: np.ndarray) -> int:
        _, counts = np.unique(np.stack(columns, axis=1), axis=0, return_counts=True)
        return int((counts * (counts - 1) // 2).sum())

    t_x, t_z, t_xz = tied_pairs(x), tied_pairs(z), tied_pairs(x, z)
    untied = total - t_x - t_z + t_xz  # pairs tied in neither: concordant or discordant
    if untied == 0:
        return 0, 0, t_x - t_xz, t_z - t_xz, t_xz
    from scipy import stats

    # C - D from tau-b times its denominator: an integer recovered exactly (the relative
    # error of the float product is ~1e-15, far below 0.5 / n^2 for any n that fits).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tau = float(stats.kendalltau(x, z, variant="b")[0])
    diff = int(round(tau * np.sqrt(float(total - t_x)) * np.sqrt(float(total - t_z))))
    con = (untied + diff) // 2
    return con, untied - con, t_x - t_xz, t_z - t_xz, t_xz


def _epsilon_counts(x: np.ndarray, z: np.ndarray, epsilon: float
                    ) -> tuple[int, int, int, int, int]:
    n = x.size
    if n * (n - 1) // 2 > MAX_EPSILON_PAIRS:
        from pipeline.errors import ConfigError

        raise ConfigError(f"a metric-tie epsilon over {n} values needs {n * (n - 1) // 2} "
                          f"pairs, more than {MAX_EPSILON_PAIRS}",
                          hint="use epsilon 0 at the global level, or the input level")
    i, j = np.triu_indices(n, k=1)
    dx, dz = x[i] - x[j], z[i] - z[j]
    xtie = np.abs(dx) <= epsilon
    ztie = dz == 0
    both = int((xtie & ztie).sum())
    t_x = int((xtie & ~ztie).sum())
    t_z = int((~xtie & ztie).sum())
    con = int((~xtie & ~ztie & (np.sign(dx) == np.sign(dz))).sum())
    dis = i.size - con - both - t_x - t_z
    return con, dis, t_x, t_z, both


def _from_counts(counts: tuple[int, int, int, int, int], coefficient: str) -> float:
    con, dis, t_x, t_z, both = counts
    total = con + dis + t_x + t_z + both
    if total == 0:
        return float("nan")
    if coefficient == "acc23":
        return (con + both) / total
    return (con + both - dis - t_x - t_z) / total


def coefficient(x: np.ndarray, z: np.ndarray, name: str, *, epsilon: float = 0.0) -> float:
    """One agreement coefficient between a metric and human scores.

    Args:
        x: metric scores, float (n,), no NaN.
        z: human scores, float (n,), no NaN.
        name: one of :data:`COEFFICIENTS` (see the module docstring for each definition).
        epsilon: for ``acc23`` / ``tau23`` only: metric differences ``<= epsilon`` count
            as ties, >= 0 (mt-metrics-eval's ``epsilon``).

    Returns:
        The coefficient, in [-1, 1] ([0, 1] for ``acc23``), or NaN when undefined
        (:func:`why_undefined`).

    Raises:
        ConfigError: an unknown name; a negative epsilon, or epsilon with another
            coefficient than acc23 / tau23; too many pairs for an epsilon.

    """
    from pipeline.errors import ConfigError

    if name not in COEFFICIENTS:
        raise ConfigError(f"unknown coefficient {name!r}",
                          hint=f"choose among {', '.join(COEFFICIENTS)}")
    if epsilon < 0 or (epsilon > 0 and name not in ("acc23", "tau23")):
        raise ConfigError(f"epsilon {epsilon} applies to acc23 and tau23 only, and is >= 0")
    x = np.asarray(x, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64)
    if why_undefined(x, z, name) is not None:
        return float("nan")
    if name in ("acc23", "tau23"):
        counts = _epsilon_counts(x, z, epsilon) if epsilon > 0 else pair_counts(x, z)
        return _from_counts(counts, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _scipy(name)(x, z)


def tie_calibration(xs: list[np.ndarray], zs: list[np.ndarray], name: str = "acc23"
                    ) -> tuple[float, float]:
    """The metric-tie threshold that maximises acc23 / tau23, averaged over vectors.

    Deutsch, Foster and Freitag (2023), "Ties Matter", EMNLP, section 5 (tie calibration),
    as mt-metrics-eval's ``tau_optimization`` with ``sample_rate=1``: every pair's metric
    difference ``|dx|`` is a candidate threshold (and 0); at a threshold t every pair with
    ``|dx| <= t`` is a metric tie; the coefficient is the mean over the vectors (one for
    the global or system level, one per input for the input level); the first best
    threshold wins.

    Args:
        xs: metric score vectors, each float (n_k,), no NaN.
        zs: the human score vectors paired with them.
        name: ``acc23`` or ``tau23``.

    Returns:
        ``(best coefficient, best threshold)``; (NaN, 0.0) when no vector has a pair.

    """
    deltas, diffs, base_parts = [], [], []
    n_rows = 0
    for x, z in zip(xs, zs, strict=True):
        x = np.asarray(x, dtype=np.float64)
        z = np.asarray(z, dtype=np.float64)
        i, j = np.triu_indices(x.size, k=1)
        if i.size == 0:
            continue
        n_rows += 1
        dx, dz = x[i] - x[j], z[i] - z[j]
        ztie = dz == 0
        xtie = dx == 0
        concordant = ~xtie & ~ztie & (np.sign(dx) == np.sign(dz))
        good = concordant | (xtie & ztie)  # counted as agreement as it is
        if name == "acc23":
            before = good.astype(np.float64)
            after = ztie.astype(np.float64)  # made a metric tie: agrees iff z tied
        else:
            before = np.where(good, 1.0, -1.0)
            after = np.where(ztie, 1.0, -1.0)
        base_parts.append(before.sum() / i.size)
        deltas.append((after - before) / i.size)
        diffs.append(np.abs(dx))
    if n_rows == 0:
        return float("nan"), 0.0
    diff = np.concatenate(diffs)
    delta = np.concatenate(deltas)
    order = np.argsort(diff, kind="stable")
    diff, delta = diff[order], delta[order]
    base = float(np.sum(base_parts))
    running = base + np.cumsum(delta)
    # the value at a threshold: after every pair with that difference flipped
    last = np.r_[diff[1:] != diff[:-1], True]
    thresholds = np.r_[0.0, diff[last]]
    values = np.r_[base, running[last]] / n_rows
    if thresholds.size > 1 and thresholds[1] == 0.0:  # a 0 difference: already ties
        thresholds, values = thresholds[1:], values[1:]
    best = int(np.nanargmax(values))
    return float(values[best]), float(thresholds[best])
