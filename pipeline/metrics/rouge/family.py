"""ROUGE as rouge-score 0.1.2 computes it: the ``rouge`` family (rouge1..rouge9, rougeL, rougeLsum).

Per (prediction, reference) pair the compiled kernel (:mod:`pipeline.metrics.rouge.pairs`) returns
sufficient statistics (matches, prediction units, reference units); precision, recall and
fmeasure are derived from them exactly as rouge-score 0.1.2 does, and the multi-reference
rule picks or pools pairs into one row per example. Definitions: Lin (2004), "ROUGE: A
Package for Automatic Evaluation of Summaries"; google-research ``rouge_score``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import from_numpy, scalar, to_numpy
from pipeline.compiled import kernel
from pipeline.errors import ConfigError
from pipeline.metrics import multi_reference
from pipeline.metrics.base import (
    DataNote,
    DataWarning,
    Family,
    FamilyScores,
    MetricSpec,
    Option,
    reference_lists,
    text_list,
)
from pipeline.metrics.rouge import languages
from pipeline.metrics.rouge155 import family as rouge155
from pipeline.tokenizers.rouge_score import (
    SPACE_CLASS_RE2,
    STEMMERS,
    TOKENIZERS,
    get_tokenizer,
    tokenize_batch,
)

NAMES = tuple(f"rouge{n}" for n in range(1, 10)) + ("rougeL", "rougeLsum")
# Metric codes of the batch kernel (pipeline.metrics.rouge.pairs, not imported: it imports numba):
# n for rougeN.
ROUGE_L = 0
ROUGE_LSUM = -1
_NAME = re.compile(r"rouge([1-9])|rougeL|rougeLsum")
MULTI_REFERENCE_RULES = ("max", "mean", "pooled", "best-recall")  # help order of RULES
SENTENCE_SPLITS = ("newline", "punctuation")
MEASURES = ("precision", "recall", "fmeasure")
STATISTICS = (("matches", "int64"), ("prediction_units", "int64"), ("reference_units", "int64"))
# sentence_split="punctuation": a line break after . ! or ? followed by white space.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SEVERAL_SENTENCES = re.compile(r"[.!?]\s+\S")

OPTIONS = (
    Option("tokenizer", "rouge-score", "Tokenizer of the ROUGE metrics: rouge-score (exactly "
           "rouge-score 0.1.2), unicode, whitespace, or rouge155 (the ROUGE-1.5.5 Perl "
           "script's text handling and scoring rules, see --rouge155).",
           choices=(*TOKENIZERS, "rouge155")),
    Option("stemmer", "none", "Stemmer of the ROUGE metrics: none, porter (rouge-score "
           "use_stemmer=True), porter-rouge155 (ROUGE-1.5.5's -m: WordNet 2.0 exceptions, "
           "then its Porter; tokenizer rouge155 only), or language (the stemmer of "
           "--language, as XL-Sum's use_stemmer=True).",
           choices=(*STEMMERS, "porter-rouge155", "language")),
    Option("language", None, "Tokenize ROUGE texts as XL-Sum's multilingual ROUGE does for "
           "this language (multilingual-rouge 0.0.1): chinese, japanese, thai, burmese "
           "(segmenters), hindi, bengali, turkish and NLTK's Snowball languages (stemmers), "
           "or any other name (the fallback tokenizer, with a warning); column:COL takes each "
           "row's language from the predictions column COL; auto picks each example's "
           "segmenter from the script of its texts (no stemmer). Needs the 'multilingual' "
           "extra.", kind=str,
           omit_default=True),
    Option("xlsum_rougelsum", False, "With --language: rougeLsum as XL-Sum's own code "
           "computes it (each line lower-cased, cleaned and stemmed but NOT segmented), to "
           "reproduce XL-Sum's published rougeLsum; default: each line through the full "
           "language tokenizer.", omit_default=True),
    Option("japanese_dictionary", "unidic-lite", "With --language japanese: fugashi's "
           "dictionary, unidic-lite (installed with the 'multilingual' extra) or unidic "
           "(full UniDic, installed and downloaded by you).",
           choices=("unidic-lite", "unidic"), omit_default=True),
    Option("case_sensitive", False, "Keep case when tokenizing for ROUGE (signature "
           "case:mixed); false lowercases (case:lc)."),
    Option("multi_reference", "max", "How several references combine for ROUGE: max "
           "(rouge-score score_multi), mean, pooled (ROUGE-1.5.5 -f A) or best-recall "
           "(ROUGE-1.5.5 -f B).", choices=MULTI_REFERENCE_RULES),
    Option("sentence_split", "newline", "How rougeLsum finds sentences: newline (rouge-score: "
           "one sentence per line) or punctuation (also a break after . ! or ? followed by "
           "white space; signature split:punct).", choices=SENTENCE_SPLITS),
)


class ZeroTokenWarning(DataWarning):
    """Non-empty texts produced no tokens (e.g. non-Latin text under ``rouge-score``)."""


class UnnamedLanguageWarning(DataWarning):
    """A language name without a segmenter or stemmer of its own: the fallback tokenizer."""


class SentenceSplitWarning(DataWarning):
    """rougeLsum was asked for texts with several sentences on one line (it then equals rougeL)."""


def _code(metric: str) -> int:
    """The batch kernel's code of a metric (see :mod:`pipeline.metrics.rouge.pairs`)."""
    if metric == "rougeL":
        return ROUGE_L
    if metric == "rougeLsum":
        return ROUGE_LSUM
    return int(metric[len("rouge"):])


