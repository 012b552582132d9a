"""Pairing two runs' examples and testing every measure, overall and per group.

Examples are paired on (id, group columns); examples present in one run only are counted per
group and listed, never dropped silently. Null and NaN group values are groups of their own
(distinct from each other and from every other value). In memory here
(:func:`compare_examples`); partitioned, on the engine, in :mod:`pipeline.compare.parts`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

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
    DEFAULT_TOP,
    adjust_p_values,
    check_settings,
    is_missing,
    paired_resampling,
)
from pipeline.config_checks import MAX_BOOTSTRAP_WORK, check_resampling_work
from pipeline.errors import ConfigError, InputError
from pipeline.metrics.base import MetricSpec
from pipeline.stats import Estimate

ALL_GROUP = "all"
# keys of examples in one run only kept by a partitioned comparison (compare.json lists 20)
ONLY_HEAD = 100
ROW_COLUMNS = ("group", "metric", "measure", "statistic", "n_paired", "n_baseline_only",
               "n_candidate_only", "baseline_mean", "candidate_mean", "delta", "ci_low",
               "ci_high", "p_value", "p_tail", "p_adjusted", "mde", "band", "band_source",
               "history_nights", "alarm", "missing", "drift", "drift_statistic", "drift_p")
_KIND = "__kind:"


@dataclass(frozen=True)
class PairedExamples:
    """Both runs' examples, paired (what :class:`Comparison` holds per example, if asked).

    Attributes:
        paired: one row per paired example, in key order: the key columns and, per measure,
            ``baseline``, ``candidate`` and ``delta`` columns named ``{side}:{measure}``
            (per-example values), and ``{side}:{column}`` for the statistics of corpus
            measures.
        baseline_only: key columns of the examples only in the baseline, sorted.
        candidate_only: key columns of the examples only in the candidate, sorted.

    """

    paired: pd.DataFrame
    baseline_only: pd.DataFrame
    candidate_only: pd.DataFrame


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare_examples` or of a partitioned comparison.

    Attributes:
        rows: one row per (group, measure): the overall rows first (``group == "all"``), then
            each group in sorted order (NaN, then null, last). Columns: ``group`` (label:
            ``all`` or ``col=value[,col=value]``, ``<null>`` for null), the group columns (null
            on overall rows), ``metric``, ``measure``, ``statistic`` (``mean`` or
            ``corpus``), ``n_paired``, ``n_baseline_only``, ``n_candidate_only`` (ids present
            in one run only, per group), ``baseline_mean``, ``candidate_mean`` (over paired
            examples: means, or corpus scores), ``delta``, ``ci_low``, ``ci_high``,
            ``p_value`` (the randomization p-value, >= 1 / (trials + 1)), ``p_tail`` (where no
            trial was as extreme and the normal tail is smaller: that estimate, which
            ``p_adjusted`` then adjusts; NaN elsewhere), ``p_adjusted`` (adjusted across all
            rows, see ``adjust``), ``mde``
            (float64; NaN when fewer than two pairs), ``band`` (float64, the band used, in
            the measure's units), ``band_source`` (``static``, ``learned`` or ``floor``, see
            :mod:`.bands`), ``history_nights`` (int64, nights of history with a value for
            the row), ``alarm`` (the change alarm: ``p_adjusted < 1 - confidence`` and
            ``|delta| > band``), ``missing`` (the missing-examples alarm), ``drift`` (the
            drift alarm, see :mod:`.drift`), bool, ``drift_statistic`` (float64, tonight's
            chart, signed) and ``drift_p`` (float64, its adjusted p-value; both NaN without
            enough history).
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
        n_paired: examples in both runs.
        n_baseline_only: examples only in the baseline.
        n_candidate_only: examples only in the candidate.
        examples: the :class:`PairedExamples`, or a function that makes them (a partitioned
            comparison holds nothing per example: they are paired again, in memory, only
            when :attr:`paired` is read, e.g. for a plot).
        only_heads: the first :data:`ONLY_HEAD` key rows of ``baseline_only`` and
            ``candidate_only`` (None: taken from ``examples``).
        moved: the examples that moved most by the first measure, as :meth:`top` returns
            them, at most ``n_moved`` of them (None: computed from ``examples``).
        n_moved: how many ``moved`` was cut to.
        scheme: how the statistics were computed (``in-memory`` or ``partitioned``; both
            give the same values).

    """

    rows: pd.DataFrame
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
    n_paired: int = 0
    n_baseline_only: int = 0
    n_candidate_only: int = 0
    examples: PairedExamples | Callable[[], PairedExamples] | None = None
    only_heads: tuple[pd.DataFrame, pd.DataFrame] | None = None
    moved: pd.DataFrame | None = None
    n_moved: int = 0
    scheme: str = "in-memory"

    def _examples(self) -> PairedExamples:
        got = self.examples
        if got is None:
            raise ConfigError("this comparison kept no per-example values")
        if not isinstance(got, PairedExamples):
            got = got()
            object.__setattr__(self, "examples", got)  # made once, on first use
        return got

    @property
    def paired(self) -> pd.DataFrame:
        """One row per paired example (:attr:`PairedExamples.paired`)."""
        return self._examples().paired

    @property
    def baseline_only(self) -> pd.DataFrame:
        """Key columns of the examples only in the baseline, sorted."""
        return self._examples().baseline_only

    @property
    def candidate_only(self) -> pd.DataFrame:
        """Key columns of the examples only in the candidate, sorted."""
        return self._examples().candidate_only

    def only_ids(self, side: str, n: int) -> pd.DataFrame:
        """The first ``n`` keys of the examples of one run without a pair, sorted.

        Args:
            side: ``baseline`` or ``candidate``.
            n: how many, >= 0 (beyond :data:`ONLY_HEAD`, the examples are paired again).

        """
        if self.only_heads is not None and n <= ONLY_HEAD:
            return self.only_heads[0 if side == "baseline" else 1].head(n)
        return (self.baseline_only if side == "baseline" else self.candidate_only).head(n)

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
        if self.moved is not None and ranked == self.measures[0] and n <= self.n_moved:
            return self.moved.head(max(n, 0)).reset_index(drop=True)
        return top_moved(self.paired, n, ranked=ranked, measures=self.measures,
                         key=self.key_columns)


