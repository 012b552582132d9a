"""sacrebleu's BLEU tokenizers and chrF's word splitting, on a batch.

Each rule gives exactly the tokens that sacrebleu 2.x produces for one line (its tokenizer's
output split on white space): ``13a`` (mteval-v13a, sacrebleu's default), ``intl``
(mteval-v14 international: Unicode punctuation and symbols, with the ``regex`` package's
character classes), ``zh`` (each CJK character a token, then 13a's rules), ``char`` (every
non-space character a token), ``none`` (split on white space). ``chrf-words`` is not a BLEU
tokenizer: it is how sacrebleu's chrF++ splits words (white space, then one punctuation
character off the end, else off the start, of each word of two or more characters).
``ja-mecab`` and ``ko-mecab`` run MeCab first (:mod:`pipeline.tokenizers.mecab`, imported on
first use: the extras ``bleu-ja`` and ``bleu-ko``), then split its output on white space.

A batch is tokenized at once: the texts become one array of code points, a compiled kernel
applies the rule's substitutions (the same left-to-right rewriting as sacrebleu's regular
expressions), splits on white space (Python's ``str.split``) and interns every token into an
integer id shared by the whole batch. Metrics only ever see those ids.

Source: sacrebleu 2.x ``tokenizers/tokenizer_13a.py``, ``tokenizer_re.py``,
``tokenizer_intl.py``, ``tokenizer_zh.py``, ``tokenizer_char.py``, ``tokenizer_none.py``
and ``metrics/chrf.py`` (``_remove_punctuation``); Post (2018), "A Call for Clarity in
Reporting BLEU Scores".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.compiled import kernel, lazy_njit
from pipeline.errors import ConfigError, did_you_mean

MT_TOKENIZERS = ("13a", "intl", "zh", "char", "none", "ja-mecab", "ko-mecab")
_MODES = {"none": 0, "char": 1, "13a": 2, "zh": 3, "intl": 4, "chrf-words": 5, "ja-mecab": 0,
          "ko-mecab": 0}

_N_CODE_POINTS = 0x110000
# flags of _FLAGS (one byte per code point)
_SPACE = 1  # Python's str.split() white space (str.isspace)
_SPLIT_13A = 2  # 13a's first rule: ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 "
_DIGIT = 4  # [0-9]
_DOT_COMMA = 8  # [\.,]
_DASH = 16  # -
_CJK = 32  # sacrebleu's TokenizerZh._is_chinese_char
_PUNCT_CHRF = 64  # chrF's _PUNCTS (string.punctuation)
# flags of _INTL (the regex package's classes, filled in lazily for the code points seen)
_N, _P, _S, _KNOWN = 1, 2, 4, 8

# sacrebleu's zh ranges as its string comparisons actually behave: two of its bounds are
# written '\u20000', '\u2a6d6', '\u2f800', '\u2fa1d', i.e. a BMP character followed by a
# digit or letter, so those two ranges are U+2001..U+2A6D and U+2F81..U+2FA1.
_CJK_RANGES = (
    (0x3400, 0x4DB5), (0x4E00, 0x9FA5), (0x9FA6, 0x9FBB), (0xF900, 0xFA2D), (0xFA30, 0xFA6A),
    (0xFA70, 0xFAD9), (0x2001, 0x2A6D), (0x2F81, 0x2FA1), (0xFF00, 0xFFEF), (0x2E80, 0x2EFF),
    (0x3000, 0x303F), (0x31C0, 0x31EF), (0x2F00, 0x2FDF), (0x2FF0, 0x2FFF), (0x3100, 0x312F),
    (0x31A0, 0x31BF), (0xFE10, 0xFE1F), (0xFE30, 0xFE4F), (0x2600, 0x26FF), (0x2700, 0x27BF),
    (0x3200, 0x32FF), (0x3300, 0x33FF),
)


def _flag_table() -> np.ndarray:
    flags = np.zeros(_N_CODE_POINTS, np.uint8)
    # every white-space character of str.split() is below U+3001 (U+3000 is the last)
    flags[[c for c in range(0x3001) if chr(c).isspace()]] |= _SPACE
    split_13a = [*range(0x7B, 0x7F), *range(0x5B, 0x61), *range(0x20, 0x27),
                 *range(0x28, 0x2C), *range(0x3A, 0x41), 0x2F]
    flags[split_13a] |= _SPLIT_13A
    flags[0x30:0x3A] |= _DIGIT
    flags[[ord("."), ord(",")]] |= _DOT_COMMA
    flags[ord("-")] |= _DASH
    for lo, hi in _CJK_RANGES:
        flags[lo:hi + 1] |= _CJK
    flags[[ord(c) for c in '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~']] |= _PUNCT_CHRF
    return flags


_FLAGS = _flag_table()
_INTL = np.zeros(_N_CODE_POINTS, np.uint8)


def _learn_intl(code_points: np.ndarray) -> None:
    """Record the regex package's \\p{N}, \\p{P}, \\p{S} for code points not yet seen."""
    new = np.unique(code_points)
    new = new[(_INTL[new] & _KNOWN) == 0]
    if new.size == 0:
        return
    import regex

    chars = "".join(map(chr, new.tolist()))
    for flag, pattern in ((_N, r"\p{N}"), (_P, r"\p{P}"), (_S, r"\p{S}")):
        hits = [m.start() for m in regex.finditer(pattern, chars)]
        _INTL[new[hits]] |= flag
    _INTL[new] |= _KNOWN


