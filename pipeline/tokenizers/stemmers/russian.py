"""NLTK's Russian Snowball stemmer, computed faster with the same result for every string.

Source of the definition: ``RussianStemmer.stem`` of NLTK 3.10.4 (``nltk/stem/snowball.py``),
which implements the Snowball Russian algorithm
(https://snowballstem.org/algorithms/russian/stemmer.html) on a Latin transliteration of the
word, with quirks of its own that this port keeps:

- a word with no character above U+00FF, or in the stopword list, is returned unchanged;
- the word is transliterated letter by letter (``я`` -> ``i^a``, ``щ`` -> ``shch``,
  ``ъ`` -> ``''``, ``ё`` -> ``e``...), any other character is kept; RV and R2 are found on
  the transliteration with ``i^a``, ``i^u`` and ``e`` + backtick counted as one vowel each
  (and so are literal ``A``, ``U``, ``E``, which come back as ``i^a``, ``i^u``, ``e``
  + backtick in RV and R2 while the word keeps them);
- the suffixes are NLTK's lists (``ui^ushchaia`` where Snowball has ``ующая``), matched on
  RV (steps 1-2), R2 (step 3) and the whole word (step 4), with ``а``/``я`` before a
  group-1 suffix tested as the letter ``a`` just before it;
- the stem goes back to Cyrillic with NLTK's replacements in NLTK's order, which is not the
  inverse of the first step: ``ё`` comes back as ``е``, ``шч`` as ``щ``, ``ьь`` as ``ъ``
  (``веснушчатый`` -> ``веснущат``, ``сььа`` -> ``съа``), and Latin letters of the input
  with a Cyrillic counterpart become Cyrillic (``abcjqwxдом`` -> ``абcjqwxд``).

What is computed differently, and why the result is the same:

- Suffix lists: NLTK tries the suffixes of a list in turn with ``endswith`` and removes the
  first one it accepts (a group-1 suffix is accepted only after "a"; one that is not lets
  the loop go on). The suffixes ending a string all end each other, and in every list a
  suffix comes before each of its own suffixes (checked by the tests on NLTK's tuples), so
  the one NLTK removes is the longest accepted. Here each list is a trie of its reversed
  suffixes written as a regular expression that prefers the longer continuation and
  accepts a group-1 suffix only before ``(?=a)``; steps 1 and 2 are one match of
  ``gerund | reflexive? (adjectival | verb | noun)?`` then ``i?`` on RV reversed, whose
  length is what NLTK removes from the word and R2. NLTK's ``rv[-n-3:-n] == "i^a" or
  rv[-n-1:-n] == "a"`` is ``rv[-n-1:-n] == "a"``, since ``i^a`` ends in ``a``.
- Transliteration: NLTK's chain of ``str.replace`` calls maps single Cyrillic letters to
  ASCII strings that no later pattern matches, so one ``str.translate`` gives the same
  string. Back to Cyrillic, only the replacements that can overlap keep NLTK's order
  (:func:`_to_cyrillic`); the one-letter ones are one ``str.translate``.
- Regions: a word of lower-case Cyrillic letters only (the tokenizer's usual output) gets
  RV and R2 from one regular-expression match on its transliteration, where ``i^a``,
  ``i^u`` and ``e`` + backtick are single vowels; any other word goes NLTK's way (replace
  them by ``A``, ``U``, ``E``, find the regions, replace back), with regular-expression
  searches for the first vowel and for a vowel followed by a non-vowel.
- A word of lower-case Cyrillic letters has a character above U+00FF, so the check of
  NLTK's first step is only made for the other words.

Licence: NLTK is Apache-2.0; this module follows its algorithm and its suffix data (which
are the Snowball algorithm's, transliterated); the code is written anew.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pipeline.tokenizers.stemmers import longest_suffix

NLTK_VERSION = "3.10.4"

# --- transliteration (RussianStemmer.__cyrillic_to_roman and __roman_to_cyrillic) -------

_CYRILLIC = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
_ROMAN = ("a", "b", "v", "g", "d", "e", "e", "zh", "z", "i", "i`", "k", "l", "m", "n", "o",
          "p", "r", "s", "t", "u", "f", "kh", "t^s", "ch", "sh", "shch", "''", "y", "'",
          "e`", "i^u", "i^a")
TO_ROMAN: dict[int, str] = {ord(c): r for letters in (_CYRILLIC, _CYRILLIC.upper())
                            for c, r in zip(letters, _ROMAN, strict=True)}

# NLTK's one-letter replacements back to Cyrillic (its multi-letter ones: _to_cyrillic).
BACK_SINGLE: dict[int, str] = {ord(r): c for r, c in zip("abvgdeziklmnoprstufy'",
                                                         "абвгдезиклмнопрстуфыь", strict=True)}

# The two tables as tuples indexed by code point, which str.translate reads faster than a
# dict; a code point past a tuple's end raises IndexError, which translate takes as
# "unchanged", as it does a code point missing from the dict.
_TO_ROMAN = tuple(TO_ROMAN.get(i, chr(i)) for i in range(max(TO_ROMAN) + 1))
_BACK_SINGLE = tuple(BACK_SINGLE.get(i, chr(i)) for i in range(max(BACK_SINGLE) + 1))

# --- suffixes (RussianStemmer's class attributes, as sets) --------------------------------

_ADJECTIVE = ("ee", "ie", "ye", "oe", "imi", "ymi", "ei`", "ii`", "yi`", "oi`", "em", "im",
              "ym", "om", "ego", "ogo", "emu", "omu", "ikh", "ykh", "ui^u", "i^ui^u", "ai^a",
              "i^ai^a", "oi^u", "ei^u")
_PARTICIPLE_AFTER_A = ("em", "nn", "vsh", "i^ushch", "shch")
_PARTICIPLE = ("ivsh", "yvsh", "ui^ushch")
_ADJECTIVAL_AFTER_A = frozenset(p + a for p in _PARTICIPLE_AFTER_A for a in _ADJECTIVE)

_VERB_AFTER_A = frozenset(("la", "na", "ete", "i`te", "li", "i`", "l", "em", "n", "lo", "no",
                           "et", "i^ut", "ny", "t'", "esh'", "nno"))
_GERUND_AFTER_A = frozenset(("v", "vshi", "vshis'"))

# NLTK's suffix tuples by attribute name (without "_RussianStemmer__" and "_suffixes").
SUFFIXES: dict[str, frozenset[str]] = {
    "perfective_gerund": _GERUND_AFTER_A | {"iv", "ivshi", "ivshis'", "yv", "yvshi",
                                            "yvshis'"},
    # NLTK lists "ui^ushchaia" (not "ui^ushchai^a")
    "adjectival": (frozenset(_ADJECTIVE) | _ADJECTIVAL_AFTER_A
                   | {p + a for p in _PARTICIPLE for a in _ADJECTIVE}
                   | {"ui^ushchaia"}) - {"ui^ushchai^a"},
    "reflexive": frozenset(("si^a", "s'")),
    "verb": _VERB_AFTER_A | {"ila", "yla", "ena", "ei`te", "ui`te", "ite", "ili", "yli", "ei`",
                             "ui`", "il", "yl", "im", "ym", "en", "ilo", "ylo", "eno", "i^at",
                             "uet", "ui^ut", "it", "yt", "eny", "it'", "yt'", "ish'", "ui^u",
                             "i^u"},
    "noun": frozenset(("a", "ev", "ov", "ie", "'e", "ei", "ii", "i", "i`", "ei`", "oi`", "ii`",
                       "em", "am", "om", "o", "u", "akh", "i^akh", "ii^akh", "y", "'", "i^u",
                       "'i^u", "ii^u", "i^a", "'i^a", "ii^a", "ami", "i^ami", "ii^ami", "e",
                       "iei`", "iem", "i^am", "ii^am")),
    "superlative": frozenset(("ei`she", "ei`sh")),
    "derivational": frozenset(("ost'", "ost")),
}
# The suffixes NLTK removes only after "a" (Snowball: after а or я), by list.
AFTER_A: dict[str, frozenset[str]] = {
    "perfective_gerund": _GERUND_AFTER_A, "adjectival": _ADJECTIVAL_AFTER_A,
    "verb": _VERB_AFTER_A}



def _longest(name: str) -> str:
    """A pattern matching the longest allowed suffix of a list at a reversed string's start.

    Allowed: the suffix ends the string, after "a" when it needs one; no suffix: no match.
    """
    after_a = AFTER_A.get(name, frozenset())
    return longest_suffix(SUFFIXES[name], lambda suffix: "(?=a)" if suffix in after_a else "")


# Steps 1 and 2 on RV reversed: a perfective gerund; else a reflexive suffix, then an
# adjectival, verb or noun suffix; then "i". The match's length is what both remove.
_STEPS_1_2 = re.compile(
    f"(?:{_longest('perfective_gerund')}|{_longest('reflexive')}?"
    f"(?:{_longest('adjectival')}|{_longest('verb')}|{_longest('noun')})?)i?").match

# --- regions (RussianStemmer.__regions_russian) -------------------------------------------

_VOWEL = re.compile("[AUEaeiouy]").search
_VOWEL_THEN_OTHER = re.compile("[AUEaeiouy][^AUEaeiouy]").search
_EXPAND = {ord("A"): "i^a", ord("U"): "i^u", ord("E"): "e`"}
_MARKS = re.compile("[AUE^`]").search


# RV and R2 of the transliteration of a word of lower-case Cyrillic letters only: there
# "i^" is always followed by "a" or "u" and "e`" is always э, so a vowel is one of the
# tokens below (the lookaheads keep backtracking from splitting i^a, i^u, e`); group 1
# ends where RV starts, group 2 where R1 starts, group 3 where R2 starts.
_V = "(?:i\\^[au]|e`|i(?!\\^[au])|e(?!`)|[aouy])"
_C = "[^aeiouy]"
_REGIONS_LOWER = re.compile(f"{_C}*{_V}()(?:{_V}*{_C}()(?:{_C}*{_V}+{_C}())?)?").match
# any character but а-я and ё
_NOT_LOWER_CYRILLIC = re.compile("[^\u0430-\u044f\u0451]").search


def _regions(word: str) -> tuple[str, str]:
    """RV and R2 of a transliterated word, as NLTK's ``__regions_russian`` returns them."""
    marked = _MARKS(word) is not None
    if marked:
        word = word.replace("i^a", "A").replace("i^u", "U").replace("e`", "E")
    m = _VOWEL(word)
    rv = word[m.end():] if m else ""
    m = _VOWEL_THEN_OTHER(word)
    if m:
        m = _VOWEL_THEN_OTHER(word, m.end())
    r2 = word[m.end():] if m else ""
    if marked:
        return rv.translate(_EXPAND), r2.translate(_EXPAND)
    return rv, r2


