"""Per-language tokenization and stemming, exactly as XL-Sum's multilingual ROUGE.

The reference is ``multilingual_rouge_scoring`` of csebuetnlp/xl-sum (Hasan et al. 2021,
"XL-Sum: Large-Scale Multilingual Abstractive Summarization for 44 Languages", Findings of
ACL), packaged on PyPI as ``multilingual-rouge==0.0.1``. A text becomes tokens in five steps:

1. Python's ``str.lower()`` (so Turkish ``I`` -> ``i`` and ``İ`` -> ``i`` + U+0307).
2. The clean-up of BERT's ``BasicTokenizer``: U+0000, U+FFFD and every character of a
   Unicode ``C*`` category except tab, newline and carriage return are deleted (so ZWJ,
   ZWNJ and ZWSP glue word parts together); white space (``Zs``, tab, newline, CR) becomes a
   space; every ASCII character that is not a letter or digit and every ``P*`` character
   splits words and is dropped. The words are joined by single spaces.
3. The language's segmenter on that string: jieba (``jieba.cut``, Chinese), fugashi
   ``-O wakati -b 50000`` (Japanese; unidic-lite, or a user-installed full UniDic),
   pythainlp ``newmm`` (Thai), XL-Sum's Burmese syllable rule. jieba and pythainlp return
   ``' '`` between words; those tokens count as words (a quirk of the reference, kept).
4. When there is no segmenter or it returns nothing: OpenNMT Tokenizer ``aggressive``
   (letters split from digits and symbols), then every CJK ideograph is a token of its own.
5. With stemming, the language's stemmer on tokens longer than 3 characters: NLTK Snowball
   with ``ignore_stopwords=True`` (the stopword lists shipped in ``pipeline/data/stopwords``),
   XL-Sum's Hindi suffix rules, the Bengali RafiStemmer rules (``pipeline/data/bengali``),
   TurkishStemmer; a language without a stemmer is left unstemmed. Empty tokens are dropped.
   Arabic, French, German, Russian and Turkish stem through the ports of
   :mod:`pipeline.tokenizers.stemmers` (the same stems, several times faster).

XL-Sum's own rougeLsum tokenizes each line with steps 1, 2 and 5 only (no segmenter, no
OpenNMT): :meth:`LanguageTokenizer.tokenize_xlsum_line`.

A :class:`LanguageTokenizer` is picklable (its segmenter and caches are rebuilt in each
process) and memoizes tokens per distinct text, since segmenters such as jieba are slow.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from itertools import chain
from typing import Any

from pipeline.errors import ConfigError, MissingExtraError

EXTRA = "multilingual"
INSTALL_HINT = f"pip install 'overlap-pipeline[{EXTRA}]'"

SEGMENTERS = {"chinese": "jieba", "japanese": "fugashi", "thai": "pythainlp-newmm",
              "burmese": "xlsum-burmese"}
SNOWBALL_LANGUAGES = ("arabic", "danish", "dutch", "english", "finnish", "french", "german",
                      "hungarian", "italian", "norwegian", "portuguese", "romanian", "russian",
                      "spanish", "swedish")
STEMMER_NAMES = {"hindi": "xlsum-hindi", "bengali": "rafi", "turkish": "turkishstemmer",
                 "porter": "snowball-porter",
                 **{lang: "snowball" for lang in SNOWBALL_LANGUAGES}}
# XL-Sum's alternative names (its SPECIAL_LANGID_CONVERSION_MAP)
ALIASES = {"bangla": "bengali", "turkce": "turkish", "chinese_simplified": "chinese",
           "chinese_traditional": "chinese", "mundo": "spanish"}
# The languages named in help texts and docs; any other name uses the fallback tokenizer.
LANGUAGES = tuple(sorted({*SEGMENTERS, *STEMMER_NAMES} - {"porter"}))
JAPANESE_DICTIONARIES = ("unidic-lite", "unidic")
# Tokens at most this long are never stemmed (XL-Sum's min_char_length).
MIN_STEM_LENGTH = 3

_CACHE_MAX = 500_000


def canonical_language(name: str) -> str:
    """The XL-Sum language a name stands for (aliases resolved; any other name unchanged).

    Raises:
        ConfigError: an empty name.
    """
    if not name or not name.strip():
        raise ConfigError("language must be a language name, e.g. chinese, russian",
                          hint="choose one of " + ", ".join(LANGUAGES))
    return ALIASES.get(name, name)


def check_language(name: str) -> str:
    """The canonical name of a language given by a user (any name is accepted).

    Names without a segmenter or stemmer (croatian, czech...) use the fallback tokenizer
    and no stemmer, as XL-Sum does.

    Raises:
        ConfigError: an empty name.
    """
    return canonical_language(name)


# ISO 639-1 codes of the named languages: a code is not a name (it gets the fallback),
# so the note on it names the language meant.
ISO_CODES = {"ar": "arabic", "bn": "bengali", "da": "danish", "de": "german", "en": "english",
             "es": "spanish", "fi": "finnish", "fr": "french", "hi": "hindi", "hu": "hungarian",
             "it": "italian", "ja": "japanese", "my": "burmese", "nb": "norwegian",
             "nl": "dutch", "no": "norwegian", "pt": "portuguese", "ro": "romanian",
             "ru": "russian", "sv": "swedish", "th": "thai", "tr": "turkish", "zh": "chinese"}


def is_named_language(name: str) -> bool:
    """Whether a name has its own segmenter or stemmer (an alias counts), not the fallback."""
    return canonical_language(name) in {*SEGMENTERS, *STEMMER_NAMES}


def unnamed_language_note(name: str, *, where: str = "") -> str | None:
    """The note for a language name that falls back, or None for a named language.

    Any name is accepted (XL-Sum's behaviour: an unknown name uses the fallback tokenizer
    and no stemmer), so a typo changes the scores silently; the note says so and suggests
    the name meant: the same name in lower case, the language of an ISO 639-1 code, or
    :func:`difflib.get_close_matches` over the names and aliases (ratio at least 0.8).

    Args:
        name: a language name as given (flag, config key or a ``column:COL`` value).
        where: words after the name, e.g. ``(column 'lang', 3 rows)``.

    Returns:
        One line, e.g. ``language 'chinse' is not a named language: scored with the fallback
        tokenizer (did you mean chinese?)``, or None.
    """
    import difflib

    if not name or is_named_language(name):
        return None
    lower = name.strip().lower()
    names = sorted({*SEGMENTERS, *STEMMER_NAMES, *ALIASES} - {"porter"})
    if lower in names:
        meant = lower
    elif lower in ISO_CODES:
        meant = ISO_CODES[lower]
    else:
        # 0.8: typos (chinse 0.92, russain 0.86, hindu 0.8), not other languages that use
        # the fallback on purpose (croatian ~ romanian 0.75, persian ~ russian 0.71)
        close = difflib.get_close_matches(lower, names, n=1, cutoff=0.8)
        meant = close[0] if close else ""
    hint = f" (did you mean {meant}?)" if meant else ""
    where = f" {where}" if where else ""
    return (f"language {name!r}{where} is not a named language: scored with the fallback "
            f"tokenizer{hint}")


def _missing(module: str, language: str) -> MissingExtraError:
    """The one-line error for a language whose extra is not installed (exit 2)."""
    return MissingExtraError(f"language {language!r} needs the {EXTRA!r} extra ({module} is not "
                       f"installed): {INSTALL_HINT}")


# --- step 2: the BERT clean-up, as one str.translate table ------------------------------

class _CleanTable(dict[int, Any]):
    """``str.translate`` table: control/format characters deleted, punctuation to a space.

    Filled lazily, one entry per distinct code point met (BERT ``BasicTokenizer``'s
    ``_clean_text`` and ``_run_split_on_punc``; white space stays for ``str.split``).
    """

    def __missing__(self, cp: int) -> Any:
        char = chr(cp)
        category = unicodedata.category(char)
        value: Any
        if char in "\t\n\r" or category == "Zs":
            value = " "
        elif cp == 0 or cp == 0xFFFD or category.startswith("C"):
            value = None
        elif (33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126
              or category.startswith("P")):
            value = " "
        else:
            value = cp
        self[cp] = value
        return value


_CLEAN = _CleanTable()


def _char_class(code_points: list[int], *, beyond_bmp: bool = False) -> str:
    """A regular-expression character class of code points, as ranges.

    Args:
        code_points: ascending code points of the BMP.
        beyond_bmp: also every code point from U+10000 on.
    """
    runs: list[list[int]] = [[0x10000, 0x10FFFF]] if beyond_bmp else []
    for cp in code_points:
        if runs and cp == runs[-1][1] + 1:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp])
    return "[" + "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}"
                         for a, b in runs) + "]"


@cache
def _clean_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The clean-up of BMP text as two scans, built once from :data:`_CLEAN` (65,536 lookups).

    ``unusual``: a character the clean-up deletes, or one beyond the BMP (such a text is
    translated through :data:`_CLEAN` instead); ``punctuation``: a run of characters it turns
    into spaces other than white space (which ``str.split`` splits on anyway). A scan with
    ``re`` costs a fraction of ``str.translate``'s lookup per character.
    """
    deleted = [cp for cp in range(0x10000) if _CLEAN[cp] is None]
    spaced = [cp for cp in range(0x10000)
              if _CLEAN[cp] == " " and not chr(cp).isspace()]
    unusual = re.compile(_char_class(deleted, beyond_bmp=True))
    return unusual, re.compile(_char_class(spaced) + "+")


