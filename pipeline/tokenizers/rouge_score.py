"""Tokenizers and the Porter stemmer, chosen by name from a registry.

A batch of texts is tokenized in one pass: Python normalizes each text (``str.lower`` and
the like, which Arrow's case mapping does not reproduce exactly), then Arrow's RE2 kernels
split every line of every text at once, and the tokens are dictionary-encoded into integer
ids shared by every text of the batch. The metric kernels only ever see those ids.

Texts are kept as lines (split on ``"\\n"``) because rougeLsum scores them sentence by
sentence; every tokenizer here treats ``"\\n"`` as a token separator, so the tokens of a whole
text are exactly the tokens of its lines concatenated.

Registry (``TOKENIZERS``): ``rouge-score`` (default), ``unicode``, ``whitespace``.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import from_numpy, from_pylist, to_numpy
from pipeline.errors import ConfigError, did_you_mean

# Scripts written without spaces between words: each of their characters is a token under
# the ``unicode`` tokenizer (RE2 script names).
NO_SPACE_SCRIPTS = (
    "Han", "Hiragana", "Katakana", "Thai", "Lao", "Khmer", "Myanmar", "Tibetan",
    "Yi", "Bopomofo", "Tai_Le", "New_Tai_Lue", "Tai_Tham", "Tai_Viet", "Javanese",
    "Balinese",
)
_NO_SPACE_CLASS = "[" + "".join(f"\\p{{{s}}}" for s in NO_SPACE_SCRIPTS) + "]"


@dataclass(frozen=True)
class Tokenizer:
    """A named tokenization rule.

    Attributes:
        name: registry name, also written into the signature.
        case_sensitive: when False (the default) text is lowercased (casefolded for
            ``unicode``) before splitting.
        description: the rule in one sentence, for ``--help`` and the README.

    """

    name: str
    case_sensitive: bool
    description: str
    _normalize: Callable[[str], str]
    _split: Callable[[pa.Array], pa.ListArray]
    _to_bytes: Callable[[str], bytes] | None = None
    _byte_table: np.ndarray | None = None

    @property
    def reads_bytes(self) -> bool:
        """True when texts are tokenized from their UTF-8 bytes by the compiled byte table."""
        return self._to_bytes is not None and self._byte_table is not None

    def normalize(self, text: str) -> str:
        """Return the text as the splitter sees it (case-folded and/or NFKC-normalized)."""
        return self._normalize(text)

    def split_lines(self, lines: pa.Array) -> pa.ListArray:
        """Split normalized lines into tokens (a list per line; may contain empty strings)."""
        return self._split(lines)

    def tokenize(self, text: str) -> list[str]:
        """Tokenize one text into token strings (no stemming); for notebooks and tests.

        Args:
            text: any string; ``"\\n"`` separates tokens like any other separator.

        Returns:
            The tokens in text order.

        """
        lines = from_pylist(self.normalize(text).split("\n"), pa.large_string())
        return [t for line in self.split_lines(lines).to_pylist() for t in line if t]


def _separator_table(keep: bytes) -> bytes:
    # newline (10) ends a line, NUL (0) ends a text; every other unkept byte separates tokens
    return bytes(c if c in keep or c in (0, 10) else 32 for c in range(256))


_KEEP_LOWER = b"abcdefghijklmnopqrstuvwxyz0123456789"
# The only non-ASCII characters whose str.lower() contains ASCII letters or digits
# (checked over all of Unicode): LATIN CAPITAL LETTER I WITH DOT ABOVE -> "i" + U+0307, and
# KELVIN SIGN -> "k". Every other non-ASCII character is a separator for rouge-score.
_LOWER_TO_ASCII = (("\u0130", "i "), ("\u212a", "k"))
# Lowercase: A-Z map to a-z in the same pass; the lead bytes of _LOWER_TO_ASCII's characters
# (C4, E2) are class 31, a separator the compiled tokenizer looks at (bytes_tokens._LEAD).
_TABLE_LOWER = bytes((c + 32) if 65 <= c <= 90
                     else 31 if c in {ch.encode()[0] for ch, _ in _LOWER_TO_ASCII} else b
                     for c, b in enumerate(_separator_table(_KEEP_LOWER)))
_TABLE_MIXED = _separator_table(_KEEP_LOWER + _KEEP_LOWER.upper())
_CLASS_LOWER = np.frombuffer(_TABLE_LOWER, dtype=np.uint8)
_CLASS_MIXED = np.frombuffer(_TABLE_MIXED, dtype=np.uint8)


def _rouge_score_bytes(text: str) -> bytes:
    # Equal to rouge-score's text.lower() then [^a-z0-9] -> separator: non-ASCII characters
    # become separators, ASCII is lowercased by the translation table. Much faster than
    # str.lower() on non-ASCII strings.
    for char, lowered in _LOWER_TO_ASCII:
        if char in text:
            text = text.replace(char, lowered)
    # UTF-8 puts every non-ASCII character in bytes >= 0x80, which the table makes separators
    # (the compiled tokenizer reads every byte through the table).
    return text.encode("utf-8", "surrogatepass")


def _rouge_score_bytes_mixed(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _rouge_score_split(pattern: str) -> Callable[[pa.Array], pa.ListArray]:
    def split(lines: pa.Array) -> pa.ListArray:
        return pc.ascii_split_whitespace(pc.replace_substring_regex(lines, pattern, " "))

    return split


# Python's whitespace (str.isspace(), what str.split() splits on), spelled out for RE2,
# whose \s is ASCII only (tests/tokenizers/test_tokenizers.py checks it over all of Unicode).
SPACE_CLASS_RE2 = (r"\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}"
                   r"\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}")
# Not pc.utf8_split_whitespace: in pyarrow (seen in 26.0.1) it reads past the end of a
# string that ends in white space, and when the byte there is not ASCII it keeps the
# white space as a token (" ") or on the last token ("word "). For the last string of an
# array that byte is outside the data, so the tokens changed from run to run.
_WHITESPACE_RUN = f"[{SPACE_CLASS_RE2}]+"


def _whitespace_split(lines: pa.Array) -> pa.ListArray:
    """Split on runs of Python's white space (with empty strings at the ends, dropped later)."""
    return pc.split_pattern_regex(lines, _WHITESPACE_RUN)


