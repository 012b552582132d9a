"""Drift: a control chart over the nightly values, recomputed from the history every night.

A slow drift moves each night by less than the band, so no single comparison alarms; a control
chart accumulates the nights' deviations from a reference level and alarms when the sum
passes its limit. Two charts, on values standardized by the nightly sd ``sigma``:

- **CUSUM** (tabular, two-sided; Page 1954, "Continuous inspection schemes", Biometrika 41;
  Montgomery, *Introduction to Statistical Quality Control*, 6th ed., section 9.1):
  ``C+_t = max(0, C+_{t-1} + (x_t - mu0)/sigma - k)``,
  ``C-_t = max(0, C-_{t-1} - (x_t - mu0)/sigma - k)``, ``C+_0 = C-_0 = 0``; alarm when
  ``max(C+, C-) > h``. Defaults ``k = 0.5``, ``h = 5`` (Montgomery's recommendation).
- **EWMA** (Roberts 1959, "Control chart tests based on geometric moving averages",
  Technometrics 1; Montgomery section 9.2): ``z_t = lam x_t + (1 - lam) z_{t-1}``,
  ``z_0 = mu0``; alarm when ``|z_t - mu0| > L sigma sqrt(lam / (2 - lam) (1 - (1 - lam)^(2t)))``.

The reference level ``mu0`` is a pinned run's value (``--reference-run``), else the median of
the first :data:`MIN_NIGHTS` nights of the history window (the chart then runs over the later
nights and tonight). ``sigma`` is the root mean square of the history's night-to-night changes
(centred on their median, so a steady drift does not inflate it) over sqrt(2)
(:func:`nightly_sd`), never below ``floor / BAND_MULTIPLIER`` (a suite that never moves does
not alarm on a change far inside its floor).

With so few nights, the estimated level and sd make the textbook limits far too tight (a
CUSUM with h = 5 passes its limit on 13% of drift-free rows with 14 nights). So the limit is
calibrated instead: tonight's statistic gets the p-value of its size among
:data:`NULL_DRAWS` simulated drift-free histories of as many independent normal nights, run
through the same estimation (:func:`null_statistics`, seeded); the p-values are adjusted
across the rows as the change alarm's are (Holm by default), and a row alarms below
``1 - confidence``. Nothing is kept between nights: the chart is recomputed from the
history. :data:`DRIFT_METHOD` (EWMA) was chosen by simulation (``scripts/simulate_nightly.py``,
3 seeds x 84 drift-free nights, band multiplier 4): EWMA raised no false drift alarm and
first alarmed a slow drift 6-7 nights after its onset; CUSUM raised 2 false ones (on one
group) and alarmed 6-7 nights after.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pipeline.compare.bands import BAND_MULTIPLIER, MIN_NIGHTS

DRIFT_METHODS = ("cusum", "ewma")
DRIFT_METHOD = "ewma"
CUSUM_K = 0.5
CUSUM_H = 5.0
EWMA_LAMBDA = 0.2
EWMA_L = 3.0


def cusum(values: np.ndarray, *, target: float, sd: float, k: float = CUSUM_K
          ) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided tabular CUSUM of ``values`` (Page 1954; Montgomery section 9.1).

    Args:
        values: float64 (T,), the observations in order.
        target: the reference level mu0.
        sd: the sd of one observation, > 0.
        k: the allowance, in sds.

    Returns:
        ``(upper, lower)``, float64 (T,) each: ``C+_t`` and ``C-_t`` in sds, >= 0.

    """
    z = (np.asarray(values, dtype=np.float64) - target) / sd
    upper = np.zeros(z.size)
    lower = np.zeros(z.size)
    hi = lo = 0.0
    for t, v in enumerate(z):
        hi = max(0.0, hi + v - k)
        lo = max(0.0, lo - v - k)
        upper[t], lower[t] = hi, lo
    return upper, lower


def ewma(values: np.ndarray, *, target: float, sd: float, lam: float = EWMA_LAMBDA,
         width: float = EWMA_L) -> tuple[np.ndarray, np.ndarray]:
    """EWMA chart of ``values`` (Roberts 1959; Montgomery section 9.2).

    Args:
        values: float64 (T,), the observations in order.
        target: the reference level mu0 (and z_0).
        sd: the sd of one observation, > 0.
        lam: the weight of the newest observation, in (0, 1].
        width: the limit's width L, in the statistic's sds.

    Returns:
        ``(z, limit)``, float64 (T,) each: the EWMA and the half-width of its control limits
        (the exact, time-varying one) around ``target``.

    """
    x = np.asarray(values, dtype=np.float64)
    z = np.empty(x.size)
    prev = target
    for t, v in enumerate(x):
        prev = lam * v + (1.0 - lam) * prev
        z[t] = prev
    steps = np.arange(1, x.size + 1)
    limit = width * sd * np.sqrt(lam / (2.0 - lam) * (1.0 - (1.0 - lam) ** (2 * steps)))
    return z, limit


NULL_DRAWS = 4000
NULL_SEED = 20260101


