"""ROUGE with XL-Sum's per-language tokenizers (``--language``), on the unchanged scorer.

The tokenizer object (:class:`pipeline.tokenizers.multilingual.LanguageTokenizer`) turns
texts into token strings; this module turns those into the integer-id batches the compiled
ROUGE kernel reads, and the kernel computes the same statistics as for every other
tokenizer. Two views of each text are needed, since a segmenter is not line-additive (jieba
and pythainlp return ``' '`` tokens at line breaks, a fallback may trigger for one line
only):

- rouge1..rouge9 and rougeL: the whole text through the full pipeline (one "line");
- rougeLsum: each non-empty line (rouge-score's ``get_sents``) through the full pipeline,
  or, with ``xlsum_rougelsum``, through XL-Sum's own line tokenization (no segmenter).

Definition: rouge-score 0.1.2's arithmetic with XL-Sum's tokenizer handed to it
(csebuetnlp/xl-sum ``multilingual_rouge_scoring``; PyPI ``multilingual-rouge==0.0.1``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.errors import ConfigError
from pipeline.tokenizers.rouge_score import TokenizedBatch

# The segmenters' module (and importlib.resources under it) is imported where a language
# is asked for: a run without --language does not load it.
if TYPE_CHECKING:
    from pipeline.tokenizers.multilingual import LanguageTokenizer

COLUMN_PREFIX = "column:"
# FamilyScores.counts key prefix: rows whose column:COL language is not a named language
UNNAMED_PREFIX = "unnamed_language:"
# sentence_split="punctuation": as the family's (a break after . ! ? and white space)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def language_column(language: str | None) -> str | None:
    """The predictions column named by ``column:COL``, else None."""
    if language and language.startswith(COLUMN_PREFIX):
        return language[len(COLUMN_PREFIX):]
    return None


def is_auto(language: str | None) -> bool:
    """Whether ``language`` is ``auto``: each example's segmenter picked by its script."""
    if not language:
        return False
    from pipeline.tokenizers.multilingual import AUTO

    return language == AUTO


def detected_languages(predictions: Sequence[str | None],
                       references: Sequence[Sequence[str | None]]) -> list[str]:
    """Each example's language under ``--language auto`` (:func:`detect_language`).

    Args:
        predictions: N texts.
        references: N lists of reference texts.

    Returns:
        N names, each one of ``chinese``, ``japanese``, ``thai``, ``burmese`` or ``other``
        (the fallback tokenizer).
    """
    from pipeline.tokenizers.multilingual import detect_language

    return [detect_language([p, *rs]) for p, rs in zip(predictions, references, strict=True)]


def dictionary_unread(options: Mapping[str, Any]) -> bool:
    """Tell whether a ``japanese_dictionary`` other than the default goes unread.

    True when ``language`` is one fixed language other than japanese (an alias counts as
    its language; ``auto`` and ``column:COL`` may meet Japanese rows, so they read it).
    """
    language = options.get("language")
    if str(options.get("japanese_dictionary", "unidic-lite")) == "unidic-lite" \
            or not language or is_auto(language) or language_column(language) is not None \
            or not str(language).strip():
        return False
    from pipeline.tokenizers.multilingual import canonical_language

    return canonical_language(str(language)) != "japanese"