def _unicode_split(lines: pa.Array) -> pa.ListArray:
    spaced = pc.replace_substring_regex(lines, _NO_SPACE_CLASS, r" \0 ")
    # every run of non-word characters is now one " " (see _whitespace_split for why
    # this is not pc.utf8_split_whitespace)
    return pc.split_pattern(
        pc.replace_substring_regex(spaced, r"[^\p{L}\p{M}\p{N}]+", " "), " ")


def _nfkc_casefold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _identity(text: str) -> str:
    return text


def _lower(text: str) -> str:
    return text.lower()


def get_tokenizer(name: str, *, case_sensitive: bool = False) -> Tokenizer:
    """Build a tokenizer from the registry.

    Tokenizers:
        ``rouge-score``: exactly google-research rouge-score 0.1.2 ``tokenize.tokenize``:
            ``str.lower()``, every character outside ``[a-z0-9]`` becomes a separator,
            tokens are the remaining runs of ``[a-z0-9]``. Non-Latin text yields no tokens.
        ``unicode``: NFKC normalization then ``str.casefold()``; tokens are maximal runs of
            Unicode letters, combining marks and digits (``\\p{L}\\p{M}\\p{N}``), except that each
            character of a script written without spaces (Han, Hiragana, Katakana, Thai, Lao,
            Khmer, Myanmar, ...) is a token of its own.
        ``whitespace``: ``str.lower()``, split on Unicode whitespace as ``str.split()`` (punctuation
            stays attached to words).

    Args:
        name: one of ``TOKENIZERS``.
        case_sensitive: keep case (skip lowercasing/casefolding); the ``rouge-score``
            tokenizer then keeps ``[A-Za-z0-9]`` runs.

    Raises:
        ConfigError: unknown name (with a "did you mean" hint).

    """
    if name == "rouge-score":
        if case_sensitive:
            return Tokenizer(name, True, "rouge-score runs of [A-Za-z0-9], case kept",
                             _identity, _rouge_score_split(r"[^A-Za-z0-9]+"),
                             _rouge_score_bytes_mixed, _CLASS_MIXED)
        return Tokenizer(name, False, "rouge-score 0.1.2: lowercase, runs of [a-z0-9]",
                         _lower, _rouge_score_split(r"[^a-z0-9]+"), _rouge_score_bytes,
                         _CLASS_LOWER)
    if name == "unicode":
        return Tokenizer(name, case_sensitive,
                         "NFKC + casefold; runs of letters/marks/digits; CJK/Thai per character",
                         _nfkc if case_sensitive else _nfkc_casefold, _unicode_split)
    if name == "whitespace":
        return Tokenizer(name, case_sensitive, "lowercase, split on whitespace",
                         _identity if case_sensitive else _lower, _whitespace_split)
    raise ConfigError(f"unknown tokenizer {name!r}; choose one of {', '.join(TOKENIZERS)}",
                      hint=did_you_mean(name, TOKENIZERS))


