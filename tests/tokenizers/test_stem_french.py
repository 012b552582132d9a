"""pipeline.tokenizers.stemmers.french against NLTK's FrenchStemmer, word for word.

The outside truth is NLTK itself (the version the port names), with the shipped stopwords
(tests/support/stemming.py).
"""

from __future__ import annotations

import ast
import inspect
import random
import string
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.tokenizers.multilingual import snowball_stopwords
from pipeline.tokenizers.stemmers import french
from tests.support.stemming import assert_same_stems, nltk_stemmer, shared_tokens

nltk = pytest.importorskip("nltk")
if nltk.__version__ != french.NLTK_VERSION:
    pytest.skip(f"the port reproduces NLTK {french.NLTK_VERSION}, NLTK {nltk.__version__} is "
                "installed", allow_module_level=True)

from nltk.stem.snowball import FrenchStemmer  # noqa: E402

LANGUAGE = "french"
STOPWORDS = snowball_stopwords(LANGUAGE)
LETTERS = "abcdefghijklmnopqrstuvwxyz\xe2\xe0\xeb\xe9\xea\xe8\xef\xee\xf4\xfb\xf9\xe7\u0153\xe6\xff"
# Letters NLTK's branches test for after a removal, and markers' neighbours
HELPER_ENDINGS = ("iv", "at", "ic", "abil", "eus", "abl", "iqu", "i\xe8r", "gu", "qu", "y",
                  "enn", "onn", "ett", "ell", "eill", "s", "\xe7", "ss", "ui", "ai", "eu")
OTHERS = ("0", "7", "2024", "x1", "\u0441\u043b\u043e\u0432\u043e", "\u00df", "\u0130",
          "\u1e9e", "\u2160", "\u00c9", "\u00c8", "\ufb01", "-", "_", "\U0001d400")


def _assert_equal_to_nltk(words):
    assert_same_stems(nltk_stemmer(LANGUAGE), french.stemmer(STOPWORDS), words)


def _suffix_tuples():
    """NLTK's suffix tuples (class attributes) and the port's, by name."""
    return {name: (getattr(FrenchStemmer, f"_FrenchStemmer__{name}_suffixes"),
                   getattr(french, f"{name.upper()}_SUFFIXES"))
            for name in ("step1", "step2a", "step2b", "step4")}


def generated_words(count: int, *, seed: int) -> list[str]:
    """A deterministic corpus: stems joined to 1-3 suffixes drawn from every suffix tuple.

    Stems are random French letters (some with ``qu``, ``y`` and vowel runs), a few Latin,
    digit or mixed ones; some words are upper-cased or title-cased, some are stopwords.
    """
    rng = random.Random(seed)
    suffixes = [s.lower() for s in (*french.STEP1_SUFFIXES, *french.STEP2A_SUFFIXES,
                                    *french.STEP2B_SUFFIXES, *french.STEP4_SUFFIXES)]
    suffixes += [s for s in (*french.STEP1_SUFFIXES, *french.STEP2B_SUFFIXES) if s != s.lower()]
    endings = suffixes + list(HELPER_ENDINGS)
    stopwords = sorted(STOPWORDS)
    vowels = french.VOWELS
    words = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.03:
            words.append(rng.choice(stopwords).upper() if rng.random() < 0.3
                         else rng.choice(stopwords))
            continue
        if roll < 0.08:
            stem = "".join(rng.choice(OTHERS + tuple(string.ascii_letters))
                           for _ in range(rng.randint(0, 4)))
        else:
            stem = "".join(rng.choice(vowels) if rng.random() < 0.4 else rng.choice(LETTERS)
                           for _ in range(rng.randint(0, 7)))
            if rng.random() < 0.15:
                stem = rng.choice(("par", "col", "tap", "qu", "y", "ai", "eau")) + stem
        word = stem + "".join(rng.choice(endings) for _ in range(rng.randint(1, 3)))
        roll = rng.random()
        if roll < 0.05:
            word = word.upper()
        elif roll < 0.08:
            word = word.title()
        words.append(word)
    return words