def check_options(options: Mapping[str, Any]) -> None:
    """Refuse combinations ``--language`` does not have; check the extra is installed.

    Raises:
        ConfigError: ``stemmer language``, ``xlsum_rougelsum`` or a ``japanese_dictionary``
            other than the default without a language; such a ``japanese_dictionary`` with
            one fixed language other than japanese; ``stemmer language`` with ``auto``;
            a language with another tokenizer, the Porter stemmer or case kept; an empty
            or blank language name; an empty column name; a missing ``multilingual`` extra.
    """
    language = options.get("language")
    if language is not None and not str(language).strip():
        raise ConfigError(f"--language needs a language name, not {language!r} (config key "
                          "language)", hint="e.g. --language chinese, auto or column:lang; "
                          "drop it for rouge-score's tokenizer")
    if not language:
        if options.get("stemmer") == "language":
            raise ConfigError("stemmer 'language' needs --language (config key language)",
                              hint="e.g. --language russian --stemmer language")
        if options.get("xlsum_rougelsum"):
            raise ConfigError("xlsum_rougelsum needs --language (config key language)")
        if options.get("japanese_dictionary", "unidic-lite") != "unidic-lite":
            raise ConfigError("japanese_dictionary needs --language (config key language)")
        return
    from pipeline.tokenizers.multilingual import check_installed, check_language

    if options.get("tokenizer", "rouge-score") != "rouge-score":
        raise ConfigError(f"--language sets the ROUGE tokenizer; it cannot be combined with "
                          f"tokenizer {options['tokenizer']!r}", hint="drop --tokenizer")
    if options.get("stemmer") not in ("none", "language"):
        raise ConfigError(f"with --language the stemmer is none or language, not "
                          f"{options['stemmer']!r}", hint="--stemmer language")
    if options.get("case_sensitive"):
        raise ConfigError("--language lower-cases as XL-Sum does; it cannot keep case",
                          hint="drop --case-sensitive")
    column = language_column(language)
    stem = options.get("stemmer") == "language"
    dictionary = str(options.get("japanese_dictionary", "unidic-lite"))
    if dictionary_unread(options):
        raise ConfigError(f"japanese_dictionary {dictionary!r} is read under --language "
                          f"japanese only: language {language!r} never reads it",
                          hint="drop --japanese-dictionary, or use --language japanese, "
                               "auto or column:COL")
    if is_auto(language):
        if stem:
            raise ConfigError("--language auto detects the script, not the language, so it "
                              "has no stemmer", hint="--stemmer none, or --language "
                              "column:COL with each row's language")
        check_installed("english", stem=False)
        return
    if column is not None:
        if not column:
            raise ConfigError("--language column: needs a column name, e.g. column:lang")
        check_installed("english", stem=False)
        return
    check_installed(check_language(str(language)), stem=stem, japanese_dictionary=dictionary)


def tokenizers_for(options: Mapping[str, Any], n: int,
                   languages: Sequence[str | None] | None) -> list[LanguageTokenizer]:
    """The tokenizer of each of ``n`` examples (one shared object per distinct language).

    Args:
        options: the flat scoring options (``language``, ``stemmer``, ``japanese_dictionary``).
        n: the number of examples.
        languages: each example's language, when ``language`` is ``column:COL`` (the
            column's values) or ``auto`` (:func:`detected_languages`).

    Raises:
        ConfigError: a per-row language that is empty or null, or a missing extra.
    """
    from pipeline.tokenizers.multilingual import AUTO, get_language_tokenizer

    stem = options.get("stemmer") == "language"
    dictionary = str(options.get("japanese_dictionary", "unidic-lite"))
    column = language_column(options.get("language"))
    if is_auto(options.get("language")):
        column = AUTO
    if column is None:
        one = get_language_tokenizer(str(options["language"]), stem=stem,
                                     japanese_dictionary=dictionary)
        return [one] * n
    if languages is None or len(languages) != n:
        raise ConfigError(f"--language column:{column} needs the predictions column "
                          f"{column!r}")
    built: dict[str, LanguageTokenizer] = {}
    out = []
    for value in languages:
        if not value:
            raise ConfigError(f"predictions: column {column!r} has an empty or null "
                              "language", hint="give every row a language name")
        tok = built.get(value)
        if tok is None:
            tok = built[value] = get_language_tokenizer(value, stem=stem,
                                                        japanese_dictionary=dictionary)
        out.append(tok)
    return out


def unnamed_counts(values: Sequence[str | None]) -> dict[str, int]:
    """Rows per distinct language value that is not a named language (the fallback is used).

    Args:
        values: each row's language (a ``column:COL`` column); empty values are not counted.

    Returns:
        ``{"unnamed_language:NAME": rows}`` for each such NAME (summed over partitions like
        every count, then gathered under the manifest's ``counts.unnamed_languages``).
    """
    from pipeline.tokenizers.multilingual import is_named_language

    out: dict[str, int] = {}
    named: dict[str, bool] = {}
    for value in values:
        if not value:
            continue
        ok = named.get(value)
        if ok is None:
            ok = named[value] = is_named_language(value)
        if not ok:
            key = UNNAMED_PREFIX + value
            out[key] = out.get(key, 0) + 1
    return out


