"""From a joined table of scores and judgments to the rows of ``agreement.parquet``.

Pure: a pandas DataFrame in (one row per judged example: the system, the input, the
measures, the human columns, any group columns), plain Python rows out. The matrices
``X[system, input]`` are built here and handed to :mod:`pipeline.agree.levels` and
:mod:`pipeline.agree.resampling`. The bootstrap indices are drawn once per group from the
settings' seed and shared by every measure, human column, level and coefficient of that
group, so that the intervals of two measures come from the same resamples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.agree.coefficients import COEFFICIENTS, tie_calibration
from pipeline.agree.levels import LEVELS, correlate
from pipeline.agree.raters import ALPHA_KINDS, krippendorff_alpha, leave_one_out
from pipeline.agree.resampling import (
    DEFAULT_CONFIDENCE,
    DEFAULT_N_RESAMPLES,
    DEFAULT_PERMUTATION,
    DEFAULT_RESAMPLING,
    DEFAULT_SEED,
    PERMUTATIONS,
    RESAMPLING,
    Indices,
    assign_ranks,
    draw_indices,
    draw_masks,
    percentile_interval,
    permutation_test,
    resampled_values,
)
from pipeline.errors import ConfigError, InputError

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_COEFFICIENTS = ("kendall",)
ADJUST_METHODS = ("holm", "bh", "none")


@dataclass(frozen=True)
class AgreeSettings:
    """The settings of an agreement analysis (all in its signature).

    Attributes:
        levels: any of ``system``, ``input``, ``global``.
        coefficients: any of :data:`pipeline.agree.coefficients.COEFFICIENTS`.
        resampling: bootstrap ``systems``, ``inputs`` or ``both`` (Boot-Both).
        n_resamples: bootstrap resamples, >= 0 (0: no interval).
        confidence: interval coverage and 1 - the significance level of the tests, (0, 1).
        permutation: ``cells``, ``rows-columns``, ``systems`` or ``inputs``.
        n_permutations: permutation-test resamples, >= 0 (0: no test, no clusters).
        adjust: multiplicity adjustment of the tests: ``holm``, ``bh`` or ``none``.
        epsilon: metric-tie threshold of acc23 / tau23, >= 0, or None to calibrate it
            (the threshold maximising the coefficient, "Ties Matter" section 5).
        seed: the seed every generator of the analysis derives from.

    """

    levels: tuple[str, ...] = LEVELS
    coefficients: tuple[str, ...] = DEFAULT_COEFFICIENTS
    resampling: str = DEFAULT_RESAMPLING
    n_resamples: int = DEFAULT_N_RESAMPLES
    confidence: float = DEFAULT_CONFIDENCE
    permutation: str = DEFAULT_PERMUTATION
    n_permutations: int = DEFAULT_N_RESAMPLES
    adjust: str = "holm"
    epsilon: float | None = 0.0
    seed: int = DEFAULT_SEED

    def check(self) -> None:
        """Raise :class:`ConfigError` on any value out of its range (one line)."""
        for name, values, allowed in (("level", self.levels, LEVELS),
                                      ("coefficient", self.coefficients, COEFFICIENTS)):
            if not values:
                raise ConfigError(f"no {name} given", hint=f"choose among {', '.join(allowed)}")
            for v in values:
                if v not in allowed:
                    from pipeline.errors import did_you_mean

                    raise ConfigError(f"unknown {name} {v!r}", hint=did_you_mean(v, allowed)
                                      or f"choose among {', '.join(allowed)}")
        if self.resampling not in RESAMPLING:
            raise ConfigError(f"unknown resampling {self.resampling!r}",
                              hint=f"choose among {', '.join(RESAMPLING)}")
        if self.permutation not in PERMUTATIONS:
            raise ConfigError(f"unknown permutation {self.permutation!r}",
                              hint=f"choose among {', '.join(PERMUTATIONS)}")
        if self.adjust not in ADJUST_METHODS:
            raise ConfigError(f"unknown adjust {self.adjust!r}",
                              hint=f"choose among {', '.join(ADJUST_METHODS)}")
        if self.n_resamples < 0 or self.n_permutations < 0:
            raise ConfigError("the numbers of resamples and permutations must be >= 0")
        if not 0 < self.confidence < 1:
            raise ConfigError(f"the confidence must be in (0, 1), got {self.confidence}")
        if self.epsilon is not None and not (self.epsilon >= 0 and math.isfinite(self.epsilon)):
            raise ConfigError(f"epsilon must be >= 0 (or 'auto'), got {self.epsilon}")

    def signature(self, version: str) -> str:
        """The settings as one string: ``agree:...|coef:...|boot:...|...|version:...``."""
        eps = "auto" if self.epsilon is None else f"{self.epsilon:g}"
        return "|".join([
            f"levels:{'+'.join(self.levels)}", f"coef:{'+'.join(self.coefficients)}",
            f"boot:{self.n_resamples}-{self.resampling}", f"ci:{self.confidence:g}",
            f"perm:{self.n_permutations}-{self.permutation}", f"adjust:{self.adjust}",
            f"eps:{eps}", f"seed:{self.seed}", f"version:{version}"])


@dataclass
class Matrices:
    """One table's scores as matrices over (system, input).

    Attributes:
        systems: the system names, in sorted order (rows).
        inputs: the input names (columns); one unnamed column for system-level tables.
        measures: measure -> float (systems, inputs), NaN where absent.
        humans: human column -> float (systems, inputs), the mean of its raters.
        raters: human column -> float (raters, systems, inputs), for list columns only.
        cells: an int (systems, inputs) row number of the example in the table, -1 absent.

    """

    systems: list[Any]
    inputs: list[Any]
    measures: dict[str, np.ndarray]
    humans: dict[str, np.ndarray]
    raters: dict[str, np.ndarray] = field(default_factory=dict)
    cells: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))


def _float_column(frame: pd.DataFrame, name: str, what: str, id_column: str) -> np.ndarray:
    import pandas as pd

    column = frame[name]
    try:
        values = pd.to_numeric(column, errors="raise").to_numpy(dtype=np.float64,
                                                              na_value=np.nan)
    except (ValueError, TypeError):
        bad = column[pd.to_numeric(column, errors="coerce").isna() & column.notna()]
        ids = ", ".join(map(repr, frame.loc[bad.index[:5], id_column].tolist()))
        raise InputError(f"{what} column {name!r} has non-numeric values (ids {ids})") from None
    _check_finite(values, frame, name, what, id_column)
    return values


def _check_finite(values: np.ndarray, frame: pd.DataFrame, name: str, what: str,
                  id_column: str) -> None:
    bad = np.flatnonzero(np.isinf(values))
    if bad.size:
        ids = ", ".join(map(repr, frame[id_column].iloc[bad[:5]].tolist()))
        raise InputError(f"{what} column {name!r} has out-of-range values (infinite) at "
                         f"ids {ids}")


def _rater_column(frame: pd.DataFrame, name: str, id_column: str
                  ) -> tuple[np.ndarray, np.ndarray | None]:
    """(the mean per row, float (raters, rows) or None for a plain number column)."""
    column = frame[name]
    first = next((v for v in column if v is not None and not (isinstance(v, float)
                                                               and math.isnan(v))), None)
    if first is None or not isinstance(first, (list, tuple, np.ndarray)):
        return _float_column(frame, name, "judgment", id_column), None
    lengths = np.array([len(v) if isinstance(v, (list, tuple, np.ndarray)) else -1
                        for v in column])
    if (lengths < 0).any():
        ids = ", ".join(map(repr, frame[id_column][lengths < 0].iloc[:5].tolist()))
        raise InputError(f"judgment column {name!r} mixes lists and single values (ids {ids})")
    common = int(np.bincount(lengths).argmax())
    if (lengths != common).any():
        ids = ", ".join(map(repr, frame[id_column][lengths != common].iloc[:5].tolist()))
        raise InputError(f"judgment column {name!r} has lists of different lengths: "
                         f"{common} raters mostly, others at ids {ids}")
    try:
        ratings = np.array([[np.nan if r is None else float(r) for r in v] for v in column],
                           dtype=np.float64).reshape(len(column), common).T
    except (TypeError, ValueError):
        raise InputError(f"judgment column {name!r} has non-numeric ratings") from None
    for row in ratings:
        _check_finite(row, frame, name, "judgment", id_column)
    with np.errstate(invalid="ignore"):
        counts = (~np.isnan(ratings)).sum(axis=0)
        mean = np.where(counts > 0, np.nansum(ratings, axis=0) / np.maximum(counts, 1), np.nan)
    return mean, ratings


def build_matrices(frame: pd.DataFrame, *, id_column: str, system_column: str,
                   input_column: str | None, measures: Sequence[str],
                   humans: Sequence[str]) -> Matrices:
    """Pivot a joined table into matrices ``X[system, input]``.

    Args:
        frame: one row per judged example, with the id, system, input (unless None: one
            row per system), measure and human columns.
        id_column: the id column (named in errors).
        system_column: what a system is.
        input_column: what an input is; None for a table of system-level scores.
        measures: the metric columns (numbers).
        humans: the judgment columns (numbers, or lists of raters' numbers).

    Returns:
        :class:`Matrices`.

    Raises:
        InputError: non-numeric or infinite values; lists of different lengths; two rows
            for one (system, input) cell (names the ids).

    """
    import pandas as pd

    systems = sorted(pd.unique(frame[system_column]).tolist(), key=str)
    s_index = {s: i for i, s in enumerate(systems)}
    rows = frame[system_column].map(s_index).to_numpy()
    if input_column is None:
        inputs: list[Any] = [None]
        cols = np.zeros(len(frame), dtype=np.int64)
        what = system_column
    else:
        inputs = sorted(pd.unique(frame[input_column]).tolist(), key=str)
        i_index = {v: i for i, v in enumerate(inputs)}
        cols = frame[input_column].map(i_index).to_numpy()
        what = f"({system_column}, {input_column})"
    shape = (len(systems), len(inputs))
    cells = np.full(shape, -1, dtype=np.int64)
    flat = rows * shape[1] + cols
    uniq, first, counts = np.unique(flat, return_index=True, return_counts=True)
    if (counts > 1).any():
        dup = uniq[counts > 1][0]
        ids = frame[id_column][flat == dup].iloc[:5].tolist()
        raise InputError(f"two judged examples for one {what} cell: ids "
                         f"{', '.join(map(repr, ids))}",
                         hint="name columns that tell them apart with --system-column "
                              "and --input-column")
    cells.ravel()[flat] = np.arange(len(frame))

    def pivot(values: np.ndarray) -> np.ndarray:
        out = np.full(shape, np.nan)
        out.ravel()[flat] = values
        return out

    out = Matrices(systems=systems, inputs=inputs, measures={}, humans={}, cells=cells)
    for m in measures:
        out.measures[m] = pivot(_float_column(frame, m, "score", id_column))
    for h in humans:
        mean, ratings = _rater_column(frame, h, id_column)
        out.humans[h] = pivot(mean)
        if ratings is not None and ratings.shape[0] >= 2:
            out.raters[h] = np.stack([pivot(r) for r in ratings])
    return out


@dataclass
class AgreementResult:
    """Everything an agreement analysis found.

    Attributes:
        rows: one dict per measure (or rater) x human x level x coefficient x group (the
            rows of ``agreement.parquet``; keys in :data:`ROW_FIELDS`).
        tests: the permutation tests between measures, one dict per pair.
        ceiling: per human column with raters: alpha and the raters' mean agreement.
        scatter: per human column, the system means of every measure and of the human score.
        notes: sentences about the data (dropped ids, undefined values).

    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    tests: list[dict[str, Any]] = field(default_factory=list)
    ceiling: list[dict[str, Any]] = field(default_factory=list)
    scatter: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


ROW_FIELDS = ("measure", "kind", "human", "level", "coefficient", "group", "value", "low",
              "high", "n_systems", "n_inputs", "n_resamples", "reason", "epsilon", "rank",
              "p_vs_best", "delta_vs_rest", "p_vs_rest")


def _levels_for(m: Matrices, settings: AgreeSettings) -> tuple[str, ...]:
    if m.inputs == [None]:
        return tuple(level for level in settings.levels if level == "system")
    return settings.levels


def _epsilon(X: np.ndarray, Z: np.ndarray, level: str, name: str,
             settings: AgreeSettings) -> float:
    if name not in ("acc23", "tau23"):
        return 0.0
    if settings.epsilon is not None:
        return settings.epsilon
    both = ~np.isnan(X) & ~np.isnan(Z)
    if level == "input":
        xs = [X[both[:, j], j] for j in range(X.shape[1])]
        zs = [Z[both[:, j], j] for j in range(X.shape[1])]
    elif level == "global":
        xs, zs = [X[both]], [Z[both]]
    else:
        count = both.sum(axis=1)
        keep = count > 0
        xs = [np.where(both, X, 0).sum(axis=1)[keep] / count[keep]]
        zs = [np.where(both, Z, 0).sum(axis=1)[keep] / count[keep]]
    return tie_calibration(xs, zs, name)[1]


def _value_row(X: np.ndarray, Z: np.ndarray, level: str, name: str, settings: AgreeSettings,
               indices: Indices | None) -> tuple[dict[str, Any], np.ndarray | None]:
    eps = _epsilon(X, Z, level, name, settings)
    lv = correlate(X, Z, level, name, epsilon=eps)
    row: dict[str, Any] = {"level": level, "coefficient": name, "value": lv.value,
                           "reason": lv.reason, "n_systems": lv.n_systems,
                           "n_inputs": lv.n_inputs, "epsilon": eps if name in
                           ("acc23", "tau23") else None,
                           "low": float("nan"), "high": float("nan"), "n_resamples": 0}
    samples = None
    if indices is not None and not math.isnan(lv.value):
        samples = resampled_values(X, Z, level, name, indices, epsilon=eps)
        interval = percentile_interval(samples, settings.confidence)
        row.update(low=interval.low, high=interval.high, n_resamples=interval.n_valid)
    return row, samples


def _group_masks(frame: pd.DataFrame, m: Matrices, group_by: Sequence[str]
                 ) -> list[tuple[dict[str, Any], np.ndarray]]:
    import pandas as pd

    if not group_by:
        return []
    keys = frame[list(group_by)].astype(object).where(frame[list(group_by)].notna(), None)
    out = []
    labels = [tuple(r) for r in keys.itertuples(index=False)]
    row_label = np.empty(len(labels), dtype=object)
    row_label[:] = labels
    cell_label = np.full(m.cells.shape, None, dtype=object)
    present = m.cells >= 0
    cell_label[present] = row_label[m.cells[present]]
    for value in sorted(set(labels), key=lambda t: tuple(map(str, t))):
        mask = np.zeros(m.cells.shape, dtype=bool)
        mask[present] = [lab == value for lab in cell_label[present]]
        group = {c: (None if v is None or (isinstance(v, float) and pd.isna(v)) else
                     (v.item() if isinstance(v, np.generic) else v))
                 for c, v in zip(group_by, value, strict=True)}
        out.append((group, mask))
    return out


def analyse(frame: pd.DataFrame, *, id_column: str, system_column: str,
            input_column: str | None, measures: Sequence[str], humans: Sequence[str],
            group_by: Sequence[str] = (), settings: AgreeSettings | None = None
            ) -> AgreementResult:
    """Agreement of every measure with every human column, at every level and coefficient.

    Args:
        frame: the joined table (see :func:`build_matrices`), plus the ``group_by`` columns.
        id_column: the id column.
        system_column: what a system is.
        input_column: what an input is (None: one row per system, system level only).
        measures: metric columns.
        humans: judgment columns (numbers, or lists of raters' numbers).
        group_by: columns whose values split the examples into subsets, each with its rows
            and a bootstrap test of its difference from the rest.
        settings: :class:`AgreeSettings` (defaults when None).

    Returns:
        :class:`AgreementResult`.

    Raises:
        ConfigError: settings out of range.
        InputError: bad values (see :func:`build_matrices`).

    """
    settings = settings or AgreeSettings()
    settings.check()
    m = build_matrices(frame, id_column=id_column, system_column=system_column,
                       input_column=input_column, measures=measures, humans=humans)
    result = AgreementResult()
    levels = _levels_for(m, settings)
    if input_column is None and set(settings.levels) - {"system"}:
        result.notes.append("one row per system (no input column): system level only")
    shape = m.cells.shape
    indices = (draw_indices(shape[0], shape[1], method=settings.resampling
                            if input_column is not None else "systems",
                            n_resamples=settings.n_resamples, seed=settings.seed)
               if settings.n_resamples > 0 else None)
    samples: dict[tuple[Any, ...], np.ndarray | None] = {}
    for human, Z in m.humans.items():
        for level in levels:
            for name in settings.coefficients:
                for measure, X in m.measures.items():
                    row, s = _value_row(X, Z, level, name, settings, indices)
                    row.update(measure=measure, kind="metric", human=human, group=None)
                    result.rows.append(row)
                    samples[(measure, human, level, name, None)] = s
                _raters(m, human, level, name, settings, indices, result)
        _scatter(m, human, result)
    _tests(m, levels, settings, result)
    _groups(frame, m, levels, group_by, settings, samples, result)
    for row in result.rows:
        for f in ROW_FIELDS:
            row.setdefault(f, None)
    return result


def _raters(m: Matrices, human: str, level: str, name: str, settings: AgreeSettings,
            indices: Indices | None, result: AgreementResult) -> None:
    if human not in m.raters:
        return
    values = []
    for k, (rater, rest) in enumerate(leave_one_out(m.raters[human]), start=1):
        row, _ = _value_row(rater, rest, level, name, settings, indices)
        row.update(measure=f"rater {k}", kind="rater", human=human, group=None)
        result.rows.append(row)
        values.append(row["value"])
    finite = [v for v in values if not math.isnan(v)]
    entry = {"human": human, "level": level, "coefficient": name,
             "n_raters": int(m.raters[human].shape[0]),
             "rater_mean": float(np.mean(finite)) if finite else float("nan")}
    cells = m.raters[human].reshape(m.raters[human].shape[0], -1)
    for kind in ALPHA_KINDS:
        entry[f"alpha_{kind}"] = krippendorff_alpha(cells, kind)
    result.ceiling.append(entry)


def _scatter(m: Matrices, human: str, result: AgreementResult) -> None:
    Z = m.humans[human]
    entry: dict[str, Any] = {"human": human, "systems": [str(s) for s in m.systems],
                             "human_means": np.nanmean(np.where(np.isnan(Z), np.nan, Z),
                                                       axis=1).tolist(), "measures": {}}
    for measure, X in m.measures.items():
        both = ~np.isnan(X) & ~np.isnan(Z)
        count = np.maximum(both.sum(axis=1), 1)
        entry["measures"][measure] = (np.where(both, X, 0).sum(axis=1) / count).tolist()
    result.scatter.append(entry)


def _tests(m: Matrices, levels: Sequence[str], settings: AgreeSettings,
           result: AgreementResult) -> None:
    """Permutation tests between measures, adjusted per block; clusters (AssignRanks)."""
    from pipeline.compare.statistics import adjust_p_values

    if settings.n_permutations == 0 or len(m.measures) < 2:
        return
    alpha = 1 - settings.confidence
    shape = m.cells.shape
    masks = list(draw_masks(shape[0], shape[1], method=settings.permutation,
                            n_resamples=settings.n_permutations, seed=settings.seed + 1))
    for human, Z in m.humans.items():
        for level in levels:
            for name in settings.coefficients:
                block = [r for r in result.rows if r["kind"] == "metric" and
                         r["human"] == human and r["level"] == level and
                         r["coefficient"] == name and r["group"] is None]
                ordered = sorted((r for r in block if not math.isnan(r["value"])),
                                 key=lambda r: -r["value"])
                k = len(ordered)
                if k < 2:
                    continue
                pairs, raw = [], []
                for i in range(k):
                    for j in range(i + 1, k):
                        a, b = ordered[i]["measure"], ordered[j]["measure"]
                        t = permutation_test(m.measures[a], m.measures[b], Z, level, name,
                                             masks=masks, epsilon=ordered[i]["epsilon"] or 0.0)
                        pairs.append((i, j, a, b, t))
                        raw.append(t.p_value)
                adjusted = adjust_p_values(np.array(raw), settings.adjust)
                p = np.ones((k, k))
                for (i, j, a, b, t), adj in zip(pairs, adjusted, strict=True):
                    p[i, j] = adj
                    result.tests.append({"human": human, "level": level, "coefficient": name,
                                         "measure_a": a, "measure_b": b, "delta": t.delta,
                                         "p_value": t.p_value, "p_adjusted": float(adj),
                                         "n_permutations": t.n_resamples,
                                         "permutation": settings.permutation})
                ranks = assign_ranks(p, alpha)
                for i, (r, rank) in enumerate(zip(ordered, ranks, strict=True)):
                    r["rank"] = rank
                    r["p_vs_best"] = None if i == 0 else float(p[0, i])


def _groups(frame: pd.DataFrame, m: Matrices, levels: Sequence[str], group_by: Sequence[str],
            settings: AgreeSettings, samples: dict[tuple[Any, ...], np.ndarray | None],
            result: AgreementResult) -> None:
    """Each group's rows, and a bootstrap test of its difference from the rest.

    A group's bootstrap resamples the group's own systems and inputs (the rows and columns
    holding one of its examples), and the rest's those of the rest, so that every resample
    of a group holds as many systems and inputs as the group (seeds ``seed + 2 + g`` and
    ``seed + 1_000_003 + g`` for the g-th group in sorted order).
    """
    present = m.cells >= 0
    method = settings.resampling if m.inputs != [None] else "systems"

    def part(cells: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, Indices | None]:
        if not cells.any():  # no example (the rest of a single group): undefined values
            cells = np.ones_like(cells)
        rows = np.asarray(cells.any(axis=1))
        cols = np.asarray(cells.any(axis=0))
        shape = (int(rows.sum()), int(cols.sum()))
        indices = (draw_indices(*shape, method=method, n_resamples=settings.n_resamples,
                                seed=seed) if settings.n_resamples > 0 else None)
        return rows, cols, indices

    for g, (group, mask) in enumerate(_group_masks(frame, m, group_by)):
        rest_mask = present & ~mask
        g_rows, g_cols, indices = part(mask, settings.seed + 2 + g)
        r_rows, r_cols, rest_indices = part(rest_mask, settings.seed + 1_000_003 + g)
        for human, Z in m.humans.items():
            for level in levels:
                for name in settings.coefficients:
                    for measure, X in m.measures.items():
                        Xg = np.where(mask, X, np.nan)[g_rows][:, g_cols]
                        Zg = np.where(mask, Z, np.nan)[g_rows][:, g_cols]
                        Xr = np.where(rest_mask, X, np.nan)[r_rows][:, r_cols]
                        Zr = np.where(rest_mask, Z, np.nan)[r_rows][:, r_cols]
                        row, s_in = _value_row(Xg, Zg, level, name, settings, indices)
                        rest, s_out = _value_row(Xr, Zr, level, name, settings, rest_indices)
                        row.update(measure=measure, kind="metric", human=human, group=group)
                        row["delta_vs_rest"] = row["value"] - rest["value"]
                        if s_in is not None and s_out is not None:
                            d = s_in - s_out
                            d = d[~np.isnan(d)]
                            if d.size:
                                share = min(float(np.mean(d <= 0)), float(np.mean(d >= 0)))
                                row["p_vs_rest"] = min(1.0, 2 * share)
                        result.rows.append(row)
