"""How several references combine into one row per example: the one multi-reference combiner.

Both ROUGE families (rouge-score's and ROUGE-1.5.5's) score each (prediction, reference)
pair, then one of four rules makes one row per example:

- ``max``: the reference with the highest F-measure, the first on ties (rouge-score 0.1.2
  ``RougeScorer.score_multi``);
- ``best-recall``: the highest recall, the first on ties (ROUGE-1.5.5 ``-f B``);
- ``pooled``: the statistics summed over the references, the prediction's units counted once
  per reference (ROUGE-1.5.5 ``-f A``, its default);
- ``mean``: the mean of the per-reference precision, recall and F-measure.

sacrebleu's chrF keeps the best-F reference too, inside its kernel; BLEU pools n-gram counts
over references by definition (``sacrebleu``), token F1 takes the maximum (SQuAD v1.1).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pipeline.errors import ConfigError

RULES = ("max", "best-recall", "pooled", "mean")
# statistics (..., K, S) -> precision, recall, fmeasure, each (..., K)
Measures = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


def combine_references(stats: np.ndarray, n_refs: np.ndarray, *, rule: str,
                       measures: Measures, recall_key: np.ndarray | None = None
                       ) -> dict[str, np.ndarray]:
    """Apply a multi-reference rule to per-pair statistics.

    Args:
        stats: shape (P, K, S), int64 or float64: S sufficient statistics per pair and
            metric, pairs grouped by example in order (an example's references together).
        n_refs: int64, shape (N,), references per example, summing to P.
        rule: one of :data:`RULES` (see the module docstring).
        measures: the family's precision, recall and F-measure of statistics shaped
            (..., K, S), each shaped (..., K); 0 where nothing can match.
        recall_key: shape (P, K): what ``best-recall`` maximizes (default: the recall of
            ``measures``; ROUGE-1.5.5 compares its printed, rounded recall).

    Returns:
        ``stats`` (N, K, S) of ``stats``' dtype: the chosen reference's for ``max`` and
        ``best-recall``, sums over references for ``pooled`` and ``mean``;
        ``precision``, ``recall``, ``fmeasure`` (N, K) float64: of those statistics, or for
        ``mean`` the means over references; ``reference_index`` (N, K) int32: the chosen
        reference's position in the example's list, -1 for ``pooled``, ``mean`` and
        examples without references (which score 0).

    Raises:
        ConfigError: an unknown rule.

    """
    if rule not in RULES:
        raise ConfigError(f"unknown multi-reference rule {rule!r}")
    n = len(n_refs)
    k = stats.shape[1]
    if len(stats) == n and n and n_refs.min() == 1:
        # one reference each: every rule keeps that reference's statistics and measures
        # (a sum of one, a mean of one), so the group maxima and sums are skipped
        p, r, f = measures(stats)
        return {"stats": stats, "precision": p, "recall": r, "fmeasure": f,
                "reference_index": np.full((n, k), 0 if rule in ("max", "best-recall") else -1,
                                           dtype=np.int32)}
    has = n_refs > 0
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(n_refs[:-1], out=starts[1:])
    idx = starts[has]
    out_stats = np.zeros((n, k, stats.shape[2]), dtype=stats.dtype)
    ref_index = np.full((n, k), -1, dtype=np.int32)
    pairs = len(stats) > 0
    if rule in ("max", "best-recall"):
        precision, recall, f = measures(stats)
        key = f if rule == "max" else (recall if recall_key is None else recall_key)
        if pairs:
            chosen = _first_max(key, idx, n_refs[has])
            out_stats[has] = stats[chosen, np.arange(k)[None, :]]
            ref_index[has] = (chosen - idx[:, None]).astype(np.int32)
    elif pairs:
        out_stats[has] = np.add.reduceat(stats, idx, axis=0)
    p, r, f = measures(out_stats)
    if rule == "mean" and pairs:
        precision, recall, fm = measures(stats)
        denom = n_refs[has][:, None].astype(np.float64)
        p[has] = np.add.reduceat(precision, idx, axis=0) / denom
        r[has] = np.add.reduceat(recall, idx, axis=0) / denom
        f[has] = np.add.reduceat(fm, idx, axis=0) / denom
    return {"stats": out_stats, "precision": p, "recall": r, "fmeasure": f,
            "reference_index": ref_index}


def _first_max(key: np.ndarray, idx: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per group and column, the position (into ``key``) of the group's first maximum.

    Args:
        key: shape (P, K); groups are consecutive rows starting at ``idx`` (non-empty,
            covering every row), of ``sizes`` rows.
        idx: int64 (G,), the groups' first rows.
        sizes: int64 (G,), their row counts.

    Returns:
        int64 (G, K).

    """
    best = np.maximum.reduceat(key, idx, axis=0)
    group_of = np.repeat(np.arange(len(idx)), sizes)
    position = np.arange(len(key), dtype=np.int64)[:, None]
    candidate = np.where(key == best[group_of], position, np.iinfo(np.int64).max)
    return np.minimum.reduceat(candidate, idx, axis=0)


__all__ = ["RULES", "Measures", "combine_references"]
