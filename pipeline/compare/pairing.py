"""Pairing two runs' examples and testing every measure, overall and per group.

Examples are paired on (id, group columns); examples present in one run only are counted per
group and listed, never dropped silently. Null and NaN group values are groups of their own
(distinct from each other and from every other value).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from pipeline.compare.bands import measure_floors
from pipeline.compare.measures import Measure, describe
from pipeline.compare.statistics import (
    ADJUST_METHODS,
    DEFAULT_ADJUST,
    DEFAULT_BAND,
    DEFAULT_CONFIDENCE,
    DEFAULT_MAX_MISSING,
    DEFAULT_N_BOOTSTRAP,
    DEFAULT_SEED,
    adjust_p_values,
    check_settings,
    is_missing,
    paired_resampling,
)
from pipeline.errors import ConfigError, InputError
from pipeline.metrics.base import MetricSpec
from pipeline.stats import Estimate

ALL_GROUP = "all"
DEFAULT_TOP = 10
ROW_COLUMNS = ("group", "metric", "measure", "statistic", "n_paired", "n_baseline_only",
               "n_candidate_only", "baseline_mean", "candidate_mean", "delta", "ci_low",
               "ci_high", "p_value", "p_adjusted", "mde", "band", "band_source",
               "history_nights", "alarm", "missing", "drift", "drift_statistic", "drift_p")
_KIND = "__kind:"


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare_examples`.

    Attributes:
        rows: one row per (group, measure): the overall rows first (``group == "all"``), then
            each group in sorted order (NaN, then null, last). Columns: ``group`` (label:
            ``all`` or ``col=value[,col=value]``, ``<null>`` for null), the group columns (null
            on overall rows), ``metric``, ``measure``, ``statistic`` (``mean`` or
            ``corpus``), ``n_paired``, ``n_baseline_only``, ``n_candidate_only`` (ids present
            in one run only, per group), ``baseline_mean``, ``candidate_mean`` (over paired
            examples: means, or corpus scores), ``delta``, ``ci_low``, ``ci_high``,
            ``p_value``, ``p_adjusted`` (adjusted across all rows, see ``adjust``), ``mde``
            (float64; NaN when fewer than two pairs), ``band`` (float64, the band used, in
            the measure's units), ``band_source`` (``static``, ``learned`` or ``floor``, see
            :mod:`.bands`), ``history_nights`` (int64, nights of history with a value for
            the row), ``alarm`` (the change alarm: ``p_adjusted < 1 - confidence`` and
            ``|delta| > band``), ``missing`` (the missing-examples alarm), ``drift`` (the
            drift alarm, see :mod:`.drift`), bool, ``drift_statistic`` (float64, tonight's
            chart, signed) and ``drift_p`` (float64, its adjusted p-value; both NaN without
            enough history).
        paired: one row per paired example: the key columns and, per measure, ``baseline``,
            ``candidate`` and ``delta`` columns named ``{side}:{measure}`` (per-example
            values), and ``{side}:{column}`` for the statistics of corpus measures.
        baseline_only: key columns of the examples only in the baseline, sorted.
        candidate_only: key columns of the examples only in the candidate, sorted.
        measures: the measures compared, ``METRIC.MEASURE``.
        id_column: the id column.
        group_columns: the group columns (also part of the pairing key).
        band: the static band, a fraction of each measure's full scale.
        confidence: interval level.
        n_bootstrap: resamples.
        seed: the seed.
        max_missing: the tolerated fraction of a group's baseline examples missing.
        adjust: the p-value adjustment (``holm``, ``bh``, ``none``).
        n_trials: randomization trials.
        floors: each measure's static band (floor), in its units.

    """

    rows: pd.DataFrame
    paired: pd.DataFrame
    baseline_only: pd.DataFrame
    candidate_only: pd.DataFrame
    measures: tuple[str, ...]
    id_column: str
    group_columns: tuple[str, ...] = ()
    band: float = DEFAULT_BAND
    confidence: float = DEFAULT_CONFIDENCE
    n_bootstrap: int = DEFAULT_N_BOOTSTRAP
    seed: int = DEFAULT_SEED
    max_missing: float = DEFAULT_MAX_MISSING
    adjust: str = DEFAULT_ADJUST
    n_trials: int = DEFAULT_N_BOOTSTRAP
    floors: Mapping[str, float] = field(default_factory=dict)

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The pairing key: the id column, then the group columns."""
        return (self.id_column, *self.group_columns)

    @property
    def alarm(self) -> bool:
        """True when any row alarms: a change, missing examples or a drift."""
        return bool(self.rows["alarm"].any() or self.rows["missing"].any()
                    or self.rows["drift"].any())

    @property
    def missing(self) -> bool:
        """True when any group (or the whole run) misses too many baseline examples."""
        return bool(self.rows["missing"].any())

    def top(self, n: int = DEFAULT_TOP, *, measure: str | None = None) -> pd.DataFrame:
        """Return the n paired examples whose score moved most.

        Args:
            n: how many, >= 0.
            measure: the measure ranked by |delta| (default: the first compared measure).
                Examples that did not move (delta 0) are left out; ties keep key order.

        Returns:
            Key columns, then ``measure``, ``baseline``, ``candidate``, ``delta`` for the
            ranking measure, then ``{side}:{measure}`` columns for every compared measure;
            at most n rows, largest |delta| first.

        Raises:
            ConfigError: measure not compared.

        """
        ranked = measure or self.measures[0]
        if ranked not in self.measures:
            raise ConfigError(f"measure {ranked!r} was not compared",
                              hint=f"choose one of {', '.join(self.measures)}")
        moved = self.paired[self.paired[f"delta:{ranked}"] != 0.0]
        order = np.argsort(-np.abs(moved[f"delta:{ranked}"].to_numpy()), kind="stable")
        picked = moved.iloc[order[:max(n, 0)]].reset_index(drop=True)
        out = picked[list(self.key_columns)].copy()
        out.insert(len(out.columns), "measure", ranked)
        for side in ("baseline", "candidate", "delta"):
            out[side] = picked[f"{side}:{ranked}"]
        for m in self.measures:
            for side in ("baseline", "candidate", "delta"):
                out[f"{side}:{m}"] = picked[f"{side}:{m}"]
        return out


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _kind(value: Any) -> int:
    # 0 a value, 1 NaN, 2 null: the three never pair with one another
    return 2 if value is None or value is pd.NA else 1 if _is_nan(value) else 0


def _label_value(value: Any, kind: int) -> str:
    return "<null>" if kind == 2 else "nan" if kind == 1 else str(value)


def _group_label(columns: Sequence[str], values: Sequence[Any], kinds: Sequence[int]) -> str:
    return ",".join(f"{c}={_label_value(v, k)}"
                    for c, v, k in zip(columns, values, kinds, strict=True))


def _with_kinds(frame: pd.DataFrame, group_columns: Sequence[str]) -> pd.DataFrame:
    frame = frame.copy()
    for col in group_columns:
        frame[_KIND + col] = [_kind(v) for v in frame[col].astype(object).tolist()]
    return frame


def _pair_hashes(frame: pd.DataFrame, id_column: str, group_columns: Sequence[str]
                 ) -> np.ndarray:
    """Identity hashes of the pairs: the id's, mixed with each group value's (type-tagged)."""
    from pipeline.io.partition import hash_ids

    h = hash_ids(pa.array(frame[id_column].tolist()))
    for col in group_columns:
        values = frame[col].astype(object).tolist()
        tags = [f"{_kind(v)}:{type(v).__name__}:{v!r}" for v in values]
        h = (h * np.uint64(0x100000001B3)) ^ hash_ids(pa.array(tags, pa.string()))
    return h


def _check_examples(frame: pd.DataFrame, side: str, key: Sequence[str],
                    columns: Sequence[str]) -> None:
    missing = [c for c in (*key, *columns) if c not in frame.columns]
    if missing:
        raise InputError(f"the {side} examples have no column {', '.join(map(repr, missing))}")
    if frame[key[0]].isna().any():
        raise InputError(f"the {side} run has examples with a null id in {key[0]!r}")
    dup = frame.duplicated([key[0], *(_KIND + c for c in key[1:]), *key[1:]], keep=False)
    if dup.any():
        ids = frame.loc[dup, key[0]].astype(str).unique()[:5]
        raise InputError(f"the {side} run has the same key ({', '.join(key)}) on several "
                         f"examples, e.g. id {', '.join(ids)}",
                         hint="compare needs one row per example")
    for col in columns:
        values = frame[col]
        if not pd.api.types.is_numeric_dtype(values):
            raise InputError(f"column {col!r} of the {side} run is {values.dtype}, not numeric")
        bad = ~np.isfinite(values.to_numpy(dtype=np.float64, na_value=np.nan))
        if bad.any():
            ids = frame.loc[bad, key[0]].astype(str).head(5)
            raise InputError(f"column {col!r} of the {side} run has missing or non-finite "
                             f"scores, e.g. id {', '.join(ids)}")


def compare_examples(
    baseline: pd.DataFrame,
    candidate: pd.DataFrame,
    *,
    measures: Sequence[str],
    id_column: str = "id",
    group_columns: Sequence[str] = (),
    band: float = DEFAULT_BAND,
    bands: Mapping[str, float] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    n_bootstrap: int = DEFAULT_N_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    specs: Sequence[MetricSpec] = (),
    max_missing: float = DEFAULT_MAX_MISSING,
    adjust: str = DEFAULT_ADJUST,
) -> Comparison:
    """Pair two runs' examples and test the change of every measure, overall and per group.

    Args:
        baseline: one row per example: the id column, the group columns, a
            ``{metric}_{measure}`` float column per measure and, for a corpus measure, its
            statistics columns.
        candidate: the same for the candidate run.
        measures: ``METRIC.MEASURE`` names to compare (at least one).
        id_column: the id column.
        group_columns: columns that group (and key) the examples, may be empty.
        band: the static band as a fraction of each measure's full scale (the spec's
            ``scale``: 1 for ROUGE, 100 for BLEU), >= 0.
        bands: static bands in the measure's own units, by measure (override ``band``).
        confidence: interval level in (0, 1); the alarm level is ``1 - confidence``.
        n_bootstrap: bootstrap resamples and randomization trials, >= 1.
        seed: seed of the resampling, in [0, 2**64).
        specs: the runs' metric specs (from the registry): a corpus metric's primary measure
            is then compared by its corpus score. Without specs every measure is a mean.
        max_missing: tolerated fraction of a group's baseline examples absent from the
            candidate, in [0, 1]; a group absent from the candidate always alarms.
        adjust: p-value adjustment across all rows (``holm``, ``bh``, ``none``, see
            :func:`~pipeline.compare.statistics.adjust_p_values`), of each row's
            ``p_refined`` (:class:`~pipeline.compare.statistics.PairedTest`).

    Returns:
        A :class:`Comparison` (bands ``static``; :func:`with_bands` sets learned ones).

    Raises:
        ConfigError: bad settings or measure names.
        InputError: missing columns, null ids, duplicate keys, non-numeric or non-finite
            scores, group columns whose types differ between runs, or no example in common.

    """
    check_settings(n_bootstrap=n_bootstrap, confidence=confidence, band=band,
                   max_missing=max_missing)
    if adjust not in ADJUST_METHODS:
        raise ConfigError(f"unknown adjust {adjust!r}",
                          hint=f"choose one of {', '.join(ADJUST_METHODS)}")
    if not measures:
        raise ConfigError("no measure to compare")
    described: list[Measure] = [describe(m, specs) for m in measures]
    floors = measure_floors(list(measures),
                            [m.spec.scale if m.spec is not None else 1.0 for m in described],
                            band=band, bands=bands)
    value_cols = [f"{m.metric}_{m.measure}" for m in described]
    stat_cols = list(dict.fromkeys(c for m in described if m.statistic == "corpus"
                                   for c in m.columns))
    columns = list(dict.fromkeys([*value_cols, *stat_cols]))
    group_columns = tuple(group_columns)
    key = [id_column, *group_columns]
    kinds = [_KIND + c for c in group_columns]
    for side, frame in (("baseline", baseline), ("candidate", candidate)):
        gone = [c for c in key if c not in frame.columns]
        if gone:
            raise InputError(f"the {side} examples have no column {', '.join(map(repr, gone))}")
    baseline = _with_kinds(baseline, group_columns)
    candidate = _with_kinds(candidate, group_columns)
    _check_examples(baseline, "baseline", key, columns)
    _check_examples(candidate, "candidate", key, columns)
    b = baseline[key + kinds + columns].rename(columns={c: f"baseline:{c}" for c in columns})
    c = candidate[key + kinds + columns].rename(columns={c: f"candidate:{c}" for c in columns})
    try:
        merged = b.merge(c, on=key + kinds, how="outer", indicator=True, sort=True)
    except (ValueError, TypeError) as err:
        raise InputError(f"cannot pair the runs on {', '.join(key)}: {err}",
                         hint="the key columns must have the same types in both runs") from err
    side = merged.pop("_merge")
    paired = merged[side == "both"].reset_index(drop=True)
    baseline_only = merged.loc[side == "left_only", key + kinds].reset_index(drop=True)
    candidate_only = merged.loc[side == "right_only", key + kinds].reset_index(drop=True)
    if paired.empty:
        raise InputError("the two runs have no example in common "
                         f"(paired on {', '.join(key)}): {len(baseline_only)} only in the "
                         f"baseline, {len(candidate_only)} only in the candidate")
    for m, col in zip(described, value_cols, strict=True):
        for s in ("baseline", "candidate"):
            paired[f"{s}:{m.name}"] = paired[f"{s}:{col}"]
        paired[f"delta:{m.name}"] = paired[f"candidate:{col}"] - paired[f"baseline:{col}"]
    estimates = [Estimate(tuple(columns.index(x) for x in m.columns),
                          m.spec.corpus if m.statistic == "corpus" and m.spec else None)
                 for m in described]
    hashes = _pair_hashes(paired, id_column, group_columns)
    base_matrix = paired[[f"baseline:{x}" for x in columns]].to_numpy(np.float64)
    cand_matrix = paired[[f"candidate:{x}" for x in columns]].to_numpy(np.float64)

    # every group once, in sorted order, with the rows of each frame that belong to it
    # (one pass over the rows: the cost does not grow with groups x rows)
    groups: list[tuple[tuple, tuple]] = []
    members: list[tuple[np.ndarray, int, int]] = []
    if group_columns:
        frames = (paired, baseline_only, candidate_only)
        codes_of: dict[tuple, int] = {}
        firsts: list[tuple[tuple, tuple]] = []
        codes = []
        for frame in frames:
            cols = [frame[c].tolist() for c in group_columns]
            kcols = [frame[k].tolist() for k in kinds]
            out = np.empty(len(frame), dtype=np.int64)
            for i in range(len(frame)):
                values = tuple(col[i] for col in cols)
                kind = tuple(col[i] for col in kcols)
                ident = tuple((k, None if k else v) for v, k in zip(values, kind, strict=True))
                code = codes_of.get(ident)
                if code is None:
                    code = codes_of[ident] = len(firsts)
                    firsts.append((values, kind))
                out[i] = code
            codes.append(out)

        def order(g: int) -> tuple:
            values, kind = firsts[g]
            return tuple((k, v if k == 0 else 0) for v, k in zip(values, kind, strict=True))

        ranked = sorted(range(len(firsts)), key=order)
        n_groups = len(firsts)
        sort = np.argsort(codes[0], kind="stable")
        bounds = np.searchsorted(codes[0][sort], np.arange(n_groups + 1))
        only_b = np.bincount(codes[1], minlength=n_groups)
        only_c = np.bincount(codes[2], minlength=n_groups)
        for g in ranked:
            groups.append(firsts[g])
            members.append((sort[bounds[g]:bounds[g + 1]], int(only_b[g]), int(only_c[g])))
    trials = n_bootstrap
    records: list[dict[str, Any]] = []

    def add_rows(label: str, values: dict[str, Any], index: np.ndarray | None, n_b_only: int,
                 n_c_only: int) -> None:
        part_b = base_matrix if index is None else base_matrix[index]
        part_c = cand_matrix if index is None else cand_matrix[index]
        test = paired_resampling(
            part_b, part_c, estimates, n_bootstrap=n_bootstrap, confidence=confidence,
            seed=seed, hashes=hashes if index is None else hashes[index], n_trials=trials)
        n = len(part_b)
        gone = is_missing(n, n_b_only, max_missing=max_missing)
        for k, m in enumerate(described):
            records.append({
                "group": label, **values, "metric": m.metric, "measure": m.measure,
                "statistic": m.statistic, "n_paired": n, "n_baseline_only": n_b_only,
                "n_candidate_only": n_c_only, "baseline_mean": test.baseline_mean[k],
                "candidate_mean": test.candidate_mean[k], "delta": test.delta[k],
                "ci_low": test.ci_low[k], "ci_high": test.ci_high[k],
                "p_value": test.p_value[k],
                "p_adjusted": np.nan if test.p_refined is None else test.p_refined[k],
                "mde": np.nan if test.mde is None else test.mde[k],
                "band": floors[m.name], "band_source": "static", "history_nights": 0,
                "alarm": False, "missing": gone, "drift": False, "drift_statistic": np.nan,
                "drift_p": np.nan,
            })

    add_rows(ALL_GROUP, dict.fromkeys(group_columns), None, len(baseline_only),
             len(candidate_only))
    for (values, kind), (index, n_b_only, n_c_only) in zip(groups, members, strict=True):
        label = _group_label(group_columns, values, kind)
        shown = {col: (None if k == 2 else v)
                 for col, v, k in zip(group_columns, values, kind, strict=True)}
        add_rows(label, shown, index, n_b_only, n_c_only)
    rows = pd.DataFrame.from_records(records,
                                     columns=["group", *group_columns, *ROW_COLUMNS[1:]])
    rows["p_adjusted"] = adjust_p_values(rows["p_adjusted"].to_numpy(np.float64), adjust)
    rows["alarm"] = alarm_rule(rows, alpha=1.0 - confidence)
    drop = [k for k in kinds if k in paired.columns]
    return Comparison(rows=rows, paired=paired.drop(columns=drop),
                      baseline_only=baseline_only.drop(columns=kinds),
                      candidate_only=candidate_only.drop(columns=kinds),
                      measures=tuple(measures), id_column=id_column,
                      group_columns=group_columns, band=band, confidence=confidence,
                      n_bootstrap=n_bootstrap, seed=seed, max_missing=max_missing,
                      adjust=adjust, n_trials=trials, floors=floors)


def alarm_rule(rows: pd.DataFrame, *, alpha: float) -> np.ndarray:
    """The change alarm of each row: ``p_adjusted < alpha`` and ``|delta| > band``.

    Args:
        rows: compare rows (``p_adjusted``, ``delta``, ``band`` columns).
        alpha: the level, ``1 - confidence``.

    Returns:
        bool (R,); rows without a p-value (fewer than two pairs) never alarm.

    """
    p = rows["p_adjusted"].to_numpy(np.float64)
    delta = rows["delta"].to_numpy(np.float64)
    band = rows["band"].to_numpy(np.float64)
    with np.errstate(invalid="ignore"):
        return np.isfinite(p) & (p < alpha) & (np.abs(delta) > band)


__all__ = ["ALL_GROUP", "DEFAULT_TOP", "ROW_COLUMNS", "Comparison", "alarm_rule",
           "compare_examples"]