def fallback_notes(config: Mapping[str, Any],
                   counts: Mapping[str, Any] | None = None) -> list[str]:
    """Notes on language names scored with XL-Sum's fallback tokenizer (a typo, ``zh``...).

    Any name is accepted (XL-Sum's behaviour), so a typo (``chinse``), a capital
    (``Chinese``) or an ISO code (``zh``) changes the scores without an error.

    Args:
        config: a run's settings (its manifest's ``config``; ``language`` is read).
        counts: its manifest's ``counts``; ``unnamed_languages`` maps each ``column:COL``
            value that falls back to its rows.

    Returns:
        One line for ``--language NAME`` when NAME falls back, one per such column value
        (:func:`pipeline.tokenizers.multilingual.unnamed_language_note`); empty otherwise.
    """
    language = config.get("language")
    if not language and not (counts or {}).get("unnamed_languages"):
        return []
    from pipeline.tokenizers.multilingual import unnamed_language_note

    notes = []
    if language and not is_auto(language) and language_column(language) is None:
        notes.append(unnamed_language_note(str(language)))
    column = language_column(language)
    for name, n in ((counts or {}).get("unnamed_languages") or {}).items():
        notes.append(unnamed_language_note(
            name, where=f"(column {column!r}, {n} {'row' if n == 1 else 'rows'})"))
    return [note for note in notes if note]


def _id_batch(id_lists: Sequence[Sequence[list[int]]], vocab_size: int,
              n_zero: int) -> TokenizedBatch:
    """The batch of texts given as lists of lines of token ids."""
    text_line_offsets = np.zeros(len(id_lists) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, id_lists), dtype=np.int64, count=len(id_lists)),
              out=text_line_offsets[1:])
    flat_lines = list(chain.from_iterable(id_lists))
    line_offsets = np.zeros(len(flat_lines) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, flat_lines), dtype=np.int64, count=len(flat_lines)),
              out=line_offsets[1:])
    ids = np.fromiter(chain.from_iterable(flat_lines), dtype=np.int32,
                      count=int(line_offsets[-1]))
    return TokenizedBatch(ids, line_offsets, text_line_offsets, max(vocab_size, 1), n_zero)


def sentences(text: str | None, *, punctuation: bool) -> list[str]:
    """rouge-score's ``get_sents``: the non-empty lines (after punctuation splitting)."""
    if not text:
        return []
    if punctuation:
        text = _SENTENCE_END.sub("\n", text)
    if "\n" not in text:
        return [text]
    return [line for line in text.split("\n") if line]


def line_tokens(tok: LanguageTokenizer, text: str | None, *, xlsum: bool,
                punctuation: bool) -> list[list[str]]:
    """A text's rougeLsum view: the tokens of each of its sentences."""
    split: Callable[[str], list[str]] = tok.tokenize_xlsum_line if xlsum else tok.tokenize
    return [split(s) for s in sentences(text, punctuation=punctuation)]


def has_letters(text: str | None) -> bool:
    """True when the text has a character that is not white space (the zero-token test)."""
    return bool(text) and not text.isspace()  # type: ignore[union-attr]


def tokenized(texts: Sequence[str | None], tokenizers: Sequence[LanguageTokenizer], *,
              lines: bool, xlsum: bool, punctuation: bool) -> TokenizedBatch:
    """The id batch of texts under their tokenizers.

    Args:
        texts: T texts (None is empty).
        tokenizers: T tokenizers, one per text.
        lines: the rougeLsum view (a line per sentence) instead of the whole text.
        xlsum: with ``lines``, XL-Sum's own line tokenization.
        punctuation: with ``lines``, also break sentences after . ! ? (``sentence_split``).

    Returns:
        A :class:`TokenizedBatch`; ``n_zero_token_texts`` counts the texts with a visible
        character but no token.
    """
    # each tokenizer numbers its own stems (an example has one tokenizer), and the batch
    # keeps the numbering it starts with to its end
    numbering = {tok: tok.start_batch() for tok in dict.fromkeys(tokenizers)}
    numberings = [numbering[tok] for tok in tokenizers]
    if lines:
        views = [[(n.xlsum_line_ids if xlsum else n.token_ids)(s)
                  for s in sentences(t, punctuation=punctuation)]
                 for t, n in zip(texts, numberings, strict=True)]
        zero = sum(1 for t, v in zip(texts, views, strict=True)
                   if not any(v) and has_letters(t))
    else:
        views = [[n.token_ids(t)] for t, n in zip(texts, numberings, strict=True)]
        zero = sum(1 for t, v in zip(texts, views, strict=True)
                   if not v[0] and has_letters(t))
    size = max((n.vocab_size for n in numbering.values()), default=0)
    return _id_batch(views, size, zero)


__all__ = ["COLUMN_PREFIX", "UNNAMED_PREFIX", "check_options", "detected_languages",
           "dictionary_unread",
           "fallback_notes", "has_letters", "is_auto",
           "language_column", "line_tokens", "sentences", "tokenized", "tokenizers_for",
           "unnamed_counts"]
