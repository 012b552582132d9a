"""Why an example scored its ROUGE-1.5.5 metrics: the ``rouge155`` family's explanation.

Over the script's two readings of each text (:func:`pipeline.tokenizers.rouge155.
tokenize_rouge155`: the tokens it counts n-grams and skip bigrams on, and the lines it runs
the LCS on), per reference:

- ``rougeN``: the clipped n-gram matches over the whole text (as the rouge family's).
- ``rougeS{k}``, ``rougeS``: the skip bigrams (pairs of tokens in order with at most k
  tokens between; any gap for ``rougeS``) found in both texts, each clipped to its count in
  the reference; ``rougeSU*`` adds the unigrams of all tokens but the last (the script's
  loop stops one token early).
- ``rougeLsum``: per reference line the union of its LCS with every prediction line (the
  script's backtrack, which is rouge-score's), then the hits: union tokens counted in
  reference order while the token has occurrences left on both sides.
- ``rougeWsum``: the same on the weighted LCS (a run of k consecutive matches weighs
  k ** weight); the hits are the weighted runs of marked reference positions.

The multi-reference rule (``pooled``, ``best-recall`` with the script's rounding, ``max``,
``mean``) is applied with the family's own functions, so the statistics and measures equal
the scorer's columns. Skip bigrams without a gap limit are listed in Python, quadratic in
the text length (fine for an example; the scorer's kernel is linear).

Definition: Lin (2004); code: ``ROUGE-1.5.5.pl`` (``createSkipBigram``, ``lcs``/``wlcs``,
``markLCS``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.metrics.explanation import (
    Listing,
    MetricExplanation,
    PairExplanation,
    Tokens,
    clipped_matches,
    gram_items,
    matched_positions,
    ngrams,
    union_pairs,
)
from pipeline.metrics.multi_reference import combine_references
from pipeline.metrics.rouge155.family import (
    MEASURES,
    Rouge155Options,
    _kind,
    _measures,
    _round5,
    _safe_ratio,
)
from pipeline.tokenizers.rouge155 import stopwords, tokenize_rouge155

_WORD = re.compile(rb"[a-z0-9]+")


def _spans(text: str, n_tokens: int, options: Rouge155Options) -> list[tuple[int, int]]:
    """Character spans of the script's tokens (its ``[a-z0-9]+`` runs of the lowered bytes)."""
    data = text.encode("utf-8")
    char_of = [0] * (len(data) + 1)
    at = 0
    for i, ch in enumerate(text):
        for _ in range(len(ch.encode("utf-8"))):
            char_of[at] = i
            at += 1
    char_of[at] = len(text)
    stop = stopwords() if options.stopwords == "smart" else frozenset()
    spans: list[tuple[int, int]] = []
    offset = 0
    for line in data.split(b"\n"):
        for m in _WORD.finditer(line.lower()):
            if m.group().decode("latin-1") not in stop:
                spans.append((char_of[offset + m.start()], char_of[offset + m.end() - 1] + 1))
        offset += len(line) + 1
    return spans[:n_tokens]


def _views(text: str | None, options: Rouge155Options) -> tuple[Tokens, Tokens]:
    """The n-gram reading and the LCS reading (the same unless ``limit_bytes``)."""
    text = text or ""
    clip, sentences = tokenize_rouge155(text, options.text)
    ranges: list[tuple[int, int]] = []
    for s in sentences:
        start = ranges[-1][1] if ranges else 0
        ranges.append((start, start + len(s)))
    flat = [t for s in sentences for t in s]
    spans = _spans(text, max(len(clip), len(flat)), options)
    if not options.limit_bytes:
        view = Tokens(text, clip, ranges, spans[:len(clip)])
        return view, view
    return (Tokens(text, clip, [(0, len(clip))], spans[:len(clip)]),
            Tokens(text, flat, ranges, spans[:len(flat)]))


def _skip_bigrams(tokens: Sequence[str], max_gap: int) -> list[tuple[str, ...]]:
    n = len(tokens)
    return [(tokens[i], tokens[j]) for i in range(n - 1)
            for j in range(i + 1, n if max_gap < 0 else min(n, i + max_gap + 2))]


def _skip_positions(tokens: Sequence[str], max_gap: int, budget: dict[tuple[str, ...], int]
                    ) -> list[int]:
    left = dict(budget)
    marked: set[int] = set()
    n = len(tokens)
    for i in range(n - 1):
        for j in range(i + 1, n if max_gap < 0 else min(n, i + max_gap + 2)):
            g = (tokens[i], tokens[j])
            if left.get(g, 0) > 0:
                left[g] -= 1
                marked.update((i, j))
    return sorted(marked)