def clean_words(text: str) -> list[str]:
    """BERT ``BasicTokenizer`` clean-up of already lower-cased text (step 2).

    Args:
        text: any string.

    Returns:
        The words: maximal runs of characters that are neither white space (``str.split``'s)
        nor punctuation, with control and format characters deleted.
    """
    unusual, punctuation = _clean_patterns()
    if unusual.search(text) is not None:
        return text.translate(_CLEAN).split()
    return punctuation.sub(" ", text).split()


# BERT's "Chinese character" ranges (CJK Unified Ideographs and extensions, compatibility)
_CJK_IDEOGRAPH = re.compile("[\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df"
                            "\U0002a700-\U0002ceaf\uf900-\ufaff\U0002f800-\U0002fa1f]")


def _split_ideographs(text: str) -> list[str]:
    """White-space split, with every CJK ideograph (BERT's ranges) a token of its own."""
    if _CJK_IDEOGRAPH.search(text) is None:
        return text.split()
    return _CJK_IDEOGRAPH.sub(r" \g<0> ", text).split()


# --- step 3: segmenters -------------------------------------------------------------------

_BURMESE_ASAT = "\u103a"
_BURMESE_DOT_BELOW = "\u1037"
_BURMESE_VIRAMA = "\u1039"
_BURMESE_DEPENDENT = frozenset(
    [chr(0x102B + k) for k in range(8)] + [chr(0x1036 + k) for k in range(3)]
    + [chr(0x103B + k) for k in range(4)] + [_BURMESE_ASAT])