def nightly_sd(history: np.ndarray) -> np.ndarray:
    """The sd of one night's value, from the night-to-night changes of each row's history.

    ``sqrt(mean((c - median(c))^2) / 2)`` over the changes ``c`` (the mean square successive
    difference, von Neumann 1941, centred on the median change so that a steady drift does not
    inflate it; two independent nights' difference has twice a night's variance).

    Args:
        history: float64 (B, T), T >= 2, finite.

    Returns:
        float64 (B,).

    """
    history, scale = _scaled(np.asarray(history, dtype=np.float64))
    c = np.diff(history, axis=1)
    c = c - np.median(c, axis=1, keepdims=True)
    sd = np.sqrt(np.mean(c * c, axis=1) / 2.0)
    with np.errstate(over="ignore"):  # an sd past the largest float is inf
        return sd * scale


# Rows whose largest value passes this are scaled down by a power of two before they are
# differenced or squared (exact, and no row of an ordinary size is touched).
_HUGE = 2.0 ** 500


def _scaled(values: np.ndarray, *others: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row of ``values`` divided by a power of two when its magnitude is huge.

    Args:
        values: float64 (B, T).
        others: float64 (B,) arrays whose entries count towards their row's magnitude.

    Returns:
        ``(scaled, scale)``: ``values / scale[:, None]`` and float64 (B,) scales, 1.0 for
        rows whose finite values are all below 2**500 in magnitude (those are unchanged,
        bit for bit), else a power of two that brings the largest near 1.

    """
    magnitude = np.zeros(values.shape[0])
    for part in (values, *(o[:, None] for o in others)):
        finite = np.where(np.isfinite(part), np.abs(part), 0.0)
        if finite.size:
            magnitude = np.maximum(magnitude, finite.max(axis=1))
    scale = np.ones(values.shape[0])
    huge = magnitude > _HUGE
    if huge.any():
        scale[huge] = np.ldexp(1.0, np.frexp(magnitude[huge])[1] - 1)
        values = values / scale[:, None]
    return values, scale


def chart_statistics(history: np.ndarray, tonight: np.ndarray, *, method: str,
                     min_nights: int, reference: np.ndarray | None = None,
                     sd_floor: np.ndarray | None = None) -> np.ndarray:
    """Tonight's chart statistic of B rows with T nights of history each (vectorised).

    The reference level is ``reference`` (pinned) or the median of the first ``min_nights``
    nights (the chart then runs over the later nights and tonight); the sd is
    :func:`nightly_sd`, at least ``sd_floor``. CUSUM: the signed larger of ``C+``/``C-``
    tonight, in sds (positive: upward); EWMA: ``(z - mu0) / (sd sqrt(lam/(2-lam)(1-(1-lam)^2t)))``.

    Args:
        history: float64 (B, T), finite, T >= min_nights.
        tonight: float64 (B,).
        method: ``cusum`` or ``ewma``.
        min_nights: nights of the reference segment (without a pinned reference).
        reference: float64 (B,) pinned levels, or None.
        sd_floor: float64 (B,) lower bounds of the sd, or None.

    Returns:
        float64 (B,).

    """
    # the statistic is location- and scale-free: huge rows are charted scaled down, exactly
    history = np.asarray(history, dtype=np.float64)
    tonight = np.asarray(tonight, dtype=np.float64)
    history, scale = _scaled(history, tonight,
                             *(() if reference is None else (np.asarray(reference),)))
    tonight = tonight / scale
    reference = None if reference is None else np.asarray(reference) / scale
    sd = nightly_sd(history)
    if sd_floor is not None:
        sd = np.maximum(sd, np.asarray(sd_floor) / scale)
    sd = np.where(sd > 0, sd, np.nan)
    if reference is None:
        mu0 = np.median(history[:, :min_nights], axis=1)
        chart = np.concatenate([history[:, min_nights:], tonight[:, None]], axis=1)
    else:
        mu0 = reference
        chart = np.concatenate([history, tonight[:, None]], axis=1)
    z = (chart - mu0[:, None]) / sd[:, None]
    if method == "cusum":
        hi = np.zeros(z.shape[0])
        lo = np.zeros(z.shape[0])
        for t in range(z.shape[1]):
            hi = np.maximum(0.0, hi + z[:, t] - CUSUM_K)
            lo = np.maximum(0.0, lo - z[:, t] - CUSUM_K)
        return np.where(hi >= lo, hi, -lo)
    e = np.zeros(z.shape[0])
    for t in range(z.shape[1]):
        e = EWMA_LAMBDA * z[:, t] + (1.0 - EWMA_LAMBDA) * e
    n = z.shape[1]
    return e / np.sqrt(EWMA_LAMBDA / (2.0 - EWMA_LAMBDA) * (1.0 - (1.0 - EWMA_LAMBDA) ** (2 * n)))


@lru_cache(maxsize=64)
def null_statistics(nights: int, *, method: str, min_nights: int, pinned: bool,
                    draws: int = NULL_DRAWS) -> np.ndarray:
    """|chart statistic| of ``draws`` null histories: independent normal nights, no drift.

    The statistic is location- and scale-free, so one table per (nights, method, reference)
    calibrates every row; the estimation of the level and the sd from few nights is part of
    the simulation (a parametric bootstrap). Seeded (:data:`NULL_SEED`), sorted ascending.
    """
    rng = np.random.default_rng([NULL_SEED, nights, min_nights, int(pinned),
                                 DRIFT_METHODS.index(method)])
    x = rng.standard_normal((draws, nights + 1 + int(pinned)))
    ref = x[:, -1] if pinned else None
    stat = chart_statistics(x[:, :nights], x[:, nights], method=method,
                            min_nights=min_nights, reference=ref)
    return np.sort(np.abs(stat))


@dataclass(frozen=True)
class Drift:
    """The drift chart of R rows, tonight (see :func:`drift_rows`).

    Attributes:
        alarm: bool (R,), the adjusted p-value is below the level.
        statistic: float64 (R,), tonight's chart value (CUSUM: in sds, signed, positive for
            an upward drift; EWMA: in the statistic's sds); NaN without enough history.
        p_value: float64 (R,), the chance of a chart at least this far out in a history
            without drift (:func:`null_statistics`), adjusted across the rows; NaN without
            enough history.
        reference: float64 (R,), the reference level mu0 (NaN: none).
        sd: float64 (R,), the nightly sd used (NaN: none).
        method: ``cusum`` or ``ewma``.

    """

    alarm: np.ndarray
    statistic: np.ndarray
    p_value: np.ndarray
    reference: np.ndarray
    sd: np.ndarray
    method: str


def drift_rows(series: np.ndarray, tonight: np.ndarray, floors: np.ndarray, *,
               reference: np.ndarray | None = None, method: str = DRIFT_METHOD,
               min_nights: int = MIN_NIGHTS, multiplier: float = BAND_MULTIPLIER,
               alpha: float = 0.05, adjust: str = "holm") -> Drift:
    """Tonight's drift chart of each row, recomputed from its history, and its alarm.

    Each row's chart statistic (:func:`chart_statistics`) gets a p-value from the null
    table of its number of nights (:func:`null_statistics`); the p-values are adjusted
    across rows (``adjust``, as the change alarm's) and a row alarms below ``alpha``.

    Args:
        series: float64 (R, T): the history's nightly values, oldest first, NaN where a night
            has none.
        tonight: float64 (R,), tonight's values (NaN: the row has none; no alarm).
        floors: float64 (R,), each row's band floor (the sd is at least floor / multiplier).
        reference: float64 (R,), a pinned reference level per row (NaN: none for the row),
            or None: the median of the first ``min_nights`` nights of the history.
        method: ``cusum`` or ``ewma``.
        min_nights: nights with a value the history needs, >= 3.
        multiplier: the band multiplier.
        alpha: the level, ``1 - confidence``.
        adjust: ``holm``, ``bh`` or ``none``.

    Returns:
        A :class:`Drift`; rows with fewer than ``min_nights`` nights never alarm.

    Raises:
        ValueError: an unknown method.

    """
    from pipeline.compare.statistics import adjust_p_values

    if method not in DRIFT_METHODS:
        raise ValueError(f"unknown drift method {method!r}; one of {', '.join(DRIFT_METHODS)}")
    tonight = np.asarray(tonight, dtype=np.float64)
    r = tonight.shape[0]
    s = np.asarray(series, dtype=np.float64).reshape(r, -1)
    floors = np.asarray(floors, dtype=np.float64)
    stat = np.full(r, np.nan)
    p = np.full(r, np.nan)
    ref = np.full(r, np.nan)
    sds = np.full(r, np.nan)
    for i in range(r):
        x = s[i][np.isfinite(s[i])]
        pinned = reference is not None
        if x.size < min_nights or not np.isfinite(tonight[i]):
            continue
        if pinned and not np.isfinite(reference[i]):  # type: ignore[index]
            continue
        pin = None if reference is None else reference[i:i + 1]
        floor = np.array([floors[i] / multiplier])
        value = chart_statistics(x[None, :], tonight[i:i + 1], method=method,
                                 min_nights=min_nights, reference=pin, sd_floor=floor)[0]
        if not np.isfinite(value):
            continue
        null = null_statistics(x.size, method=method, min_nights=min_nights, pinned=pinned)
        extreme = null.size - np.searchsorted(null, abs(value) * (1.0 - 1e-12), side="left")
        stat[i] = value
        p[i] = (1.0 + extreme) / (1.0 + null.size)
        sds[i] = max(float(nightly_sd(x[None, :])[0]), float(floor[0]))
        ref[i] = float(pin[0]) if pin is not None else float(np.median(x[:min_nights]))
    adjusted = adjust_p_values(p, adjust)
    with np.errstate(invalid="ignore"):
        alarm = np.isfinite(adjusted) & (adjusted < alpha)
    return Drift(alarm, stat, adjusted, ref, sds, method)


__all__ = ["CUSUM_H", "CUSUM_K", "DRIFT_METHOD", "DRIFT_METHODS", "EWMA_L", "EWMA_LAMBDA",
           "NULL_DRAWS", "Drift", "chart_statistics", "cusum", "drift_rows", "ewma",
           "nightly_sd", "null_statistics"]