@dataclass(frozen=True)
class TokenBatch:
    """The tokens of a batch of texts as integer ids.

    Attributes:
        ids: int32 token ids of all texts, concatenated, shape (T,); equal tokens (equal
            strings) have equal ids, 0 <= id < n_types.
        offsets: int64, shape (N + 1,): text i's tokens are ``ids[offsets[i]:offsets[i+1]]``.
        n_types: number of distinct tokens in the batch.
        chars: int32 code points of the distinct tokens, concatenated (for :meth:`strings`).
        type_offsets: int64, shape (n_types + 1,): token type j is
            ``chars[type_offsets[j]:type_offsets[j+1]]``.

    """

    ids: np.ndarray
    offsets: np.ndarray
    n_types: int
    chars: np.ndarray
    type_offsets: np.ndarray

    def strings(self, i: int) -> list[str]:
        """The tokens of text ``i`` as strings (for tests and notebooks)."""
        out = []
        for t in self.ids[self.offsets[i]:self.offsets[i + 1]]:
            cps = self.chars[self.type_offsets[t]:self.type_offsets[t + 1]]
            out.append("".join(map(chr, cps.tolist())))
        return out


def check_tokenizer(name: str) -> str:
    """Validate a BLEU tokenizer name.

    Raises:
        ConfigError: ``name`` is not one of :data:`MT_TOKENIZERS`.

    """
    if name not in MT_TOKENIZERS:
        raise ConfigError(f"unknown BLEU tokenizer {name!r}; choose from "
                          f"{', '.join(MT_TOKENIZERS)}", hint=did_you_mean(name, MT_TOKENIZERS))
    return name