def _to_cyrillic(word: str) -> str:
    """NLTK's ``__roman_to_cyrillic``.

    NLTK replaces i^u, i^a, shch, kh, t^s, ch, e`, i`, sh, k, e, zh, a, b, v... '', y, ' in
    turn. Replacing two patterns in either order gives the same string unless they can
    overlap; the pairs that can keep NLTK's order here (shch before ch, sh and t^s, as in
    ``t^shch``; t^s before sh), the rest are grouped by the marks they hold, and the
    one-letter ones, which overlap none of the patterns after them, are one translate.
    """
    if "^" in word:
        word = word.replace("i^u", "ю").replace("i^a", "я")
    if "h" in word:
        word = word.replace("shch", "щ").replace("kh", "х")
        if "^" in word:
            word = word.replace("t^s", "ц")
        word = word.replace("ch", "ч").replace("sh", "ш").replace("zh", "ж")
    elif "^" in word:
        word = word.replace("t^s", "ц")
    if "`" in word:
        word = word.replace("e`", "э").replace("i`", "й")
    if "''" in word:
        word = word.replace("''", "ъ")
    return word.translate(_BACK_SINGLE)


def stemmer(stopwords: frozenset[str]) -> Callable[[str], str]:
    """A function equal to NLTK 3.10.4's Russian Snowball stemmer with these stopwords.

    ``stemmer(sw)(word) == s.stem(word)`` for every ``str`` ``word``, where
    ``s = nltk.stem.snowball.SnowballStemmer("russian"); s.stopwords.update(sw)``
    (``pipeline.tokenizers.multilingual.snowball_stopwords("russian")`` is the list
    XL-Sum's multilingual ROUGE uses; assigning ``s.stopwords = ...`` instead would not
    reach the stemmer ``s`` wraps, and stopwords would be stemmed).

    Args:
        stopwords: words returned unchanged (compared as given, case included).

    Returns:
        ``stem(word: str) -> str``: the stem (what remains of the transliteration, back in
        Cyrillic); the word itself when it is a stopword or has no character above U+00FF.
        Never raises.
    """
    stop = frozenset(stopwords)

    def stem(word: str) -> str:
        if word in stop:
            return word
        if _NOT_LOWER_CYRILLIC(word) is None:  # the common case (and the empty word)
            word = word.translate(_TO_ROMAN)
            m = _REGIONS_LOWER(word)
            if m is None:
                rv = r2 = ""
            else:
                rv = word[m.end(1):]
                end = m.end(3)
                r2 = word[end:] if end >= 0 else ""
        elif max(word) <= "\xff":
            return word
        else:
            word = word.translate(_TO_ROMAN)
            rv, r2 = _regions(word)

        # Steps 1 and 2 (RV's end), one match on RV reversed
        m = _STEPS_1_2(rv[::-1])  # always matches (every part is optional)
        removed = m.end() if m else 0
        if removed:
            word, r2 = word[:-removed], r2[:-removed]

        # Step 3: derivational suffix in R2
        if r2.endswith(("ost", "ost'")):
            word = word[:-4] if r2[-1] == "'" else word[:-3]

        # Step 4: undouble "nn"; else superlative (then undouble), else a final soft sign.
        # The three end in different letters: one look at the last letter picks the rule.
        last = word[-1:]
        if last == "n":
            if word.endswith("nn"):
                word = word[:-1]
        elif last == "e" or last == "h":
            if word.endswith(("ei`she", "ei`sh")):
                word = word[:-6] if last == "e" else word[:-5]
                if word.endswith("nn"):
                    word = word[:-1]
        elif last == "'":
            word = word[:-1]

        return _to_cyrillic(word)

    return stem