TOKENIZERS = ("rouge-score", "unicode", "whitespace")
STEMMERS = ("none", "porter")

# Stems are memoized across batches: vocabularies are Zipfian, so after the first batches
# almost every token is a hit. Bounded so a worker's memory cannot grow without limit.
_STEM_CACHE: dict[bool, dict[str, str]] = {True: {}, False: {}}
_STEM_CACHE_MAX = 2_000_000
_PORTER = None


def porter_stem(token: str, *, lowercase: bool = True) -> str:
    """Stem one token the way rouge-score 0.1.2 does (``use_stemmer=True``).

    NLTK's ``PorterStemmer()`` in its default ``NLTK_EXTENSIONS`` mode, applied only to
    tokens longer than 3 characters; shorter tokens are returned unchanged (rouge-score
    ``tokenize.tokenize``). Results are memoized.

    Args:
        token: one token.
        lowercase: passed to NLTK's ``stem(to_lowercase=...)``; False for case-sensitive runs.

    """
    cache = _STEM_CACHE[lowercase]
    stem = cache.get(token)
    if stem is None:
        if len(token) <= 3:
            cache[token] = token
            return token
        global _PORTER
        if _PORTER is None:
            from nltk.stem import porter

            _PORTER = porter.PorterStemmer()
        stem = _PORTER.stem(token, to_lowercase=lowercase)
        if len(cache) >= _STEM_CACHE_MAX:
            cache.clear()
        cache[token] = stem
    return stem


def _stem_ids(dictionary: Sequence[str], *, lowercase: bool) -> tuple[np.ndarray, int]:
    """Map each dictionary entry to the id of its stem; returns (remap, number of stems)."""
    cache = _STEM_CACHE[lowercase]
    ids: dict[str, int] = {}
    remap = np.fromiter(
        (ids.setdefault(cache.get(t) or porter_stem(t, lowercase=lowercase), len(ids))
         for t in dictionary), dtype=np.int32, count=len(dictionary))
    return remap, len(ids)


@dataclass(frozen=True)
class TokenizedBatch:
    """Token ids of a batch of texts, kept by line.

    Attributes:
        tokens: int32 token ids, shape (T,), values in ``[0, vocab_size)``; two tokens share an
            id exactly when their (stemmed) strings are equal.
        line_offsets: int64, shape (L + 1,): tokens of line ``l`` are
            ``tokens[line_offsets[l]:line_offsets[l + 1]]``.
        text_line_offsets: int64, shape (N + 1,): lines of text ``i`` are
            ``text_line_offsets[i]`` to ``text_line_offsets[i + 1]``.
        vocab_size: number of distinct ids.
        n_zero_token_texts: texts with a non-whitespace character that produced no token.

    """

    tokens: np.ndarray
    line_offsets: np.ndarray
    text_line_offsets: np.ndarray
    vocab_size: int
    n_zero_token_texts: int

    def text_token_counts(self) -> np.ndarray:
        """Tokens per text, int64 shape (N,)."""
        return np.diff(self.line_offsets[self.text_line_offsets])

    def truncated_to(self, max_tokens: int) -> tuple[TokenizedBatch, np.ndarray]:
        """Cut every text to its first ``max_tokens`` tokens.

        Returns:
            The cut batch (self when nothing is cut) and the indices (int64) of the texts
            that were cut.
        """
        counts = self.text_token_counts()
        cut = np.flatnonzero(counts > max_tokens)
        if not cut.size:
            return self, cut
        starts = self.line_offsets[self.text_line_offsets[:-1]]
        text_of_token = np.repeat(np.arange(len(counts)), counts)
        keep = (np.arange(len(self.tokens)) - starts[text_of_token]) < max_tokens
        kept_before = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(keep, out=kept_before[1:])
        return TokenizedBatch(self.tokens[keep], kept_before[self.line_offsets],
                              self.text_line_offsets, self.vocab_size,
                              self.n_zero_token_texts), cut


