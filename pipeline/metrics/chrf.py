"""chrF and chrF++ as sacrebleu 2.x computes them: the ``chrf`` family (``chrf``, ``chrfpp``).

``chrf`` is sacrebleu's ``CHRF()``: character n-grams of orders 1..6 with white space removed,
beta 2. ``chrfpp`` is ``CHRF(word_order=2)``: plus word unigrams and bigrams (words split on
white space, one punctuation character split off the end, else off the start, of each word of
two or more characters). Per example and order the statistics are sacrebleu's: prediction
n-grams (0 when the reference has none of that order), reference n-grams and clipped
matches. The F-score averages precision and recall over the orders where both texts have
n-grams, then takes F-beta (sacrebleu's default, not the ``eps_smoothing`` variant). With
several references the example keeps the reference with the highest F (the first on ties)
and that reference's statistics; the corpus score is the F of statistics summed over
examples (``corpus_chrf``).

Definition: Popović (2015), "chrF: character n-gram F-score for automatic MT evaluation";
Popović (2017), "chrF++: words helping character n-grams"; code: sacrebleu 2.x
``metrics/chrf.py`` (``_compute_f_score``, ``_compute_segment_statistics``,
``_remove_punctuation``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from pipeline.compiled import kernel, lazy_njit
from pipeline.metrics.base import Family, FamilyScores, MetricSpec, Option
from pipeline.metrics.hashing import (
    clear,
    count_at,
    extend_hash,
    probe,
    start_hash,
    table_mask,
    take_at,
)
from pipeline.tokenizers.sacrebleu import tokenize_mt

NAMES = ("chrf", "chrfpp")
CHAR_ORDER = 6
BETA = 2
WORD_ORDERS = {"chrf": 0, "chrfpp": 2}
OPTIONS: tuple[Option, ...] = ()


def statistics(metric: str) -> tuple[tuple[str, str], ...]:
    """Statistic names of ``chrf`` or ``chrfpp`` in sacrebleu's order (int64 each).

    For each order, character orders 1..6 then word orders 1..2 (chrF++ only):
    ``{char|word}_{n}_prediction_ngrams``, ``..._reference_ngrams``, ``..._matches``.
    """
    orders = [f"char_{n}" for n in range(1, CHAR_ORDER + 1)]
    orders += [f"word_{n}" for n in range(1, WORD_ORDERS[metric] + 1)]
    return tuple((f"{o}_{s}", "int64") for o in orders
                 for s in ("prediction_ngrams", "reference_ngrams", "matches"))


@lazy_njit(cache=True, nogil=True)
def _f_score(stats, beta):
    # sacrebleu's CHRF._compute_f_score (eps_smoothing=False), operation for operation
    eps = 1e-16
    factor = beta ** 2
    avg_prec = 0.0
    avg_rec = 0.0
    effective_order = 0
    for i in range(stats.shape[0] // 3):
        n_hyp = stats[3 * i]
        n_ref = stats[3 * i + 1]
        n_match = stats[3 * i + 2]
        prec = n_match / n_hyp if n_hyp > 0 else eps
        rec = n_match / n_ref if n_ref > 0 else eps
        if n_hyp > 0 and n_ref > 0:
            avg_prec += prec
            avg_rec += rec
            effective_order += 1
    if effective_order == 0:
        avg_prec = 0.0
        avg_rec = 0.0
    else:
        avg_prec /= effective_order
        avg_rec /= effective_order
    if avg_prec + avg_rec:
        score = (1 + factor) * avg_prec * avg_rec
        score /= (factor * avg_prec) + avg_rec
        return 100 * score
    return 0.0


@lazy_njit(cache=True, nogil=True)
def _f_rows(stats, beta):
    out = np.empty(stats.shape[0])
    for i in range(stats.shape[0]):
        out[i] = _f_score(stats[i], beta)
    return out


def chrf_from_statistics(stats: np.ndarray, *, beta: int = BETA) -> np.ndarray:
    """ChrF of each row of statistics, as sacrebleu's ``CHRF._compute_f_score``.

    Args:
        stats: shape (R, 3 * orders), per order (prediction n-grams, reference n-grams,
            matches) as :func:`statistics`; integers or their float64 sums.
        beta: recall weight (sacrebleu's default 2).

    Returns:
        float64 (R,), chrF in [0, 100].

    """
    rows = np.asarray(stats, dtype=np.float64)
    return kernel("chrf_rows")(rows.reshape(rows.shape[0], -1), beta)


def corpus_chrf_score(stats: np.ndarray) -> np.ndarray:
    """Corpus chrF (or chrF++) from statistics summed over examples: ``corpus_chrf``.

    Args:
        stats: float64 (R, 18) for chrF or (R, 24) for chrF++, each row a sum of
            per-example statistics.

    Returns:
        float64 (R,), in [0, 100].

    """
    return chrf_from_statistics(stats, beta=BETA)


@lazy_njit(cache=True, nogil=True)
def _pair_stats(ids, hyp_lo, hyp_len, ref_lo, ref_len, max_order, slot_pos, slot_order,
                slot_cnt, used, out, k):
    # [hyp, ref, match] of orders 1..max_order between a prediction and one reference,
    # into out[k:k+3*max_order]; the scratch table is empty on entry and on return
    n_entries = 0
    for n in range(max_order):
        n_entries += max(ref_len - n, 0)
    mask = table_mask(n_entries)
    n_used = 0
    for p in range(ref_lo, ref_lo + ref_len):
        h = start_hash()
        for n in range(min(max_order, ref_lo + ref_len - p)):
            h = extend_hash(h, ids[p + n])
            s = probe(ids, p, n, h, slot_pos, slot_order, mask)
            slot_order[s] = n  # (unchanged when the n-gram is there: same order)
            n_used = count_at(slot_pos, slot_cnt, used, n_used, s, p)
    for n in range(max_order):
        out[k + 3 * n + 2] = 0
    for p in range(hyp_lo, hyp_lo + hyp_len):
        h = start_hash()
        for n in range(min(max_order, hyp_lo + hyp_len - p)):
            h = extend_hash(h, ids[p + n])
            out[k + 3 * n + 2] += take_at(slot_pos, slot_cnt,
                                          probe(ids, p, n, h, slot_pos, slot_order, mask))
    clear(slot_pos, used, n_used)
    for n in range(max_order):
        n_ref = max(ref_len - n, 0)
        out[k + 3 * n] = max(hyp_len - n, 0) if n_ref > 0 else 0
        out[k + 3 * n + 1] = n_ref


@lazy_njit(cache=True, nogil=True)
def _scratch(offsets, first, max_order):
    # an empty table big enough for the largest text from index ``first`` on
    longest = 0
    for t in range(first, offsets.shape[0] - 1):
        longest = max(longest, offsets[t + 1] - offsets[t])
    size = table_mask(longest * max_order) + 1
    return (np.full(size, -1, np.int64), np.zeros(size, np.int32), np.zeros(size, np.int32),
            np.empty(longest * max_order + 1, np.int64))


@lazy_njit(cache=True, nogil=True)
def _segment_statistics(cids, coffs, wids, woffs, word_order, n_predictions, ref_offsets,
                        beta):
    # texts 0..N-1 are the predictions, N + ref_offsets[i] .. the references of example i
    width = 3 * (CHAR_ORDER + word_order)
    out = np.zeros((n_predictions, width), np.int64)
    best_index = np.full(n_predictions, -1, np.int32)
    best_score = np.zeros(n_predictions)
    c_pos, c_order, c_cnt, c_used = _scratch(coffs, n_predictions, CHAR_ORDER)
    w_pos, w_order, w_cnt, w_used = _scratch(woffs, n_predictions, max(word_order, 1))
    stats = np.zeros(width, np.int64)
    for i in range(n_predictions):
        best = -1.0
        for j in range(ref_offsets[i + 1] - ref_offsets[i]):
            r = n_predictions + ref_offsets[i] + j
            _pair_stats(cids, coffs[i], coffs[i + 1] - coffs[i], coffs[r],
                        coffs[r + 1] - coffs[r], CHAR_ORDER, c_pos, c_order, c_cnt, c_used,
                        stats, 0)
            if word_order:
                _pair_stats(wids, woffs[i], woffs[i + 1] - woffs[i], woffs[r],
                            woffs[r + 1] - woffs[r], word_order, w_pos, w_order, w_cnt,
                            w_used, stats, 3 * CHAR_ORDER)
            f = _f_score(stats, beta)
            if f > best:
                best = f
                out[i, :] = stats
                best_index[i] = j
                best_score[i] = f
    return out, best_score, best_index


class _Batch:
    """A batch's texts as character (and word) n-gram ids, shared by chrF and chrF++."""

    def __init__(self, predictions: Sequence[str | None],
                 references: Sequence[Sequence[str | None]], word_order: int) -> None:
        if len(references) != len(predictions):
            raise ValueError(f"{len(predictions)} predictions but {len(references)} "
                             "reference lists")
        kept = [[j for j, r in enumerate(rs) if r is not None] for rs in references]
        self.n = len(predictions)
        self.ref_offsets = np.zeros(self.n + 1, np.int64)
        np.cumsum([len(k) for k in kept], out=self.ref_offsets[1:])
        self.positions = np.array([j for k in kept for j in k], np.int32)
        texts = [t or "" for t in predictions]
        texts += [rs[j] or "" for rs, k in zip(references, kept, strict=True) for j in k]
        self.chars = tokenize_mt(texts, tokenizer="char")
        self.words = self.chars
        if word_order:
            self.words = tokenize_mt(texts, tokenizer="chrf-words")

    def score(self, word_order: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        stats, scores, best = kernel("chrf_statistics")(
            self.chars.ids, self.chars.offsets, self.words.ids, self.words.offsets,
            word_order, self.n, self.ref_offsets, BETA)
        index = np.full(self.n, -1, np.int32)
        has = best >= 0
        index[has] = self.positions[self.ref_offsets[:-1][has] + best[has]]
        return stats, scores, index


def chrf_statistics(predictions: Sequence[str | None],
                    references: Sequence[Sequence[str | None]], *, word_order: int = 0,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-example chrF statistics, scores and kept references, as sacrebleu's ``CHRF``.

    Args:
        predictions: N texts (None is empty).
        references: N lists of reference texts; None entries are skipped (sacrebleu's
            variable number of references); a list with none left scores 0, index -1.
        word_order: 0 for chrF, 2 for chrF++.

    Returns:
        (stats, scores, reference_index): int64 (N, 3 * (6 + word_order)) as
        :func:`statistics`; float64 (N,) chrF in [0, 100] (sacrebleu's ``sentence_score``);
        int32 (N,) the position in the example's reference list of the reference kept
        (-1 when there is none).

    Raises:
        ValueError: ``references`` and ``predictions`` differ in length.

    """
    return _Batch(predictions, references, word_order).score(word_order)


class Chrf(Family):
    """The ``chrf`` family: ``chrf`` (``CHRF()``) and ``chrfpp`` (``CHRF(word_order=2)``)."""

    name = "chrf"
    # its explanation, imported on first use (the explainer imports this module)
    explainer = "pipeline.metrics.chrf_explain:explain_chrf"
    names = NAMES
    options = OPTIONS

    def spec(self, metric: str, options: Mapping[str, Any]) -> MetricSpec:
        """The spec of ``chrf`` or ``chrfpp``.

        Measure ``score`` (0-100), statistics per order, the kept reference's index, the
        corpus F from summed statistics.
        """
        return MetricSpec(
            name=metric, family=self.name, measures=("score",), primary="score",
            statistics=statistics(metric), reference_rule="best-f",
            has_reference_index=True, corpus=partial(corpus_chrf_score), scale=100.0)

    def signature_fields(self, options: Mapping[str, Any]) -> dict[str, str]:
        """``chrf-beta:2``, ``chrf-space:no``, ``chrf-case:mixed`` (orders: the metric name)."""
        return {"chrf-beta": str(BETA), "chrf-space": "no", "chrf-case": "mixed"}

    def score(self, predictions: Sequence[str | None],
              references: Sequence[Sequence[str | None]], metrics: Sequence[str],
              options: Mapping[str, Any]) -> FamilyScores:
        """``{metric}_score``, the statistics and ``{metric}_reference_index`` columns.

        Texts are tokenized once for both metrics; each metric keeps its own best
        reference (chrF and chrF++ may keep different ones).
        """
        columns: dict[str, np.ndarray] = {}
        batch = _Batch(predictions, references, max(WORD_ORDERS[m] for m in metrics))
        for metric in metrics:
            stats, scores, index = batch.score(WORD_ORDERS[metric])
            columns[f"{metric}_score"] = scores
            columns.update(self.statistic_columns(metric, statistics(metric), stats))
            columns[f"{metric}_reference_index"] = index
        return FamilyScores(columns)


FAMILY = Chrf()

__all__ = ["BETA", "CHAR_ORDER", "FAMILY", "NAMES", "OPTIONS", "WORD_ORDERS", "Chrf",
           "chrf_from_statistics", "chrf_statistics", "corpus_chrf_score", "statistics"]