def burmese_syllables(text: str) -> list[str]:
    """XL-Sum's Burmese syllable segmentation (after Ding et al. 2019, ACM TALLIP 18(4)).

    White space is removed; each dependent sign (U+102B-U+1032, U+1036-U+1038,
    U+103A-U+103E) joins the character before it; a unit containing asat (U+103A) shorter
    than 4 characters joins the unit before it (unless that one was itself joined away);
    units around a virama (U+1039) are glued; ZWNJ is a break and dot-below + asat is
    reordered to asat + dot-below first.

    Args:
        text: lower-cased text.

    Returns:
        The syllable tokens.
    """
    text = text.replace("\u200c", " ").replace(_BURMESE_DOT_BELOW + _BURMESE_ASAT,
                                               _BURMESE_ASAT + _BURMESE_DOT_BELOW)
    chars = "".join(text.lower().split())
    units: list[str] = []
    for char in chars:  # a dependent sign joins the unit before it (the first stays alone)
        if units and char in _BURMESE_DEPENDENT:
            units[-1] += char
        else:
            units.append(char)
    merged = list(units)
    for k in range(1, len(merged)):
        if _BURMESE_ASAT in merged[k] and len(merged[k]) < 4:
            merged[k - 1] += merged[k]
            merged[k] = ""
    joined = " ".join(" ".join(merged).split())
    return joined.replace(f" {_BURMESE_VIRAMA} ", _BURMESE_VIRAMA).split()


@cache
def _japanese_tagger(dictionary: str) -> Callable[[str], list[str]]:
    try:
        import fugashi

        if dictionary == "unidic-lite":
            import unidic_lite as dic
        else:  # full UniDic: installed (and downloaded) by the user, not in the extra
            dic = importlib.import_module("unidic")
    except ImportError as e:
        raise _missing(e.name or "fugashi", "japanese") from None
    dicdir = dic.DICDIR
    rc = os.path.join(dicdir, "mecabrc")
    if not os.path.exists(rc):
        raise ConfigError(f"the {dictionary} dictionary is not installed at {dicdir}",
                          hint="python -m unidic download" if dictionary == "unidic"
                          else INSTALL_HINT)
    tagger = fugashi.GenericTagger(f'-r "{rc}" -d "{dicdir}" -O wakati -b 50000')
    return lambda text: tagger.parse(text).split()


_JIEBA_BLOCKS: dict[str, list[str]] = {}


def jieba_words(block: str, freq: dict[str, int], log_total: float,
                hmm_cut: Callable[[str], Any]) -> list[str]:
    """``jieba.Tokenizer.cut`` of one Han block (HMM on): its DAG and route in one pass.

    The same arithmetic as jieba 0.42.1's ``get_DAG``, ``calc`` and ``__cut_DAG``, fused: for
    each start position, from the right, the dictionary words starting there (``freq``
    holds every word and, with count 0, every prefix of one) are scanned once, each scored
    ``log(count) - log_total + score[end + 1]`` in that order, so the floats are jieba's; the
    best is the largest score, the longer word on ties (jieba's ``max`` over ``(score, end)``
    tuples); a position without a word is a word of one character scored ``log(1) -
    log_total + score[next]``. Runs of single characters are then joined and given to the
    HMM (``finalseg.cut``) when they are not a dictionary word, as jieba does.

    Args:
        block: a block of jieba's ``re_han_default`` (Han characters, ASCII letters and
            digits, ``+#&._%-``).
        freq: the tokenizer's ``FREQ``.
        log_total: ``log(tokenizer.total)``.
        hmm_cut: ``jieba.finalseg.cut``.

    Returns:
        The words, equal to ``list(tokenizer.cut(block))``.
    """
    get = freq.get
    log = math.log
    n = len(block)
    score = [0.0] * (n + 1)
    end = [0] * (n + 1)
    for start in range(n - 1, -1, -1):
        best: float | None = None
        best_end = start
        i = start
        count = get(block[start])
        while count is not None:
            if count:
                value = log(count) - log_total + score[i + 1]
                if best is None or value > best or (value == best and i > best_end):
                    best, best_end = value, i
            i += 1
            if i >= n:
                break
            count = get(block[start:i + 1])
        if best is None:
            best, best_end = log(1) - log_total + score[start + 1], start
        score[start] = best
        end[start] = best_end
    out: list[str] = []
    buf = ""
    x = 0
    while x <= n:
        if x < n and end[x] == x:  # a single character: collected
            buf += block[x]
            x += 1
            continue
        if buf:
            if len(buf) == 1:
                out.append(buf)
            elif not get(buf):
                out += hmm_cut(buf)
            else:
                out += buf
            buf = ""
        if x == n:
            break
        out.append(block[x:end[x] + 1])
        x = end[x] + 1
    return out


