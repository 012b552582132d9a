"""The German Snowball stemmer of NLTK 3.10.4, ported to give the same stems faster.

Source of the definition: NLTK 3.10.4, ``nltk/stem/snowball.py``, class ``GermanStemmer``
(its ``stem`` method and ``_StandardStemmer._r1r2_standard``), which implements Martin
Porter's German Snowball algorithm (https://snowballstem.org/algorithms/german/stemmer.html).
What is reproduced is NLTK's code, quirks included, not the published algorithm where the two
differ: R2 is found from R1 before R1 is moved to leave three letters before it, the region
tests of step 3 are substring tests on slices of R1 and R2, and an input that makes NLTK
raise makes this raise the same way.

What is computed differently, and why the result is the same:

- Marking ``u`` and ``y`` between vowels: only inside runs of three vowels or more can a
  letter have a vowel on both sides (a vowel's neighbours outside its run are non-vowels),
  so one regular expression finds those runs (in words holding a ``u`` or ``y``) and NLTK's
  left-to-right loop runs on each run alone.
- Regions R1 and R2: one regular-expression search instead of Python loops over the
  letters (the first vowel followed by a non-vowel, from the start and again from R1), and
  R1 moved to the fourth letter when that pair is the word's first two letters, as NLTK's
  second loop does.
- Suffix lists: NLTK tries the suffixes of a tuple in order and acts on the first one that
  ends R1 (steps 1 and 2) or R2 (step 3). Which one that is depends only on the region's
  last ``n`` letters, ``n`` the longest suffix's length, so a table from those letters to
  NLTK's first match (computed the way NLTK does, in the tuple's order, on first use) gives
  it in one lookup, whatever the order of the tuple.
- The final ``replace`` chain: the umlauts (and ``ß`` before) can only be in a word that is
  not ASCII, and ``U``/``Y`` only where marking made them (``str.lower`` never gives them),
  so those replacements are skipped when they cannot apply.

Licence: NLTK is Apache-2.0 licensed. This module follows its algorithm and uses its suffix
lists and letter classes (data needed for equal output); the code is written anew.
"""

from __future__ import annotations

import re
from collections.abc import Callable

NLTK_VERSION = "3.10.4"

VOWELS = "aeiouy\xe4\xf6\xfc"
S_ENDING = "bdfghklmnrt"  # letters before a final "s" that step 1 removes
ST_ENDING = "bdfghklmnt"  # letters before a final "st" that step 2 removes

# NLTK's class attributes, in its order (tests compare them with NLTK's).
STEP1_SUFFIXES = ("ern", "em", "er", "en", "es", "e", "s")
STEP2_SUFFIXES = ("est", "en", "er", "st")
STEP3_SUFFIXES = ("isch", "lich", "heit", "keit", "end", "ung", "ig", "ik")
# Step 1's suffixes removed with the "s" of a "niss" before them
NISS_SUFFIXES = ("en", "es", "e")
# The branches of NLTK's step 3, in its order: each names the suffixes it acts on.
STEP3_BRANCHES = (("end", "ung"), ("ig", "ik", "isch"), ("lich", "heit"), ("keit",))

_V = VOWELS
_RUNS = re.compile(f"[{_V}]{{3,}}")
# R1 starts after the first vowel + non-vowel; R2 after the next such pair from R1 on.
_R1R2 = re.compile(f"[{_V}][^{_V}]([^{_V}]*[{_V}]+[^{_V}])?")


class FirstSuffix(dict[str, str]):
    """``table[end]``: the first suffix of a tuple, in its order, that ``end`` ends with.

    ``""`` when none does. Keyed by a region's last ``width`` letters (the longest suffix's
    length), which decide the first match as the whole region would; filled on first use
    (trying only the suffixes that end with the key's last letter, in the tuple's order) and
    emptied when it grows past ``max_size`` entries.
    """

    def __init__(self, suffixes: tuple[str, ...], *, max_size: int = 1 << 16) -> None:
        super().__init__()
        self.suffixes = suffixes
        self.width = max(len(s) for s in suffixes)
        self.max_size = max_size
        self.by_last: dict[str, tuple[str, ...]] = {}
        for s in suffixes:
            self.by_last[s[-1]] = (*self.by_last.get(s[-1], ()), s)

    def __missing__(self, end: str) -> str:
        if len(self) >= self.max_size:
            self.clear()
        first = next((s for s in self.by_last.get(end[-1:], ()) if end.endswith(s)), "")
        self[end] = first
        return first


