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
  ends R1 (steps 1 and 2) or R2 (step 3). A suffix can only end a region that ends with the
  suffix's last letter, so the port tries only the suffixes ending with the region's last
  letter, in the tuple's order (a dict from the last letter to them): the first hit is
  NLTK's, whatever the order of the tuple.

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

_V = VOWELS
_RUNS = re.compile(f"[{_V}]{{3,}}")
# R1 starts after the first vowel + non-vowel; R2 after the next such pair from R1 on.
_R1R2 = re.compile(f"[{_V}][^{_V}]([^{_V}]*[{_V}]+[^{_V}])?")


def _by_last_letter(suffixes: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """The suffixes ending with each letter, in the tuple's order."""
    by_last: dict[str, tuple[str, ...]] = {}
    for suffix in suffixes:
        by_last[suffix[-1]] = (*by_last.get(suffix[-1], ()), suffix)
    return by_last


_S1 = _by_last_letter(STEP1_SUFFIXES)
_S2 = _by_last_letter(STEP2_SUFFIXES)
_S3 = _by_last_letter(STEP3_SUFFIXES)


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
    s1, s2, s3 = _S1, _S2, _S3
    no_suffix: tuple[str, ...] = ()

    def stem(word: str) -> str:
        word = word.lower()
        if word in stops:
            return word
        word = word.replace("\xdf", "ss")
        if ("u" in word or "y" in word) and runs.search(word) is not None:
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
        for suffix in s1.get(r1[-1:], no_suffix):
            if r1.endswith(suffix):
                size = len(suffix)
                if (suffix in ("en", "es", "e")
                        and word[-size - 4:-size] == "niss"):
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
                break

        # Step 2
        for suffix in s2.get(r1[-1:], no_suffix):
            if r1.endswith(suffix):
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
                break

        # Step 3: derivational suffixes
        for suffix in s3.get(r2[-1:], no_suffix):
            if r2.endswith(suffix):
                size = len(suffix)
                if suffix in ("end", "ung"):
                    if ("ig" in r2[-size - 2:-size]
                            and "e" not in r2[-size - 3:-size - 2]):
                        word = word[:-size - 2]
                    else:
                        word = word[:-size]
                elif suffix in ("ig", "ik", "isch") and "e" not in r2[-size - 1:-size]:
                    word = word[:-size]
                elif suffix in ("lich", "heit"):
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
                break

        return (word.replace("\xe4", "a").replace("\xf6", "o").replace("\xfc", "u")
                .replace("U", "u").replace("Y", "y"))

    return stem