@cache
def _chinese() -> Callable[[str], list[str]]:
    """The jieba segmenter with its default dictionary, loaded once per process.

    ``jieba.cut`` segments each block of its block pattern (``jieba.re_han_default``: runs
    of Han characters, ASCII letters and digits) on its own and passes the rest through, so
    the tokens of a text are those of its blocks in turn: blocks are memoized (clauses
    repeat across texts), which is the same segmentation for less work. A Han block is cut
    by :func:`jieba_words` (jieba's own route, in one pass), the rest by ``jieba.cut``.
    """
    try:
        import jieba
        from jieba import finalseg
    except ImportError:
        raise _missing("jieba", "chinese") from None
    import logging

    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    blocks = jieba.re_han_default
    memo = _JIEBA_BLOCKS
    freq = tokenizer.FREQ
    log_total = math.log(tokenizer.total)
    hmm_cut = finalseg.cut

    def segment(text: str) -> list[str]:
        out: list[str] = []
        for k, block in enumerate(blocks.split(text)):
            if not block:
                continue
            words = memo.get(block)
            if words is None:
                # split() alternates the text between blocks (odd k) and the rest (even k)
                words = (jieba_words(block, freq, log_total, hmm_cut) if k % 2
                         else list(tokenizer.cut(block)))
                if len(memo) >= _CACHE_MAX:
                    memo.clear()
                memo[block] = words
            out += words
        return out

    return segment


@cache
def _thai() -> Callable[[str], list[str]]:
    try:
        from pythainlp.tokenize import word_tokenize as tokenize
    except ImportError:
        raise _missing("pythainlp", "thai") from None
    return lambda text: tokenize(text, engine="newmm")


def _segmenter(language: str, japanese_dictionary: str) -> Callable[[str], list[str]] | None:
    if language == "chinese":
        return _chinese()
    if language == "japanese":
        return _japanese_tagger(japanese_dictionary)
    if language == "thai":
        return _thai()
    if language == "burmese":
        return burmese_syllables
    return None


# --- step 5: stemmers ---------------------------------------------------------------------

_HINDI_SUFFIXES = {
    1: ("ो", "े", "ू", "ु", "ी", "ि", "ा"),
    2: ("कर", "ाओ", "िए", "ाई", "ाए", "ने", "नी", "ना", "ते", "ीं", "ती", "ता", "ाँ", "ां", "ों",
        "ें"),
    3: ("ाकर", "ाइए", "ाईं", "ाया", "ेगी", "ेगा", "ोगी", "ोगे", "ाने", "ाना", "ाते", "ाती",
        "ाता", "तीं", "ाओं", "ाएं", "ुओं", "ुएं", "ुआं"),
    4: ("ाएगी", "ाएगा", "ाओगी", "ाओगे", "एंगी", "ेंगी", "एंगे", "ेंगे", "ूंगी", "ूंगा", "ातीं",
        "नाओं", "नाएं", "ताओं", "ताएं", "ियाँ", "ियों", "ियां"),
    5: ("ाएंगी", "ाएंगे", "ाऊंगी", "ाऊंगा", "ाइयाँ", "ाइयों", "ाइयां"),
}


def hindi_stem(token: str) -> str:
    """XL-Sum's Hindi stemmer: drop the first listed suffix, longest suffixes first.

    A suffix of length L is removed only when the token is longer than L + 1 characters
    (Ramanathan and Rao 2003, "A Lightweight Stemmer for Hindi").
    """
    for length in (5, 4, 3, 2, 1):
        if len(token) > length + 1 and token.endswith(_HINDI_SUFFIXES[length]):
            return token[:-length]
    return token


@dataclass(frozen=True)
class _RafiRules:
    groups: tuple[tuple[str, ...], ...]
    replacements: dict[str, str]
    # per group: each suffix's first position in the group, and the suffix lengths
    positions: tuple[dict[str, int], ...] = ()
    lengths: tuple[tuple[int, ...], ...] = ()
    # per group: (its suffixes, positions, lengths), the three above zipped once
    plan: tuple[tuple[tuple[str, ...], dict[str, int], tuple[int, ...]], ...] = ()


_BENGALI_VOWEL_SIGNS = frozenset("ািীেুূো")


