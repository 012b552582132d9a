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


def band_text(band: Any) -> str:
    """A band as every output shows it: four decimals, in the measure's units.

    One precision for every band (0.0100, 0.0156, 0.0164), as the deltas beside them; a
    band too small or too large for four decimals to show (below 0.00005, or 1e6 and more)
    in three significant digits (``1e-320``). None or NaN: ``-``.
    """
    if band is None or not np.isfinite(band):
        return "-"
    band = float(band)
    if 0.0 < abs(band) < 5e-5 or abs(band) >= 1e6:
        return format(band, ".3g")
    return f"{band:.4f}"


def p_text(p_value: Any, p_tail: Any = None) -> str:
    """A row's p-value as the tables show it, on the footing its adjustment used.

    The randomization p-value cannot go below 1 / (trials + 1); where no trial was as
    extreme and the normal tail is smaller, the adjustment starts from that tail estimate
    (``p_tail``), shown instead and marked ``~``. Three significant digits, as ``p adj``.
    None or NaN: ``-``.
    """
    if p_tail is not None and np.isfinite(p_tail):
        return "~" + format(float(p_tail), ".3g")
    if p_value is None or not np.isfinite(p_value):
        return "-"
    return format(float(p_value), ".3g")


def _nights(n: int) -> str:
    return f"{n} night{'' if n == 1 else 's'}"


def _band_words(source: str, band: float, nights: int, min_nights: int,
                said: int | None = None) -> str:
    if source == "static":
        if nights == said:  # the history's note says how many, and how many are needed
            return f"band: static {band_text(band)} (too few nights to learn)"
        return (f"band: static {band_text(band)} (history: {_nights(nights)}; {min_nights} "
                "needed to learn)")
    if source == "learned":
        return f"band: learned {band_text(band)} (history: {_nights(nights)})"
    return f"band: floor {band_text(band)}, above the learned band (history: {_nights(nights)})"


def band_summary(rows: pd.DataFrame, *, min_nights: int = MIN_NIGHTS,
                 said: int | None = None) -> list[str]:
    """One line per measure: the band its overall row used, and its groups' when they differ.

    ``band: static 0.0100 (history: 3 nights; 7 needed to learn)``, ``band: learned 0.0123
    (history: 14 nights)`` or ``band: floor 0.0100, above the learned band (history: 14
    nights)``, each prefixed by the measure when several are compared; when a group's band
    is not the overall row's (groups learn their own), ``; groups: learned 0.0156 to 0.0193
    in 5 of 24, floor 0.0100 in 19 of 24`` follows, so the line names every band an alarm
    of the measure can have used. ``said``: the number of nights a note of the same output
    already gives with the nights needed (a short history's,
    :func:`pipeline.compare.history.comparable_history`); a static row with that many
    nights then reads ``band: static 0.0100 (too few nights to learn)``, so one output
    counts the nights once.
    """
    overall = rows[rows["group"] == ALL_GROUP]
    many = len(overall) > 1
    groups = rows[rows["group"] != ALL_GROUP]
    out = []
    for r in overall.itertuples(index=False):
        name = f"{r.metric}.{r.measure}: " if many else ""
        text = _band_words(r.band_source, r.band, r.history_nights, min_nights, said)
        mine = groups[(groups["metric"] == r.metric) & (groups["measure"] == r.measure)]
        same = (mine["band_source"] == r.band_source) & (mine["band"] == r.band)
        if len(mine) and not same.all():
            parts = []
            for source in ("learned", "floor", "static"):
                these = mine.loc[mine["band_source"] == source, "band"].to_numpy(np.float64)
                if not these.size:
                    continue
                lo, hi = float(these.min()), float(these.max())
                span = band_text(lo) if band_text(lo) == band_text(hi) else \
                    f"{band_text(lo)} to {band_text(hi)}"
                parts.append(f"{source} {span} in {these.size} of {len(mine)}")
            text += "; groups: " + ", ".join(parts)
        out.append(name + text)
    return out


__all__ = ["ALARM_KINDS", "alarm_list", "band_summary", "band_text", "p_text", "with_history"]
