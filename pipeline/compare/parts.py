"""The partitioned comparison: two passes over parts of both runs, sums merged on the driver.

Every part (a partition of both runs' examples by id) gives mergeable sums in two passes
(:func:`pair_part`, then :func:`part_resamples` with the merged grids); the driver only adds
them (:class:`PairingMerger`; TFMA's combiners). The result is the :class:`Comparison` of
:func:`pipeline.compare.pairing.compare_examples`, bit for bit, holding nothing per example.
The engine runs the passes (:mod:`pipeline.engine.compare`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pipeline.compare.pairing import (
    _KIND,
    ALL_GROUP,
    ONLY_HEAD,
    Comparison,
    PairedExamples,
    _check_options,
    _group_codes,
    _group_label,
    _group_order,
    _no_pair,
    _pair,
    _paired_values,
    _records,
    _rows,
    _rows_by_group,
    _setup,
    _shown,
    top_moved,
)
from pipeline.compare.statistics import (
    DEFAULT_ADJUST,
    DEFAULT_BAND,
    DEFAULT_CONFIDENCE,
    DEFAULT_MAX_MISSING,
    DEFAULT_N_BOOTSTRAP,
    DEFAULT_SEED,
    DEFAULT_TOP,
    GridScales,
    ScopeResamples,
    ScopeTotals,
    paired_from_sums,
    scales,
    scope_resamples,
    scope_totals,
)
from pipeline.metrics.base import MetricSpec

ALL_SCOPE: tuple = ("all",)


@dataclass
class PartPairing:
    """The first pass over one part: both runs' examples of some ids, paired.

    Attributes:
        n_baseline_only: examples of the part only in the baseline.
        n_candidate_only: examples of the part only in the candidate.
        scopes: by scope key (:data:`ALL_SCOPE`, or ``("group", identity)``), the paired
            examples' :class:`~pipeline.compare.statistics.ScopeTotals`.
        only: by scope key, ``(baseline only, candidate only)`` counts (groups with examples
            in one run only included).
        labels: by group scope key, the group's ``(values, kinds)``.
        local: the part's group scope keys in the order of its rows' codes (the second pass
            maps its rows to scopes with them).
        top: the part's :meth:`Comparison.top` rows (at most ``n_top``), with the key's
            kind columns.
        baseline_only: the part's first :data:`ONLY_HEAD` keys only in the baseline, with
            kinds.
        candidate_only: the same for the candidate.

    """

    n_baseline_only: int
    n_candidate_only: int
    scopes: dict[tuple, ScopeTotals]
    only: dict[tuple, list[int]]
    labels: dict[tuple, tuple[tuple, tuple]]
    local: list[tuple]
    top: pd.DataFrame
    baseline_only: pd.DataFrame
    candidate_only: pd.DataFrame


@dataclass
class PartArrays:
    """What the second pass needs of a part, per paired example.

    The engine keeps them in a file between the passes.

    Attributes:
        hashes: uint64 (n,), the pairs' identity hashes.
        codes: int64 (n,), positions in :attr:`PartPairing.local` (0 without groups).
        baseline: float64 (n, k), the baseline's value columns.
        candidate: float64 (n, k), the candidate's.

    """

    hashes: np.ndarray
    codes: np.ndarray
    baseline: np.ndarray
    candidate: np.ndarray


def _top_with_kinds(paired: pd.DataFrame, n: int, *, ranked: str, measures: Sequence[str],
                    key: Sequence[str], kinds: Sequence[str]) -> pd.DataFrame:
    out = top_moved(paired, n, ranked=ranked, measures=measures, key=[*key, *kinds])
    return out


def pair_part(baseline: pd.DataFrame, candidate: pd.DataFrame, *, measures: Sequence[str],
              specs: Sequence[MetricSpec] = (), id_column: str = "id",
              group_columns: Sequence[str] = (), n_top: int = DEFAULT_TOP
              ) -> tuple[PartPairing, PartArrays]:
    """The first pass over one part (both runs' examples of the same ids).

    Args:
        baseline: the part's baseline examples (as :func:`compare_examples` takes them).
        candidate: the part's candidate examples.
        measures: as :func:`compare_examples`.
        specs: as :func:`compare_examples`.
        id_column: as :func:`compare_examples`.
        group_columns: as :func:`compare_examples`.
        n_top: moved examples to keep, >= 0.

    Returns:
        The part's :class:`PartPairing` (small: sums and bounded lists) and its
        :class:`PartArrays` (per paired example, for the second pass).

    Raises:
        InputError: as :func:`compare_examples` for the part's examples (null ids, duplicate
            keys, non-finite scores, key types that differ).

    """
    setup = _setup(measures, specs, band=0.0, bands=None)
    group_columns = tuple(group_columns)
    key = [id_column, *group_columns]
    kinds = [_KIND + c for c in group_columns]
    paired, baseline_only, candidate_only = _pair(baseline, candidate, setup,
                                                  id_column=id_column,
                                                  group_columns=group_columns)
    b, c, hashes = _paired_values(paired, setup.columns, id_column, group_columns)
    scopes = {ALL_SCOPE: scope_totals(b, c)}
    only: dict[tuple, list[int]] = {ALL_SCOPE: [len(baseline_only), len(candidate_only)]}
    labels: dict[tuple, tuple[tuple, tuple]] = {}
    local: list[tuple] = []
    codes = np.zeros(len(paired), dtype=np.int64)
    if group_columns:
        firsts, idents, (codes, code_b, code_c) = _group_codes(
            (paired, baseline_only, candidate_only), group_columns)
        local = [("group", ident) for ident in idents]
        n_groups = len(firsts)
        only_b = np.bincount(code_b, minlength=n_groups)
        only_c = np.bincount(code_c, minlength=n_groups)
        for g, index in enumerate(_rows_by_group(codes, n_groups)):
            scopes[local[g]] = scope_totals(b[index], c[index])
            only[local[g]] = [int(only_b[g]), int(only_c[g])]
            labels[local[g]] = firsts[g]
    names = [m.name for m in setup.described]
    top = _top_with_kinds(paired, n_top, ranked=names[0], measures=names, key=key, kinds=kinds)
    return (PartPairing(len(baseline_only), len(candidate_only), scopes, only, labels, local,
                        top, baseline_only.head(ONLY_HEAD), candidate_only.head(ONLY_HEAD)),
            PartArrays(hashes, codes, b, c))


def part_resamples(arrays: PartArrays, local: Sequence[tuple],
                   grids: Mapping[tuple, GridScales], *, n_bootstrap: int, n_trials: int,
                   seed: int) -> dict[tuple, ScopeResamples]:
    """The second pass over one part: its share of each scope's resampled sums.

    Args:
        arrays: the part's :class:`PartArrays`.
        local: the part's group scope keys (:attr:`PartPairing.local`).
        grids: by scope key, the scope's grids (from its merged totals); scopes the part
            holds and ``grids`` lacks (fewer than 2 pairs in all) are skipped.
        n_bootstrap: resamples.
        n_trials: randomization trials.
        seed: the seed.

    Returns:
        By scope key, the part's :class:`ScopeResamples`.

    """
    out: dict[tuple, ScopeResamples] = {}
    b, c, hashes = arrays.baseline, arrays.candidate, arrays.hashes
    if not len(hashes):
        return out
    if ALL_SCOPE in grids:
        out[ALL_SCOPE] = scope_resamples(b, c, hashes, grids[ALL_SCOPE],
                                         n_bootstrap=n_bootstrap, n_trials=n_trials, seed=seed)
    if local:
        for scope, index in zip(local, _rows_by_group(arrays.codes, len(local)), strict=True):
            if scope in grids and len(index):
                out[scope] = scope_resamples(b[index], c[index], hashes[index], grids[scope],
                                             n_bootstrap=n_bootstrap, n_trials=n_trials,
                                             seed=seed)
    return out


def _sorted_keys(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Rows in key order, as ``merge(sort=True)`` leaves them (ids, then groups, kinds)."""
    if frame.empty:
        return frame.reset_index(drop=True)
    try:
        return frame.sort_values(columns, kind="stable").reset_index(drop=True)
    except TypeError:  # values that do not compare (mixed types): keep the parts' order
        return frame.reset_index(drop=True)