@cache
def _rafi_rules() -> _RafiRules:
    """Parse the RafiStemmer rule file: groups in braces, ``suffix -> replacement`` lines."""
    text = resources.files("pipeline").joinpath("data/bengali/common.rules").read_text("utf-8")
    lines: list[str] = []
    replacements: dict[str, str] = {}
    for raw in text.splitlines():
        line = "".join(raw.split()).split("#", 1)[0]
        if not line:
            continue
        if "->" in line:
            line, _, replacement = line.partition("->")
            replacements[line] = replacement
        lines.append(line)
    groups: list[tuple[str, ...]] = []
    current: list[str] | None = None
    for line in lines:
        if line == "{" and current is None:
            current = []
        elif line == "}" and current is not None:
            groups.append(tuple(current))
            current = None
        elif current is not None:
            current.append(line)
    if current is not None:
        groups.append(tuple(current))
    positions = tuple({suffix: k for k, suffix in reversed(list(enumerate(group)))}
                      for group in groups)
    lengths = tuple(tuple(sorted({len(suffix) for suffix in group})) for group in groups)
    return _RafiRules(tuple(groups), replacements, positions, lengths,
                      tuple(zip(groups, positions, lengths, strict=True)))


def bengali_stem(token: str) -> str:
    """The Bengali RafiStemmer (Rafi Kamal 2014; abhik1505040/bengali-stemmer ``common.rules``).

    For each rule group in order, the first suffix the word ends with is applied: a
    ``suffix -> replacement`` rule overwrites the suffix with the replacement (``.`` keeps
    that character) and cuts the word after it; a plain suffix is cut when what is left has
    at least one character that is not a vowel sign.
    """
    rules = _rafi_rules()
    replacements = rules.replacements
    word = token
    for group, positions, lengths in rules.plan:
        # the group's first suffix the word ends with: the lowest position among the
        # word's endings that are suffixes of the group (one lookup per suffix length)
        n = len(word)
        size = first = len(group)
        get = positions.get
        for length in lengths:
            if length > n:
                break
            k = get(word[n - length:], size)
            if k < first:
                first = k
        if first < size:
            suffix = group[first]
            start = n - len(suffix)
            replacement = replacements.get(suffix)
            if replacement is not None:
                chars = list(word)
                for k, char in enumerate(replacement):
                    if char != ".":
                        chars[start + k] = char
                word = "".join(chars[:start + len(replacement)])
            elif not _BENGALI_VOWEL_SIGNS.issuperset(word[:start]):
                word = word[:start]
    return word


@cache
def snowball_stopwords(language: str) -> frozenset[str]:
    """NLTK's stopword list of a Snowball language, as shipped in ``pipeline/data/stopwords``.

    Lines as NLTK's ``stopwords.words`` reads them (blank lines skipped, nothing stripped).
    """
    text = resources.files("pipeline").joinpath(f"data/stopwords/{language}").read_text("utf-8")
    return frozenset(line for line in text.splitlines() if line.rstrip())


def _port(language: str) -> Any:
    """The module of :mod:`pipeline.tokenizers.stemmers` that ports a language's stemmer, if any.

    A port returns what the library's stemmer returns for every string (tested against it
    word for word), several times faster; the library is used for the other languages.
    """
    name = f"pipeline.tokenizers.stemmers.{language}"
    return importlib.import_module(name) if importlib.util.find_spec(name) else None


def _snowball(language: str) -> Callable[[str], str]:
    port = _port(language)
    if port is not None:
        if language == "arabic":
            # NLTK's Arabic stemmer remembers whether any word has lost a verb suffix, and
            # stems differently from then on; multilingual-rouge's stemmer is in that state
            # after the first few words it meets. Stems are made as in that state, so that
            # they do not depend on which words a process met first (partitions, caches).
            return port.stemmer(snowball_stopwords(language), verb_suffix_seen=True)
        return port.stemmer(snowball_stopwords(language))
    from nltk.stem.snowball import SnowballStemmer

    stemmer = SnowballStemmer(language)  # ignore_stopwords=False: no corpus download
    if language != "porter":
        stemmer.stopwords.update(snowball_stopwords(language))
    return stemmer.stem


def _stemmer(language: str) -> Callable[[str], str] | None:
    kind = STEMMER_NAMES.get(language)
    if kind is None:
        return None
    if kind == "xlsum-hindi":
        return hindi_stem
    if kind == "rafi":
        return bengali_stem
    if kind == "turkishstemmer":
        from pipeline.tokenizers.stemmers import turkish

        return turkish.stemmer()
    return _snowball(language)


# --- --language auto: the segmenter picked by the script ---------------------------------

AUTO = "auto"
# The language ``auto`` gives a text in none of the segmenters' scripts (the fallback).
AUTO_FALLBACK = "other"
AUTO_LANGUAGES = ("chinese", "japanese", "thai", "burmese", AUTO_FALLBACK)


@cache
def _script_patterns() -> tuple[Any, ...]:
    import regex

    return (regex.compile(r"[\p{Hiragana}\p{Katakana}]"), regex.compile(r"\p{Han}"),
            regex.compile(r"\p{Thai}"), regex.compile(r"\p{Myanmar}"),
            regex.compile(r"[^\P{L}\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Myanmar}]+"))


