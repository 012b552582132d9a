"""Deltas between two scoring runs, their uncertainty, and the nightly alarm.

Two runs of ``overlap score`` are paired example by example (by id, and by the group
columns when the runs were grouped). For every requested measure (``rougeL.fmeasure``...)
and every group, the change of the mean score is estimated with:

- **the delta**: ``mean(candidate - baseline)`` over paired examples, in score units
  (scores are in [0, 1], so the delta is in [-1, 1]);
- **a confidence interval of the delta** by *paired bootstrap resampling*: resample the
  paired examples with replacement ``n_bootstrap`` times, take the mean per-example difference
  of each resample, and report its ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``
  percentiles (Koehn 2004, "Statistical Significance Tests for Machine Translation
  Evaluation", EMNLP; the percentile interval of Efron & Tibshirani 1993, ch. 13). Baseline
  and candidate are resampled with the same indices, which is what makes the test paired;
  all measures of one group share the resamples (as sacrebleu's ``paired_bs`` does);
- **a two-sided p-value** by *paired approximate randomization*: under the null hypothesis
  the two systems are exchangeable on each example, so each pair's labels are swapped with
  probability 1/2 in each of ``n_bootstrap`` trials; for a score that is a mean of
  per-example values a swap flips the sign of that example's difference, and
  ``p = (1 + #{|mean of sign-flipped differences| >= |observed delta|}) / (1 + trials)``
  (Riezler & Maxwell 2005, "On Some Pitfalls in Automatic Evaluation and Significance
  Testing for MT"; sacrebleu's ``--paired-ar``, whose +1 correction comes from Clark et al.'s
  MultEval). Unlike sacrebleu, ties count as at least as extreme (``>=``), so two identical
  runs get p = 1 rather than the smallest possible p.

**Alarm** (per measure and group) when the interval excludes zero *and* ``|delta| > band``,
in either direction. The alarm deliberately uses the interval, not the p-value; both come
from resamplings seeded with ``numpy.random.default_rng(seed)``, so a comparison is
reproducible.

Everything above :func:`compare_runs` is pure (arrays and data frames in, numbers out);
:func:`compare_runs` composes it with the run reader of :mod:`pipeline.io.runs`.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from pipeline.errors import ConfigError, InputError, SignatureMismatchError
from pipeline.signature import NON_SCORE_FIELDS, Signature, score_differences

if TYPE_CHECKING:
    from pipeline.io.runs import RunInfo

MEASURE_NAMES = ("precision", "recall", "fmeasure")
DEFAULT_BAND = 0.01
DEFAULT_CONFIDENCE = 0.95
DEFAULT_N_BOOTSTRAP = 1000
DEFAULT_SEED = 12345
DEFAULT_TOP = 10
ALL_GROUP = "all"
INTERVAL_METHOD = "paired bootstrap percentile interval (Koehn 2004)"
TEST_METHOD = "paired approximate randomization, two-sided (Riezler & Maxwell 2005)"

_MEASURE_RE = re.compile(r"^(?P<metric>[A-Za-z][A-Za-z0-9]*)\.(?P<measure>[a-z_]+)$")
_COLUMN_RE = re.compile(
    r"^(?P<metric>[A-Za-z][A-Za-z0-9]*)_(?P<measure>precision|recall|fmeasure)$")
# Resampling is done in chunks of at most this many (resample x example) cells (~32 MiB).
_CHUNK_CELLS = 1 << 22


# --------------------------------------------------------------------------------------------
# Measure names
# --------------------------------------------------------------------------------------------

def measure_column(measure: str) -> str:
    """Column name of a measure in a run's examples: ``rougeL.fmeasure`` -> ``rougeL_fmeasure``.

    Raises:
        ConfigError: not of the form ``METRIC.MEASURE`` with MEASURE one of precision, recall,
            fmeasure.

    """
    match = _MEASURE_RE.match(measure)
    if not match or match.group("measure") not in MEASURE_NAMES:
        raise ConfigError(f"not a measure: {measure!r}; write METRIC.MEASURE with MEASURE one "
                          f"of {', '.join(MEASURE_NAMES)}, e.g. rougeL.fmeasure")
    return f"{match.group('metric')}_{match.group('measure')}"


def measures_in(columns: Iterable[str]) -> tuple[str, ...]:
    """Return the measures (``rouge1.fmeasure``...) named by ``{metric}_{measure}`` columns."""
    found = []
    for name in columns:
        match = _COLUMN_RE.match(name)
        if match:
            found.append(f"{match.group('metric')}.{match.group('measure')}")
    return tuple(found)


def resolve_measures(
    requested: Sequence[str] | None,
    baseline_measures: Sequence[str],
    candidate_measures: Sequence[str],
) -> tuple[str, ...]:
    """Choose the measures to compare.

    Args:
        requested: ``METRIC.MEASURE`` names, or None/empty for every ``fmeasure`` present in
            both runs (in the baseline's order).
        baseline_measures: measures the baseline run has (see :func:`measures_in`).
        candidate_measures: measures the candidate run has.

    Returns:
        The measures, duplicates removed, in request order.

    Raises:
        ConfigError: a malformed name.
        InputError: a requested measure missing from a run, or no fmeasure in common.

    """
    common = [m for m in baseline_measures if m in set(candidate_measures)]
    if not requested:
        chosen = [m for m in common if m.endswith(".fmeasure")]
        if not chosen:
            raise InputError("the two runs have no fmeasure column in common "
                             f"(baseline: {', '.join(baseline_measures) or 'none'}; "
                             f"candidate: {', '.join(candidate_measures) or 'none'})")
        return tuple(chosen)
    out: list[str] = []
    for name in requested:
        measure_column(name)
        for side, have in (("baseline", baseline_measures), ("candidate", candidate_measures)):
            if name not in have:
                raise InputError(f"measure {name!r} is not in the {side} run",
                                 hint=f"it has {', '.join(have) or 'no measure'}")
        if name not in out:
            out.append(name)
    return tuple(out)


# --------------------------------------------------------------------------------------------
# The paired statistics
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PairedTest:
    """Result of :func:`paired_test` for M measures over the same n paired examples.

    Attributes:
        baseline_mean: shape (M,), mean baseline score, in score units.
        candidate_mean: shape (M,), mean candidate score.
        delta: shape (M,), ``candidate_mean - baseline_mean`` (= mean per-example difference).
        ci_low: shape (M,), lower end of the paired bootstrap percentile interval of delta;
            NaN when n < 2.
        ci_high: shape (M,), upper end; NaN when n < 2.
        p_value: shape (M,), two-sided approximate randomization p-value in
            [1 / (n_bootstrap + 1), 1]; NaN when n < 2.

    """

    baseline_mean: np.ndarray
    candidate_mean: np.ndarray
    delta: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_value: np.ndarray


def _check_settings(*, n_bootstrap: int, confidence: float, band: float = 0.0) -> None:
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")
    if n_bootstrap < 1:
        raise ConfigError(f"n_bootstrap must be at least 1, got {n_bootstrap}")
    if not band >= 0.0:
        raise ConfigError(f"band must be a non-negative score difference, got {band}")


def _chunks(n_resamples: int, n_examples: int) -> Iterable[int]:
    per_chunk = max(1, _CHUNK_CELLS // max(n_examples, 1))
    done = 0
    while done < n_resamples:
        size = min(per_chunk, n_resamples - done)
        yield size
        done += size


def bootstrap_mean_differences(
    differences: np.ndarray, *, n_bootstrap: int, rng: np.random.Generator
) -> np.ndarray:
    """Means of ``n_bootstrap`` paired bootstrap resamples of per-example differences.

    Resample i draws n example indices uniformly with replacement (Koehn 2004); its value
    for measure m is the mean of ``differences[idx_i, m]``, so all measures share the
    resample. With one measure the values are gathered by index; with several, each
    resample's draw counts per example are multiplied with the (n, M) differences (one pass
    over the indices for all measures: about 3x faster at 1M examples x 4 measures). Memory
    is bounded by working in chunks of resamples (about 4M index cells).

    Args:
        differences: float64, shape (n, M), ``candidate - baseline`` per example and measure;
            n >= 1.
        n_bootstrap: number of resamples, >= 1.
        rng: the random generator (``numpy.random.default_rng(seed)``).

    Returns:
        float64, shape (n_bootstrap, M).

    """
    n, n_measures = differences.shape
    out = np.empty((n_bootstrap, n_measures))
    column = np.ascontiguousarray(differences[:, 0])
    index_type = np.int32 if n < 2**31 else np.int64
    start = 0
    for size in _chunks(n_bootstrap, n):
        idx = rng.integers(0, n, size=(size, n), dtype=index_type)
        if n_measures == 1:
            out[start:start + size, 0] = column[idx].sum(axis=1) / n
        else:
            flat = (idx + (np.arange(size, dtype=np.int64) * n)[:, None]).ravel()
            counts = np.bincount(flat, minlength=size * n).reshape(size, n)
            out[start:start + size] = counts.astype(np.float64) @ differences / n
        start += size
    return out


def randomization_p_values(
    differences: np.ndarray, *, n_trials: int, rng: np.random.Generator
) -> np.ndarray:
    """Two-sided paired approximate randomization p-values of mean differences.

    In each trial every example's baseline and candidate are swapped with probability 1/2
    (Riezler & Maxwell 2005), which for a mean flips the sign of that example's difference.
    ``p = (1 + #{trials with |mean| >= |observed mean|}) / (1 + n_trials)``; ties count as
    extreme (a relative tolerance of 1e-9 absorbs floating-point summation order).

    Args:
        differences: float64, shape (n, M), ``candidate - baseline`` per example and measure.
        n_trials: number of random relabelings, >= 1.
        rng: the random generator.

    Returns:
        float64, shape (M,), in [1 / (n_trials + 1), 1].

    """
    n, n_measures = differences.shape
    observed = np.abs(differences.mean(axis=0))
    threshold = observed - 1e-9 * np.maximum(observed, np.abs(differences).mean(axis=0))
    total = differences.sum(axis=0)
    extreme = np.zeros(n_measures, dtype=np.int64)
    for size in _chunks(n_trials, n):
        # one random bit per (trial, example): 1 keeps the pair, 0 swaps it (flips the sign);
        # the mean of the relabelled differences is (2 * kept - total) / n
        bits = np.unpackbits(rng.integers(0, 256, size=(size, (n + 7) // 8), dtype=np.uint8),
                             axis=1, count=n)
        means = np.abs((2.0 * (bits.astype(np.float64) @ differences) - total) / n)
        extreme += (means >= threshold).sum(axis=0)
    return (extreme + 1.0) / (n_trials + 1.0)


def paired_test(
    baseline: np.ndarray,
    candidate: np.ndarray,
    *,
    n_bootstrap: int = DEFAULT_N_BOOTSTRAP,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int | Sequence[int] | None = DEFAULT_SEED,
) -> PairedTest:
    """Delta of means, its paired bootstrap interval and an approximate randomization p-value.

    See the module docstring for the methods and their sources. The bootstrap resamples are
    drawn first, then the randomization trials, from one ``numpy.random.default_rng(seed)``.

    Args:
        baseline: float64, shape (n,) or (n, M): per-example baseline scores (row i of both
            arrays is the same example), finite.
        candidate: same shape, per-example candidate scores.
        n_bootstrap: bootstrap resamples and randomization trials, >= 1.
        confidence: interval level in (0, 1).
        seed: seed of the random generator (an int or a sequence of ints; None is unseeded).

    Returns:
        A :class:`PairedTest` with arrays of shape (M,) ((1,) for 1-d inputs). With n < 2
        the interval and p-value are NaN (a single pair has no sampling variance to
        estimate); with n = 0 every field is NaN.

    Raises:
        ConfigError: n_bootstrap < 1 or confidence outside (0, 1).
        ValueError: shapes differ or values are not finite.

    """
    _check_settings(n_bootstrap=n_bootstrap, confidence=confidence)
    b = np.asarray(baseline, dtype=np.float64)
    c = np.asarray(candidate, dtype=np.float64)
    if b.ndim == 1 and c.ndim == 1:
        b, c = b[:, None], c[:, None]
    if b.shape != c.shape or b.ndim != 2:
        raise ValueError(f"baseline {b.shape} and candidate {c.shape} must have one shape (n, M)")
    if not (np.isfinite(b).all() and np.isfinite(c).all()):
        raise ValueError("scores must be finite")
    n, n_measures = b.shape
    nan = np.full(n_measures, np.nan)
    if n == 0:
        return PairedTest(nan, nan.copy(), nan.copy(), nan.copy(), nan.copy(), nan.copy())
    differences = c - b
    base_mean, cand_mean = b.mean(axis=0), c.mean(axis=0)
    delta = differences.mean(axis=0)
    if n < 2:
        return PairedTest(base_mean, cand_mean, delta, nan, nan.copy(), nan.copy())
    rng = np.random.default_rng(seed)
    means = bootstrap_mean_differences(differences, n_bootstrap=n_bootstrap, rng=rng)
    alpha = 1.0 - confidence
    ci_low = np.quantile(means, alpha / 2.0, axis=0)
    ci_high = np.quantile(means, 1.0 - alpha / 2.0, axis=0)
    p_value = randomization_p_values(differences, n_trials=n_bootstrap, rng=rng)
    return PairedTest(base_mean, cand_mean, delta, ci_low, ci_high, p_value)


def is_alarm(delta: float, ci_low: float, ci_high: float, *, band: float) -> bool:
    """Apply the alarm rule: the interval excludes 0 and ``|delta| > band``, either way.

    Args:
        delta: mean difference, candidate - baseline, in score units.
        ci_low: lower end of its interval (NaN: no interval, no alarm).
        ci_high: upper end.
        band: the tolerated absolute change, >= 0, in score units.

    """
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return False
    return bool((ci_low > 0.0 or ci_high < 0.0) and abs(delta) > band)


# --------------------------------------------------------------------------------------------
# Pairing two runs' examples
# --------------------------------------------------------------------------------------------

ROW_COLUMNS = ("group", "metric", "measure", "n_paired", "n_baseline_only",
               "n_candidate_only", "baseline_mean", "candidate_mean", "delta", "ci_low",
               "ci_high", "p_value", "alarm")


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare_examples`.

    Attributes:
        rows: one row per (group, measure): the overall rows first (``group == "all"``), then
            each group in sorted order. Columns: ``group`` (label: ``all`` or
            ``col=value[,col=value]``), the group columns (null on overall rows),
            ``metric`` (``rougeL``), ``measure`` (``fmeasure``), ``n_paired``,
            ``n_baseline_only``, ``n_candidate_only`` (ids present in one run only, per
            group), ``baseline_mean``, ``candidate_mean`` (over paired examples, score units),
            ``delta``, ``ci_low``, ``ci_high``, ``p_value`` (float64; NaN when fewer than two
            pairs), ``alarm`` (bool).
        paired: one row per paired example: the key columns and, per measure, ``baseline``,
            ``candidate`` and ``delta`` columns named ``{side}:{measure}``.
        baseline_only: key columns of the examples only in the baseline, sorted.
        candidate_only: key columns of the examples only in the candidate, sorted.
        measures: the measures compared, ``METRIC.MEASURE``.
        id_column: the id column.
        group_columns: the group columns (also part of the pairing key).
        band: the alarm band, score units.
        confidence: interval level.
        n_bootstrap: resamples (and randomization trials).
        seed: the seed.

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

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The pairing key: the id column, then the group columns."""
        return (self.id_column, *self.group_columns)

    @property
    def alarm(self) -> bool:
        """True when any (group, measure) row alarms."""
        return bool(self.rows["alarm"].any())

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


def _group_label(columns: Sequence[str], values: Sequence[Any]) -> str:
    return ",".join(f"{c}={'<null>' if pd.isna(v) else v}" for c, v in zip(columns, values,
                                                                             strict=True))


def _check_examples(frame: pd.DataFrame, side: str, key: Sequence[str],
                    columns: Sequence[str]) -> None:
    missing = [c for c in (*key, *columns) if c not in frame.columns]
    if missing:
        raise InputError(f"the {side} examples have no column {', '.join(map(repr, missing))}")
    if frame[key[0]].isna().any():
        raise InputError(f"the {side} run has examples with a null id in {key[0]!r}")
    dup = frame.duplicated(list(key), keep=False)
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
    confidence: float = DEFAULT_CONFIDENCE,
    n_bootstrap: int = DEFAULT_N_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Pair two runs' examples and test the change of every measure, overall and per group.

    Examples are paired on (id, group columns); examples present in one run only are counted
    (overall and per group) and listed in the result, never dropped silently. The overall
    rows use ``default_rng(seed)``; group g uses ``default_rng([seed, crc32(label of g)])``
    so that a group's result does not depend on which other groups exist.

    Args:
        baseline: one row per example: the id column, the group columns and a
            ``{metric}_{measure}`` float column per measure (e.g. ``rougeL_fmeasure``).
        candidate: the same for the candidate run.
        measures: ``METRIC.MEASURE`` names to compare (at least one).
        id_column: the id column.
        group_columns: columns that group (and key) the examples, may be empty.
        band: tolerated absolute change of a mean, >= 0, score units.
        confidence: interval level in (0, 1).
        n_bootstrap: bootstrap resamples and randomization trials, >= 1.
        seed: seed of the resampling.

    Returns:
        A :class:`Comparison`.

    Raises:
        ConfigError: bad settings or measure names.
        InputError: missing columns, null ids, duplicate keys, non-numeric or non-finite
            scores, group columns whose types differ between runs, or no example in common.

    """
    _check_settings(n_bootstrap=n_bootstrap, confidence=confidence, band=band)
    if not measures:
        raise ConfigError("no measure to compare")
    columns = [measure_column(m) for m in measures]
    group_columns = tuple(group_columns)
    key = [id_column, *group_columns]
    _check_examples(baseline, "baseline", key, columns)
    _check_examples(candidate, "candidate", key, columns)
    b = baseline[key + columns].rename(columns={c: f"baseline:{m}"
                                                for c, m in zip(columns, measures, strict=True)})
    c = candidate[key + columns].rename(columns={c: f"candidate:{m}"
                                                 for c, m in zip(columns, measures, strict=True)})
    try:
        merged = b.merge(c, on=key, how="outer", indicator=True, sort=True)
    except (ValueError, TypeError) as err:
        raise InputError(f"cannot pair the runs on {', '.join(key)}: {err}",
                         hint="the key columns must have the same types in both runs") from err
    side = merged.pop("_merge")
    paired = merged[side == "both"].reset_index(drop=True)
    baseline_only = merged.loc[side == "left_only", key].reset_index(drop=True)
    candidate_only = merged.loc[side == "right_only", key].reset_index(drop=True)
    if paired.empty:
        raise InputError("the two runs have no example in common "
                         f"(paired on {', '.join(key)}): {len(baseline_only)} only in the "
                         f"baseline, {len(candidate_only)} only in the candidate")
    for m in measures:
        paired[f"delta:{m}"] = paired[f"candidate:{m}"] - paired[f"baseline:{m}"]

    settings = {"n_bootstrap": n_bootstrap, "confidence": confidence}
    records: list[dict[str, Any]] = []

    def add_rows(label: str, values: dict[str, Any], part: pd.DataFrame, n_b_only: int,
                 n_c_only: int, seed_: int | list[int]) -> None:
        test = paired_test(part[[f"baseline:{m}" for m in measures]].to_numpy(np.float64),
                           part[[f"candidate:{m}" for m in measures]].to_numpy(np.float64),
                           seed=seed_, **settings)  # type: ignore[arg-type]
        for k, m in enumerate(measures):
            metric, measure = m.split(".", 1)
            records.append({
                "group": label, **values, "metric": metric, "measure": measure,
                "n_paired": len(part), "n_baseline_only": n_b_only,
                "n_candidate_only": n_c_only,
                "baseline_mean": test.baseline_mean[k], "candidate_mean": test.candidate_mean[k],
                "delta": test.delta[k], "ci_low": test.ci_low[k], "ci_high": test.ci_high[k],
                "p_value": test.p_value[k],
                "alarm": is_alarm(test.delta[k], test.ci_low[k], test.ci_high[k], band=band),
            })

    add_rows(ALL_GROUP, dict.fromkeys(group_columns), paired, len(baseline_only),
             len(candidate_only), seed)
    if group_columns:
        groups = pd.concat([paired[list(group_columns)], baseline_only[list(group_columns)],
                            candidate_only[list(group_columns)]]).drop_duplicates()
        groups = groups.sort_values(list(group_columns), na_position="last")
        for values in groups.itertuples(index=False, name=None):
            def where(frame: pd.DataFrame, values: tuple = values) -> pd.Series:
                mask = pd.Series(True, index=frame.index)
                for col, v in zip(group_columns, values, strict=True):
                    mask &= frame[col].isna() if pd.isna(v) else frame[col] == v
                return mask
            label = _group_label(group_columns, values)
            add_rows(label, dict(zip(group_columns, values, strict=True)),
                     paired[where(paired)], int(where(baseline_only).sum()),
                     int(where(candidate_only).sum()),
                     [seed, zlib.crc32(label.encode("utf-8"))])
    rows = pd.DataFrame.from_records(records,
                                     columns=["group", *group_columns, *ROW_COLUMNS[1:]])
    return Comparison(rows=rows, paired=paired, baseline_only=baseline_only,
                      candidate_only=candidate_only, measures=tuple(measures),
                      id_column=id_column, group_columns=group_columns, band=band,
                      confidence=confidence, n_bootstrap=n_bootstrap, seed=seed)


# --------------------------------------------------------------------------------------------
# Signatures
# --------------------------------------------------------------------------------------------

def check_signatures(baseline: Signature, candidate: Signature, *,
                     allow_mismatch: bool = False) -> list[str]:
    """Compare the scoring-relevant fields of two run signatures.

    The rules are :func:`pipeline.signature.score_differences`: metrics, tokenizer, stemmer,
    case, multi-reference rule and any family's or later setting's field.

    Args:
        baseline: the baseline run's signature.
        candidate: the candidate run's signature.
        allow_mismatch: return the differing fields instead of raising.

    Returns:
        The names of the differing fields (empty when the runs are comparable).

    Raises:
        SignatureMismatchError: fields differ and allow_mismatch is False; the message names
            each field with both values.

    """
    fields = score_differences(baseline, candidate)
    if fields and not allow_mismatch:
        a, b = baseline.as_dict(), candidate.as_dict()
        detail = "; ".join(f"{k}: {a.get(k, '(absent)')} vs {b.get(k, '(absent)')}"
                           for k in fields)
        raise SignatureMismatchError(
            f"the runs were scored differently ({detail})",
            hint="scores from different settings are not comparable; pass "
                 "--allow-signature-mismatch to compare anyway")
    return fields


# --------------------------------------------------------------------------------------------
# Composition over run directories
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunComparison:
    """The result of :func:`compare_runs`.

    Attributes:
        comparison: the statistics (:class:`Comparison`).
        baseline: the baseline run's description.
        candidate: the candidate run's description.
        signature_differences: differing signature fields (allowed by the caller).
        top: the examples that moved most (:meth:`Comparison.top`, at most ``n_top``), plus
            ``baseline_prediction`` and ``candidate_prediction`` text columns (null where
            the text could not be found).
        notes: human-readable remarks (e.g. where texts could not be read).
        n_top: how many moved examples were asked for.

    """

    comparison: Comparison
    baseline: RunInfo
    candidate: RunInfo
    signature_differences: list[str]
    top: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    n_top: int = DEFAULT_TOP

    @property
    def alarm(self) -> bool:
        """True when any (group, measure) row alarms."""
        return self.comparison.alarm

    def to_document(self, *, max_ids: int = 20) -> dict[str, Any]:
        """Return the comparison as a JSON-ready dict (the content of ``compare.json``).

        Keys: ``alarm``, ``baseline``/``candidate`` (path, run_id, signature, n_examples),
        ``signature_differences``, ``settings`` (measures, band, confidence, n_bootstrap,
        seed, interval and test methods, alarm rule, top), ``pairing`` (key columns, counts and up
        to ``max_ids`` ids present in one run only), ``rows`` (as :attr:`Comparison.rows`),
        ``top`` (as :attr:`top`), ``notes``, ``version``. NaN is written as null.
        """
        from pipeline import __version__

        cmp = self.comparison
        key = list(cmp.key_columns)

        def run(info: RunInfo) -> dict[str, Any]:
            return {"path": info.path, "run_id": info.run_id, "signature": str(info.signature),
                    "n_examples": info.n_examples}

        def ids(frame: pd.DataFrame) -> list[Any]:
            head = frame.head(max_ids)
            if len(key) == 1:
                return [_jsonable(v) for v in head[key[0]]]
            return [{k: _jsonable(v) for k, v in r.items()} for r in head.to_dict("records")]

        return {
            "alarm": self.alarm,
            "baseline": run(self.baseline),
            "candidate": run(self.candidate),
            "signature_differences": list(self.signature_differences),
            "settings": {
                "measures": list(cmp.measures), "band": cmp.band, "confidence": cmp.confidence,
                "n_bootstrap": cmp.n_bootstrap, "seed": cmp.seed, "interval": INTERVAL_METHOD,
                "test": TEST_METHOD, "alarm_rule": "interval excludes 0 and |delta| > band",
                "top": self.n_top,
            },
            "pairing": {
                "id_column": cmp.id_column, "group_columns": list(cmp.group_columns),
                "n_paired": len(cmp.paired), "n_baseline_only": len(cmp.baseline_only),
                "n_candidate_only": len(cmp.candidate_only),
                "baseline_only_ids": ids(cmp.baseline_only),
                "candidate_only_ids": ids(cmp.candidate_only),
            },
            "rows": _records(cmp.rows),
            "top": _records(self.top),
            "notes": list(self.notes),
            "version": __version__,
        }

    def to_arrow(self) -> pa.Table:
        """Return the rows as an Arrow table (the content of ``compare.parquet``).

        Columns: ``baseline_run_id``, ``candidate_run_id``, then :attr:`Comparison.rows`
        (counts int64, means/deltas/interval/p float64, ``alarm`` bool). Key-value metadata:
        ``overlap.compare`` (the JSON document without rows and top),
        ``overlap.baseline_signature`` and ``overlap.candidate_signature``.
        """
        import json

        rows = self.comparison.rows.copy()
        rows.insert(0, "candidate_run_id", self.candidate.run_id)
        rows.insert(0, "baseline_run_id", self.baseline.run_id)
        for col in ("baseline_run_id", "candidate_run_id"):
            rows[col] = rows[col].astype(object)
        table = pa.Table.from_pandas(rows, preserve_index=False)
        table = table.cast(pa.schema([
            pa.field(f.name, pa.string()) if f.name in ("baseline_run_id", "candidate_run_id")
            else f for f in table.schema]).with_metadata(None))
        document = {k: v for k, v in self.to_document().items() if k not in ("rows", "top")}
        return table.replace_schema_metadata({
            "overlap.compare": json.dumps(document, allow_nan=False),
            "overlap.baseline_signature": str(self.baseline.signature),
            "overlap.candidate_signature": str(self.candidate.signature),
        })


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return None
    if isinstance(value, (str, int, float, bool)):
        return value
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): _jsonable(v) for k, v in row.items()}
            for row in frame.to_dict("records")]


def compare_runs(
    baseline_dir: str,
    candidate_dir: str,
    *,
    measures: Sequence[str] | None = None,
    band: float = DEFAULT_BAND,
    confidence: float = DEFAULT_CONFIDENCE,
    n_bootstrap: int = DEFAULT_N_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    top: int = DEFAULT_TOP,
    allow_signature_mismatch: bool = False,
) -> RunComparison:
    """Compare two ``overlap score`` output directories (see :func:`compare_examples`).

    Reads only the key and measure columns; prediction texts are read for the ``top``
    examples only, from the runs' ``prediction`` column when they were scored with
    ``--keep-text``, else from the input files named in their manifests when readable.

    Args:
        baseline_dir: the baseline run directory (local path or URI).
        candidate_dir: the candidate run directory.
        measures: ``METRIC.MEASURE`` names; default every fmeasure in both runs.
        band: tolerated absolute change, score units, >= 0.
        confidence: interval level in (0, 1).
        n_bootstrap: resamples, >= 1.
        seed: resampling seed.
        top: how many moved examples to list, >= 0.
        allow_signature_mismatch: compare runs whose scoring settings differ.

    Returns:
        A :class:`RunComparison`.

    Raises:
        InputError: a directory that is not a complete run, unreadable files, or bad data.
        SignatureMismatchError: the runs' scoring settings differ (unless allowed).
        ConfigError: bad settings or measure names.

    """
    from pipeline.io import runs

    _check_settings(n_bootstrap=n_bootstrap, confidence=confidence, band=band)
    if top < 0:
        raise ConfigError(f"top must be >= 0, got {top}")
    base = runs.open_run(baseline_dir)
    cand = runs.open_run(candidate_dir)
    differences = check_signatures(base.signature, cand.signature,
                                   allow_mismatch=allow_signature_mismatch)
    notes: list[str] = []
    other = base.signature.differences(cand.signature, keys=NON_SCORE_FIELDS)
    if other:
        a, b = base.signature.as_dict(), cand.signature.as_dict()
        notes.append("the signatures also differ in " + "; ".join(
            f"{k}: {a.get(k)} vs {b.get(k)}" for k in other) + " (not a scoring setting)")
    if base.id_column != cand.id_column:
        raise InputError(f"the runs use different id columns ({base.id_column!r} vs "
                         f"{cand.id_column!r})")
    group_columns = tuple(c for c in base.group_columns if c in cand.group_columns)
    if group_columns != base.group_columns or group_columns != cand.group_columns:
        notes.append(f"the runs were grouped differently (baseline: "
                     f"{', '.join(base.group_columns) or 'none'}; candidate: "
                     f"{', '.join(cand.group_columns) or 'none'}); pairing and grouping on "
                     f"{', '.join(group_columns) or 'the id only'}")
    chosen = resolve_measures(measures, measures_in(base.float_columns),
                              measures_in(cand.float_columns))
    wanted = [base.id_column, *group_columns, *(measure_column(m) for m in chosen)]
    comparison = compare_examples(
        runs.read_examples(base, columns=wanted), runs.read_examples(cand, columns=wanted),
        measures=chosen, id_column=base.id_column, group_columns=group_columns, band=band,
        confidence=confidence, n_bootstrap=n_bootstrap, seed=seed)
    moved = comparison.top(top)
    key = list(comparison.key_columns)
    for side, run in (("baseline", base), ("candidate", cand)):
        texts, note = runs.read_predictions(run, moved[key])
        moved[f"{side}_prediction"] = texts
        if note:
            notes.append(f"{side}: {note}")
    return RunComparison(comparison=comparison, baseline=base, candidate=cand,
                         signature_differences=differences, top=moved, notes=notes,
                         n_top=top)


__all__ = ["ALL_GROUP", "NON_SCORE_FIELDS", "Comparison", "PairedTest", "RunComparison",
           "bootstrap_mean_differences", "check_signatures", "compare_examples", "compare_runs",
           "is_alarm", "measure_column", "measures_in", "paired_test", "randomization_p_values",
           "resolve_measures"]
