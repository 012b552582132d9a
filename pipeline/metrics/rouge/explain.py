"""Why an example scored its ROUGE: the ``rouge`` family's explanation.

Written in plain Python over token strings so that it reads like the definitions, but for
the LCS walks, which run in compiled kernels (:func:`pipeline.metrics.rouge.lcs.lcs_alignment`,
:func:`~pipeline.metrics.rouge.lcs.union_lcs_alignment`: linear memory, about the scorer's time);
a property test holds the counts to the scorer's, another the walks to rouge-score's:

- ``rougeN``: the clipped n-gram matches: every n-gram in both texts with its count in the
  prediction, in the reference and ``min`` of the two (Lin 2004, §2; rouge-score
  ``_score_ngrams``); matches = the sum of the minima.
- ``rougeL``: one longest common subsequence of the whole texts as pairs of token
  positions (prediction, reference), found on rouge-score's table (reference rows,
  prediction columns) with its backtrack rule (``_backtrack_norec``); matches = its length.
- ``rougeLsum``: per reference sentence, the union of its LCS with each prediction
  sentence (reference token positions, rouge-score ``_union_lcs``), then the hits: union
  tokens counted in reference order while the token has occurrences left on both sides
  (``_summary_level_lcs``); matches = the hits.
- several references: every reference is explained, and the family's multi-reference rule
  (:func:`pipeline.metrics.rouge.family.combine_references`, the scorer's own code) says which won.

Under tokenizer ``rouge155`` the family's metrics are ROUGE-1.5.5's, explained by
:mod:`pipeline.metrics.rouge155.explain`.

Positions are 0-based indices into the token lists shown (after stemming and
``max_tokens``); the report marks matched words with them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.errors import ConfigError
from pipeline.metrics.explanation import (
    MetricExplanation,
    PairExplanation,
    Tokens,
    char_spans,
    clipped_matches,
    gram_items,
    matched_positions,
    ngrams,
    union_pairs,
)
from pipeline.metrics.rouge.family import (
    _SENTENCE_END,
    MEASURES,
    ROUGE_L,
    ROUGE_LSUM,
    STATISTICS,
    _code,
    combine_references,
)
from pipeline.tokenizers.rouge_score import Tokenizer, get_tokenizer, porter_stem


def tokens(text: str | None, tok: Tokenizer, *, stemmer: str, max_tokens: int | None,
           split_sentences: bool) -> Tokens:
    """A text as the rouge family's scorer sees it (tokens, sentences, character spans)."""
    text = text or ""
    lowercase = not tok.case_sensitive
    scored = _SENTENCE_END.sub("\n", text) if split_sentences and text else text
    surface: list[str] = []
    sentences: list[tuple[int, int]] = []
    for line in scored.split("\n"):
        start = len(surface)
        surface += tok.tokenize(line)
        sentences.append((start, len(surface)))
    spans = char_spans(text, surface, tok.normalize)
    if max_tokens is not None and len(surface) > max_tokens:
        cut = max_tokens
        surface = surface[:cut]
        sentences = [(min(s, cut), min(e, cut)) for s, e in sentences]
        spans = None if spans is None else spans[:cut]
    stemmed = [porter_stem(t, lowercase=lowercase) for t in surface] \
        if stemmer == "porter" else surface
    return Tokens(text, stemmed, sentences, spans)


def _pair(index: int, matches: int, p_units: int, r_units: int, detail: dict[str, Any],
          prediction_positions: list[int], reference_positions: list[int],
          listing: list[Any]) -> PairExplanation:
    stats = np.array([[[matches, p_units, r_units]]], dtype=np.int64)
    one = combine_references(stats, np.array([1], dtype=np.int64), rule="max")
    return PairExplanation(
        reference_index=index,
        statistics=dict(zip((s for s, _ in STATISTICS), (matches, p_units, r_units),
                            strict=True)),
        measures={m: float(one[m][0, 0]) for m in MEASURES}, detail=detail,
        prediction_positions=prediction_positions, reference_positions=reference_positions,
        listing=listing)


def explain_ngrams(prediction: Sequence[str], reference: Sequence[str], n: int, *,
                   index: int = 0, quoted: bool = False) -> PairExplanation:
    """Clipped n-gram matches of one pair (rougeN); ``detail["ngrams"]`` lists them.

    ``quoted``: the listing shows tokens as Python literals (``' '`` seen), as under
    ``--language``.
    """
    pred, ref = ngrams(prediction, n), ngrams(reference, n)
    rows = clipped_matches(pred, Counter(ref))
    budget = {tuple(r["ngram"]): r["matches"] for r in rows}
    return _pair(index, sum(budget.values()), len(pred), len(ref), {"ngrams": rows},
                 matched_positions(pred, budget), matched_positions(ref, budget),
                 [("clipped n-grams", gram_items(rows, quoted=quoted))])