def detect_language(texts: Sequence[str | None]) -> str:
    """The segmenter language of an example's texts, from their scripts (``--language auto``).

    The texts (prediction and references together) are counted in rough word units: each
    character of a script written without spaces (Han and kana together, Thai, Myanmar) is
    one, and so is each run of letters of any other script (a word). The largest count
    wins, the other scripts on ties: Han and kana give ``japanese`` when there is any kana
    (Hiragana, Katakana), else ``chinese``; Thai gives ``thai``, Myanmar ``burmese``, the rest
    :data:`AUTO_FALLBACK` (XL-Sum's fallback tokenizer, no stemmer). Texts without a letter
    give :data:`AUTO_FALLBACK`.

    Args:
        texts: the texts of one example (None is empty).

    Returns:
        One of :data:`AUTO_LANGUAGES`.
    """
    kana_re, han_re, thai_re, myanmar_re, other_re = _script_patterns()
    kana = han = thai = myanmar = other = 0
    for text in texts:
        if not text:
            continue
        other += len(other_re.findall(text))
        if text.isascii():
            continue
        kana += len(kana_re.findall(text))
        han += len(han_re.findall(text))
        thai += len(thai_re.findall(text))
        myanmar += len(myanmar_re.findall(text))
    best = max(kana + han, thai, myanmar)
    if best == 0 or other >= best:
        return AUTO_FALLBACK
    if kana + han == best:
        return "japanese" if kana else "chinese"
    return "thai" if thai == best else "burmese"


# --- the tokenizer object ---------------------------------------------------------------

class _StemMemo(dict[str, str]):
    """Stems per distinct token: a token's stem is computed on its first lookup.

    Tokens of at most :data:`MIN_STEM_LENGTH` characters are their own stem. Cleared when it
    reaches ``_CACHE_MAX`` entries.
    """

    def __init__(self, stemmer: Callable[[str], str] | None) -> None:
        super().__init__()
        self.stemmer = stemmer

    def __missing__(self, token: str) -> str:
        stem = self.stemmer(token) if len(token) > MIN_STEM_LENGTH and self.stemmer else token
        if len(self) >= _CACHE_MAX:
            self.clear()
        self[token] = stem
        return stem


class _IdMemo(dict[str, int]):
    """Token -> the id of its stem in ``vocab`` (-1 for an empty stem), on first lookup.

    New ids are given under a lock, so threads sharing a numbering never give one id to two
    stems.
    """

    def __init__(self, stems: dict[str, str], vocab: dict[str, int]) -> None:
        super().__init__()
        self.stems = stems
        self.vocab = vocab
        self.lock = threading.Lock()

    def __missing__(self, token: str) -> int:
        stem = self.stems[token]
        token_id = -1
        if stem:
            with self.lock:
                vocab = self.vocab
                token_id = vocab.setdefault(stem, len(vocab))
        self[token] = token_id
        return token_id


class Numbering:
    """One numbering of a tokenizer's stems, and the id lists of the texts met under it.

    A batch keeps the numbering :meth:`LanguageTokenizer.start_batch` gave it to the end,
    whatever other batches (threads) start meanwhile; ids are in ``[0, vocab_size)``.
    """

    def __init__(self, tokenizer: LanguageTokenizer) -> None:
        self.tokenizer = tokenizer
        self.vocab: dict[str, int] = {}
        self.memo = _IdMemo(tokenizer._stem_cache, self.vocab)
        self.texts: dict[str, list[int]] = {}
        self.lines: dict[str, list[int]] = {}

    @property
    def size(self) -> int:
        """The number of entries held (the largest of vocabulary and memos)."""
        return max(len(self.vocab), len(self.memo), len(self.texts), len(self.lines))

    @property
    def vocab_size(self) -> int:
        """The number of stem ids given out."""
        return len(self.vocab)

    def _ids(self, tokens: list[str]) -> list[int]:
        # one C-level lookup per token: the id of its stem (stemmed on first sight)
        ids = list(map(self.memo.__getitem__, tokens))
        return [i for i in ids if i >= 0] if -1 in ids else ids

    def token_ids(self, text: str | None) -> list[int]:
        """The ids of :meth:`LanguageTokenizer.tokenize`'s tokens: equal tokens, equal ids."""
        if not text:
            return []
        ids = self.texts.get(text)
        if ids is None:
            tok = self.tokenizer
            tokens = tok._segmented(text)
            ids = self.texts[text] = self._ids(tokens)
            if tokens is tok._words_cache.get(text) and "\n" not in text:
                # the same words as XL-Sum's rougeLsum line view of the text: same ids
                self.lines[text] = ids
        return ids

    def xlsum_line_ids(self, line: str | None) -> list[int]:
        """The ids of :meth:`LanguageTokenizer.tokenize_xlsum_line`'s tokens."""
        if not line:
            return []
        ids = self.lines.get(line)
        if ids is None:
            ids = self.lines[line] = self._ids(self.tokenizer._words(line))
        return ids


