"""Text handling of the ROUGE-1.5.5 Perl script: lines, length limits, tokens, stopwords, stems.

Everything here reproduces what ``ROUGE-1.5.5.pl`` (Lin 2004; version 1.5.5 of 2005) does to a
summary given in its SPL format (one sentence per line) before it counts anything, odd parts
included, so that the ``rouge155`` metrics equal the script's figures:

* A text is read as UTF-8 **bytes** (the script reads files without a decoding layer): each
  line (split on ``"\\n"``) is lowercased in ASCII only (``A-Z``), and lines of length 0 are
  dropped; a line of spaces is kept.
* Length limits (``-l`` words, ``-b`` bytes) cut the lines before tokenization, counting as
  the script does: words are the fields of Perl's ``split(/\\s+/, line)``, which counts a
  leading empty field when the line starts with white space; bytes are UTF-8 bytes of each
  line, the spaces joining lines not counted, so a cut may fall inside a multi-byte character.
  The cut line keeps its first words (or bytes) up to the limit and the lines after it are
  dropped. The script reads each text twice, once for n-grams and skip bigrams and once, line
  by line, for ROUGE-L/W; under ``-b`` the second reading never adds up the bytes of earlier
  lines, so it keeps every line shorter than the limit up to the first line that is not, and
  cuts that one at the limit (:func:`limit_lines` with ``lcs=True``).
* Tokens are the maximal runs of ``[a-z0-9]`` of a line: the script turns every other byte
  into a space after isolating ``-``, then drops tokens not starting with ``[a-z0-9$]``
  (the lone ``-``).
* ``-s`` drops tokens found in the SMART stopword list (:func:`stopwords`).
* ``-m`` replaces each token longer than 3 bytes by its WordNet 2.0 exception-list entry when
  it has one, else by the script's own Porter stemmer (:func:`porter_rouge155`).

The word lists are the script's own, bundled under ``pipeline/data/rouge155`` (see its NOTICE).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

_TOKEN = re.compile("[a-z0-9]+")
_EXCEPTION_FILES = ("adj.exc", "adv.exc", "noun.exc", "verb.exc")


def _data_text(name: str) -> str:
    # imported here: importlib.resources (tempfile, shutil...) only when a file is read
    from importlib import resources

    return (resources.files("pipeline") / "data" / "rouge155" / name).read_text("ascii")


@functools.cache
def stopwords() -> frozenset[str]:
    """The SMART common-word list the script removes under ``-s`` (its file, one word a line).

    Returns:
        The words as the script keys them (lines without their newline).

    """
    return frozenset(_data_text("smart_common_words.txt").split("\n")) - {""}


@functools.cache
def exceptions() -> dict[str, str]:
    """The WordNet 2.0 exception table the script's ``-m`` looks tokens up in.

    Built as the package's builder does it: for each line of ``adj.exc``, ``adv.exc``,
    ``noun.exc``, ``verb.exc`` (in that order, which decides the six forms listed in two
    files, e.g. ``best`` -> ``well``), the first word maps to the second; a later line
    replaces an earlier one. Equals the ``WordNet-2.0.exc.db`` shipped with ROUGE-1.5.5.

    Returns:
        Inflected form -> base form (5,930 entries).

    """
    table: dict[str, str] = {}
    for name in _EXCEPTION_FILES:
        for line in _data_text(name).split("\n"):
            words = line.split()
            if words:
                table[words[0]] = words[1] if len(words) > 1 else ""
    return table


# The script's Porter stemmer (its "Release 1" Perl port of Porter 1980, with Lin's change
# to step 4 of 2004-02-14), written here from the algorithm. Patterns over the lowercase
# word, where an initial "y" is upper-cased first so it counts as a consonant.
_C = "[^aeiou][^aeiouy]*"  # consonant sequence
_V = "[aeiouy][aeiou]*"  # vowel sequence
_M_GT0 = re.compile(f"^(?:{_C})?{_V}{_C}")
_M_EQ1 = re.compile(f"^(?:{_C})?{_V}{_C}(?:{_V})?$")
_M_GT1 = re.compile(f"^(?:{_C})?{_V}{_C}{_V}{_C}")
_HAS_VOWEL = re.compile(f"^(?:{_C})?[aeiouy]")
_CVC = re.compile(f"^{_C}[aeiouy][^aeiouwxy]$")
_STEP2 = {
    "ational": "ate", "tional": "tion", "enci": "ence", "anci": "ance", "izer": "ize",
    "bli": "ble", "alli": "al", "entli": "ent", "eli": "e", "ousli": "ous", "ization": "ize",
    "ation": "ate", "ator": "ate", "alism": "al", "iveness": "ive", "fulness": "ful",
    "ousness": "ous", "aliti": "al", "iviti": "ive", "biliti": "ble", "logi": "log",
}
_STEP3 = {"icate": "ic", "ative": "", "alize": "al", "iciti": "ic", "ical": "ic", "ful": "",
          "ness": ""}


def _alternation(suffixes: Sequence[str]) -> re.Pattern[str]:
    return re.compile("(" + "|".join(suffixes) + ")$")


_STEP2_RE = _alternation(list(_STEP2))
_STEP3_RE = _alternation(list(_STEP3))
_STEP4_RE = _alternation(["al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement",
                          "ou", "ism", "ate", "iti", "ous", "ive", "ize"])
_STEP1A_RE = re.compile("(ss|i)es$")
_STEP1A_S_RE = re.compile("([^s])s$")
_STEP1B_RE = re.compile("(ed|ing)$")
_DOUBLE_RE = re.compile(r"([^aeiouylsz])\1$")
_ION_RE = re.compile("(s|t)ion$")


def perl_porter(word: str) -> str:
    """The Porter stemmer of ROUGE-1.5.5 (its ``stem``), on one lowercase word.

    The original algorithm (Porter 1980) as the script writes it, which differs from NLTK's
    and rouge-score's Porter stemmers; in step 4 (Lin's change of 2004) the suffix list
    without ``-ment``/``-ent``, then ``-ment``, then ``-ent`` or ``-ion`` are tried in turn,
    each on what the previous try left.

    Args:
        word: a lowercase token.

    Returns:
        Its stem; words shorter than 3 characters are returned as they are.

    """
    if len(word) < 3:
        return word
    initial_y = word[0] == "y"
    w = "Y" + word[1:] if initial_y else word
    # step 1a
    if m := _STEP1A_RE.search(w):
        w = w[:m.start()] + m.group(1)
    elif m := _STEP1A_S_RE.search(w):
        w = w[:m.start()] + m.group(1)
    # step 1b
    if w.endswith("eed"):
        if _M_GT0.search(w[:-3]):
            w = w[:-1]
    elif (m := _STEP1B_RE.search(w)) and _HAS_VOWEL.search(w[:m.start()]):
        w = w[:m.start()]
        if w.endswith(("at", "bl", "iz")):
            w += "e"
        elif _DOUBLE_RE.search(w):
            w = w[:-1]
        elif _CVC.search(w):
            w += "e"
    # step 1c
    if w.endswith("y") and _HAS_VOWEL.search(w[:-1]):
        w = w[:-1] + "i"
    # steps 2 and 3
    for pattern, table in ((_STEP2_RE, _STEP2), (_STEP3_RE, _STEP3)):
        if (m := pattern.search(w)) and _M_GT0.search(w[:m.start()]):
            w = w[:m.start()] + table[m.group(1)]
    # step 4, three tries in turn as the script makes them
    if (m := _STEP4_RE.search(w)) and _M_GT1.search(w[:m.start()]):
        w = w[:m.start()]
    if w.endswith("ment") and _M_GT1.search(w[:-4]):
        w = w[:-4]
    if w.endswith("ent"):
        if _M_GT1.search(w[:-3]):
            w = w[:-3]
    elif (m := _ION_RE.search(w)) and _M_GT1.search(w[:m.start() + 1]):
        w = w[:m.start() + 1]
    # step 5
    if w.endswith("e"):
        stem = w[:-1]
        if _M_GT1.search(stem) or (_M_EQ1.search(stem) and not _CVC.search(stem)):
            w = stem
    if w.endswith("ll") and _M_GT1.search(w):
        w = w[:-1]
    if initial_y:
        w = w[:1].lower() + w[1:]
    return w


@functools.lru_cache(maxsize=1 << 16)
def porter_rouge155(token: str) -> str:
    """The script's ``-m`` stem of a token: its WordNet 2.0 exception entry, else Porter.

    The script applies it only to tokens longer than 3 characters (see :class:`TextOptions`).

    Args:
        token: a lowercase token of ``[a-z0-9]``.

    Returns:
        The base form from :func:`exceptions`, or :func:`perl_porter` of the token.

    """
    base = exceptions().get(token)
    return perl_porter(token) if base is None else base


def spl_lines(text: str | None) -> list[bytes]:
    """The lines the script reads from a summary file holding ``text`` (SPL format).

    Args:
        text: a summary, sentences separated by ``"\\n"``; None reads as an empty file.

    Returns:
        Its non-empty lines as UTF-8 bytes, ``A-Z`` lowercased (other bytes unchanged).

    """
    if not text:
        return []
    return [line.lower() for line in text.encode("utf-8").split(b"\n") if line]


def _perl_words(line: bytes) -> list[bytes]:
    """Fields of Perl's ``split(/\\s+/, line)``.

    A leading empty field when the line starts with white space; none for a blank line.
    """
    words = line.split()
    if words and line[:1].isspace():
        words.insert(0, b"")
    return words


def limit_lines(lines: Sequence[bytes], *, max_words: int = 0, max_bytes: int = 0,
                lcs: bool = False) -> list[bytes]:
    """Apply the script's ``-l`` / ``-b`` length limit to the lines of a summary.

    Args:
        lines: the lines, as :func:`spl_lines` returns them.
        max_words: ``-l``: keep the first this many words (0: no limit). Words are
            ``split(/\\s+/)`` fields of the raw line, punctuation-only words included.
        max_bytes: ``-b``: keep the first this many bytes (0: no limit); the spaces joining
            lines are not counted.
        lcs: the script's ROUGE-L/W reading (``readText_LCS``): under ``-b`` it keeps every
            line shorter than ``max_bytes`` up to the first one that is not, cut to
            ``max_bytes`` bytes (it never adds up earlier lines). Same as the n-gram reading
            under ``-l`` or without a limit.

    Returns:
        The lines kept, the last one possibly cut.

    Raises:
        ValueError: both limits given (the script refuses them together too).

    """
    if max_words and max_bytes:
        raise ValueError("give a limit in words or in bytes, not both")
    if not max_words and not max_bytes:
        return list(lines)
    kept: list[bytes] = []
    used = 0
    for line in lines:
        if max_words:
            words = _perl_words(line)
            if used + len(words) < max_words:
                kept.append(line)
                used += len(words)
                continue
            kept.append(b" ".join(words[:max_words - used]))
            break
        if used + len(line) < max_bytes:
            kept.append(line)
            if not lcs:
                used += len(line)
            continue
        kept.append(line[:max_bytes - used])
        break
    return kept


@dataclass(frozen=True)
class TextOptions:
    """What the script does to tokens before counting them.

    Attributes:
        remove_stopwords: ``-s``: drop SMART stopwords.
        stem: ``-m``: :func:`porter_rouge155` on tokens longer than 3 characters.
        max_words: ``-l N`` (0: no limit).
        max_bytes: ``-b N`` (0: no limit).

    """

    remove_stopwords: bool = False
    stem: bool = False
    max_words: int = 0
    max_bytes: int = 0

    def tokens(self, line: bytes) -> list[str]:
        """Tokens of one (lowercased) line after stopword removal and stemming."""
        out = _TOKEN.findall(line.decode("latin-1"))  # one character per byte
        if self.remove_stopwords:
            stop = stopwords()
            out = [t for t in out if t not in stop]
        if self.stem:
            out = [porter_rouge155(t) if len(t) > 3 else t for t in out]
        return out


def tokenize_rouge155(text: str | None, options: TextOptions
                      ) -> tuple[list[str], list[list[str]]]:
    """Both of the script's readings of a summary: n-gram tokens and ROUGE-L/W sentences.

    Args:
        text: a summary, one sentence per line (None: empty).
        options: stopwords, stemming and length limit.

    Returns:
        ``(tokens, sentences)``: the tokens the script counts n-grams, skip bigrams and
        ROUGE-L/W's clipping units on, and the token lists of the sentences (lines) it runs
        the LCS on. Without a ``-b`` limit the sentences concatenate to ``tokens``.

    """
    lines = spl_lines(text)
    kept = limit_lines(lines, max_words=options.max_words, max_bytes=options.max_bytes)
    sentences = [options.tokens(line) for line in kept]
    tokens = [t for s in sentences for t in s]
    if options.max_bytes:
        kept = limit_lines(lines, max_bytes=options.max_bytes, lcs=True)
        sentences = [options.tokens(line) for line in kept]
    return tokens, sentences


__all__ = ["TextOptions", "exceptions", "limit_lines", "perl_porter", "porter_rouge155",
           "spl_lines", "stopwords", "tokenize_rouge155"]