def lcs_pairs(ref: Sequence[str], can: Sequence[str]) -> list[tuple[int, int]]:
    """One LCS as ``(reference position, candidate position)`` pairs, rouge-score's choice.

    The path is the one rouge-score 0.1.2 backtracks (``_backtrack_norec`` on
    ``_lcs_table``: reference rows, candidate columns; from the last cell, on a mismatch
    left when the left cell is greater than the one above, else up), computed by the
    compiled kernel :func:`pipeline.metrics.rouge.lcs.lcs_alignment` in bit rows with
    checkpoints: time O(n m / 64), memory O(sqrt(n) m / 64 + n + m) words (two
    100,000-token texts: about a second and 12 MiB).

    Args:
        ref: reference tokens, n of them.
        can: candidate (prediction) tokens, m of them.

    Returns:
        The pairs, increasing in both positions; as many as the LCS length.

    """
    if not ref or not can:
        return []
    from pipeline.compiled import kernel

    ids: dict[str, int] = {}
    encoded = np.fromiter((ids.setdefault(t, len(ids)) for t in [*ref, *can]),
                          dtype=np.int32, count=len(ref) + len(can))
    pairs = kernel("lcs_alignment")(encoded, 0, len(ref), len(ref), len(can), len(ids))
    return [(int(r), int(c)) for r, c in pairs.tolist()]


def explain_lcs(prediction: Sequence[str], reference: Sequence[str], *, index: int = 0,
                quoted: bool = False) -> PairExplanation:
    """The LCS of one pair (rougeL); ``detail["alignment"]``: (prediction, reference) pairs.

    ``quoted``: the listing shows tokens as Python literals (``' '`` seen).
    """
    shown = repr if quoted else str
    pairs = [(c, r) for r, c in lcs_pairs(reference, prediction)]
    return _pair(index, len(pairs), len(prediction), len(reference),
                 {"alignment": [list(p) for p in pairs]}, [c for c, _ in pairs],
                 [r for _, r in pairs],
                 [("LCS (pred pos, ref pos)", [f"{shown(prediction[a])} ({a},{b})"
                                               for a, b in pairs])])


def explain_summary_lcs(prediction: Tokens, reference: Tokens, *, index: int = 0,
                        quoted: bool = False) -> PairExplanation:
    """Union-LCS hits per reference sentence of one pair (rougeLsum); ``detail["sentences"]``.

    ``quoted``: the listing shows tokens as Python literals (``' '`` seen).
    """
    shown = repr if quoted else str
    pred, ref = prediction.tokens, reference.tokens
    if not pred or not ref:
        return _pair(index, 0, len(pred), len(ref), {"sentences": []}, [], [], [])
    left_pred, left_ref = Counter(pred), Counter(ref)
    rows: list[dict[str, Any]] = []
    pred_marked: set[int] = set()
    hits_total = 0
    paired = union_pairs(ref, reference.sentences, pred, prediction.sentences)
    for k, (rs, re_) in enumerate(reference.sentences):
        union = {p: paired[p] for p in range(rs, re_) if paired[p] >= 0}
        hits = []
        for pos in sorted(union):
            t = ref[pos]
            if left_pred[t] > 0 and left_ref[t] > 0:
                left_pred[t] -= 1
                left_ref[t] -= 1
                hits.append(pos)
                pred_marked.add(union[pos])
        hits_total += len(hits)
        if re_ > rs:
            rows.append({"sentence": k, "start": rs, "end": re_, "union": sorted(union),
                         "hits": hits})
    listing = [(f"sentence {r['sentence']} hits", [f"{shown(ref[q])} ({q})" for q in r["hits"]])
               for r in rows]
    return _pair(index, hits_total, len(pred), len(ref), {"sentences": rows},
                 sorted(pred_marked), [p for r in rows for p in r["hits"]], listing)