def fmeasure(precision: np.ndarray, recall: np.ndarray) -> np.ndarray:
    """Harmonic mean, elementwise, as rouge-score 0.1.2 ``scoring.fmeasure``.

    ``2 * p * r / (p + r)`` evaluated in that order (other algebraic forms differ in the last
    bit), and 0 where ``p + r == 0``.

    Args:
        precision: float64 array in [0, 1].
        recall: float64 array of the same shape, in [0, 1].

    """
    denom = precision + recall
    with np.errstate(invalid="ignore", divide="ignore"):
        f = 2 * precision * recall / denom
    return np.where(denom > 0, f, 0.0)


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / max(denominator, 1)`` in float64: rouge-score's precision and recall.

    rouge-score divides by ``max(count, 1)`` for ROUGE-N and returns 0 when either side is
    empty for ROUGE-L/Lsum; both equal this, since matches are 0 when a side has no units.
    """
    return numerator.astype(np.float64) / np.maximum(denominator, 1).astype(np.float64)


# What the counts in FamilyScores.counts tell a user (summary, report; manifest counts).
NOTES = (
    DataNote("zero_token_texts", "{n} non-empty texts produced no token with tokenizer "
             "{tokenizer}, so their ROUGE is 0 (for text not in Latin script: --language "
             "LANG, XL-Sum's per-language tokenizer, or --tokenizer unicode)",
             "{n} non-empty text produced no token with tokenizer {tokenizer}, so its ROUGE "
             "is 0 (for text not in Latin script: --language LANG, XL-Sum's per-language "
             "tokenizer, or --tokenizer unicode)", loud=True),
    DataNote("one_line_multi_sentence_texts", "{n} texts have several sentences on one line: "
             "rougeLsum splits on newlines only, so for them it equals rougeL "
             "(--sentence-split punctuation splits after . ! ?)",
             "{n} text has several sentences on one line: rougeLsum splits on newlines "
             "only, so for that text it equals rougeL (--sentence-split punctuation splits "
             "after . ! ?)"),
    DataNote("zero_token_texts_language", "{n} non-empty texts produced no token with "
             "--language {language}, so their ROUGE is 0 (is it the texts' language?)",
             "{n} non-empty text produced no token with --language {language}, so its ROUGE "
             "is 0 (is it the text's language?)", loud=True, omit_zero=True),
)


class Rouge(Family):
    """The ROUGE family (see the module docstring); stateless."""

    name = "rouge"
    # its explanation, imported on first use (the explainer imports this module)
    explainer = "pipeline.metrics.rouge.explain:explain_rouge"
    names = NAMES
    pattern = _NAME
    options = OPTIONS
    notes = NOTES
    # written after the signature's seed, where they have been since the first version
    trailing_signature_fields = ("split", "maxtok")
    # Arrow batches come as they are (see MetricFamily): the rouge-score tokenizer reads
    # their UTF-8 buffer in place.
    reads_arrow = True

    def spec(self, metric: str, options: Mapping[str, Any]) -> MetricSpec:
        """The spec of a ROUGE metric: P/R/F, matches and units, the reference used.

        Raises:
            ConfigError: a combination the chosen tokenizer does not have (the ``rouge155``
                tokenizer has no whole-text rougeL, no case-sensitive mode and no
                punctuation splitting; ``porter-rouge155`` needs it).

        """
        if options["tokenizer"] == "rouge155":
            return rouge155.rouge_spec(metric, options)
        languages.check_options(options)
        if options["stemmer"] == "porter-rouge155":
            raise ConfigError("stemmer porter-rouge155 is ROUGE-1.5.5's and goes with "
                              "tokenizer rouge155", hint="or use stemmer porter")
        return MetricSpec(name=metric, family=self.name, measures=MEASURES, primary="fmeasure",
                          statistics=STATISTICS,
                          reference_rule=str(options["multi_reference"]),
                          has_reference_index=True)

    def signature_fields(self, options: Mapping[str, Any]) -> dict[str, str]:
        """``tok``, ``stem``, ``case``, ``ref``; ``split:punct``; ``maxtok`` when texts are cut.

        With ``--language``: ``tok:xlsum`` followed by ``lang``, ``seg`` (and ``lsum``),
        see :func:`language_signature_fields`.

        With tokenizer ``rouge155``: the ROUGE-1.5.5 fields instead
        (:meth:`pipeline.metrics.rouge155.family.Rouge155Options.signature_fields`).
        """
        if options["tokenizer"] == "rouge155":
            return rouge155.Rouge155Options.from_mapping(options).signature_fields()
        fields = {"tok": str(options["tokenizer"]), "stem": str(options["stemmer"]),
                  "case": "mixed" if options["case_sensitive"] else "lc",
                  "ref": str(options["multi_reference"])}
        if options.get("language"):  # tok:xlsum, then the language fields
            fields = {"tok": "xlsum", **language_signature_fields(options),
                      **{k: v for k, v in fields.items() if k != "tok"}}
        if options["sentence_split"] == "punctuation":
            fields["split"] = "punct"
        if options.get("max_tokens") is not None:
            fields["maxtok"] = str(options["max_tokens"])
        return fields

    def input_columns(self, options: Mapping[str, Any]) -> tuple[str, ...]:
        """The predictions columns ``score`` reads: the ``column:COL`` of ``--language``."""
        column = languages.language_column(options.get("language"))
        return (column,) if column else ()

    def score(self, predictions: Sequence[str | None] | Any,
              references: Sequence[Sequence[str | None]] | Any, metrics: Sequence[str],
              options: Mapping[str, Any], *,
              columns: Mapping[str, Sequence[Any]] | None = None) -> FamilyScores:
        """Score ROUGE metrics; texts over ``options["max_tokens"]`` tokens are cut.

        ``predictions`` and ``references`` may be Python lists or Arrow arrays (a string
        array and a list<string> array).

        Each prediction is tokenized once and each reference once, whatever the number of
        references and metrics. Warns :class:`ZeroTokenWarning` when texts with visible
        characters yield no token and :class:`SentenceSplitWarning` when rougeLsum meets
        several sentences on one line (both also counted in ``counts``).

        With ``options["language"]``, texts are tokenized by XL-Sum's per-language
        tokenizer (:func:`score_languages`); ``columns`` holds the per-row language column
        when it is ``column:COL``; ``auto`` detects each example's language from its texts.
        """
        if options["tokenizer"] == "rouge155":
            return rouge155.FAMILY.score(text_list(predictions), reference_lists(references),
                                         metrics, options)
        if options.get("language"):
            return score_languages(text_list(predictions), reference_lists(references),
                                   metrics, options, columns=columns)
        tokenizer = get_tokenizer(options["tokenizer"], case_sensitive=options["case_sensitive"])
        codes = np.array([_code(m) for m in metrics], dtype=np.int64)
        one_line = 0
        texts: Sequence[str | None] | pa.Array | pa.ChunkedArray
        if isinstance(predictions, pa.Array | pa.ChunkedArray) \
                and isinstance(references, pa.Array | pa.ChunkedArray):
            if tokenizer.reads_bytes and options["sentence_split"] == "newline":
                n_refs, flat = _flatten_arrow(references)
                # two chunks, tokenized where they lie (not copied together)
                texts = pa.chunked_array([_large_strings(predictions), flat])
                n = len(predictions)
            else:
                predictions = text_list(predictions)
                references = reference_lists(references)
        if not isinstance(predictions, pa.Array | pa.ChunkedArray):
            n = len(predictions)
            n_refs = np.fromiter((len(r) for r in references), dtype=np.int64, count=n)
            texts = list(predictions) + [t for r in references for t in r]
            if ROUGE_LSUM in codes:
                if options["sentence_split"] == "punctuation":
                    texts = [_SENTENCE_END.sub("\n", t) if t else t for t in texts]
                else:
                    one_line = sum(1 for t in texts
                                   if t and "\n" not in t and _SEVERAL_SENTENCES.search(t))
        batch = tokenize_batch(texts, tokenizer=tokenizer, stemmer=options["stemmer"])
        if isinstance(texts, pa.ChunkedArray) and ROUGE_LSUM in codes:
            one_line = _count_one_line(texts, np.diff(batch.text_line_offsets))
        if one_line:
            warnings.warn(
                f"{one_line} {'text has' if one_line == 1 else 'texts have'} several "
                "sentences but no newline: rougeLsum "
                "splits sentences on '\\n' only, so for them it equals rougeL (put one "
                "sentence per line, or use sentence_split='punctuation')",
                SentenceSplitWarning, stacklevel=3)
        truncated = None
        max_tokens = options.get("max_tokens")
        if max_tokens is not None:
            batch, cut = batch.truncated_to(max_tokens)
            example_of_text = np.concatenate([np.arange(n), np.repeat(np.arange(n), n_refs)])
            truncated = np.zeros(n, dtype=bool)
            truncated[example_of_text[cut]] = True
        if batch.n_zero_token_texts:
            hint = (" (for text not in Latin script: language='LANG', XL-Sum's per-language "
                    "tokenizer, or tokenizer='unicode')" if options["tokenizer"] != "unicode"
                    else "")
            warnings.warn(f"{batch.n_zero_token_texts} non-empty texts produced no tokens "
                          f"with tokenizer {options['tokenizer']!r}{_scripts(texts, batch)}{hint}",
                          ZeroTokenWarning, stacklevel=3)
        pair_pred = np.repeat(np.arange(n, dtype=np.int64), n_refs)
        pair_ref = np.arange(n, len(texts), dtype=np.int64)
        stats = kernel("score_pairs")(batch.tokens, batch.line_offsets, batch.text_line_offsets,
                            pair_pred, pair_ref, codes, batch.vocab_size)
        combined = combine_references(stats, n_refs, rule=options["multi_reference"])
        scored: dict[str, np.ndarray] = {}
        for k, m in enumerate(metrics):
            for x in (*MEASURES, *(s for s, _ in STATISTICS), "reference_index"):
                scored[f"{m}_{x}"] = combined[x][:, k]
        return FamilyScores(scored, truncated,
                            {"zero_token_texts": batch.n_zero_token_texts,
                             "one_line_multi_sentence_texts": one_line})


def _scripts(texts: Sequence[str | None] | pa.Array | pa.ChunkedArray, batch: Any) -> str:
    """`` (scripts: CYRILLIC, CJK)``: the scripts of the texts that produced no token.

    Only for the warning's text: the first letter's script of each text without a token
    (at most 1,000 of them are looked at).
    """
    from pipeline.tokenizers.scripts import letter_script

    zero = np.flatnonzero(batch.text_token_counts() == 0)[:1000]
    if isinstance(texts, pa.Array | pa.ChunkedArray):
        chosen = _take(texts, zero).to_pylist()
    else:
        chosen = [texts[i] for i in zero.tolist()]
    found: dict[str, None] = {}
    for t in chosen:
        if t and not t.isascii():
            script = letter_script(t)
            if script and script != "LATIN":
                found.setdefault(script)
    return f" (scripts: {', '.join(found)})" if found else ""


def language_signature_fields(options: Mapping[str, Any]) -> dict[str, str]:
    """``lang`` (the language, ``column:COL`` or ``auto``), ``seg`` (package versions), ``lsum``.

    ``seg`` lists the versions of the segmenter, OpenNMT Tokenizer and stemmer packages the
    tokens depend on (jieba, pythainlp and UniDic dictionaries change between versions);
    ``lsum:xlsum`` marks XL-Sum's own rougeLsum.
    """
    from pipeline.tokenizers.multilingual import canonical_language, signature_versions

    language = str(options["language"])
    column = languages.language_column(language)
    stem = options.get("stemmer") == "language"
    dictionary = str(options.get("japanese_dictionary", "unidic-lite"))
    per_row = column is not None or languages.is_auto(language)
    fields = {"lang": language if per_row else canonical_language(language),
              "seg": signature_versions(None if per_row else language, stem=stem,
                                        japanese_dictionary=dictionary)}
    if options.get("xlsum_rougelsum"):
        fields["lsum"] = "xlsum"
    return fields


def score_languages(predictions: Sequence[str | None],
                    references: Sequence[Sequence[str | None]], metrics: Sequence[str],
                    options: Mapping[str, Any], *,
                    columns: Mapping[str, Sequence[Any]] | None = None) -> FamilyScores:
    """ROUGE under XL-Sum's per-language tokenizers (see :mod:`pipeline.metrics.rouge.languages`).

    Args:
        predictions: N texts.
        references: N lists of reference texts.
        metrics: rouge names, in output order.
        options: the flat scoring options, ``language`` set.
        columns: the per-row language column when ``language`` is ``column:COL``.

    Returns:
        As :meth:`Rouge.score`; ``zero_token_texts`` counts texts with visible characters
        and no token (in the whole-text view, or in the rougeLsum view when only rougeLsum
        is asked); with ``column:COL``, ``unnamed_language:NAME`` counts the rows of each
        value that is not a named language (:func:`languages.unnamed_counts`).

    Warns:
        UnnamedLanguageWarning: ``language`` (or a ``column:COL`` value) is not a named
            language, so it is scored with the fallback tokenizer (the CLI says it instead).
        ZeroTokenWarning: non-empty texts without a token.

    Raises:
        ConfigError: a missing extra, or an empty per-row language.

    """
    n = len(predictions)
    column = languages.language_column(options.get("language"))
    row_languages = None if column is None else list((columns or {}).get(column, []))
    if languages.is_auto(options.get("language")):
        row_languages = languages.detected_languages(predictions, references)
    per_example = languages.tokenizers_for(options, n, row_languages)
    counts = {"zero_token_texts_language": 0}
    if column is not None and row_languages is not None:
        counts.update(languages.unnamed_counts(row_languages))
    prefix = languages.UNNAMED_PREFIX
    unnamed = {k[len(prefix):]: v for k, v in counts.items() if k.startswith(prefix)}
    for note in languages.fallback_notes(options, {"unnamed_languages": unnamed}):
        warnings.warn(note, UnnamedLanguageWarning, stacklevel=3)
    n_refs = np.fromiter((len(r) for r in references), dtype=np.int64, count=n)
    texts = list(predictions) + [t for r in references for t in r]
    tokenizers = per_example + [tok for tok, k in zip(per_example, n_refs.tolist(), strict=True)
                                for _ in range(k)]
    codes = np.array([_code(m) for m in metrics], dtype=np.int64)
    whole_codes = [k for k, c in enumerate(codes.tolist()) if c != ROUGE_LSUM]
    lsum_codes = [k for k, c in enumerate(codes.tolist()) if c == ROUGE_LSUM]
    pair_pred = np.repeat(np.arange(n, dtype=np.int64), n_refs)
    pair_ref = np.arange(n, len(texts), dtype=np.int64)
    stats = np.zeros((len(pair_pred), len(metrics), 3), dtype=np.int64)
    max_tokens = options.get("max_tokens")
    example_of_text = np.concatenate([np.arange(n), np.repeat(np.arange(n), n_refs)])
    truncated = np.zeros(n, dtype=bool) if max_tokens is not None else None
    zero = 0
    views = []
    if whole_codes:
        views.append((whole_codes, languages.tokenized(texts, tokenizers, lines=False,
                                                       xlsum=False, punctuation=False)))
    if lsum_codes:
        views.append((lsum_codes, languages.tokenized(
            texts, tokenizers, lines=True, xlsum=bool(options.get("xlsum_rougelsum")),
            punctuation=options["sentence_split"] == "punctuation")))
    for k, (which, batch) in enumerate(views):
        if k == 0:
            zero = batch.n_zero_token_texts
        if max_tokens is not None and truncated is not None:
            batch, cut = batch.truncated_to(max_tokens)
            truncated[example_of_text[cut]] = True
        stats[:, which, :] = kernel("score_pairs")(
            batch.tokens, batch.line_offsets, batch.text_line_offsets, pair_pred, pair_ref,
            codes[which], batch.vocab_size)
    if zero:
        warnings.warn(f"{zero} non-empty texts produced no tokens with language "
                      f"{options['language']!r}", ZeroTokenWarning, stacklevel=3)
    combined = combine_references(stats, n_refs, rule=options["multi_reference"])
    out: dict[str, np.ndarray] = {}
    for k, m in enumerate(metrics):
        for x in (*MEASURES, *(s for s, _ in STATISTICS), "reference_index"):
            out[f"{m}_{x}"] = combined[x][:, k]
    counts["zero_token_texts_language"] = zero
    return FamilyScores(out, truncated, counts)


def _large_strings(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    return texts if texts.type == pa.large_string() else pc.cast(texts, pa.large_string())


def _flatten_arrow(references: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """References per example (int64, N) and the reference texts in order (large_string)."""
    if isinstance(references, pa.ChunkedArray):
        references = references.combine_chunks()
    lists = references.fill_null([]) if references.null_count else references
    offsets = to_numpy(lists.offsets, np.int64)
    return np.diff(offsets), _large_strings(lists.values[offsets[0]:offsets[-1]])


# Python's \s in a str pattern (str.isspace()), spelled out for RE2, whose \s is ASCII only.
_SPACE_CLASS = SPACE_CLASS_RE2
_SEVERAL_SENTENCES_RE2 = f"[.!?][{_SPACE_CLASS}]+[^{_SPACE_CLASS}]"


def _count_one_line(texts: pa.Array | pa.ChunkedArray,
                    lines_per_text: np.ndarray | None = None) -> int:
    """Texts with several sentences but no newline (``_SEVERAL_SENTENCES`` on Arrow).

    Args:
        texts: N texts (an Arrow string array, or chunked).
        lines_per_text: the texts' newlines plus one, shape (N,) (a tokenized batch's
            ``np.diff(text_line_offsets)``); when given, only one-line texts are searched.
    """
    if lines_per_text is not None:
        one_line = np.flatnonzero(lines_per_text == 1)
        if not len(one_line):
            return 0
        if len(one_line) < len(texts):
            texts = _take(texts, one_line)
        # one line each: no newline to look for
        several = pc.match_substring_regex(texts, _SEVERAL_SENTENCES_RE2)
    else:
        several = pc.and_(pc.match_substring_regex(texts, _SEVERAL_SENTENCES_RE2),
                          pc.invert(pc.match_substring(texts, "\n")))
    return int(pc.sum(pc.fill_null(several, scalar(False, pa.bool_()))).as_py() or 0)


def _take(texts: pa.Array | pa.ChunkedArray, rows: np.ndarray) -> pa.Array | pa.ChunkedArray:
    """``texts.take(rows)`` (rows increasing), a chunked array taken from chunk by chunk.

    Arrow's take on a chunked array joins the chunks into one array first, copying every
    text's bytes, where only the rows taken are needed.
    """
    if not isinstance(texts, pa.ChunkedArray):
        return texts.take(from_numpy(rows))
    taken = []
    start = 0
    for chunk in texts.chunks:
        first, last = np.searchsorted(rows, [start, start + len(chunk)])
        if last > first:
            taken.append(chunk.take(from_numpy(rows[first:last] - start)))
        start += len(chunk)
    return pa.chunked_array(taken, type=texts.type)


def _measures(stats: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision, recall and fmeasure of (matches, prediction units, reference units)."""
    precision = ratio(stats[..., 0], stats[..., 1])
    recall = ratio(stats[..., 0], stats[..., 2])
    return precision, recall, fmeasure(precision, recall)