def _wlcs_union(ref: Sequence[str], pred: Sequence[str], pw: Sequence[float],
                union: dict[int, int], r0: int, p0: int) -> None:
    """Mark the script's backtracked WLCS of ``ref`` (rows) and ``pred`` into ``union``."""
    a, b = len(ref), len(pred)
    c = [[0.0] * (b + 1) for _ in range(a + 1)]
    run = [[0] * (b + 1) for _ in range(a + 1)]
    for i in range(1, a + 1):
        for j in range(1, b + 1):
            if ref[i - 1] == pred[j - 1]:
                k = run[i - 1][j - 1]
                c[i][j] = c[i - 1][j - 1] + pw[k + 1] - pw[k]
                run[i][j] = k + 1
            else:
                c[i][j] = c[i - 1][j] if c[i - 1][j] >= c[i][j - 1] else c[i][j - 1]
    i, j = a, b
    while i > 0 and j > 0:
        if ref[i - 1] == pred[j - 1]:
            union.setdefault(r0 + i - 1, p0 + j - 1)
            i, j = i - 1, j - 1
        elif c[i - 1][j] >= c[i][j - 1]:
            i -= 1
        else:
            j -= 1


def _summary(pred: Tokens, ref: Tokens, pred_clip: Sequence[str], ref_clip: Sequence[str],
             weighted: bool, weight: float) -> tuple[float, float, dict[str, Any],
                                                    list[int], list[int], list[Listing]]:
    """Hits, base, detail and positions of the script's ROUGE-L (or -W) on one pair."""
    longest = max([e - s for s, e in ref.sentences + pred.sentences] + [0])
    pw = [float(i) ** weight for i in range(longest + 2)]
    union: dict[int, int] = {}
    if weighted:
        for ps, pe in pred.sentences:
            for rs, re_ in ref.sentences:
                if pe > ps and re_ > rs:
                    _wlcs_union(ref.tokens[rs:re_], pred.tokens[ps:pe], pw, union, rs, ps)
    elif ref.tokens and pred.tokens:
        paired = union_pairs(ref.tokens, ref.sentences, pred.tokens, pred.sentences)
        union = {p: q for p, q in enumerate(paired) if q >= 0}
    base = 0.0
    for rs, re_ in ref.sentences:
        base += pw[re_ - rs] if weighted else re_ - rs
    cnt_p, cnt_r = Counter(pred_clip), Counter(ref_clip)
    hit = 0.0
    rows: list[dict[str, Any]] = []
    pred_marked: set[int] = set()
    for k, (rs, re_) in enumerate(ref.sentences):
        hits: list[int] = []
        runs: list[dict[str, Any]] = []
        run: list[int] = []
        for q in range(rs, re_):
            t = ref.tokens[q]
            if q in union and cnt_p[t] > 0 and cnt_r[t] > 0:
                cnt_p[t] -= 1
                cnt_r[t] -= 1
                hits.append(q)
                pred_marked.add(union[q])
                if not weighted:
                    hit += 1.0
                    continue
                run.append(q)
                if q + 1 == re_ or (q + 1) not in union:
                    hit += pw[len(run)]
                    runs.append({"positions": run, "weight": pw[len(run)]})
                    run = []
        row: dict[str, Any] = {"sentence": k, "start": rs, "end": re_,
                               "union": sorted(p for p in union if rs <= p < re_),
                               "hits": hits}
        if weighted:
            row["runs"] = runs
        rows.append(row)
    listing: list[Listing] = []
    for row in rows:
        if weighted:
            listing.append((f"line {row['sentence']} runs", [
                f"{' '.join(ref.tokens[q] for q in r['positions'])} "
                f"({len(r['positions'])}**{weight:g} = {r['weight']:.4f})" for r in row["runs"]]))
        else:
            listing.append((f"line {row['sentence']} hits",
                            [f"{ref.tokens[q]} ({q})" for q in row["hits"]]))
    return (hit, base, {"sentences": rows}, sorted(pred_marked),
            [q for row in rows for q in row["hits"]], listing)


