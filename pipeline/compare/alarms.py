"""The alarm of a comparison: learned bands and drift from history, and the list of alarms.

:func:`with_history` replaces the static bands of a :class:`~.pairing.Comparison` by the
learned ones (:mod:`.bands`), recomputes the change alarm, and adds the drift chart
(:mod:`.drift`). :func:`alarm_list` turns the rows into the ``alarms`` of ``compare.json``,
in the order a person should read them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from pipeline.compare.bands import BAND_MULTIPLIER, MIN_NIGHTS, learn_bands
from pipeline.compare.drift import DRIFT_METHOD, drift_rows
from pipeline.compare.pairing import ALL_GROUP, Comparison, alarm_rule

ALARM_KINDS = ("missing", "change", "drift")


def with_history(comparison: Comparison, series: np.ndarray, tonight: np.ndarray, *,
                 reference: np.ndarray | None = None, method: str = DRIFT_METHOD,
                 min_nights: int = MIN_NIGHTS, multiplier: float = BAND_MULTIPLIER
                 ) -> Comparison:
    """Learn each row's band and chart its drift from the history.

    Args:
        comparison: the comparison (static bands).
        series: float64 (R, T), each row's nightly values, oldest first (NaN: none).
        tonight: float64 (R,), each row's value in the candidate's own aggregate.
        reference: float64 (R,) pinned reference levels (``--reference-run``), or None.
        method: the drift chart, ``cusum`` or ``ewma``.
        min_nights: nights needed to learn a band and chart a drift.
        multiplier: the band multiplier.

    Returns:
        A new :class:`Comparison` whose rows carry the learned ``band``, ``band_source``,
        ``history_nights``, the recomputed ``alarm``, ``drift``, ``drift_statistic`` and
        ``drift_p``.

    """
    rows = comparison.rows.copy()
    floors = np.array([comparison.floors.get(f"{m}.{x}", b) for m, x, b in
                       zip(rows["metric"], rows["measure"], rows["band"], strict=True)],
                      dtype=np.float64)
    bands = learn_bands(series, floors, multiplier=multiplier, min_nights=min_nights)
    rows["band"] = bands.band
    rows["band_source"] = bands.source.astype(object)
    rows["history_nights"] = bands.nights
    rows["alarm"] = alarm_rule(rows, alpha=1.0 - comparison.confidence)
    drift = drift_rows(series, tonight, floors, reference=reference, method=method,
                       min_nights=min_nights, multiplier=multiplier,
                       alpha=1.0 - comparison.confidence, adjust=comparison.adjust)
    rows["drift"] = drift.alarm
    rows["drift_statistic"] = drift.statistic
    rows["drift_p"] = drift.p_value
    return dataclasses.replace(comparison, rows=rows)


def alarm_list(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """The alarms of a comparison's rows, in reading order.

    Order: ``missing`` first (examples lost explain the rest; one entry per group, metric
    and measure null), then ``change``, then ``drift`` (not for a row that changed tonight:
    a step also moves the chart, and is read as a change); within a kind the overall rows
    (``all``) first, then the groups, each by how far beyond its band or limit it is
    (``|delta| / band``; for drift the smallest ``drift_p``), ties in row order.

    Returns:
        ``[{"group", "metric", "measure", "kind"}]``.

    """
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for r in rows[rows["missing"]].itertuples(index=False):
        if r.group not in seen:
            seen.add(r.group)
            out.append({"group": r.group, "metric": None, "measure": None, "kind": "missing"})
    beyond = _log_beyond(rows["delta"].to_numpy(np.float64), rows["band"].to_numpy(np.float64))
    overall = (rows["group"] == ALL_GROUP).to_numpy()
    change = rows["alarm"].to_numpy(bool)
    for kind, flag, size in (("change", change, beyond),
                             ("drift", rows["drift"].to_numpy(bool) & ~change,
                              -rows["drift_p"].to_numpy(np.float64))):
        picked = [int(i) for i in np.flatnonzero(flag)]
        order = sorted(picked, key=lambda i: (not overall[i], -size[i], i))
        out += [{"group": rows["group"].iat[i], "metric": rows["metric"].iat[i],
                 "measure": rows["measure"].iat[i], "kind": kind} for i in order]
    return out


def _log_beyond(delta: np.ndarray, band: np.ndarray) -> np.ndarray:
    """``log(|delta| / band)`` per row, without overflow for the tiniest bands.

    A band of 1e-320 makes the ratio itself overflow (every such row would tie at inf); the
    difference of logarithms keeps them in order. A zero band (or a NaN delta) ranks first
    (inf); a zero delta last (-inf).

    Args:
        delta: float64 (R,), the changes.
        band: float64 (R,), the bands, >= 0.

    Returns:
        float64 (R,).

    """
    size = np.abs(delta)
    out = np.full(size.shape, np.inf)
    both = (band > 0) & (size > 0) & np.isfinite(size)
    out[both] = np.log(size[both]) - np.log(band[both])
    out[(band > 0) & (size == 0)] = -np.inf
    return out


def band_summary(rows: pd.DataFrame, *, min_nights: int = MIN_NIGHTS) -> list[str]:
    """One line per measure on the overall rows: which band was used, and from what.

    ``band: static 0.01 (history: 3 of 7 nights)``, ``band: learned 0.0123 (history: 14
    nights)`` or ``band: floor 0.01 (learned 0.0042 is below it; history: 14 nights)``,
    each prefixed by the measure when several are compared.
    """
    overall = rows[rows["group"] == ALL_GROUP]
    many = len(overall) > 1
    out = []
    for r in overall.itertuples(index=False):
        name = f"{r.metric}.{r.measure}: " if many else ""
        if r.band_source == "static":
            text = f"band: static {r.band:g} (history: {r.history_nights} of {min_nights} nights)"
        elif r.band_source == "learned":
            text = f"band: learned {r.band:.4g} (history: {r.history_nights} nights)"
        else:
            text = f"band: floor {r.band:g} (history: {r.history_nights} nights)"
        out.append(name + text)
    return out


__all__ = ["ALARM_KINDS", "alarm_list", "band_summary", "with_history"]