def test_suffix_tuples_are_nltks_and_sorted_longest_first():
    for name, (theirs, ours) in _suffix_tuples().items():
        assert ours == theirs, name
        lengths = [len(s) for s in theirs]
        if name != "step4":  # step 4 keeps NLTK's order: the port does not rely on it there
            assert lengths == sorted(lengths, reverse=True), f"{name} is not longest first"
    assert FrenchStemmer._FrenchStemmer__vowels == french.VOWELS


def test_every_suffix_has_exactly_one_branch():
    for suffixes, branches in ((french.STEP1_SUFFIXES, french.STEP1_BRANCHES),
                               (french.STEP2B_SUFFIXES, french.STEP2B_BRANCHES)):
        named = [s for group in branches for s in group]
        assert sorted(named) == sorted(suffixes)


def test_the_branch_tuples_are_the_ones_in_nltks_code():
    """Every tuple of strings written in NLTK's ``stem`` is one the port mirrors."""
    methods = (FrenchStemmer.stem, FrenchStemmer._FrenchStemmer__rv_french)
    theirs = {frozenset(node.value for node in tup.elts) for method in methods
              for tup in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(method))))
              if isinstance(tup, ast.Tuple)
              and tup.elts and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                   for e in tup.elts)}
    branches = [g for g in (*french.STEP1_BRANCHES, *french.STEP2B_BRANCHES) if len(g) > 1]
    others = [("abl", "iqU"), ("i\xe8r", "I\xe8r"), ("ier", "i\xe8re", "Ier", "I\xe8re"),
              french.UNDOUBLE_SUFFIXES, french.UNACCENTED, french.RV_PREFIXES]
    assert theirs == {frozenset(t) for t in (*branches, *others)}


@pytest.mark.parametrize("name", ["step1", "step2a", "step2b"])
def test_longest_suffix_is_nltks_first_match(name):
    suffixes = _suffix_tuples()[name][1]
    pattern = french._longest_suffix(suffixes)
    rng = random.Random(name)
    for suffix in suffixes:
        for word in (suffix, "x" + suffix, rng.choice(suffixes) + suffix, suffix[1:],
                     suffix + "z", suffix[:-1]):
            first = next((s for s in suffixes if word.endswith(s)), None)
            match = pattern.match(word[::-1])
            assert (word[-match.end():] if match else None) == first, word


def test_equals_nltk_on_the_shared_french_words(shared_dir):
    words = sorted(set(shared_tokens(shared_dir, LANGUAGE)))
    assert len(words) > 1000
    _assert_equal_to_nltk(words)


def test_equals_nltk_on_a_generated_corpus():
    _assert_equal_to_nltk(generated_words(200_000, seed=1))


@pytest.mark.slow
def test_equals_nltk_on_a_bigger_generated_corpus():
    _assert_equal_to_nltk(generated_words(1_000_000, seed=2))


def test_the_generated_corpus_takes_every_branch():
    """Each suffix of every tuple ends some generated word, stopwords and upper case occur."""
    words = generated_words(200_000, seed=1)
    lowered = [w.lower() for w in words]
    endings = {w[-k:] for w in lowered for k in range(1, 10)}
    for name, (_, suffixes) in _suffix_tuples().items():
        missing = {s.lower() for s in suffixes} - endings
        assert not missing, (name, missing)
    assert sum(w in STOPWORDS for w in lowered) > 1000
    assert sum(w != w.lower() for w in words) > 1000


ALPHABET = list(LETTERS + french.VOWELS.upper() + "QUIY" + string.ascii_letters
                + string.digits) + list(OTHERS) + ["qu", "iqu", "ement", "ions", "\u0307"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=16).map("".join) | st.text(max_size=12))
def test_equals_nltk_on_any_text(word):
    _assert_equal_to_nltk([word])