def tokenize_batch(
    texts: Sequence[str | None] | pa.Array, *, tokenizer: Tokenizer, stemmer: str = "none"
) -> TokenizedBatch:
    """Tokenize a batch of texts into shared integer ids.

    Args:
        texts: N texts (a list, or an Arrow string array, whose bytes a byte-table tokenizer
            reads in place); None is scored as the empty text.
        tokenizer: from :func:`get_tokenizer`.
        stemmer: ``"none"`` or ``"porter"`` (see :func:`porter_stem`).

    Returns:
        A :class:`TokenizedBatch` over the N texts.

    Raises:
        ConfigError: unknown stemmer.

    """
    if stemmer not in STEMMERS:
        raise ConfigError(f"unknown stemmer {stemmer!r}; choose one of {', '.join(STEMMERS)}",
                          hint=did_you_mean(stemmer, STEMMERS))
    table, to_bytes = tokenizer._byte_table, tokenizer._to_bytes
    split = None
    if isinstance(texts, (pa.Array, pa.ChunkedArray)):
        split = _split_arrow_bytes(texts, table) if table is not None else None
        if split is None:
            texts = texts.to_pylist()
    if split is None:
        split = (_split_bytes(texts, to_bytes, table) if to_bytes is not None and table is not None
                 else _split_arrow(texts, tokenizer))
    ids, line_offsets, text_line_offsets, dictionary = split
    return _tokenized(ids, line_offsets, text_line_offsets, dictionary, texts,
                      tokenizer=tokenizer, stemmer=stemmer)


def _tokenized(ids: np.ndarray, line_offsets: np.ndarray, text_line_offsets: np.ndarray,
               dictionary: Sequence[str], texts: Sequence[str | None] | pa.Array, *,
               tokenizer: Tokenizer, stemmer: str) -> TokenizedBatch:
    """Stem the ids when asked and count the texts that produced no token."""
    if stemmer == "porter" and len(dictionary):
        remap, vocab_size = _stem_ids(dictionary, lowercase=not tokenizer.case_sensitive)
        ids = remap[ids]
    else:
        vocab_size = len(dictionary)

    counts = np.diff(line_offsets[text_line_offsets])
    zero = np.flatnonzero(counts == 0)
    if isinstance(texts, (pa.Array, pa.ChunkedArray)) and len(zero):
        texts = dict(zip(zero.tolist(), texts.take(from_numpy(zero)).to_pylist(), strict=True))
    n_zero = 0
    for i in zero.tolist():
        text = texts[i]
        n_zero += bool(text and not text.isspace())
    return TokenizedBatch(ids, line_offsets, text_line_offsets, vocab_size, n_zero)


def _split_arrow_bytes(texts: pa.Array | pa.ChunkedArray, table: np.ndarray):
    """Tokenize an Arrow string array from its UTF-8 buffer, without Python strings.

    Non-ASCII bytes are separators in every byte table, so the bytes can be read as they
    are (a NUL inside a text is a separator too). A chunked array of two chunks (predictions
    and references) is read from both buffers in place. Returns None when a text holds a
    character whose lowercase is ASCII (``_LOWER_TO_ASCII``), which the table cannot
    lowercase.
    """
    from pipeline.compiled import kernel

    if isinstance(texts, pa.ChunkedArray) and texts.num_chunks == 2:
        data_a, offsets_a = _utf8_buffers(texts.chunk(0))
        data_b, offsets_b = _utf8_buffers(texts.chunk(1))
        split = kernel("tokenize_two")(data_a, offsets_a, data_b, offsets_b, table)
    else:
        if isinstance(texts, pa.ChunkedArray):
            texts = texts.combine_chunks()
        data, offsets = _utf8_buffers(texts)
        split = kernel("tokenize_bytes")(data, offsets, table)
    ids, line_offsets, text_line_offsets, arena, vocab_offsets, lowers_to_ascii = split
    if lowers_to_ascii:
        return None
    return ids, line_offsets, text_line_offsets, _ArenaStrings(arena, vocab_offsets)