def _mark_run(match: re.Match[str]) -> str:
    """NLTK's marking loop on one run of vowels (its neighbours are non-vowels)."""
    chars = list(match.group())
    for j in range(1, len(chars) - 1):
        if chars[j - 1] in _V and (chars[j] == "u" or chars[j] == "y"):
            chars[j] = chars[j].upper()
    return "".join(chars)


def stemmer(stopwords: frozenset[str]) -> Callable[[str], str]:
    """NLTK 3.10.4's German Snowball stemmer with these stopwords, as a function.

    Args:
        stopwords: words returned unchanged (after ``str.lower``), e.g.
            ``pipeline.tokenizers.multilingual.snowball_stopwords("german")``.

    Returns:
        ``stem(word) -> str``, equal for every ``str`` to ``s.stem(word)`` where
        ``s = nltk.stem.snowball.SnowballStemmer("german")`` with these stopwords in
        ``s.stopwords`` (a lower-case string; the empty string for an empty word).

    Raises:
        Nothing of its own: NLTK's indexing is kept, so a word on which NLTK's code would
        raise (none is known) raises the same exception here.
    """
    stops = frozenset(stopwords)
    runs = _RUNS
    r1r2 = _R1R2.search
    s1 = FirstSuffix(STEP1_SUFFIXES)
    s2 = FirstSuffix(STEP2_SUFFIXES)
    s3 = FirstSuffix(STEP3_SUFFIXES)
    w1, w2, w3 = -s1.width, -s2.width, -s3.width
    niss = NISS_SUFFIXES
    end_ung, ig_ik_isch, lich_heit, _ = STEP3_BRANCHES

    def stem(word: str) -> str:
        word = word.lower()
        if word in stops:
            return word
        ascii_only = word.isascii()
        if not ascii_only:
            word = word.replace("\xdf", "ss")
        marked = ("u" in word or "y" in word) and runs.search(word) is not None
        if marked:
            word = runs.sub(_mark_run, word)

        m = r1r2(word)
        if m is None:
            r1 = r2 = ""
        else:
            start = m.start()
            end2 = m.end(1)
            r2 = word[end2:] if end2 >= 0 else ""
            r1 = word[3:] if start == 0 else word[start + 2:]

        # Step 1
        suffix = s1[r1[w1:]]
        if suffix:
            size = len(suffix)
            if suffix in niss and word[-size - 4:-size] == "niss":
                word = word[:-size - 1]
                r1 = r1[:-size - 1]
                r2 = r2[:-size - 1]
            elif suffix == "s":
                if word[-2] in S_ENDING:
                    word = word[:-1]
                    r1 = r1[:-1]
                    r2 = r2[:-1]
            else:
                word = word[:-size]
                r1 = r1[:-size]
                r2 = r2[:-size]

        # Step 2
        suffix = s2[r1[w2:]]
        if suffix:
            if suffix == "st":
                if word[-3] in ST_ENDING and len(word[:-3]) >= 3:
                    word = word[:-2]
                    r1 = r1[:-2]
                    r2 = r2[:-2]
            else:
                size = len(suffix)
                word = word[:-size]
                r1 = r1[:-size]
                r2 = r2[:-size]

        # Step 3: derivational suffixes
        suffix = s3[r2[w3:]]
        if suffix:
            size = len(suffix)
            if suffix in end_ung:
                if ("ig" in r2[-size - 2:-size]
                        and "e" not in r2[-size - 3:-size - 2]):
                    word = word[:-size - 2]
                else:
                    word = word[:-size]
            elif suffix in ig_ik_isch and "e" not in r2[-size - 1:-size]:
                word = word[:-size]
            elif suffix in lich_heit:
                if "er" in r1[-size - 2:-size] or "en" in r1[-size - 2:-size]:
                    word = word[:-size - 2]
                else:
                    word = word[:-size]
            elif suffix == "keit":
                if "lich" in r2[-size - 4:-size]:
                    word = word[:-size - 4]
                elif "ig" in r2[-size - 2:-size]:
                    word = word[:-size - 2]
                else:
                    word = word[:-size]

        if not ascii_only:
            word = word.replace("\xe4", "a").replace("\xf6", "o").replace("\xfc", "u")
        if marked:
            word = word.replace("U", "u").replace("Y", "y")
        return word

    return stem