class LanguageTokenizer:
    """XL-Sum's tokenizer and stemmer for one language: ``tokenize(text) -> tokens``.

    Handed to the unchanged ROUGE scoring (see :mod:`pipeline.metrics.rouge.family`).
    Picklable: only the settings travel; the segmenter, stemmer and caches are built in
    each process on first use.

    Args:
        language: a language name (aliases resolved by :func:`canonical_language`).
        stem: apply the language's stemmer (``--stemmer language``).
        japanese_dictionary: ``unidic-lite`` (default) or ``unidic`` (full UniDic, installed
            and downloaded by the user).

    Raises:
        ConfigError: a missing extra (the segmenter or stemmer cannot be imported), or an
            unknown Japanese dictionary; raised by :meth:`load`, which the constructor calls.
    """

    def __init__(self, language: str, *, stem: bool = False,
                 japanese_dictionary: str = "unidic-lite") -> None:
        if japanese_dictionary not in JAPANESE_DICTIONARIES:
            raise ConfigError(f"unknown Japanese dictionary {japanese_dictionary!r}",
                              hint="choose one of " + ", ".join(JAPANESE_DICTIONARIES))
        self.language = canonical_language(language)
        self.stem = stem
        self.japanese_dictionary = japanese_dictionary
        self._loaded = False
        self.load()

    def __getstate__(self) -> dict[str, Any]:
        return {"language": self.language, "stem": self.stem,
                "japanese_dictionary": self.japanese_dictionary}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._loaded = False

    def load(self) -> None:
        """Import the segmenter and stemmer (once per process).

        Raises:
            ConfigError: the ``multilingual`` extra is missing.
        """
        if self._loaded:
            return
        try:
            import pyonmttok
        except ImportError:
            raise _missing("pyonmttok", self.language) from None
        self._pretokenizer = pyonmttok.Tokenizer("aggressive")
        self._segment = _segmenter(self.language, self.japanese_dictionary)
        self._stemmer = _stemmer(self.language) if self.stem else None
        self._cache: dict[str, list[str]] = {}
        self._xlsum_cache: dict[str, list[str]] = {}
        self._stem_cache: dict[str, str] = _StemMemo(self._stemmer)
        self._words_cache: dict[str, list[str]] = {}
        self._numbering = Numbering(self)
        self._loaded = True

    @property
    def segmenter_name(self) -> str:
        """The segmenter's name (``onmt-aggressive`` for the fallback)."""
        return SEGMENTERS.get(self.language, "onmt-aggressive")

    @property
    def stemmer_name(self) -> str:
        """The stemmer's name, ``none`` when not stemming or the language has none."""
        return STEMMER_NAMES.get(self.language, "none") if self.stem else "none"

    def _stemmed(self, tokens: list[str]) -> list[str]:
        # map() over the memo runs in C; the stemmer is called on a token's first sight only
        out = tokens if self._stemmer is None else list(map(self._stem_cache.__getitem__, tokens))
        return [t for t in out if t] if "" in out else list(out)

    def tokenize(self, text: str | None) -> list[str]:
        """Tokens of one text, the full pipeline (steps 1-5 of the module docstring).

        Args:
            text: any string (None is the empty text). Newlines are white space.

        Returns:
            The tokens in order (possibly ``' '`` tokens from jieba or pythainlp).
        """
        if not text:
            return []
        if not self._loaded:
            self.load()
        tokens = self._cache.get(text)
        if tokens is None:
            tokens = self._stemmed(self._segmented(text))
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()
            self._cache[text] = tokens
        return tokens

    def _words(self, text: str) -> list[str]:
        """``clean_words(text.lower())``, memoized (both views of a one-line text share it)."""
        words = self._words_cache.get(text)
        if words is None:
            if "\n" in text:
                # lower-casing and the clean-up never look across a line break, so a text's
                # words are its lines' in turn (memoized for the rougeLsum view's lines)
                words = list(chain.from_iterable(self._words(line)
                                                 for line in text.split("\n") if line))
            else:
                words = clean_words(text.lower())
            if len(self._words_cache) >= _CACHE_MAX:
                self._words_cache.clear()
            self._words_cache[text] = words
        return words

    def _segmented(self, text: str) -> list[str]:
        """Steps 1-4; the very list of ``_words(text)`` when the fallback left it as it was."""
        words = self._words(text)
        clean = " ".join(words)
        tokens = self._segment(clean) if self._segment is not None and clean else []
        if not tokens and clean:
            if _CJK_IDEOGRAPH.search(clean) is not None:
                pieces, _ = self._pretokenizer.tokenize(clean)
                tokens = _split_ideographs(" ".join(pieces))
            elif all(map(str.isalpha, words)):
                # OpenNMT's aggressive mode splits letters only from what is not a letter:
                # words of letters alone come back whole (tested on every letter of Unicode)
                tokens = words
            else:
                # its pieces are non-empty and hold no white space (``clean`` has none but
                # spaces), so they are already the split
                pieces, _ = self._pretokenizer.tokenize(clean)
                tokens = words if pieces == words else pieces
        return tokens

    def tokenize_xlsum_line(self, line: str | None) -> list[str]:
        """Tokens of one line as XL-Sum's own rougeLsum makes them (steps 1, 2 and 5).

        Args:
            line: one line of a text.

        Returns:
            The lower-cased, cleaned, stemmed words (no segmenter, no OpenNMT).
        """
        if not line:
            return []
        if not self._loaded:
            self.load()
        tokens = self._xlsum_cache.get(line)
        if tokens is None:
            tokens = self._stemmed(self._words(line))
            if len(self._xlsum_cache) >= _CACHE_MAX:
                self._xlsum_cache.clear()
            self._xlsum_cache[line] = tokens
        return tokens

    # --- integer ids, for the batch path (one numbering per tokenizer and batch) --------

    def start_batch(self) -> Numbering:
        """The numbering a batch of :meth:`Numbering.token_ids` calls keeps to its end.

        A fresh one replaces the current one when that has reached the cache size (never
        in the middle of a batch: a batch holds on to the numbering it was given).
        """
        if not self._loaded:
            self.load()
        if self._numbering.size >= _CACHE_MAX:
            self._numbering = Numbering(self)
        return self._numbering


