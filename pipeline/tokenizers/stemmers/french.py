"""The French Snowball stemmer of NLTK 3.10.4, ported to give the same stems faster.

Source of the definition: NLTK 3.10.4, ``nltk/stem/snowball.py``, class ``FrenchStemmer``
(its ``stem`` method, its private ``__rv_french`` and ``_StandardStemmer._r1r2_standard``),
which implements Martin Porter's French Snowball algorithm
(https://snowballstem.org/algorithms/french/stemmer.html). What is reproduced is NLTK's code,
quirks included, not the published algorithm where the two differ: region tests are
substring tests (``"iv" in r2`` looks anywhere in R2, also inside a suffix already removed),
RV is not updated after some removals, step 2b looks for its suffixes at the end of RV, step
4 tries the next suffix when one ends the word outside RV, step 6 never looks at the first
letter, and an input that makes NLTK raise makes this raise the same way.

What is computed differently, and why the result is the same:

- Marking ``u``, ``i`` and ``y``: ``q`` + ``u`` becomes ``q`` + ``U`` with one
  ``str.replace`` (two such pairs cannot overlap). The ``u``/``i`` between vowels and ``y``
  beside a vowel are marked only inside runs of vowels (a vowel's neighbours outside its run
  are non-vowels), and only runs of three vowels or more or holding a ``y`` can change, so
  one regular expression finds those runs and NLTK's left-to-right loop runs on each run
  alone, with the word's first and last letters left alone as NLTK's loop bounds do. The
  final ``replace`` chain back to lower case is kept (the fastest way), and skipped for a
  word without an upper-case letter (``str.islower``), which holds no mark.
- Regions R1 and R2: one regular-expression search instead of Python loops over the letters
  (the first vowel followed by a non-vowel, from the start and again from R1). RV: the
  word's second and third letters are looked at in turn, and a regular expression finds
  the first vowel from the fourth on only when neither is one (same definition: after the
  first vowel from the second letter on, or after the third letter).
- Suffix lists: NLTK tries the suffixes of a tuple in order and acts on the first one that
  ends the word (or RV, step 2b). Every such tuple is sorted by non-increasing length (a
  test checks it), so the first hit is the longest suffix that ends the word; one regular
  expression, the reversed suffixes as a trie matched at the start of the reversed word,
  finds that longest suffix. Step 4, whose loop goes on past a suffix outside RV, keeps
  NLTK's order: the suffixes that end with the word's last letter, in the tuple's order.
  The branch taken for a step-1 or step-2b suffix is looked up once (each suffix is named
  by exactly one of NLTK's branches, which a test checks) instead of through the ``elif``
  chain.
- Step 6 (un-accent): one regular expression finds an ``é`` or ``è`` that is the last vowel
  of the word, not its first or last letter.

Licence: NLTK is Apache-2.0 licensed. This module follows its algorithm and uses its suffix
lists and vowels (data needed for equal output); the code is written anew.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pipeline.tokenizers.stemmers import longest_suffix

NLTK_VERSION = "3.10.4"

VOWELS = "aeiouy\xe2\xe0\xeb\xe9\xea\xe8\xef\xee\xf4\xfb\xf9"

# NLTK's class attributes, in its order (tests compare them with NLTK's).
STEP1_SUFFIXES = (
    "issements", "issement", "atrices", "atrice", "ateurs", "ations", "logies", "usions",
    "utions", "ements", "amment", "emment", "ances", "iqUes", "ismes", "ables", "istes",
    "ateur", "ation", "logie", "usion", "ution", "ences", "ement", "euses", "ments", "ance",
    "iqUe", "isme", "able", "iste", "ence", "it\xe9s", "ives", "eaux", "euse", "ment", "eux",
    "it\xe9", "ive", "ifs", "aux", "if",
)
STEP2A_SUFFIXES = (
    "issaIent", "issantes", "iraIent", "issante", "issants", "issions", "irions", "issais",
    "issait", "issant", "issent", "issiez", "issons", "irais", "irait", "irent", "iriez",
    "irons", "iront", "isses", "issez", "\xeemes", "\xeetes", "irai", "iras", "irez", "isse",
    "ies", "ira", "\xeet", "ie", "ir", "is", "it", "i",
)
STEP2B_SUFFIXES = (
    "eraIent", "assions", "erions", "assent", "assiez", "\xe8rent", "erais", "erait", "eriez",
    "erons", "eront", "aIent", "antes", "asses", "ions", "erai", "eras", "erez", "\xe2mes",
    "\xe2tes", "ante", "ants", "asse", "\xe9es", "era", "iez", "ais", "ait", "ant", "\xe9e",
    "\xe9s", "er", "ez", "\xe2t", "ai", "as", "\xe9", "a",
)
STEP4_SUFFIXES = ("i\xe8re", "I\xe8re", "ion", "ier", "Ier", "e", "\xeb")

# The branches of NLTK's step 1, in its order: each names the suffixes it acts on.
STEP1_BRANCHES = (
    ("eaux",),
    ("euse", "euses"),
    ("ement", "ements"),
    ("amment",),
    ("emment",),
    ("ment", "ments"),
    ("aux",),
    ("issement", "issements"),
    ("ance", "iqUe", "isme", "able", "iste", "eux", "ances", "iqUes", "ismes", "ables",
     "istes"),
    ("atrice", "ateur", "ation", "atrices", "ateurs", "ations"),
    ("logie", "logies"),
    ("usion", "ution", "usions", "utions"),
    ("ence", "ences"),
    ("it\xe9", "it\xe9s"),
    ("if", "ive", "ifs", "ives"),
)
# Step 2b's branches: "ions" (in R2), removed, removed with a following "e" of RV.
STEP2B_BRANCHES = (
    ("ions",),
    ("eraIent", "erions", "\xe8rent", "erais", "erait", "eriez", "erons", "eront", "erai",
     "eras", "erez", "\xe9es", "era", "iez", "\xe9e", "\xe9s", "er", "ez", "\xe9"),
    ("assions", "assent", "assiez", "aIent", "antes", "asses", "\xe2mes", "\xe2tes", "ante",
     "ants", "asse", "ais", "ait", "ant", "\xe2t", "ai", "as", "a"),
)
UNDOUBLE_SUFFIXES = ("enn", "onn", "ett", "ell", "eill")
UNACCENTED = ("\xe9", "\xe8")  # step 6's letters
RV_PREFIXES = ("par", "col", "tap")  # RV after these three letters

_V = VOWELS
# Runs of vowels that marking can change: three vowels or more, or two or more with a "y"
# (every match is a whole run: a run that fails at its first letter has no match inside).
_MARK_RUNS_Y = re.compile(f"[{_V}]{{3,}}|[{_V}]+y[{_V}]*|y[{_V}]+")
_MARK_RUNS = re.compile(f"[{_V}]{{3,}}")  # the same for a word without "y"
# R1 starts after the first vowel + non-vowel; R2 after the next such pair from R1 on.
_R1R2 = re.compile(f"[{_V}][^{_V}]([^{_V}]*[{_V}]+[^{_V}])?")
_VOWEL = re.compile(f"[{_V}]")
# Step 6: an "é" or "è" that is the word's last vowel and not its last letter.
_UNACCENT = re.compile(f"[{''.join(UNACCENTED)}](?=[^{_V}]+\\Z)")


def _longest_suffix(suffixes: tuple[str, ...]) -> re.Pattern[str]:
    """A pattern matching, at the start of a reversed word, its longest suffix in the list."""
    return re.compile(longest_suffix(suffixes))


def _branches(branches: tuple[tuple[str, ...], ...]) -> dict[str, int]:
    """Each suffix's branch number (its place in the tuple of branches)."""
    return {suffix: i for i, group in enumerate(branches) for suffix in group}