def explain_rouge(prediction: str | None, references: Sequence[str | None],
                  metrics: Sequence[str], options: Mapping[str, Any]
                  ) -> dict[str, MetricExplanation]:
    """Explain ROUGE metrics on one example (see the module docstring).

    Args:
        prediction: the prediction (None is empty).
        references: the references (None is empty, as the scorer reads it).
        metrics: names the rouge family serves.
        options: the flat scoring options (``tokenizer``, ``stemmer``, ``case_sensitive``,
            ``multi_reference``, ``sentence_split``, ``max_tokens``...), checked; under
            ``language`` ``auto``, ``detected_language`` when the caller has detected the
            example's language already (:func:`pipeline.explanation.detected_language`),
            else it is detected here.

    Returns:
        Per metric a :class:`MetricExplanation` whose measures, statistics and reference
        index equal the family's columns.

    """
    if options["tokenizer"] == "rouge155":
        from pipeline.metrics.rouge155.explain import explain_rouge155

        return explain_rouge155(prediction, references, metrics, options)
    rule = str(options["multi_reference"])
    split = "rougeLsum" in metrics and options["sentence_split"] == "punctuation"
    if options.get("language"):
        from pipeline.metrics.rouge.languages import is_auto
        from pipeline.tokenizers.multilingual import detect_language

        detected = None
        if is_auto(options["language"]):  # detected by the caller (explain), else here
            detected = options.get("detected_language") or detect_language(
                [prediction, *references])
        whole, lines = language_views(options, split_sentences=split, detected=detected)
    else:
        tok = get_tokenizer(options["tokenizer"],
                            case_sensitive=bool(options["case_sensitive"]))

        def whole(text: str | None) -> Tokens:
            return tokens(text, tok, stemmer=str(options["stemmer"]),
                          max_tokens=options.get("max_tokens"), split_sentences=split)

        lines = whole
    pred, pred_lines = whole(prediction), lines(prediction)
    refs, refs_lines = [whole(r) for r in references], [lines(r) for r in references]
    pairs: dict[str, list[PairExplanation]] = {}
    quoted = bool(options.get("language"))  # per-language tokens: ' ' is one
    for metric in metrics:
        code = _code(metric)
        if code == ROUGE_L:
            pairs[metric] = [explain_lcs(pred.tokens, r.tokens, index=i, quoted=quoted)
                             for i, r in enumerate(refs)]
        elif code == ROUGE_LSUM:
            pairs[metric] = [explain_summary_lcs(pred_lines, r, index=i, quoted=quoted)
                             for i, r in enumerate(refs_lines)]
        else:
            pairs[metric] = [explain_ngrams(pred.tokens, r.tokens, code, index=i,
                                            quoted=quoted)
                             for i, r in enumerate(refs)]
    names = [s for s, _ in STATISTICS]
    stats = np.array([[[pairs[m][i].statistics[s] for s in names] for m in metrics]
                      for i in range(len(refs))], dtype=np.int64).reshape(len(refs),
                                                                         len(metrics), 3)
    combined = combine_references(stats, np.array([len(refs)], dtype=np.int64), rule=rule)
    return {metric: MetricExplanation(
        metric=metric, family="rouge", rule=rule,
        reference_index=int(combined["reference_index"][0, k]),
        measures={m: float(combined[m][0, k]) for m in MEASURES},
        statistics={s: int(combined[s][0, k]) for s in names}, pairs=pairs[metric],
        view=_view_name(options, metric), prediction=pred_lines if metric == "rougeLsum" else pred,
        references=refs_lines if metric == "rougeLsum" else refs)
        for k, metric in enumerate(metrics)}


def _view_name(options: Mapping[str, Any], metric: str) -> str:
    """``rouge``; under ``--language``: ``xlsum`` (whole texts) or ``xlsum-lines`` (rougeLsum)."""
    if not options.get("language"):
        return "rouge"
    return "xlsum-lines" if metric == "rougeLsum" else "xlsum"


def language_views(options: Mapping[str, Any], *, split_sentences: bool,
                   detected: str | None = None
                   ) -> tuple[Callable[[str | None], Tokens], Callable[[str | None], Tokens]]:
    """The two views of a text under ``--language`` (whole text; rougeLsum's sentences).

    The tokens are XL-Sum's per-language tokens (:mod:`pipeline.tokenizers.multilingual`),
    shown as compared (lower-cased, segmented, stemmed; jieba's and pythainlp's ``' '``
    tokens included, which is why a space can match); character spans are not followed
    back (None).

    ``detected``: under ``--language auto``, the example's language
    (:func:`pipeline.tokenizers.multilingual.detect_language`).

    Raises:
        ConfigError: ``column:COL``: explain one example with its own language instead.
    """
    from pipeline.metrics.rouge.languages import is_auto, language_column, line_tokens
    from pipeline.tokenizers.multilingual import get_language_tokenizer

    language = str(options["language"])
    if language_column(language) is not None:
        raise ConfigError("explain needs the example's language, not a column",
                          hint="--language LANG, the row's value of the column")
    if is_auto(language):
        if detected is None:
            raise ConfigError("--language auto: explain needs the example's texts")
        language = detected
    tok = get_language_tokenizer(language, stem=options.get("stemmer") == "language",
                                 japanese_dictionary=str(options.get("japanese_dictionary",
                                                                     "unidic-lite")))
    cut = options.get("max_tokens")

    def whole(text: str | None) -> Tokens:
        found = tok.tokenize(text)[:cut] if cut is not None else tok.tokenize(text)
        return Tokens(text or "", list(found), [(0, len(found))], None)

    def lines(text: str | None) -> Tokens:
        per_line = line_tokens(tok, text, xlsum=bool(options.get("xlsum_rougelsum")),
                               punctuation=split_sentences)
        flat: list[str] = []
        sentences: list[tuple[int, int]] = []
        for line in per_line:
            sentences.append((len(flat), len(flat) + len(line)))
            flat += line
        if cut is not None and len(flat) > cut:
            flat = flat[:cut]
            sentences = [(min(a, cut), min(b, cut)) for a, b in sentences]
        return Tokens(text or "", flat, sentences or [(0, 0)], None)

    return whole, lines


__all__ = ["explain_lcs", "explain_ngrams", "explain_rouge", "explain_summary_lcs",
           "language_views", "lcs_pairs", "tokens", "union_pairs"]