def explain_rouge155(prediction: str | None, references: Sequence[str | None],
                     metrics: Sequence[str], options: Mapping[str, Any]
                     ) -> dict[str, MetricExplanation]:
    """Explain ROUGE-1.5.5 metrics on one example (see the module docstring).

    Args:
        prediction: the prediction, one sentence per line (None is empty).
        references: the references (None is empty).
        metrics: rouge1..rouge9, rougeLsum, rougeWsum, rougeS{k}, rougeSU{k}, rougeS, rougeSU.
        options: the flat scoring options (``stemmer``, ``stopwords``, ``limit_words``,
            ``limit_bytes``, ``alpha``, ``wlcs_weight``, ``multi_reference``).

    Returns:
        Per metric a :class:`MetricExplanation` whose measures, statistics (float for
        rougeWsum) and reference index equal the family's columns.

    Raises:
        ConfigError: an unknown metric or option value.

    """
    opts = Rouge155Options.from_mapping(options)
    weight = float(opts.wlcs_weight)
    clip_pred, lcs_pred = _views(prediction, opts)
    views = [_views(r, opts) for r in references]
    out = {}
    for metric in metrics:
        kind = _kind(metric)
        rows = []  # per pair: hit, reference units, prediction units, the -f B score
        pairs = []
        for i, (clip_ref, lcs_ref) in enumerate(views):
            p_tok, r_tok = clip_pred.tokens, clip_ref.tokens
            listing: list[Listing]
            if kind.kind == "N":
                p_grams, r_grams = ngrams(p_tok, kind.n), ngrams(r_tok, kind.n)
                found = clipped_matches(p_grams, Counter(r_grams))
                budget = {tuple(g["ngram"]): g["matches"] for g in found}
                hit, ref_u, pred_u = (float(sum(budget.values())), float(len(r_grams)),
                                      float(len(p_grams)))
                detail: dict[str, Any] = {"ngrams": found}
                p_pos, r_pos = matched_positions(p_grams, budget), matched_positions(r_grams,
                                                                                     budget)
                listing = [("clipped n-grams", gram_items(found))]
                pick = _round5(_safe_ratio(np.array([hit]), np.array([ref_u])))[0]
            elif kind.kind == "S":
                p_grams = _skip_bigrams(p_tok, kind.max_gap)
                r_grams = _skip_bigrams(r_tok, kind.max_gap)
                found = clipped_matches(p_grams, Counter(r_grams))
                budget = {tuple(g["ngram"]): g["matches"] for g in found}
                hit, ref_u, pred_u = (float(sum(budget.values())), float(len(r_grams)),
                                      float(len(p_grams)))
                detail = {"skip_bigrams": found}
                p_pos = _skip_positions(p_tok, kind.max_gap, budget)
                r_pos = _skip_positions(r_tok, kind.max_gap, budget)
                listing = [("clipped skip bigrams", gram_items(found))]
                if kind.unigrams:
                    uni: list[dict[str, Any]] = []
                    if len(p_tok) > 1 and len(r_tok) > 1:
                        uni = clipped_matches(ngrams(p_tok[:-1], 1),
                                              Counter(ngrams(r_tok[:-1], 1)))
                    hit += sum(g["matches"] for g in uni)
                    pred_u += max(len(p_tok) - 1, 0)
                    ref_u += max(len(r_tok) - 1, 0)
                    detail["unigrams"] = uni
                    listing.append(("clipped unigrams (all but the last token)",
                                    gram_items(uni)))
                pick = _round5(_safe_ratio(np.array([hit]), np.array([ref_u])))[0]
            else:
                weighted = kind.kind == "W"
                hit, base, detail, p_pos, r_pos, listing = _summary(
                    lcs_pred, lcs_ref, p_tok, r_tok, weighted, weight)
                pick = _safe_ratio(np.array([hit]), np.array([base]))[0]
                pred_tokens = np.array([float(len(p_tok))])
                if weighted:
                    # the C library's pow, as the family (pipeline.metrics.floats)
                    pick = math.pow(float(pick), 1 / weight)
                    ref_u = math.pow(float(base), weight)
                    pred_u = math.pow(float(pred_tokens[0]), weight)
                else:
                    ref_u, pred_u = base, float(pred_tokens[0])
            rows.append((hit, ref_u, pred_u, float(pick)))
            p, r, f = _measures(np.array([hit]), np.array([ref_u]), np.array([pred_u]), kind,
                                opts)
            pairs.append(PairExplanation(
                reference_index=i, statistics=_stats(kind.kind, hit, pred_u, ref_u),
                measures={"precision": float(p[0]), "recall": float(r[0]),
                          "fmeasure": float(f[0])},
                detail=detail, prediction_positions=p_pos, reference_positions=r_pos,
                listing=listing))
        index, measures, stats = _combine(np.array(rows, dtype=np.float64).reshape(-1, 4),
                                          kind, opts)
        lcs = kind.kind in ("L", "W")
        out[metric] = MetricExplanation(
            metric=metric, family="rouge155", rule=opts.multi_reference,
            reference_index=index, measures=measures,
            statistics=_stats(kind.kind, stats[0], stats[2], stats[1]), pairs=pairs,
            view="rouge155-lines" if lcs and opts.limit_bytes else "rouge155",
            prediction=lcs_pred if lcs else clip_pred,
            references=[v[1] if lcs else v[0] for v in views])
    return out


def _stats(kind: str, hit: float, pred_units: float, ref_units: float) -> dict[str, Any]:
    cast = float if kind == "W" else int
    return {"matches": cast(hit), "prediction_units": cast(pred_units),
            "reference_units": cast(ref_units)}


def _combine(pair: np.ndarray, kind: Any, opts: Rouge155Options
             ) -> tuple[int, dict[str, float], np.ndarray]:
    """The example's reference index, measures and (hit, ref units, pred units), as scored.

    The family's own rule (:func:`pipeline.metrics.multi_reference.combine_references`).
    """
    def measures(st: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return _measures(st[..., 0], st[..., 1], st[..., 2], kind, opts)

    out = combine_references(pair[:, None, :], np.array([len(pair)], dtype=np.int64),
                             rule=opts.multi_reference, measures=measures,
                             recall_key=pair[:, None, 3])
    return (int(out["reference_index"][0, 0]),
            {m: float(out[m][0, 0]) for m in MEASURES}, out["stats"][0, 0, :3])


__all__ = ["explain_rouge155"]