_S1 = _longest_suffix(STEP1_SUFFIXES)
_S1_BRANCH = _branches(STEP1_BRANCHES)
_S2A = _longest_suffix(STEP2A_SUFFIXES)
_S2B = _longest_suffix(STEP2B_SUFFIXES)
_S2B_BRANCH = _branches(STEP2B_BRANCHES)
_S4_BY_LAST: dict[str, tuple[str, ...]] = {}
for _s in STEP4_SUFFIXES:
    _S4_BY_LAST[_s[-1]] = (*_S4_BY_LAST.get(_s[-1], ()), _s)


def _mark_run(match: re.Match[str]) -> str:
    """NLTK's marking loop on one run of vowels (its neighbours are non-vowels)."""
    chars = list(match.group())
    last = len(chars) - 1
    start = 1 if match.start() == 0 else 0
    stop = last if match.end() == len(match.string) else last + 1
    for j in range(start, stop):
        char = chars[j]
        before = j > 0 and chars[j - 1] in _V
        if char == "u" or char == "i":
            if before and j < last:
                chars[j] = char.upper()
        elif char == "y" and (before or j < last):
            chars[j] = "Y"
    return "".join(chars)


def stemmer(stopwords: frozenset[str]) -> Callable[[str], str]:
    """NLTK 3.10.4's French Snowball stemmer with these stopwords, as a function.

    Args:
        stopwords: words returned unchanged (after ``str.lower``), e.g.
            ``pipeline.tokenizers.multilingual.snowball_stopwords("french")``.

    Returns:
        ``stem(word) -> str``, equal for every ``str`` to ``s.stem(word)`` where
        ``s = nltk.stem.snowball.SnowballStemmer("french"); s.stopwords.update(stopwords)``
        (a lower-case string; the empty string for an empty word).

    Raises:
        Nothing of its own: NLTK's indexing is kept, so a word on which NLTK's code would
        raise (none is known) raises the same exception here.
    """
    stops = frozenset(stopwords)
    vowels = _V
    runs, runs_y = _MARK_RUNS, _MARK_RUNS_Y
    r1r2 = _R1R2.search
    first_vowel = _VOWEL.search
    unaccent = _UNACCENT.search
    s1, s1_branch = _S1.match, _S1_BRANCH
    s2a = _S2A.match
    s2b, s2b_branch = _S2B.match, _S2B_BRANCH
    s4_by_last = _S4_BY_LAST

    def stem(word: str) -> str:
        word = word.lower()
        if word in stops:
            return word
        step1_success = rv_ending_found = step2a_success = step2b_success = False

        word = word.replace("qu", "qU")
        if "y" in word:
            word = runs_y.sub(_mark_run, word)
        elif runs.search(word) is not None:
            word = runs.sub(_mark_run, word)
        n = len(word)
        m = r1r2(word)
        if m is None:
            r1 = r2 = ""
        else:
            r1 = word[m.start() + 2:]
            end2 = m.end(1)
            r2 = word[end2:] if end2 >= 0 else ""
        # RV: after the third letter for "par", "col", "tap" or two vowels at the start,
        # else after the first vowel from the second letter on (looked at in turn)
        if n < 2:
            rv = ""
        elif word[:3] in RV_PREFIXES:
            rv = word[3:]
        elif word[1] in vowels:
            rv = word[3:] if word[0] in vowels else word[2:]
        elif n > 2 and word[2] in vowels:
            rv = word[3:]
        else:
            m = first_vowel(word, 3)
            rv = word[m.end():] if m is not None else ""

        # Step 1: standard suffix removal (the longest suffix of the word in the list).
        m = s1(word[::-1])
        if m is not None:
            size = m.end()
            suffix = word[-size:]
            branch = s1_branch[suffix]
            if branch == 0:  # eaux
                word = word[:-1]
                step1_success = True
            elif branch == 1:  # euse(s)
                if suffix in r2:
                    word = word[:-size]
                    step1_success = True
                elif suffix in r1:
                    word = word[:-size] + "eux"
                    step1_success = True
            elif branch == 2:  # ement(s)
                if suffix in rv:
                    word = word[:-size]
                    step1_success = True
                    if word[-2:] == "iv" and "iv" in r2:
                        word = word[:-2]
                        if word[-2:] == "at" and "at" in r2:
                            word = word[:-2]
                    elif word[-3:] == "eus":
                        if "eus" in r2:
                            word = word[:-3]
                        elif "eus" in r1:
                            word = word[:-1] + "x"
                    elif word[-3:] in ("abl", "iqU"):
                        if "abl" in r2 or "iqU" in r2:
                            word = word[:-3]
                    elif word[-3:] in ("i\xe8r", "I\xe8r"):
                        if "i\xe8r" in rv or "I\xe8r" in rv:
                            word = word[:-3] + "i"
            elif branch == 3:  # amment
                if suffix in rv:
                    word = word[:-6] + "ant"
                    rv = rv[:-6] + "ant"
                    rv_ending_found = True
            elif branch == 4:  # emment
                if suffix in rv:
                    word = word[:-6] + "ent"
                    rv_ending_found = True
            elif branch == 5:  # ment(s)
                if (suffix in rv and not rv.startswith(suffix)
                        and rv[rv.rindex(suffix) - 1] in vowels):
                    word = word[:-size]
                    rv = rv[:-size]
                    rv_ending_found = True
            elif branch == 6:  # aux
                if suffix in r1:
                    word = word[:-2] + "l"
                    step1_success = True
            elif branch == 7:  # issement(s)
                if suffix in r1 and word[-size - 1] not in vowels:
                    word = word[:-size]
                    step1_success = True
            elif branch == 8:  # ance, ique, isme, able, iste, eux (and plurals)
                if suffix in r2:
                    word = word[:-size]
                    step1_success = True
            elif branch == 9:  # atrice, ateur, ation (and plurals)
                if suffix in r2:
                    word = word[:-size]
                    step1_success = True
                    if word[-2:] == "ic":
                        word = word[:-2] if "ic" in r2 else word[:-2] + "iqU"
            elif branch == 10:  # logie(s)
                if suffix in r2:
                    word = word[:-size] + "log"
                    step1_success = True
            elif branch == 11:  # usion, ution (and plurals)
                if suffix in r2:
                    word = word[:-size] + "u"
                    step1_success = True
            elif branch == 12:  # ence(s)
                if suffix in r2:
                    word = word[:-size] + "ent"
                    step1_success = True
            elif branch == 13:  # ité(s)
                if suffix in r2:
                    word = word[:-size]
                    step1_success = True
                    if word[-4:] == "abil":
                        word = word[:-4] if "abil" in r2 else word[:-2] + "l"
                    elif word[-2:] == "ic":
                        word = word[:-2] if "ic" in r2 else word[:-2] + "iqU"
                    elif word[-2:] == "iv":
                        if "iv" in r2:
                            word = word[:-2]
            elif suffix in r2:  # if, ive, ifs, ives
                word = word[:-size]
                step1_success = True
                if word[-2:] == "at" and "at" in r2:
                    word = word[:-2]
                    if word[-2:] == "ic":
                        word = word[:-2] if "ic" in r2 else word[:-2] + "iqU"

        if not step1_success or rv_ending_found:
            # Step 2a: verb suffixes beginning with "i" (the longest ending the word).
            m = s2a(word[::-1])
            if m is not None:
                suffix = word[-m.end():]
                if (suffix in rv and len(rv) > len(suffix)
                        and rv[rv.rindex(suffix) - 1] not in vowels):
                    word = word[:-len(suffix)]
                    step2a_success = True

            # Step 2b: other verb suffixes (the longest ending RV).
            if not step2a_success:
                m = s2b(rv[::-1])
                if m is not None:
                    size = m.end()
                    branch = s2b_branch[rv[-size:]]
                    if branch == 0:  # ions
                        if "ions" in r2:
                            word = word[:-4]
                            step2b_success = True
                    elif branch == 1:
                        word = word[:-size]
                        step2b_success = True
                    else:
                        word = word[:-size]
                        rv = rv[:-size]
                        step2b_success = True
                        if rv.endswith("e"):
                            word = word[:-1]

        if step1_success or step2a_success or step2b_success:
            # Step 3
            if word[-1] == "Y":
                word = word[:-1] + "i"
            elif word[-1] == "\xe7":
                word = word[:-1] + "c"
        else:
            # Step 4: residual suffixes
            if len(word) >= 2 and word[-1] == "s" and word[-2] not in "aiou\xe8s":
                word = word[:-1]
            for suffix in s4_by_last.get(word[-1:], ()):
                if word.endswith(suffix) and suffix in rv:
                    if suffix == "ion" and suffix in r2 and rv[-4] in "st":
                        word = word[:-3]
                    elif suffix in ("ier", "i\xe8re", "Ier", "I\xe8re"):
                        word = word[:-len(suffix)] + "i"
                    elif suffix == "e":
                        word = word[:-1]
                    elif suffix == "\xeb" and word[-3:-1] == "gu":
                        word = word[:-1]
                    break

        # Step 5: undouble
        if word.endswith(UNDOUBLE_SUFFIXES):
            word = word[:-1]

        # Step 6: un-accent
        if UNACCENTED[0] in word or UNACCENTED[1] in word:
            m = unaccent(word, 1)
            if m is not None:
                j = m.start()
                word = word[:j] + "e" + word[j + 1:]

        if word.islower():  # no upper-case letter, so no mark left
            return word
        return word.replace("I", "i").replace("U", "u").replace("Y", "y")

    return stem
