"""Why an example scored its chrF or chrF++: the ``chrf`` family's explanation.

Per reference and order (character orders 1..6 over the text without white space, then for
chrF++ word orders 1..2 over sacrebleu's word split) the matched n-grams, each clipped to its
count in the reference, with the counts sacrebleu keeps (prediction n-grams counted only when
the reference has n-grams of that order). Each reference's F is the family's own function of
its statistics; the example keeps the reference with the highest F (the first on ties), as
the scorer does.

The positions marked (for the report) are the characters inside the matched character
n-grams of the highest order (6): the stretches the two texts share.

Definition: Popović (2015, 2017); code: sacrebleu 2.x ``metrics/chrf.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.metrics.chrf import CHAR_ORDER, WORD_ORDERS, chrf_from_statistics, statistics
from pipeline.metrics.explanation import (
    Listing,
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
from pipeline.tokenizers.sacrebleu import tokenize_mt

# listed per order in the text output (the JSON has them all)
LISTED_NGRAMS = 40


def _views(texts: Sequence[str], tokenizer: str) -> list[Tokens]:
    batch = tokenize_mt(list(texts), tokenizer=tokenizer)
    out = []
    for i, text in enumerate(texts):
        tokens = batch.strings(i)
        out.append(Tokens(text, tokens, one_range(tokens), char_spans(text, tokens,
                                                                      lambda s: s)))
    return out


def _order(kind: str, n: int, pred: list[str], ref: list[str]) -> dict[str, Any]:
    joiner = "" if kind == "char" else " "
    p_grams, r_grams = ngrams(pred, n), ngrams(ref, n)
    rows = clipped_matches(p_grams, Counter(r_grams))
    return {"order": f"{kind} {n}", "prediction_ngrams": len(p_grams) if r_grams else 0,
            "reference_ngrams": len(r_grams), "matches": sum(r["matches"] for r in rows),
            "ngrams": [{**r, "ngram": joiner.join(r["ngram"])} for r in rows]}


def explain_chrf(prediction: str | None, references: Sequence[str | None],
                 metrics: Sequence[str], options: Mapping[str, Any]
                 ) -> dict[str, MetricExplanation]:
    """Explain ``chrf`` and/or ``chrfpp`` on one example (see the module docstring).

    Args:
        prediction: the prediction (None is empty).
        references: the references; None entries are skipped, as the scorer does.
        metrics: names among ``chrf`` and ``chrfpp``.
        options: the flat scoring options (the family has none).

    Returns:
        Per metric a :class:`MetricExplanation` whose statistics, score and reference index
        equal the family's columns.

    """
    kept = [j for j, r in enumerate(references) if r is not None]
    texts = [prediction or ""] + [references[j] or "" for j in kept]
    chars = _views(texts, "char")
    words = _views(texts, "chrf-words") if any(WORD_ORDERS[m] for m in metrics) else chars
    by_index = dict(zip(kept, chars[1:], strict=True))
    all_refs = [by_index.get(j) or Tokens("", [], [(0, 0)], []) for j in range(len(references))]
    out = {}
    for metric in metrics:
        names = [s for s, _ in statistics(metric)]
        pairs = []
        best, best_index, best_stats = -1.0, -1, [0] * len(names)
        for k, j in enumerate(kept):
            orders = [_order("char", n, chars[0].tokens, chars[k + 1].tokens)
                      for n in range(1, CHAR_ORDER + 1)]
            orders += [_order("word", n, words[0].tokens, words[k + 1].tokens)
                       for n in range(1, WORD_ORDERS[metric] + 1)]
            stats = [o[s] for o in orders
                     for s in ("prediction_ngrams", "reference_ngrams", "matches")]
            f = float(chrf_from_statistics(np.array([stats]))[0])
            if f > best:
                best, best_index, best_stats = f, j, stats
            top_grams = ngrams(chars[0].tokens, CHAR_ORDER)
            top = {tuple(r["ngram"]): r["matches"] for r in clipped_matches(
                top_grams, Counter(ngrams(chars[k + 1].tokens, CHAR_ORDER)))}
            listing: list[Listing] = [
                (f"{o['order']}: {o['matches']} of {o['prediction_ngrams']} prediction, "
                 f"{o['reference_ngrams']} reference n-grams",
                 _shown(gram_items([{**r, "ngram": [r["ngram"]]} for r in o["ngrams"]])))
                for o in orders]
            pairs.append(PairExplanation(
                reference_index=j, statistics=dict(zip(names, stats, strict=True)),
                measures={"score": f}, detail={"orders": orders},
                prediction_positions=matched_positions(top_grams, top),
                reference_positions=matched_positions(ngrams(chars[k + 1].tokens,
                                                             CHAR_ORDER), top),
                listing=listing))
        out[metric] = MetricExplanation(
            metric=metric, family="chrf", rule="best-f", reference_index=best_index,
            measures={"score": max(best, 0.0)},
            statistics=dict(zip(names, best_stats, strict=True)), pairs=pairs, view="chrf",
            prediction=chars[0], references=all_refs)
    return out


def _shown(items: list[str]) -> list[str]:
    if len(items) <= LISTED_NGRAMS:
        return items
    return [*items[:LISTED_NGRAMS], f"... {len(items) - LISTED_NGRAMS} more (--format json)"]


__all__ = ["LISTED_NGRAMS", "explain_chrf"]