def top_moved(paired: pd.DataFrame, n: int, *, ranked: str, measures: Sequence[str],
              key: Sequence[str]) -> pd.DataFrame:
    """:meth:`Comparison.top` of paired examples in key order (see there)."""
    delta = paired[f"delta:{ranked}"].to_numpy()
    moved = np.flatnonzero(delta != 0.0)
    order = np.argsort(-np.abs(delta[moved]), kind="stable")
    picked = paired.iloc[moved[order[:max(n, 0)]]].reset_index(drop=True)
    out = picked[list(key)].copy()
    out.insert(len(out.columns), "measure", ranked)
    added = {side: picked[f"{side}:{ranked}"] for side in ("baseline", "candidate", "delta")}
    for m in measures:
        for side in ("baseline", "candidate", "delta"):
            added[f"{side}:{m}"] = picked[f"{side}:{m}"]
    if added.keys() & set(out.columns):  # a key column named as one of them
        for name, values in added.items():
            out[name] = values
        return out
    return pd.concat([out, pd.DataFrame(added, index=out.index)], axis=1)


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
    if not group_columns:
        return frame
    frame = frame.copy()
    for col in group_columns:
        frame[_KIND + col] = [_kind(v) for v in frame[col].astype(object).tolist()]
    return frame


def _rows_by_group(codes: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """Each group's row positions, in row order, from int64 codes in ``[0, n_groups)``.

    One stable sort of the codes: the cost does not grow with groups x rows.
    """
    sort = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[sort], np.arange(n_groups + 1))
    return [sort[bounds[g]:bounds[g + 1]] for g in range(n_groups)]