def _utf8_buffers(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow string array's UTF-8 bytes (uint8) and its texts' offsets into them (int64).

    Nulls become empty texts; the bytes are the array's own buffer, not copied (a string
    array is cast to large_string first).
    """
    if texts.null_count:
        texts = texts.fill_null("")
    if texts.type != pa.large_string():
        texts = pc.cast(texts, pa.large_string())
    _, offsets_buf, data_buf = texts.buffers()
    if not len(texts) or offsets_buf is None:  # no texts (an empty array may lack offsets)
        return np.zeros(1, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[texts.offset:
                                                         texts.offset + len(texts) + 1]
    data = (np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None and len(data_buf)
            else np.zeros(1, dtype=np.uint8))
    return data, offsets


def _split_bytes(texts: Sequence[str | None], to_bytes: Callable[[str], bytes],
                 table: np.ndarray):
    from pipeline.compiled import kernel

    # One encoding pass over the whole batch, texts joined by NUL (which UTF-8 produces for
    # U+0000 only); per text only if a text contains a NUL itself.
    plain = [t or "" for t in texts]
    raw = to_bytes("\0".join(plain))
    buf = np.frombuffer(raw, dtype=np.uint8)
    nul = np.flatnonzero(buf == 0)
    if len(nul) == max(len(plain) - 1, 0):
        offsets = np.empty(len(plain) + 1, dtype=np.int64)
        offsets[0] = 0
        offsets[1:-1] = nul + 1
        offsets[-1] = len(raw)
    else:
        encoded = [to_bytes(t.replace("\0", " ")) for t in plain]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(e) + 1 for e in encoded), dtype=np.int64,
                              count=len(encoded)), out=offsets[1:])
        offsets[-1] -= 1  # no NUL after the last text
        raw = b"\0".join(encoded)
        buf = np.frombuffer(raw, dtype=np.uint8)
    # _LOWER_TO_ASCII's characters are lowercased by to_bytes: none is left to report
    ids, line_offsets, text_line_offsets, arena, vocab_offsets, _ = kernel("tokenize_bytes")(
        buf, offsets, table)
    return ids, line_offsets, text_line_offsets, _ArenaStrings(arena, vocab_offsets)


class _ArenaStrings(Sequence[str]):
    """The distinct tokens of a byte-tokenized batch, decoded only when asked (stemming)."""

    def __init__(self, arena: np.ndarray, offsets: np.ndarray) -> None:
        self._arena_array, self._offset_array = arena, offsets
        self._len = len(offsets) - 1

    @functools.cached_property
    def _arena(self) -> bytes:
        return self._arena_array.tobytes()

    @functools.cached_property
    def _offsets(self) -> list[int]:
        # made on first use: without stemming the strings are never asked for
        return self._offset_array.tolist()

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        return self._arena[self._offsets[k]:self._offsets[k + 1]].decode("ascii")

    def __iter__(self):
        arena, off = self._arena, self._offsets
        return (arena[off[k]:off[k + 1]].decode("ascii") for k in range(len(off) - 1))


def _split_arrow(texts: Sequence[str | None], tokenizer: Tokenizer):
    normalized = [tokenizer.normalize(t) if t else "" for t in texts]
    try:
        arr = from_pylist(normalized, pa.large_string())
    except (UnicodeEncodeError, pa.ArrowInvalid):
        # Lone surrogates cannot be UTF-8: every tokenizer treats them as separators.
        normalized = [t.encode("utf-8", "replace").decode("utf-8") for t in normalized]
        arr = from_pylist(normalized, pa.large_string())
    lines = pc.split_pattern(arr, "\n")
    text_line_offsets = to_numpy(lines.offsets, np.int64)
    split = tokenizer.split_lines(lines.flatten())
    raw_line_offsets = to_numpy(split.offsets, np.int64)
    flat = split.flatten()
    keep = to_numpy(pc.binary_length(flat), np.int64) > 0
    kept_before = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(keep, out=kept_before[1:])
    line_offsets = kept_before[raw_line_offsets]
    encoded = pc.dictionary_encode(flat.filter(from_numpy(keep)))
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    ids = to_numpy(encoded.indices, np.int32)
    dictionary = encoded.dictionary.to_pylist()
    return ids, line_offsets, text_line_offsets, dictionary
