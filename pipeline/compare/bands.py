"""The alarm band of every compared row: a floor per measure, learned from history when it can.

A row's band is the change of its value (candidate - baseline, in the measure's units) that
the alarm tolerates. It comes from one of three sources, recorded on every row
(``band_source``):

- ``static``: the history has fewer than :data:`MIN_NIGHTS` nights with a value for the row
  (or there is no history): the floor is used;
- ``learned``: ``BAND_MULTIPLIER x robust sd`` of the row's night-to-night changes over the
  history, where the robust sd is ``1.4826 x median(|c - median(c)|)`` of the changes ``c``
  (the normal-consistent median absolute deviation, Hampel 1974; Rousseeuw & Croux 1993).
  The median of the changes is taken out, so a steady drift does not widen the band;
- ``floor``: the learned band is below the floor, the floor is used.

The floor of a measure is ``--band`` as a fraction of the measure's full scale (0.01: 0.01 for
ROUGE and F1 on 0..1, 1.0 for BLEU and chrF on 0..100), or a value given for the measure in
its own units (``--band bleu.score=0.5``).

:data:`BAND_MULTIPLIER` (4) was chosen by simulation (``scripts/simulate_nightly.py``, 60
nights of a REALSumm suite, 3 seeds, 84 drift-free nights): with 3 the learned band let
through change alarms on 2 null nights, with 4 and 5 none did, and 4 catches more; see
docs/compare.md, "Nightly use".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.errors import ConfigError

MIN_NIGHTS = 7
DEFAULT_HISTORY_WINDOW = 14
BAND_MULTIPLIER = 4.0
MAD_SCALE = 1.4826
BAND_SOURCES = ("static", "learned", "floor")


@dataclass(frozen=True)
class Bands:
    """Bands of R rows (see :func:`learn_bands`).

    Attributes:
        band: float64 (R,), the band used, in each row's measure units, >= 0.
        source: (R,) ``static``, ``learned`` or ``floor``.
        floor: float64 (R,), the floor of the row's measure.
        spread: float64 (R,), the robust sd of the night-to-night changes (NaN: too few
            nights).
        nights: int64 (R,), the history's nights with a value for the row.

    """

    band: np.ndarray
    source: np.ndarray
    floor: np.ndarray
    spread: np.ndarray
    nights: np.ndarray


def robust_sd(values: np.ndarray) -> float:
    """Normal-consistent median absolute deviation of ``values`` (finite, shape (n,)).

    ``1.4826 * median(|x - median(x)|)``; NaN for an empty array.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return float("nan")
    return float(MAD_SCALE * np.median(np.abs(x - np.median(x))))


def change_spread(series: np.ndarray) -> tuple[float, int]:
    """Robust sd of the night-to-night changes of one row's nightly values.

    Args:
        series: float64 (T,), the nightly values oldest first; NaN where a night has none
            (those nights are skipped, the changes taken between consecutive values).

    Returns:
        ``(spread, nights)``: the :func:`robust_sd` of the changes (NaN with fewer than two
        values) and the number of nights with a value.

    """
    x = np.asarray(series, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return float("nan"), int(x.size)
    top = float(np.abs(x).max())
    if top <= 2.0 ** 500:  # an ordinary size: as it always was
        return robust_sd(np.diff(x)), int(x.size)
    scale = float(np.ldexp(1.0, np.frexp(top)[1] - 1))  # a power of two: exact
    with np.errstate(over="ignore"):  # a spread past the largest float is inf
        return robust_sd(np.diff(x / scale)) * scale, int(x.size)


def measure_floors(measures: Sequence[str], scales: Sequence[float], *, band: float,
                   bands: Mapping[str, float] | None = None) -> dict[str, float]:
    """The floor of each measure, in its units.

    Args:
        measures: ``METRIC.MEASURE`` names.
        scales: the full scale of each measure (1.0 or 100.0), same length.
        band: the floor as a fraction of the scale, >= 0, for measures without their own.
        bands: floors in the measure's own units, by measure name; each name must be one of
            ``measures``.

    Returns:
        ``{measure: floor}``.

    Raises:
        ConfigError: a negative or non-finite band, or a band for a measure not compared.

    """
    bands = dict(bands or {})
    for name, value in [("--band", band), *bands.items()]:
        if not (np.isfinite(value) and value >= 0.0):
            raise ConfigError(f"band must be a non-negative score difference, got {name} "
                              f"{value}")
    unknown = [m for m in bands if m not in measures]
    if unknown:
        raise ConfigError(f"--band given for {', '.join(unknown)}, which is not compared",
                          hint=f"the compared measures are {', '.join(measures)}")
    return {m: float(bands[m]) if m in bands else float(band) * float(s)
            for m, s in zip(measures, scales, strict=True)}


def learn_bands(series: np.ndarray, floors: np.ndarray, *,
                multiplier: float = BAND_MULTIPLIER, min_nights: int = MIN_NIGHTS) -> Bands:
    """Each row's band from its nightly history, never below its floor.

    Args:
        series: float64 (R, T): per row, the history's nightly values oldest first, NaN
            where a night has no value (T may be 0: no history).
        floors: float64 (R,), each row's floor, in its units.
        multiplier: the band in robust sds of the night-to-night changes, > 0.
        min_nights: nights with a value needed to learn, >= 3.

    Returns:
        :class:`Bands`.

    """
    floors = np.asarray(floors, dtype=np.float64)
    r = floors.shape[0]
    s = np.asarray(series, dtype=np.float64).reshape(r, -1)
    band = floors.copy()
    source = np.full(r, "static", dtype=object)
    spread = np.full(r, np.nan)
    nights = np.zeros(r, dtype=np.int64)
    for i in range(r):
        sd, k = change_spread(s[i])
        nights[i] = k
        spread[i] = sd
        if k >= min_nights and np.isfinite(sd):
            learned = multiplier * sd
            if learned > floors[i]:
                band[i], source[i] = learned, "learned"
            else:
                source[i] = "floor"
    return Bands(band, source, floors, spread, nights)


__all__ = ["BAND_MULTIPLIER", "BAND_SOURCES", "DEFAULT_HISTORY_WINDOW", "MAD_SCALE",
           "MIN_NIGHTS", "Bands", "change_spread", "learn_bands", "measure_floors",
           "robust_sd"]
