"""Why an example scored its token F1 and exact match: the ``squad`` family's explanation.

Both texts normalized as SQuAD v1.1's ``normalize_answer`` does (lower case, ASCII
punctuation removed, a/an/the removed, white space collapsed) and split on white space; per
reference the shared multiset of tokens (each token with its count on both sides and the
``min``), precision = shared / prediction tokens, recall = shared / reference tokens, F1
their harmonic mean (0 when nothing is shared); exact match compares the normalized texts.
Each metric keeps the first reference reaching the maximum, as the official
``metric_max_over_ground_truths`` and the scorer do.

Definition: Rajpurkar et al. (2016); code: the official ``evaluate-v1.1.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.metrics.explanation import (
    MetricExplanation,
    PairExplanation,
    Tokens,
    char_spans,
    clipped_matches,
    gram_items,
    matched_positions,
    ngrams,
    one_range,
)
from pipeline.metrics.squad import _DELETE_PUNCTUATION, TOKEN_F1_STATISTICS, normalize_answer


def _view(text: str | None) -> Tokens:
    text = text or ""
    tokens = normalize_answer(text).split()
    spans = char_spans(text, tokens, lambda s: s.lower().translate(_DELETE_PUNCTUATION),
                       word_start=True)
    return Tokens(text, tokens, one_range(tokens), spans)


def _token_f1(j: int, pred: Tokens, ref: Tokens) -> PairExplanation:
    p_grams, r_grams = ngrams(pred.tokens, 1), ngrams(ref.tokens, 1)
    rows = clipped_matches(p_grams, Counter(r_grams))
    same = sum(r["matches"] for r in rows)
    precision = recall = f1 = 0.0
    if same != 0:
        precision = 1.0 * same / len(pred.tokens)
        recall = 1.0 * same / len(ref.tokens)
        f1 = (2 * precision * recall) / (precision + recall)
    budget = {tuple(r["ngram"]): r["matches"] for r in rows}
    names = [s for s, _ in TOKEN_F1_STATISTICS]
    return PairExplanation(
        reference_index=j,
        statistics=dict(zip(names, (same, len(pred.tokens), len(ref.tokens)), strict=True)),
        measures={"precision": precision, "recall": recall, "fmeasure": f1},
        detail={"shared": [{"token": r["ngram"][0], "prediction_count": r["prediction_count"],
                            "reference_count": r["reference_count"], "matches": r["matches"]}
                           for r in rows]},
        prediction_positions=matched_positions(p_grams, budget),
        reference_positions=matched_positions(r_grams, budget),
        listing=[("shared tokens", gram_items(rows))])


def _exact(j: int, pred: Tokens, ref: Tokens) -> PairExplanation:
    equal = pred.tokens == ref.tokens
    everything = list(range(len(pred.tokens))) if equal else []
    return PairExplanation(
        reference_index=j, statistics={}, measures={"score": 1.0 if equal else 0.0},
        detail={"prediction_normalized": " ".join(pred.tokens),
                "reference_normalized": " ".join(ref.tokens), "equal": equal},
        prediction_positions=everything, reference_positions=list(everything),
        listing=[("normalized", [f"{' '.join(pred.tokens)!r} {'==' if equal else '!='} "
                                 f"{' '.join(ref.tokens)!r}"])])


def explain_squad(prediction: str | None, references: Sequence[str | None],
                  metrics: Sequence[str], options: Mapping[str, Any]
                  ) -> dict[str, MetricExplanation]:
    """Explain ``token_f1`` and/or ``exact_match`` on one example (see the module docstring).

    Args:
        prediction: the answer (None is empty).
        references: the reference answers; None entries are skipped, as the scorer does.
        metrics: names among ``token_f1`` and ``exact_match``.
        options: the flat scoring options (the family has none).

    Returns:
        Per metric a :class:`MetricExplanation` whose measures, statistics and reference
        index equal the family's columns.

    """
    pred = _view(prediction)
    refs = [_view(r) for r in references]
    kept = [j for j, r in enumerate(references) if r is not None]
    out = {}
    for metric in metrics:
        make = _token_f1 if metric == "token_f1" else _exact
        pairs = [make(j, pred, refs[j]) for j in kept]
        key = "fmeasure" if metric == "token_f1" else "score"
        best, winner = -1.0, None
        for p in pairs:
            if p.measures[key] > best:
                best, winner = p.measures[key], p
        if winner is None:
            measures = dict.fromkeys(pairs[0].measures if pairs else
                                     (("precision", "recall", "fmeasure")
                                      if metric == "token_f1" else ("score",)), 0.0)
            statistics = ({s: 0 for s, _ in TOKEN_F1_STATISTICS} if metric == "token_f1"
                          else {})
        else:
            measures, statistics = dict(winner.measures), dict(winner.statistics)
        out[metric] = MetricExplanation(
            metric=metric, family="squad", rule="max",
            reference_index=-1 if winner is None else winner.reference_index,
            measures=measures, statistics=statistics, pairs=pairs, view="squad",
            prediction=pred, references=refs)
    return out


__all__ = ["explain_squad"]