class PairingMerger:
    """Adds the parts' sums of a partitioned comparison and makes its :class:`Comparison`.

    ``add`` each part's :class:`PartPairing`, then ``add_resamples`` each part's second pass
    (run with :meth:`grids`), then :meth:`comparison`. Holds sums per scope and bounded
    lists (top moved, a few ids), never a value per example.

    Args:
        measures: as :func:`compare_examples`.
        specs: as :func:`compare_examples`.
        id_column: as :func:`compare_examples`.
        group_columns: as :func:`compare_examples`.
        n_top: moved examples to keep, >= 0.

    """

    def __init__(self, *, measures: Sequence[str], specs: Sequence[MetricSpec] = (),
                 id_column: str = "id", group_columns: Sequence[str] = (),
                 n_top: int = DEFAULT_TOP) -> None:
        self.measures = tuple(measures)
        self.specs = tuple(specs)
        self.id_column = id_column
        self.group_columns = tuple(group_columns)
        self.n_top = max(n_top, 0)
        self.kinds = [_KIND + c for c in self.group_columns]
        self.key = [id_column, *self.group_columns]
        self.scopes: dict[tuple, ScopeTotals] = {}
        self.only: dict[tuple, list[int]] = {}
        self.labels: dict[tuple, tuple[tuple, tuple]] = {}
        self.top: pd.DataFrame | None = None
        self.heads: list[pd.DataFrame | None] = [None, None]
        self.resamples: dict[tuple, ScopeResamples] = {}
        # by part index, the part's group scope keys (PartPairing.local), for the 2nd pass
        self.part_scopes: dict[int, list[tuple]] = {}
        self._ranked = self.measures[0] if self.measures else ""

    def add(self, part: PartPairing) -> None:
        """Add one part's first pass."""
        for scope, totals in part.scopes.items():
            if scope in self.scopes:
                self.scopes[scope].merge(totals)
            else:  # a copy: arrays from Ray's object store are read-only
                self.scopes[scope] = ScopeTotals(totals.n, [list(p) for p in totals.partials],
                                                 totals.max_abs.copy())
        for scope, counts in part.only.items():
            total = self.only.setdefault(scope, [0, 0])
            total[0] += counts[0]
            total[1] += counts[1]
        for scope, label in part.labels.items():
            self.labels.setdefault(scope, label)
        order = [*self.key, *self.kinds]
        if self.top is None:
            self.top = part.top
        elif len(part.top):
            both = _sorted_keys(pd.concat([self.top, part.top], ignore_index=True), order)
            rank = np.argsort(-np.abs(both["delta"].to_numpy(np.float64)), kind="stable")
            self.top = both.iloc[rank[:self.n_top]].reset_index(drop=True)
        for i, frame in enumerate((part.baseline_only, part.candidate_only)):
            have = self.heads[i]
            self.heads[i] = frame if have is None else _sorted_keys(
                pd.concat([have, frame], ignore_index=True), order).head(ONLY_HEAD)

    def grids(self) -> dict[tuple, GridScales]:
        """Every scope's grids, by scope key (scopes with at least 2 pairs only)."""
        return {scope: scales(t) for scope, t in self.scopes.items() if t.n >= 2}

    def add_resamples(self, share: Mapping[tuple, ScopeResamples]) -> None:
        """Add one part's second pass."""
        for scope, res in share.items():
            if scope in self.resamples:
                self.resamples[scope].merge(res)
            else:  # a copy: arrays from Ray's object store are read-only
                self.resamples[scope] = ScopeResamples(
                    res.boot_sums.copy(), res.boot_totals.copy(), res.kept.copy(),
                    res.d_total.copy(), [list(p) for p in res.d_square])

    @property
    def n_paired(self) -> int:
        """Paired examples so far."""
        everything = self.scopes.get(ALL_SCOPE)
        return 0 if everything is None else everything.n

    def check_paired(self) -> None:
        """Raise when no example is in both runs (after the first pass).

        Raises:
            InputError: no example in common.

        """
        if not self.n_paired:
            b_only, c_only = self.only.get(ALL_SCOPE, [0, 0])
            raise _no_pair(self.key, b_only, c_only)

    def comparison(self, *, band: float = DEFAULT_BAND, bands: Mapping[str, float] | None = None,
                   confidence: float = DEFAULT_CONFIDENCE,
                   n_bootstrap: int = DEFAULT_N_BOOTSTRAP, seed: int = DEFAULT_SEED,
                   max_missing: float = DEFAULT_MAX_MISSING, adjust: str = DEFAULT_ADJUST,
                   examples: Callable[[], PairedExamples] | None = None) -> Comparison:
        """The :class:`Comparison` of the merged sums (options as :func:`compare_examples`).

        Args:
            band: as :func:`compare_examples`.
            bands: as :func:`compare_examples`.
            confidence: as :func:`compare_examples`.
            n_bootstrap: as :func:`compare_examples` (the resamples the parts computed).
            seed: as :func:`compare_examples` (the seed the parts used).
            max_missing: as :func:`compare_examples`.
            adjust: as :func:`compare_examples`.
            examples: makes the per-example :class:`PairedExamples` when asked (a plot).

        Raises:
            InputError: no example in common.
            ConfigError: bad settings.

        """
        _check_options(n_bootstrap=n_bootstrap, confidence=confidence, band=band,
                       max_missing=max_missing, adjust=adjust)
        self.check_paired()
        setup = _setup(self.measures, self.specs, band=band, bands=bands)
        group_columns = self.group_columns
        records: list[dict[str, Any]] = []

        def add_rows(scope: tuple, label: str, values: dict[str, Any]) -> None:
            totals = self.scopes.get(scope)
            if totals is None:  # a group with examples in one run only
                totals = ScopeTotals(0, [[] for _ in range(3 * len(setup.columns))],
                                     np.zeros(3 * len(setup.columns)))
            test = paired_from_sums(totals, self.resamples.get(scope), setup.estimates,
                                    confidence=confidence, n_bootstrap=n_bootstrap,
                                    n_trials=n_bootstrap)
            b_only, c_only = self.only.get(scope, [0, 0])
            records.extend(_records(label, values, test, totals.n, b_only, c_only, setup,
                                    max_missing=max_missing))

        add_rows(ALL_SCOPE, ALL_GROUP, dict.fromkeys(group_columns))
        for scope in sorted(self.labels, key=lambda s: _group_order(self.labels[s])):
            values, kind = self.labels[scope]
            add_rows(scope, _group_label(group_columns, values, kind),
                     _shown(group_columns, values, kind))
        rows = _rows(records, group_columns, adjust=adjust, confidence=confidence)
        b_all, c_all = self.only.get(ALL_SCOPE, [0, 0])
        kinds = self.kinds
        top = self.top if self.top is not None else pd.DataFrame()
        heads = tuple(h.drop(columns=kinds) if h is not None else pd.DataFrame(columns=self.key)
                      for h in self.heads)
        return Comparison(rows=rows, measures=self.measures, id_column=self.id_column,
                          group_columns=group_columns, band=band, confidence=confidence,
                          n_bootstrap=n_bootstrap, seed=seed, max_missing=max_missing,
                          adjust=adjust, n_trials=n_bootstrap, floors=setup.floors,
                          n_paired=self.n_paired, n_baseline_only=b_all,
                          n_candidate_only=c_all, examples=examples,
                          only_heads=(heads[0], heads[1]),
                          moved=top.drop(columns=[k for k in kinds if k in top.columns]),
                          n_moved=self.n_top, scheme="partitioned")


__all__ = ["ALL_SCOPE", "PairingMerger", "PartArrays", "PartPairing", "pair_part",
           "part_resamples"]