@cache
def package_version(name: str) -> str:
    """An installed distribution's version, ``?`` when it is not installed."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


_TOKENIZERS: dict[tuple[str, bool, str], LanguageTokenizer] = {}


def get_language_tokenizer(language: str, *, stem: bool = False,
                           japanese_dictionary: str = "unidic-lite") -> LanguageTokenizer:
    """The process's shared :class:`LanguageTokenizer` for a setting (its caches shared too).

    Raises:
        ConfigError: as :class:`LanguageTokenizer`.
    """
    key = (canonical_language(language), stem, japanese_dictionary)
    tokenizer = _TOKENIZERS.get(key)
    if tokenizer is None:
        tokenizer = LanguageTokenizer(key[0], stem=stem, japanese_dictionary=japanese_dictionary)
        _TOKENIZERS[key] = tokenizer
    return tokenizer




def clear_caches() -> None:
    """Forget every memoized token list (segmenters stay loaded); for benchmarks and tests."""
    _JIEBA_BLOCKS.clear()
    for tokenizer in _TOKENIZERS.values():
        if tokenizer._loaded:
            tokenizer._cache.clear()
            tokenizer._xlsum_cache.clear()
            tokenizer._stem_cache.clear()
            tokenizer._words_cache.clear()
            tokenizer._numbering = Numbering(tokenizer)


def required_modules(language: str, *, stem: bool, japanese_dictionary: str = "unidic-lite"
                     ) -> tuple[str, ...]:
    """The modules a language's tokenizer imports (all from the ``multilingual`` extra)."""
    language = canonical_language(language)
    modules = ["pyonmttok"]
    modules += {"chinese": ["jieba"], "thai": ["pythainlp"],
                "japanese": ["fugashi", japanese_dictionary.replace("-", "_")]
                }.get(language, [])
    return tuple(modules)


def check_installed(language: str, *, stem: bool, japanese_dictionary: str = "unidic-lite"
                    ) -> None:
    """Fail early, in one line naming the extra, when a language's packages are missing.

    Raises:
        ConfigError: a module of :func:`required_modules` cannot be found.
    """
    for module in required_modules(language, stem=stem,
                                   japanese_dictionary=japanese_dictionary):
        if importlib.util.find_spec(module) is None:
            raise _missing(module, language)


def signature_versions(language: str | None, *, stem: bool,
                       japanese_dictionary: str = "unidic-lite") -> str:
    """``package-version`` pairs joined by ``+`` that a setting's tokens depend on.

    For a single language, its packages; for a per-row column (``language`` None), every
    segmenter and stemmer package of the extra.
    """
    if language is None:
        names = ["pyonmttok", "jieba", "fugashi", japanese_dictionary, "pythainlp"]
        stems = [_version("nltk"), _turkish_version()] if stem else []
    else:
        language = canonical_language(language)
        names = ["pyonmttok"] + {"chinese": ["jieba"], "thai": ["pythainlp"],
                                 "japanese": ["fugashi", japanese_dictionary]
                                 }.get(language, [])
        stems = _stemmer_versions(language) if stem else []
    return "+".join([*map(_version, names), *stems])


def _version(name: str) -> str:
    return f"{name.lower()}-{package_version(name)}"


def _stemmer_versions(language: str) -> list[str]:
    kind = STEMMER_NAMES.get(language, "")
    if kind.startswith("snowball"):
        port = _port(language)
        # a port's stems are those of the NLTK it reproduces, whatever is installed
        return [f"nltk-{port.NLTK_VERSION}" if port else _version("nltk")]
    return [_turkish_version()] if kind == "turkishstemmer" else []


def _turkish_version() -> str:
    # the port's stems are TurkishStemmer's (the library itself is the tests' oracle)
    from pipeline.tokenizers.stemmers import turkish

    return f"turkishstemmer-{turkish.TURKISHSTEMMER_VERSION}"


__all__ = ["ALIASES", "AUTO", "AUTO_FALLBACK", "AUTO_LANGUAGES", "EXTRA",
           "JAPANESE_DICTIONARIES", "LANGUAGES", "SEGMENTERS", "Numbering", "SNOWBALL_LANGUAGES",
           "STEMMER_NAMES", "LanguageTokenizer", "bengali_stem", "burmese_syllables",
           "canonical_language", "check_installed", "check_language", "is_named_language",
           "unnamed_language_note", "clean_words",
           "clear_caches", "detect_language", "get_language_tokenizer", "hindi_stem",
           "package_version", "required_modules", "signature_versions", "snowball_stopwords"]
