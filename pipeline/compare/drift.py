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
nights and tonight). ``sigma`` is the robust sd of the history's night-to-night changes
divided by sqrt(2) (two independent nights' difference has twice a night's variance; the
median of the changes is taken out, so a steady drift does not inflate it), never below
``floor / BAND_MULTIPLIER`` (a suite that never moves does not alarm on a change far inside
its floor). Nothing is kept between nights: the chart is recomputed from the history.
:data:`DRIFT_METHOD` was chosen by simulation (``scripts/simulate_nightly.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.compare.bands import BAND_MULTIPLIER, MIN_NIGHTS, change_spread

DRIFT_METHODS = ("cusum", "ewma")
DRIFT_METHOD = "cusum"
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
    t = np.arange(1, x.size + 1)
    limit = width * sd * np.sqrt(lam / (2.0 - lam) * (1.0 - (1.0 - lam) ** (2 * t)))
    return z, limit


@dataclass(frozen=True)
class Drift:
    """The drift chart of R rows, tonight (see :func:`drift_rows`).

    Attributes:
        alarm: bool (R,), tonight's chart is beyond its limit.
        statistic: float64 (R,), tonight's chart value, in units of its limit (> 1 alarms;
            signed: positive for an upward drift); NaN without enough history.
        reference: float64 (R,), the reference level mu0 (NaN: none).
        sd: float64 (R,), the nightly sd used (NaN: none).
        method: ``cusum`` or ``ewma``.

    """

    alarm: np.ndarray
    statistic: np.ndarray
    reference: np.ndarray
    sd: np.ndarray
    method: str


def drift_rows(series: np.ndarray, tonight: np.ndarray, floors: np.ndarray, *,
               reference: np.ndarray | None = None, method: str = DRIFT_METHOD,
               min_nights: int = MIN_NIGHTS, multiplier: float = BAND_MULTIPLIER) -> Drift:
    """Tonight's drift chart of each row, recomputed from its history.

    Args:
        series: float64 (R, T): the history's nightly values, oldest first, NaN where a night
            has none.
        tonight: float64 (R,), tonight's values (NaN: the row has none; no alarm).
        floors: float64 (R,), each row's band floor (bounds sigma below, see the module).
        reference: float64 (R,), a pinned reference level per row (NaN: none for the row),
            or None: the median of the first ``min_nights`` nights of the history.
        method: ``cusum`` or ``ewma``.
        min_nights: nights with a value the history needs, >= 3.
        multiplier: the band multiplier (``sigma >= floor / multiplier``).

    Returns:
        A :class:`Drift`; rows with fewer than ``min_nights`` nights never alarm.

    Raises:
        ValueError: an unknown method.

    """
    if method not in DRIFT_METHODS:
        raise ValueError(f"unknown drift method {method!r}; one of {', '.join(DRIFT_METHODS)}")
    tonight = np.asarray(tonight, dtype=np.float64)
    r = tonight.shape[0]
    s = np.asarray(series, dtype=np.float64).reshape(r, -1)
    floors = np.asarray(floors, dtype=np.float64)
    alarm = np.zeros(r, dtype=bool)
    stat = np.full(r, np.nan)
    ref = np.full(r, np.nan)
    sds = np.full(r, np.nan)
    for i in range(r):
        x = s[i][np.isfinite(s[i])]
        spread, n = change_spread(x)
        if n < min_nights or not np.isfinite(tonight[i]) or not np.isfinite(spread):
            continue
        sd = max(spread / np.sqrt(2.0), floors[i] / multiplier)
        if sd <= 0.0:
            continue
        if reference is not None and np.isfinite(reference[i]):
            mu0, chart = float(reference[i]), np.append(x, tonight[i])
        elif reference is None:
            mu0, chart = float(np.median(x[:min_nights])), np.append(x[min_nights:], tonight[i])
        else:
            continue
        if method == "cusum":
            upper, lower = cusum(chart, target=mu0, sd=sd)
            value = upper[-1] if upper[-1] >= lower[-1] else -lower[-1]
            stat[i] = value / CUSUM_H
        else:
            z, limit = ewma(chart, target=mu0, sd=sd)
            stat[i] = (z[-1] - mu0) / limit[-1]
        alarm[i] = abs(stat[i]) > 1.0
        ref[i], sds[i] = mu0, sd
    return Drift(alarm, stat, ref, sds, method)


__all__ = ["CUSUM_H", "CUSUM_K", "DRIFT_METHOD", "DRIFT_METHODS", "EWMA_L", "EWMA_LAMBDA",
           "Drift", "cusum", "drift_rows", "ewma"]