def _paired_values(paired: pd.DataFrame, columns: Sequence[str], id_column: str,
                   group_columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paired examples' values and identity hashes.

    Returns:
        Baseline and candidate columns, float64 (n, k) each; uint64 (n,) hashes
        (:func:`_pair_hashes`).
    """
    b = paired[[f"baseline:{x}" for x in columns]].to_numpy(np.float64)
    c = paired[[f"candidate:{x}" for x in columns]].to_numpy(np.float64)
    hashes = _pair_hashes(paired, id_column, group_columns) if len(paired) \
        else np.zeros(0, np.uint64)
    return b, c, hashes


def _pair_hashes(frame: pd.DataFrame, id_column: str, group_columns: Sequence[str]
                 ) -> np.ndarray:
    """Identity hashes of the pairs: the id's, mixed with each group value's (type-tagged)."""
    from pipeline.io.partition import hash_ids

    h = hash_ids(pa.array(frame[id_column], from_pandas=True))
    for col in group_columns:
        values = frame[col].astype(object).tolist()
        tags = [f"{_kind(v)}:{type(v).__name__}:{v!r}" for v in values]
        h = (h * np.uint64(0x100000001B3)) ^ hash_ids(pa.array(tags, pa.string()))
    return h


# pandas' inferred kinds, as the kinds key_kind gives Arrow types
_INFERRED = {"string": "string", "unicode": "string", "integer": "number",
             "floating": "number", "mixed-integer-float": "number", "decimal": "number",
             "boolean": "boolean", "bytes": "binary", "datetime64": "time", "datetime": "time",
             "date": "time", "timedelta64": "duration", "timedelta": "duration"}


def key_kind(column: pa.DataType | pd.Series) -> tuple[str | None, str]:
    """What kind of values a key column holds, for pairing two runs on it.

    Args:
        column: an Arrow type (a run's schema) or a pandas column (a frame given from
            Python, whose object columns are inferred).

    Returns:
        ``(kind, name)``: the kind (``number``: integers and floats pair by value;
        ``string``, ``boolean``, ``binary``, ``time``, ``duration``, or the type itself;
        None when it cannot be told, e.g. an empty or mixed column) and the type's name as
        the message shows it (``int64``, ``string``).

    """
    if isinstance(column, pa.DataType):
        t = column.value_type if pa.types.is_dictionary(column) else column
        name = str(column)
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
            return "number", name
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return "string", "string"
        if pa.types.is_boolean(t):
            return "boolean", name
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            return "binary", name
        if pa.types.is_temporal(t) and not pa.types.is_duration(t):
            return "time", name
        if pa.types.is_null(t):
            return None, name
        return name, name
    inferred = pd.api.types.infer_dtype(column, skipna=True)
    kind = _INFERRED.get(inferred)
    name = kind if kind in ("string", "number") else str(column.dtype)
    if kind == "number" and inferred in ("integer", "floating") and column.dtype != object:
        name = str(column.dtype)
    return kind, name


def check_key_types(baseline: Mapping[str, pa.DataType | pd.Series],
                    candidate: Mapping[str, pa.DataType | pd.Series]) -> None:
    """Refuse runs whose id or group columns hold values of different kinds.

    Pairing an integer id with a string id matches nothing (or fails deep in a join); the
    message names every such column and its type in both runs.

    Args:
        baseline: the baseline's key columns, by name: Arrow types or pandas columns.
        candidate: the candidate's, the same way (columns absent from one side are skipped).

    Raises:
        InputError: one or more key columns of different kinds.

    """
    differ = []
    for name, column in baseline.items():
        if name not in candidate:
            continue
        (kb, nb), (kc, nc) = key_kind(column), key_kind(candidate[name])
        if kb is not None and kc is not None and kb != kc:
            differ.append(f"{name} is {nb} in the baseline and {nc} in the candidate")
    if differ:
        raise InputError("the runs cannot be paired on columns of different types: "
                         + "; ".join(differ),
                         hint="score both runs from inputs whose id and group columns have "
                              "one type")


def _check_examples(frame: pd.DataFrame, side: str, key: Sequence[str],
                    columns: Sequence[str], *, unique: bool = False) -> None:
    """Raise the first problem of one run's examples (``unique``: keys known unique)."""
    missing = [c for c in (*key, *columns) if c not in frame.columns]
    if missing:
        raise InputError(f"the {side} examples have no column {', '.join(map(repr, missing))}")
    if frame[key[0]].isna().any():
        raise InputError(f"the {side} run has examples with a null id in {key[0]!r}")
    dup = None if unique else \
        frame.duplicated([key[0], *(_KIND + c for c in key[1:]), *key[1:]], keep=False)
    if dup is not None and dup.any():
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


@dataclass(frozen=True)
class _Setup:
    """What is compared: measures described, their columns, floors and estimates."""

    described: list[Measure]
    floors: dict[str, float]
    value_cols: list[str]
    columns: list[str]
    estimates: list[Estimate]


def _setup(measures: Sequence[str], specs: Sequence[MetricSpec], *, band: float,
           bands: Mapping[str, float] | None) -> _Setup:
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
    estimates = [Estimate(tuple(columns.index(x) for x in m.columns),
                          m.spec.corpus if m.statistic == "corpus" and m.spec else None,
                          bool(m.statistic == "corpus" and m.spec and m.spec.corpus_sized))
                 for m in described]
    return _Setup(described, dict(floors), value_cols, columns, estimates)


def _id_array(ids: pd.Series) -> pa.Array | None:
    """Ids as an Arrow array when they are plain strings or integers (None otherwise)."""
    dtype = ids.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "iu":
        return pa.array(ids.to_numpy())
    if not isinstance(dtype, pd.StringDtype):
        return None
    arr = pa.array(ids, from_pandas=True)
    if isinstance(arr, pa.ChunkedArray):  # an Arrow-backed column of several chunks
        arr = arr.combine_chunks()
    return arr.cast(pa.large_string())


def _id_order_join(b_ids: pd.Series, c_ids: pd.Series
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The rows of an outer join on ids, in id order (the order ``merge(sort=True)`` gives).

    Sorting both sides' ids together (a stable sort: a baseline row comes before its pair)
    puts each pair side by side; no sort of strings in Python, no hash table of keys.

    Args:
        b_ids: the baseline's ids.
        c_ids: the candidate's ids.

    Returns:
        int64 arrays: baseline and candidate rows of the pairs, rows only in the baseline,
        rows only in the candidate, each in id order; None when the ids are not plain
        strings or integers of one dtype without nulls, or when a side repeats an id (the
        caller then checks and merges as before).

    """
    if b_ids.dtype != c_ids.dtype:
        return None
    arr_b, arr_c = _id_array(b_ids), _id_array(c_ids)
    if arr_b is None or arr_c is None or arr_b.null_count or arr_c.null_count:
        return None
    both = pa.concat_arrays([arr_b, arr_c])
    order = pc.sort_indices(both).to_numpy()
    nb = len(arr_b)
    starts = np.zeros(0, dtype=np.int64)
    if len(order) > 1:
        ranked = both.take(order)
        starts = np.flatnonzero(pc.equal(ranked.slice(1), ranked.slice(0, len(order) - 1))
                                .to_numpy(zero_copy_only=False))
    b_pos, c_pos = order[starts], order[starts + 1]
    if (b_pos >= nb).any() or (c_pos < nb).any():  # an id twice in one run
        return None
    in_pair = np.zeros(len(order), dtype=bool)
    in_pair[starts] = in_pair[starts + 1] = True
    rest = order[~in_pair]
    return b_pos, c_pos - nb, rest[rest < nb], rest[rest >= nb] - nb


def _take_joined(b: pd.DataFrame, c: pd.DataFrame, key: list[str],
                 positions: tuple[np.ndarray, ...]
                 ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """:func:`_pair`'s three frames from :func:`_id_order_join`'s rows.

    Typed as the outer merge types them: an integer column of a side is float when the
    other side has rows without a pair (the merge fills them with NaN).
    """
    b_pos, c_pos, b_only, c_only = positions
    left = b.iloc[b_pos].reset_index(drop=True)
    right = c.drop(columns=key).iloc[c_pos].reset_index(drop=True)
    for frame, widen in ((left, len(c_only) > 0), (right, len(b_only) > 0)):
        for name in frame.columns:
            if widen and name not in key and frame[name].dtype.kind == "i":
                frame[name] = frame[name].astype(np.float64)
    paired = pd.concat([left, right], axis=1)
    return (paired, b[key].iloc[b_only].reset_index(drop=True),
            c[key].iloc[c_only].reset_index(drop=True))


def _pair(baseline: pd.DataFrame, candidate: pd.DataFrame, setup: _Setup, *, id_column: str,
          group_columns: tuple[str, ...]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Pair two frames on the key: (paired, baseline only, candidate only), kinds kept."""
    columns = setup.columns
    key = [id_column, *group_columns]
    kinds = [_KIND + c for c in group_columns]
    for side, frame in (("baseline", baseline), ("candidate", candidate)):
        gone = [c for c in key if c not in frame.columns]
        if gone:
            raise InputError(f"the {side} examples have no column {', '.join(map(repr, gone))}")
    check_key_types({c: baseline[c] for c in key}, {c: candidate[c] for c in key})
    baseline = _with_kinds(baseline, group_columns)
    candidate = _with_kinds(candidate, group_columns)
    # without groups, ids sorted together pair the runs (and prove each side's ids unique)
    positions = None if group_columns else _id_order_join(baseline[id_column],
                                                          candidate[id_column])
    _check_examples(baseline, "baseline", key, columns, unique=positions is not None)
    _check_examples(candidate, "candidate", key, columns, unique=positions is not None)
    b = baseline[key + kinds + columns].rename(columns={c: f"baseline:{c}" for c in columns})
    c = candidate[key + kinds + columns].rename(columns={c: f"candidate:{c}" for c in columns})
    if positions is not None and all(isinstance(t, np.dtype) and t.kind in "fi"
                                     for f in (b, c) for t in f.dtypes.iloc[1:]):
        paired, baseline_only, candidate_only = _take_joined(b, c, key, positions)
    else:
        try:
            merged = b.merge(c, on=key + kinds, how="outer", indicator=True, sort=True)
        except (ValueError, TypeError) as err:
            raise InputError(f"cannot pair the runs on {', '.join(key)}: {err}",
                             hint="the key columns must have the same types in both runs"
                             ) from err
        side = merged.pop("_merge")
        paired = merged[side == "both"].reset_index(drop=True)
        baseline_only = merged.loc[side == "left_only", key + kinds].reset_index(drop=True)
        candidate_only = merged.loc[side == "right_only", key + kinds].reset_index(drop=True)
    added: dict[str, pd.Series] = {}
    for m, col in zip(setup.described, setup.value_cols, strict=True):
        for s in ("baseline", "candidate"):
            added[f"{s}:{m.name}"] = paired[f"{s}:{col}"]
        added[f"delta:{m.name}"] = paired[f"candidate:{col}"] - paired[f"baseline:{col}"]
    if added.keys() & set(paired.columns):  # a measure named as a column: replaced in place
        for name, values in added.items():
            paired[name] = values
    else:
        paired = pd.concat([paired, pd.DataFrame(added, index=paired.index)], axis=1)
    return paired, baseline_only, candidate_only


def _no_pair(key: Sequence[str], n_baseline_only: int, n_candidate_only: int) -> InputError:
    return InputError("the two runs have no example in common "
                      f"(paired on {', '.join(key)}): {n_baseline_only} only in the "
                      f"baseline, {n_candidate_only} only in the candidate")


def _group_codes(frames: Sequence[pd.DataFrame], group_columns: Sequence[str]
                 ) -> tuple[list[tuple[tuple, tuple]], list[tuple], list[np.ndarray]]:
    """Every group of some frames once, in order of appearance.

    Returns:
        Each group's ``(values, kinds)``, its identity (what pairs: NaN with NaN, null with
        null), and each frame's row codes (int64) into those lists.

    """
    kinds = [_KIND + c for c in group_columns]
    codes_of: dict[tuple, int] = {}
    firsts: list[tuple[tuple, tuple]] = []
    idents: list[tuple] = []
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
                idents.append(ident)
            out[i] = code
        codes.append(out)
    return firsts, idents, codes


def _group_order(first: tuple[tuple, tuple]) -> tuple:
    values, kind = first
    return tuple((k, v if k == 0 else 0) for v, k in zip(values, kind, strict=True))


def _records(label: str, values: dict[str, Any], test: Any, n: int, n_b_only: int,
             n_c_only: int, setup: _Setup, *, max_missing: float) -> list[dict[str, Any]]:
    gone = is_missing(n, n_b_only, max_missing=max_missing)
    return [{
        "group": label, **values, "metric": m.metric, "measure": m.measure,
        "statistic": m.statistic, "n_paired": n, "n_baseline_only": n_b_only,
        "n_candidate_only": n_c_only, "baseline_mean": test.baseline_mean[k],
        "candidate_mean": test.candidate_mean[k], "delta": test.delta[k],
        "ci_low": test.ci_low[k], "ci_high": test.ci_high[k],
        "p_value": test.p_value[k],
        "p_tail": _tail(test, k),
        "p_adjusted": np.nan if test.p_refined is None else test.p_refined[k],
        "mde": np.nan if test.mde is None else test.mde[k],
        "band": setup.floors[m.name], "band_source": "static", "history_nights": 0,
        "alarm": False, "missing": gone, "drift": False, "drift_statistic": np.nan,
        "drift_p": np.nan,
    } for k, m in enumerate(setup.described)]


def _tail(test: Any, k: int) -> float:
    """The normal-tail estimate the row's adjustment started from, or NaN (the trials').

    Where no randomization trial was as extreme, ``p_refined`` is the smaller of ``p_value``
    (then 1 / (trials + 1), a bound) and the normal tail
    (:class:`~pipeline.compare.statistics.PairedTest`); when the tail is the smaller, it is
    what ``p_adjusted`` adjusts, and readers are shown it beside the adjusted value.
    """
    if test.p_refined is None:
        return float("nan")
    refined, raw = float(test.p_refined[k]), float(test.p_value[k])
    return refined if refined < raw else float("nan")


def _shown(group_columns: Sequence[str], values: tuple, kind: tuple) -> dict[str, Any]:
    return {col: (None if k == 2 else v)
            for col, v, k in zip(group_columns, values, kind, strict=True)}


def _rows(records: list[dict[str, Any]], group_columns: Sequence[str], *, adjust: str,
          confidence: float) -> pd.DataFrame:
    rows = pd.DataFrame.from_records(records,
                                     columns=["group", *group_columns, *ROW_COLUMNS[1:]])
    rows["p_adjusted"] = adjust_p_values(rows["p_adjusted"].to_numpy(np.float64), adjust)
    rows["alarm"] = alarm_rule(rows, alpha=1.0 - confidence)
    return rows


def _check_options(*, n_bootstrap: int, confidence: float, band: float, max_missing: float,
                   adjust: str) -> None:
    check_settings(n_bootstrap=n_bootstrap, confidence=confidence, band=band,
                   max_missing=max_missing)
    if adjust not in ADJUST_METHODS:
        raise ConfigError(f"unknown adjust {adjust!r}",
                          hint=f"choose one of {', '.join(ADJUST_METHODS)}")


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

    Everything in memory (the examples of both runs at once); a partitioned comparison
    (:class:`PairingMerger`) gives the same :class:`Comparison` holding nothing per example.

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
        n_bootstrap: bootstrap resamples and randomization trials, 1 to
            :data:`~pipeline.config_checks.MAX_BOOTSTRAP`.
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
        ConfigError: bad settings or measure names; over the default ``n_bootstrap``, the
            paired examples x ``n_bootstrap`` above
            :data:`~pipeline.config_checks.MAX_BOOTSTRAP_WORK`.
        InputError: missing columns, null ids, duplicate keys, non-numeric or non-finite
            scores, group columns whose types differ between runs, or no example in common.

    """
    _check_options(n_bootstrap=n_bootstrap, confidence=confidence, band=band,
                   max_missing=max_missing, adjust=adjust)
    setup = _setup(measures, specs, band=band, bands=bands)
    group_columns = tuple(group_columns)
    key = [id_column, *group_columns]
    kinds = [_KIND + c for c in group_columns]
    paired, baseline_only, candidate_only = _pair(baseline, candidate, setup,
                                                  id_column=id_column,
                                                  group_columns=group_columns)
    if paired.empty:
        raise _no_pair(key, len(baseline_only), len(candidate_only))
    check_resampling_work("n_bootstrap", n_bootstrap, len(paired), default=DEFAULT_N_BOOTSTRAP,
                          limit=MAX_BOOTSTRAP_WORK)
    base_matrix, cand_matrix, hashes = _paired_values(paired, setup.columns, id_column,
                                                      group_columns)

    # every group once, in sorted order, with the rows of each frame that belong to it
    # (one pass over the rows: the cost does not grow with groups x rows)
    groups: list[tuple[tuple, tuple]] = []
    members: list[tuple[np.ndarray, int, int]] = []
    if group_columns:
        firsts, _, codes = _group_codes((paired, baseline_only, candidate_only), group_columns)
        ranked = sorted(range(len(firsts)), key=lambda g: _group_order(firsts[g]))
        n_groups = len(firsts)
        paired_rows = _rows_by_group(codes[0], n_groups)
        only_b = np.bincount(codes[1], minlength=n_groups)
        only_c = np.bincount(codes[2], minlength=n_groups)
        for g in ranked:
            groups.append(firsts[g])
            members.append((paired_rows[g], int(only_b[g]), int(only_c[g])))
    trials = n_bootstrap
    records: list[dict[str, Any]] = []

    def add_rows(label: str, values: dict[str, Any], index: np.ndarray | None, n_b_only: int,
                 n_c_only: int) -> None:
        part_b = base_matrix if index is None else base_matrix[index]
        part_c = cand_matrix if index is None else cand_matrix[index]
        test = paired_resampling(
            part_b, part_c, setup.estimates, n_bootstrap=n_bootstrap, confidence=confidence,
            seed=seed, hashes=hashes if index is None else hashes[index], n_trials=trials)
        records.extend(_records(label, values, test, len(part_b), n_b_only, n_c_only, setup,
                                max_missing=max_missing))

    add_rows(ALL_GROUP, dict.fromkeys(group_columns), None, len(baseline_only),
             len(candidate_only))
    for (values, kind), (index, n_b_only, n_c_only) in zip(groups, members, strict=True):
        add_rows(_group_label(group_columns, values, kind), _shown(group_columns, values, kind),
                 index, n_b_only, n_c_only)
    rows = _rows(records, group_columns, adjust=adjust, confidence=confidence)
    drop = [k for k in kinds if k in paired.columns]
    return Comparison(rows=rows, measures=tuple(measures), id_column=id_column,
                      group_columns=group_columns, band=band, confidence=confidence,
                      n_bootstrap=n_bootstrap, seed=seed, max_missing=max_missing,
                      adjust=adjust, n_trials=trials, floors=setup.floors,
                      n_paired=len(paired), n_baseline_only=len(baseline_only),
                      n_candidate_only=len(candidate_only),
                      examples=PairedExamples(paired.drop(columns=drop),
                                              baseline_only.drop(columns=kinds),
                                              candidate_only.drop(columns=kinds)))


def paired_examples(baseline: pd.DataFrame, candidate: pd.DataFrame, *,
                    measures: Sequence[str], specs: Sequence[MetricSpec] = (),
                    id_column: str = "id", group_columns: Sequence[str] = ()
                    ) -> PairedExamples:
    """Both runs' examples paired in memory (what :attr:`Comparison.paired` reads).

    Args:
        baseline: as :func:`compare_examples`.
        candidate: as :func:`compare_examples`.
        measures: as :func:`compare_examples`.
        specs: as :func:`compare_examples`.
        id_column: as :func:`compare_examples`.
        group_columns: as :func:`compare_examples`.

    Raises:
        InputError: as :func:`compare_examples`.

    """
    setup = _setup(measures, specs, band=0.0, bands=None)
    kinds = [_KIND + c for c in group_columns]
    paired, b_only, c_only = _pair(baseline, candidate, setup, id_column=id_column,
                                   group_columns=tuple(group_columns))
    return PairedExamples(paired.drop(columns=kinds), b_only.drop(columns=kinds),
                          c_only.drop(columns=kinds))


# ---------------------------------------------------------------------------------------
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


__all__ = ["ALL_GROUP", "ONLY_HEAD", "ROW_COLUMNS", "Comparison", "PairedExamples",
           "alarm_rule", "compare_examples", "paired_examples", "top_moved"]
