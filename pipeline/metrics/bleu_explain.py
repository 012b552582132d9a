"""Why an example scored its BLEU: the ``bleu`` family's explanation.

Over the tokens sacrebleu's tokenizer gives (the family's own tokenizer, after its
``lower()`` and ``rstrip()``), per order 1..4 the prediction's n-grams that match, each
clipped to its largest count in any one reference; the prediction length and the closest
reference length (the shorter on ties), the brevity penalty ``exp(1 - r / c)`` when the
prediction is shorter, and the n-gram precisions as sacrebleu's ``BLEUScore.precisions``
shows them (after smoothing). The statistics are sacrebleu's sentence statistics
(``_extract_corpus_statistics``), named as the family's columns; the score is the family's
own function of them, so it is the scorer's.

Definition: Papineni et al. (2002); code: sacrebleu 2.x ``metrics/bleu.py``
(``compute_bleu``, ``_extract_reference_info``, ``_compute_segment_statistics``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.metrics.bleu import (
    MAX_ORDER,
    SMOOTH_DEFAULTS,
    STATISTICS,
    _prepare,
    bleu_from_statistics,
)
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


def _view(texts: Sequence[str], prepared: Sequence[str], tokenize: str, lowercase: bool
          ) -> list[Tokens]:
    batch = tokenize_mt(list(prepared), tokenizer=tokenize)
    out = []
    for i, text in enumerate(texts):
        tokens = batch.strings(i)
        spans = char_spans(text, tokens, str.lower if lowercase else (lambda s: s))
        out.append(Tokens(text, tokens, one_range(tokens), spans))
    return out


def precisions(stats: Sequence[float], *, smooth: str, smooth_value: float | None
               ) -> tuple[list[float], float]:
    """N-gram precisions (percent) and brevity penalty as sacrebleu's sentence BLEU shows them.

    Args:
        stats: one row of :data:`pipeline.metrics.bleu.STATISTICS`.
        smooth: ``exp``, ``floor``, ``add-k`` or ``none``.
        smooth_value: the value of ``floor`` / ``add-k`` (None: sacrebleu's default).

    Returns:
        ``(precisions, bp)``: per order 1..4 the precision in [0, 100] after smoothing (0
        for orders past the effective order, and all 0 when nothing matches, as sacrebleu
        reports them), and the brevity penalty in [0, 1].

    """
    value = SMOOTH_DEFAULTS.get(smooth) if smooth_value is None else smooth_value
    sys_len, ref_len = stats[0], stats[1]
    bp = 1.0 if sys_len >= ref_len else (math.exp(1 - ref_len / sys_len) if sys_len else 0.0)
    out = [0.0] * MAX_ORDER
    if not any(stats[2:2 + MAX_ORDER]):
        return out, bp
    smooth_mteval = 1.0
    for n in range(1, MAX_ORDER + 1):
        correct, total = float(stats[1 + n]), float(stats[1 + MAX_ORDER + n])
        if smooth == "add-k" and n > 1:
            correct += float(value or 0)
            total += float(value or 0)
        if total == 0:
            break
        if correct == 0:
            if smooth == "exp":
                smooth_mteval *= 2
                out[n - 1] = 100.0 / (smooth_mteval * total)
            elif smooth == "floor":
                out[n - 1] = 100.0 * float(value or 0) / total
        else:
            out[n - 1] = 100.0 * correct / total
    return out, bp


def explain_bleu(prediction: str | None, references: Sequence[str | None],
                 metrics: Sequence[str], options: Mapping[str, Any]
                 ) -> dict[str, MetricExplanation]:
    """Explain ``bleu`` on one example (see the module docstring).

    Args:
        prediction: the prediction (None is empty).
        references: the references; None entries are skipped, as the scorer does.
        metrics: ``("bleu",)``.
        options: the flat scoring options (``bleu_tokenize``, ``bleu_smooth``...).

    Returns:
        ``{"bleu": MetricExplanation}``; its statistics equal the family's columns.

    Raises:
        ConfigError: an unknown tokenizer or smoothing method.

    """
    from pipeline.metrics.bleu import FAMILY

    tokenize, smooth, smooth_value, lowercase = FAMILY._options(options)
    kept = [j for j, r in enumerate(references) if r is not None]
    texts = [prediction or ""] + [references[j] or "" for j in kept]
    views = _view(texts, _prepare(texts, lowercase), tokenize, lowercase)
    pred, refs = views[0], views[1:]
    by_index = dict(zip(kept, refs, strict=True))
    all_refs = [by_index.get(j) or Tokens("", [], [(0, 0)], []) for j in range(len(references))]
    hyp_len = len(pred.tokens)
    ref_len, closest = 0, -1
    for r in refs:
        diff = abs(hyp_len - len(r.tokens))
        if closest == -1 or diff < closest or (diff == closest and len(r.tokens) < ref_len):
            closest, ref_len = diff, len(r.tokens)
    orders: list[dict[str, Any]] = []
    listing: list[Listing] = []
    matches, totals = [], []
    for n in range(1, MAX_ORDER + 1):
        grams = ngrams(pred.tokens, n)
        clip: Counter[tuple[str, ...]] = Counter()
        for r in refs:
            clip |= Counter(ngrams(r.tokens, n))
        rows = clipped_matches(grams, clip)
        matches.append(sum(row["matches"] for row in rows))
        totals.append(max(hyp_len - n + 1, 0))
        orders.append({"order": n, "matches": matches[-1], "prediction_ngrams": totals[-1],
                       "ngrams": rows})
    stats = [hyp_len, ref_len, *matches, *totals]
    score = float(bleu_from_statistics(np.array([stats]), smooth=smooth,
                                       smooth_value=smooth_value, effective_order=True)[0])
    shown, bp = precisions(stats, smooth=smooth, smooth_value=smooth_value)
    for o, p in zip(orders, shown, strict=True):
        o["precision"] = p
    ratio = hyp_len / ref_len if ref_len else 0.0
    listing.append(("lengths", [f"prediction {hyp_len}", f"reference {ref_len} (closest of "
                                f"{len(refs)})", f"ratio {ratio:.4f}",
                                f"brevity penalty {bp:.4f}"]))
    listing.append((f"precisions (%, smoothing {smooth})",
                    [f"{n}-grams {p:.2f} ({m}/{t})" for n, (p, m, t)
                     in enumerate(zip(shown, matches, totals, strict=True), start=1)]))
    for o in orders:
        listing.append((f"clipped {o['order']}-grams", gram_items(o["ngrams"],
                                                                   reference="clip")))
    pairs = []
    unigrams = ngrams(pred.tokens, 1)
    for j, r in zip(kept, refs, strict=True):
        shared = clipped_matches(unigrams, Counter(ngrams(r.tokens, 1)))
        budget = {tuple(row["ngram"]): row["matches"] for row in shared}
        pairs.append(PairExplanation(
            reference_index=j, measures={},
            statistics={"reference_tokens": len(r.tokens),
                        "shared_unigrams": sum(budget.values())},
            prediction_positions=matched_positions(unigrams, budget),
            reference_positions=matched_positions(ngrams(r.tokens, 1), budget)))
    detail = {"prediction_length": hyp_len, "reference_length": ref_len, "ratio": ratio,
              "brevity_penalty": bp, "smooth": smooth, "orders": orders}
    return {"bleu": MetricExplanation(
        metric="bleu", family="bleu", rule="sacrebleu", reference_index=-1,
        measures={"score": score},
        statistics={name: int(v) for (name, _), v in zip(STATISTICS, stats, strict=True)},
        pairs=pairs, view="bleu", prediction=pred, references=all_refs, detail=detail,
        listing=listing)}


__all__ = ["explain_bleu", "precisions"]