def combine_references(
    stats: np.ndarray, n_refs: np.ndarray, *, rule: str
) -> dict[str, np.ndarray]:
    """Apply a multi-reference rule to per-pair ROUGE statistics.

    The rules are :func:`pipeline.metrics.multi_reference.combine_references`'s, with
    rouge-score's precision, recall and fmeasure.

    Args:
        stats: int64, shape (P, K, 3): matches, prediction units, reference units per pair and
            metric, pairs grouped by example in order.
        n_refs: int64, shape (N,), references per example, summing to P.
        rule: one of ``MULTI_REFERENCE_RULES``: ``max`` (rouge-score ``score_multi``: the
            reference with the highest fmeasure, first on ties), ``best-recall`` (ROUGE-1.5.5
            ``-f B``: the highest recall, first on ties), ``pooled`` (ROUGE-1.5.5 ``-f A``:
            statistics summed over references, prediction units once per reference) or
            ``mean`` (mean P, R and F over references).

    Returns:
        Arrays of shape (N, K): ``precision``, ``recall``, ``fmeasure`` (float64),
        ``matches``, ``prediction_units``, ``reference_units`` (int64) and
        ``reference_index`` (int32). For ``max`` and ``best-recall`` the statistics are the
        chosen reference's; for ``pooled`` and ``mean`` they are sums over references
        (prediction units once per reference) and ``reference_index`` is -1. Examples
        without references score 0 with index -1.

    Raises:
        ConfigError: an unknown rule.

    """
    out = multi_reference.combine_references(stats, n_refs, rule=rule, measures=_measures)
    summed = out.pop("stats")
    return {**out, "matches": summed[..., 0], "prediction_units": summed[..., 1],
            "reference_units": summed[..., 2]}


FAMILY = Rouge()

__all__ = ["FAMILY", "MULTI_REFERENCE_RULES", "NAMES", "SENTENCE_SPLITS", "Rouge",
           "SentenceSplitWarning", "UnnamedLanguageWarning", "ZeroTokenWarning",
           "combine_references", "fmeasure", "ratio"]