def code_points(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """All texts as one int32 array of code points, and each text's offsets (N + 1,)."""
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = "".join(texts).encode("utf-32-le", "surrogatepass")
    return np.frombuffer(data, np.uint32).astype(np.int32), offsets


def tokenize_mt(texts: Sequence[str], *, tokenizer: str) -> TokenBatch:
    """Tokenize N texts with one rule, interning tokens into ids shared by the batch.

    The texts are taken as the tokenizer receives them: sacrebleu's BLEU first lowercases
    (if asked) and strips trailing white space (``line.rstrip()``); that is the caller's.

    Args:
        texts: N strings (any Unicode; ``"\\n"`` is white space like any other).
        tokenizer: one of :data:`MT_TOKENIZERS`, or ``chrf-words``.

    Returns:
        A :class:`TokenBatch` with the tokens of text i in text order.

    Raises:
        ConfigError: an unknown tokenizer name; for ``ja-mecab``/``ko-mecab`` a missing
            extra.

    """
    if tokenizer not in _MODES:
        check_tokenizer(tokenizer)
    mode = _MODES[tokenizer]
    if tokenizer.endswith("-mecab"):
        from pipeline.tokenizers.mecab import segment

        texts = segment(texts, tokenizer=tokenizer)
    if mode == 2:
        texts = [_prepare_13a(t) for t in texts]
    cps, offsets = code_points(texts)
    if mode == 4:
        _learn_intl(cps)
    ids, tok_offsets, n_types, chars, type_offsets = kernel("mt_tokenize")(
        cps, offsets, mode, _FLAGS, _INTL)
    return TokenBatch(ids, tok_offsets, int(n_types), chars, type_offsets)


def tokenize(text: str, *, tokenizer: str) -> list[str]:
    """Tokens of one text (:func:`tokenize_mt`): sacrebleu's tokenizer output, split."""
    return tokenize_mt([text], tokenizer=tokenizer).strings(0)


def _prepare_13a(line: str) -> str:
    # tokenizer_13a.py's language-independent part (string replacements)
    if "<skipped>" in line:
        line = line.replace("<skipped>", "")
    if "\n" in line:
        line = line.replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = (line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                .replace("&gt;", ">"))
    return line


@lazy_njit(cache=True, nogil=True)
def _split_single(src, n, dst, flags, flag):
    # (X) -> " X " for every character with ``flag``
    m = 0
    for i in range(n):
        c = src[i]
        if flags[c] & flag:
            dst[m] = 32
            dst[m + 1] = c
            dst[m + 2] = 32
            m += 3
        else:
            dst[m] = c
            m += 1
    return m


@lazy_njit(cache=True, nogil=True)
def _split_pair(src, n, dst, flags, flag_a, want_a, flag_b, want_b, space_before):
    # re.sub of a two-character pattern (A)(B), scanning left to right without overlaps:
    # A is "flags & flag_a == want_a", B likewise. space_before: " \1 \2" else "\1 \2 ".
    m = 0
    i = 0
    while i < n:
        if (i + 1 < n and ((flags[src[i]] & flag_a) != 0) == want_a
                and ((flags[src[i + 1]] & flag_b) != 0) == want_b):
            if space_before:
                dst[m] = 32
                m += 1
            dst[m] = src[i]
            dst[m + 1] = 32
            dst[m + 2] = src[i + 1]
            m += 3
            if not space_before:
                dst[m] = 32
                m += 1
            i += 2
        else:
            dst[m] = src[i]
            m += 1
            i += 1
    return m


@lazy_njit(cache=True, nogil=True)
def _token_hash(buf, start, end):
    h = np.uint64(1469598103934665603)
    for k in range(start, end):
        h = (h ^ np.uint64(buf[k])) * np.uint64(1099511628211)
    return h ^ (h >> np.uint64(29))


@lazy_njit(cache=True, nogil=True)
def _grow_types(slots, chars, type_offsets, n_types):
    # a table twice the size, every known token re-placed
    slots = np.full(2 * slots.shape[0], -1, np.int32)
    mask = np.uint64(slots.shape[0] - 1)
    for t in range(n_types):
        s = np.int64(_token_hash(chars, type_offsets[t], type_offsets[t + 1]) & mask)
        while slots[s] != -1:
            s = (s + 1) & np.int64(mask)
        slots[s] = t
    return slots


@lazy_njit(cache=True, nogil=True)
def _intern(buf, start, end, slots, chars, type_offsets, n_types, n_chars):
    # id of buf[start:end] in the batch vocabulary, adding it when new; returns
    # (id, n_types, n_chars) after the call. slots: open addressing, at most half full.
    mask = np.uint64(slots.shape[0] - 1)
    s = np.int64(_token_hash(buf, start, end) & mask)
    length = end - start
    while True:
        t = slots[s]
        if t == -1:
            slots[s] = n_types
            for k in range(length):
                chars[n_chars + k] = buf[start + k]
            n_chars += length
            type_offsets[n_types + 1] = n_chars
            return n_types, n_types + 1, n_chars
        a = type_offsets[t]
        if type_offsets[t + 1] - a == length:
            same = True
            for k in range(length):
                if chars[a + k] != buf[start + k]:
                    same = False
                    break
            if same:
                return t, n_types, n_chars
        s = (s + 1) & np.int64(mask)


@lazy_njit(cache=True, nogil=True)
def _fit(buf, size):
    # buf when it holds size values, else a bigger one (contents not kept)
    if buf.shape[0] >= size:
        return buf
    return np.empty(2 * size, np.int32)


@lazy_njit(cache=True, nogil=True)
def _tokenize(cps, offsets, mode, flags, intl):
    n_texts = offsets.shape[0] - 1
    total = cps.shape[0]
    max_len = 0
    for i in range(n_texts):
        max_len = max(max_len, offsets[i + 1] - offsets[i])
    # the rewriting passes only insert spaces: a pass's output is at most 3x (one
    # character) or 2x (two) its input; buffers grow when a text needs it
    buf_a = np.empty(3 * max_len + 64, np.int32)
    buf_b = np.empty(3 * max_len + 64, np.int32)
    ids = np.empty(total + 1, np.int32)
    tok_offsets = np.zeros(n_texts + 1, np.int64)
    slots = np.full(1024, -1, np.int32)  # grows, so that it stays in cache
    chars = np.empty(total + 1, np.int32)
    type_offsets = np.empty(total + 2, np.int64)
    type_offsets[0] = 0
    n_types = 0
    n_chars = 0
    n_tok = 0
    for i in range(n_texts):
        lo = offsets[i]
        hi = offsets[i + 1]
        n = 0
        if mode == 2:  # 13a: f" {line} "
            buf_a[0] = 32
            for k in range(lo, hi):
                buf_a[k - lo + 1] = cps[k]
            n = hi - lo + 2
            buf_a[n - 1] = 32
        elif mode == 3:  # zh: line.strip(), CJK characters spaced out
            while lo < hi and flags[cps[lo]] & _SPACE:
                lo += 1
            while hi > lo and flags[cps[hi - 1]] & _SPACE:
                hi -= 1
            n = _split_single(cps[lo:hi], hi - lo, buf_a, flags, _CJK)
        else:
            for k in range(lo, hi):
                buf_a[k - lo] = cps[k]
            n = hi - lo
        if mode == 2 or mode == 3:  # tokenizer_re.py's four rules
            buf_b = _fit(buf_b, 3 * n)
            n = _split_single(buf_a, n, buf_b, flags, _SPLIT_13A)
            buf_a = _fit(buf_a, 2 * n)
            n = _split_pair(buf_b, n, buf_a, flags, _DIGIT, False, _DOT_COMMA, True, False)
            buf_b = _fit(buf_b, 2 * n)
            n = _split_pair(buf_a, n, buf_b, flags, _DOT_COMMA, True, _DIGIT, False, True)
            buf_a = _fit(buf_a, 2 * n)
            n = _split_pair(buf_b, n, buf_a, flags, _DIGIT, True, _DASH, True, False)
        elif mode == 4:  # intl: (\P{N})(\p{P}) -> "\1 \2 "; (\p{P})(\P{N}) -> " \1 \2"; (\p{S})
            buf_b = _fit(buf_b, 2 * n)
            n = _split_pair(buf_a, n, buf_b, intl, _N, False, _P, True, False)
            buf_a = _fit(buf_a, 2 * n)
            n = _split_pair(buf_b, n, buf_a, intl, _P, True, _N, False, True)
            buf_b = _fit(buf_b, 3 * n)
            n = _split_single(buf_a, n, buf_b, intl, _S)
        src = buf_b if mode == 4 else buf_a
        # split on white space; char: every character; chrf-words: chrF++'s punctuation rule
        k = 0
        while k < n:
            if 2 * (n_types + 2) > slots.shape[0]:
                slots = _grow_types(slots, chars, type_offsets, n_types)
            if flags[src[k]] & _SPACE:
                k += 1
                continue
            e = k
            if mode == 1:
                e = k + 1
            else:
                while e < n and not flags[src[e]] & _SPACE:
                    e += 1
            if mode == 5 and e - k > 1 and flags[src[e - 1]] & _PUNCT_CHRF:
                t, n_types, n_chars = _intern(src, k, e - 1, slots, chars, type_offsets,
                                              n_types, n_chars)
                ids[n_tok] = t
                t, n_types, n_chars = _intern(src, e - 1, e, slots, chars, type_offsets,
                                              n_types, n_chars)
                ids[n_tok + 1] = t
                n_tok += 2
            elif mode == 5 and e - k > 1 and flags[src[k]] & _PUNCT_CHRF:
                t, n_types, n_chars = _intern(src, k, k + 1, slots, chars, type_offsets,
                                              n_types, n_chars)
                ids[n_tok] = t
                t, n_types, n_chars = _intern(src, k + 1, e, slots, chars, type_offsets,
                                              n_types, n_chars)
                ids[n_tok + 1] = t
                n_tok += 2
            else:
                t, n_types, n_chars = _intern(src, k, e, slots, chars, type_offsets,
                                              n_types, n_chars)
                ids[n_tok] = t
                n_tok += 1
            k = e
        tok_offsets[i + 1] = n_tok
    return (ids[:n_tok].copy(), tok_offsets, n_types, chars[:n_chars].copy(),
            type_offsets[:n_types + 1].copy())


__all__ = ["MT_TOKENIZERS", "TokenBatch", "check_tokenizer", "code_points", "tokenize",
           "tokenize_mt"]
