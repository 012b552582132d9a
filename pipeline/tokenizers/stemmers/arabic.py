"""NLTK's Snowball Arabic stemmer, ported so that it returns what NLTK returns, faster.

Source of the definition: NLTK 3.10.4, ``nltk/stem/snowball.py``, class ``ArabicStemmer``
(Lakhdar Benzahia's Python version of the Snowball Arabic light stemmer by Assem Chelli,
Abdelkrim Aries and Lakhdar Benzahia,
https://github.com/snowballstem/snowball/blob/master/algorithms/arabic/stem_Unicode.sbl).
XL-Sum's multilingual ROUGE calls it through ``SnowballStemmer("arabic",
ignore_stopwords=True)``, so NLTK's code, not the published algorithm, is the reference:
every behaviour of that code is kept, including where it departs from the ``.sbl`` file:

- The two guesses (the word is a defined noun, or a noun and not a verb) look at the word
  as given, before diacritics, tatweel and punctuation are deleted.
- NLTK's character classes ``[\\u064b-\\u064c-...-\\u0652]`` and ``[\\u060C-\\u061B-\\u061F]``
  are ranges with a literal ``-`` between them: they delete U+064B..U+0652, U+060C..U+061B,
  U+061F and the ASCII hyphen-minus.
- NLTK never resets its ``suffixes_verb_step1_success`` flag: after the first word in which
  the first verb-suffix step removed something, every later word of the same stemmer takes
  the branch for "step 1 removed something". A stemmer returned by :func:`stemmer` keeps
  the same flag, so it equals one NLTK instance called on the same words in the same order;
  with ``verb_suffix_seen=True`` the flag is set from the start, and stems no longer depend
  on the words met before (what multilingual ROUGE uses: see its ``_snowball``).
- ``suffix_noun_step2b`` is the string ``"ات"`` looped over character by character, so a
  word of 5 or more characters ending in ``ا`` or ``ت`` (when step 2a did not apply) loses
  its last two characters.
- In the verb-suffix step 2a the one-letter suffixes come first and always apply, so its
  two- and three-letter suffixes never do; likewise ``تمو`` of step 2c never applies.
- ``is_noun`` is true whenever the alef-maqsura step would be reached, so that step never
  runs (kept out of the port; its suffix is still mirrored, see :data:`MIRRORED`); for a
  defined noun whose step 1b removed nothing, the step-2a call sits under ``if not
  is_defined`` and never runs either, so only step 2b is tried.

How it is computed differently, and why the result is the same:

- NLTK's three deleting expressions are one character class, applied only when a search
  finds one of its characters; its four hamza substitutions are five single-character
  ``str.replace`` calls, made only when a search finds a hamza form. Every pattern matches
  one code point at a time and no replacement produces a character a later one changes
  (``^[آأإ]`` is subsumed by the later all-positions ``[أآإ]``), so the order is moot.
  (``str.translate`` gives the same strings but costs 0.5-1 us on a short Arabic word.)
- NLTK loops over suffix (or prefix) tuples calling ``endswith``. Where no element of a
  tuple ends (or begins) another, at most one element matches a word, so order is moot and
  one dictionary lookup per suffix length finds it (the tests check that property for each
  tuple used so). Where a tuple's order matters, the loop's outcome is written out (step
  2a above; prefix step 1, whose lone ``أ`` has no branch; prefix step 3b, where ``كك``
  only matters for a 4-letter word starting ``كك``).
- Length conditions and flags are kept as local variables of one function rather than
  instance attributes set by fifteen methods.

Licence: NLTK is Apache-2.0. This module follows NLTK's algorithm and reproduces its
suffix and prefix lists (data); the code is written afresh.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

NLTK_VERSION = "3.10.4"

# NLTK's ArabicStemmer class attributes this port mirrors, by name (without the
# ``_ArabicStemmer__`` prefix), with their values in NLTK 3.10.4 (type and order included).
MIRRORED: dict[str, tuple[str, ...] | str] = {
    "last_hamzat": ("\u0623", "\u0625", "\u0622", "\u0624", "\u0626"),
    "checks1": ("\u0643\u0627\u0644", "\u0628\u0627\u0644", "\u0627\u0644", "\u0644\u0644"),
    "checks2": ("\u0629", "\u0627\u062a"),
    "suffix_noun_step1a": ("\u064a", "\u0643", "\u0647", "\u0646\u0627", "\u0643\u0645",
                           "\u0647\u0627", "\u0647\u0646", "\u0647\u0645",
                           "\u0643\u0645\u0627", "\u0647\u0645\u0627"),
    "suffix_noun_step1b": "\u0646",
    "suffix_noun_step2a": ("\u0627", "\u064a", "\u0648"),
    "suffix_noun_step2b": "\u0627\u062a",
    "suffix_noun_step2c1": "\u062a",
    "suffix_noun_step2c2": "\u0629",
    "suffix_noun_step3": "\u064a",
    "suffix_verb_step1": ("\u0647", "\u0643", "\u0646\u064a", "\u0646\u0627", "\u0647\u0627",
                          "\u0647\u0645", "\u0647\u0646", "\u0643\u0645", "\u0643\u0646",
                          "\u0647\u0645\u0627", "\u0643\u0645\u0627", "\u0643\u0645\u0648"),
    "suffix_verb_step2a": ("\u062a", "\u0627", "\u0646", "\u064a", "\u0646\u0627",
                           "\u062a\u0627", "\u062a\u0646", "\u0627\u0646", "\u0648\u0646",
                           "\u064a\u0646", "\u062a\u0645\u0627"),
    "suffix_verb_step2b": ("\u0648\u0627", "\u062a\u0645"),
    "suffix_verb_step2c": ("\u0648", "\u062a\u0645\u0648"),
    "suffix_all_alef_maqsura": "\u0649",
    "prefix_step1": ("\u0623", "\u0623\u0623", "\u0623\u0622", "\u0623\u0624", "\u0623\u0627",
                     "\u0623\u0625"),
    "prefix_step2a": ("\u0641\u0627\u0644", "\u0648\u0627\u0644"),
    "prefix_step2b": ("\u0641", "\u0648"),
    "prefix_step3a_noun": ("\u0627\u0644", "\u0644\u0644", "\u0643\u0627\u0644",
                           "\u0628\u0627\u0644"),
    "prefix_step3b_noun": ("\u0628", "\u0643", "\u0644", "\u0628\u0628", "\u0643\u0643"),
    "prefix_step3_verb": ("\u0633\u064a", "\u0633\u062a", "\u0633\u0646", "\u0633\u0623"),
    "prefix_step4_verb": ("\u064a\u0633\u062a", "\u0646\u0633\u062a", "\u062a\u0633\u062a"),
    "conjugation_suffix_verb_1": ("\u0647", "\u0643"),
    "conjugation_suffix_verb_2": ("\u0646\u064a", "\u0646\u0627", "\u0647\u0627", "\u0647\u0645",
                                  "\u0647\u0646", "\u0643\u0645", "\u0643\u0646"),
    "conjugation_suffix_verb_3": ("\u0647\u0645\u0627", "\u0643\u0645\u0627",
                                  "\u0643\u0645\u0648"),
    "conjugation_suffix_verb_4": ("\u0627", "\u0646", "\u064a"),
    "conjugation_suffix_verb_past": ("\u0646\u0627", "\u062a\u0627", "\u062a\u0646"),
    "conjugation_suffix_verb_present": ("\u0627\u0646", "\u0648\u0646", "\u064a\u0646"),
    "conjugation_suffix_noun_1": ("\u064a", "\u0643", "\u0647"),
    "conjugation_suffix_noun_2": ("\u0646\u0627", "\u0643\u0645", "\u0647\u0627", "\u0647\u0646",
                                  "\u0647\u0645"),
    "conjugation_suffix_noun_3": ("\u0643\u0645\u0627", "\u0647\u0645\u0627"),
    "prefixes1": ("\u0648\u0627", "\u0641\u0627"),
    "articles_3len": ("\u0643\u0627\u0644", "\u0628\u0627\u0644"),
    "articles_2len": ("\u0627\u0644", "\u0644\u0644"),
    "prepositions1": ("\u0643", "\u0644"),
    "prepositions2": ("\u0628\u0628", "\u0643\u0643"),
}

# NLTK's regular expressions, by attribute name, with their source text in NLTK 3.10.4.
MIRRORED_PATTERNS = {
    "vocalization": r"[\u064b-\u064c-\u064d-\u064e-\u064f-\u0650-\u0651-\u0652]",
    "kasheeda": r"[\u0640]",
    "arabic_punctuation_marks": r"[\u060C-\u061B-\u061F]",
    "initial_hamzat": r"^[\u0622\u0623\u0625]",
    "waw_hamza": r"[\u0624]",
    "yeh_hamza": r"[\u0626]",
    "alefat": r"[\u0623\u0622\u0625]",
}

# Code points the three pre-normalisation patterns delete (vocalization, kasheeda,
# punctuation marks, each with its stray ``-``).
PRE_DELETED = frozenset(
    "-" + "".join(map(chr, range(0x064B, 0x0653))) + "\u0640"
    + "".join(map(chr, range(0x060C, 0x061C))) + "\u061F")
_PRE = re.compile("[\\-\u064b-\u0652\u0640\u060c-\u061b\u061f]")
# the hamza forms the post-normalisation maps (by _hamzat_to_letters)
_POST = re.compile("[\u0622\u0623\u0624\u0625\u0626]")
_HAMZA = "\u0621"


def _hamzat_to_letters(text: str) -> str:
    """NLTK's waw_hamza, yeh_hamza, then alefat substitutions (initial_hamzat is subsumed).

    Each replaces one character by one no later step changes, so the order is moot.
    """
    return (text.replace("\u0624", "\u0648").replace("\u0626", "\u064a")
            .replace("\u0623", "\u0627").replace("\u0622", "\u0627").replace("\u0625", "\u0627"))


def _cuts(suffixes: Iterable[str]) -> dict[str, int]:
    """Suffix -> its length, for a tuple in which at most one suffix matches any word."""
    return {suffix: len(suffix) for suffix in suffixes}


def stemmer(stopwords: frozenset[str], *, verb_suffix_seen: bool = False
            ) -> Callable[[str], str]:
    """A function equal to the ``stem`` of one NLTK 3.10.4 ``SnowballStemmer("arabic")``.

    Equal to ``s = SnowballStemmer("arabic"); s.stopwords.update(stopwords); s.stem``
    (what ``ignore_stopwords=True`` does with NLTK's list), call for call: the returned
    function carries NLTK's never-reset verb-suffix flag (module docstring), so a sequence of
    words gives what that one NLTK instance gives on the same sequence.

    Args:
        stopwords: words returned unchanged after pre-normalisation (diacritics, tatweel and
            some punctuation deleted); the caller passes
            ``pipeline.tokenizers.multilingual.snowball_stopwords("arabic")``.
        verb_suffix_seen: start with the flag set, as NLTK's stemmer is once any word has
            lost a verb suffix (a word such as ``كتابه``): every stem then depends on its word
            alone, and equals what that NLTK instance gives from then on.

    Returns:
        ``stem(word: str) -> str``, any ``str`` in (any script, empty included), the stem out
        (the pre-normalised word itself when it is a stopword or at most 2 characters long).

    Source: NLTK 3.10.4 ``nltk.stem.snowball.ArabicStemmer.stem``.
    """
    stop = frozenset(stopwords)
    pre_search, pre_sub, post_search, hamza = _PRE.search, _PRE.sub, _POST.search, _HAMZA
    to_letters = _hamzat_to_letters
    last_hamzat = frozenset(MIRRORED["last_hamzat"])
    articles3 = frozenset(MIRRORED["articles_3len"])
    articles2 = frozenset(MIRRORED["articles_2len"])
    verb1 = _cuts(MIRRORED["suffix_verb_step1"])
    noun1a = _cuts(MIRRORED["suffix_noun_step1a"])
    # the one-letter suffixes of verb step 2a, the only ones it ever removes
    verb2a = "".join(s for s in MIRRORED["suffix_verb_step2a"] if len(s) == 1)
    verb2b = frozenset(MIRRORED["suffix_verb_step2b"])
    verb2c = MIRRORED["suffix_verb_step2c"][0]
    noun2a = "".join(MIRRORED["suffix_noun_step2a"])
    noun2b = MIRRORED["suffix_noun_step2b"]  # looped over as characters by NLTK
    noun2c1, noun2c2 = MIRRORED["suffix_noun_step2c1"], MIRRORED["suffix_noun_step2c2"]
    noun1b, noun3 = MIRRORED["suffix_noun_step1b"], MIRRORED["suffix_noun_step3"]
    prefix1 = frozenset(p for p in MIRRORED["prefix_step1"] if len(p) == 2)
    prefix2a = frozenset(MIRRORED["prefix_step2a"])
    prefix2b = "".join(MIRRORED["prefix_step2b"])
    prefixes1 = frozenset(MIRRORED["prefixes1"])
    prefix3a2 = frozenset(p for p in MIRRORED["prefix_step3a_noun"] if len(p) == 2)
    prefix3a3 = frozenset(p for p in MIRRORED["prefix_step3a_noun"] if len(p) == 3)
    beh, kaf, lam = (MIRRORED["prefix_step3b_noun"][i] for i in range(3))
    verb3 = frozenset(MIRRORED["prefix_step3_verb"])
    verb4 = frozenset(MIRRORED["prefix_step4_verb"])
    ist = "\u0627\u0633\u062a"
    step1_success = verb_suffix_seen  # NLTK's suffixes_verb_step1_success, never reset

    def stem(word: str) -> str:
        nonlocal step1_success
        n = len(word)
        # checks1 and checks2 on the word as given
        defined = (n > 3 and word[:2] in articles2) or (n > 4 and word[:3] in articles3)
        is_verb = not defined and not (
            (n > 2 and word[-1] == noun2c2) or (n > 3 and word[-2:] == "\u0627\u062a"))
        w = pre_sub("", word) if pre_search(word) else word
        n = len(w)
        if n <= 2 or w in stop:
            return w
        # suffixes (n >= 3 here, and every step keeps at least 2 characters)
        if is_verb:
            cut = verb1.get(w[-3:]) or verb1.get(w[-2:]) or verb1.get(w[-1])
            if cut and n >= cut + 3:
                w = w[:-cut]
                n -= cut
                step1_success = True
            if step1_success:
                if n > 3 and w[-1] in verb2a:
                    w = w[:-1]
                    n -= 1
                elif n >= 4 and w[-1] == verb2c:
                    w = w[:-1]
                    n -= 1
            elif n >= 5 and w[-2:] in verb2b:
                w = w[:-2]
                n -= 2
            elif n > 3 and w[-1] in verb2a:
                w = w[:-1]
                n -= 1
        if n >= 3 and w[-1] == noun2c2:
            w = w[:-1]
            n -= 1
        else:
            if not defined or (n > 5 and w[-1] == noun1b):
                if defined:  # noun step 1b
                    w = w[:-1]
                    n -= 1
                else:
                    cut = noun1a.get(w[-3:]) or noun1a.get(w[-2:]) or noun1a.get(w[-1])
                    if cut and n >= cut + 3:
                        w = w[:-cut]
                        n -= cut
                if n > 4 and w[-1] in noun2a:
                    w = w[:-1]
                    n -= 1
                elif n >= 5 and w[-1] in noun2b:
                    w = w[:-2]
                    n -= 2
                elif n >= 4 and w[-1] == noun2c1:
                    w = w[:-1]
                    n -= 1
            elif n >= 5 and w[-1] in noun2b:
                w = w[:-2]
                n -= 2
        if n >= 3 and w[-1] == noun3:
            w = w[:-1]
            n -= 1
        # prefixes
        if n > 3 and w[:2] in prefix1:
            w = w[1:]
            n -= 1
        if n > 5 and w[:3] in prefix2a:
            w = w[3:]
            n -= 3
        elif n > 3 and w[0] in prefix2b and w[:2] not in prefixes1:
            w = w[1:]
            n -= 1
        if n > 4 and w[:2] in prefix3a2:
            w = w[2:]
            if is_verb:
                n -= 2
                if n > 4 and w[:2] in verb3:
                    w = w[1:]
                    n -= 1
                if n > 4 and w[:3] in verb4:
                    w = ist + w[3:]
        else:
            if n > 5 and w[:3] in prefix3a3:
                w = w[3:]
                n -= 3
            first = w[0]
            if first == beh:
                if n > 3:
                    w = w[1:]
            elif first == kaf:
                if n > 4 or (n == 4 and w[1] == kaf):
                    w = w[1:]
            elif first == lam and n > 4:
                w = w[1:]
        # post-normalisation
        if w[-1:] in last_hamzat:
            w = w[:-1] + hamza
        return to_letters(w) if post_search(w) else w

    return stem
