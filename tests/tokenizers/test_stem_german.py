"""pipeline.tokenizers.stemmers.german against NLTK's GermanStemmer, word for word.

The outside truth is NLTK itself (the version the port names), with the shipped stopwords
(tests/support/stemming.py).
"""

from __future__ import annotations

import ast
import inspect
import random
import string
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.tokenizers.multilingual import snowball_stopwords
from pipeline.tokenizers.stemmers import german
from tests.support.stemming import assert_same_stems, nltk_stemmer, shared_tokens

nltk = pytest.importorskip("nltk")
if nltk.__version__ != german.NLTK_VERSION:
    pytest.skip(f"the port reproduces NLTK {german.NLTK_VERSION}, NLTK {nltk.__version__} is "
                "installed", allow_module_level=True)

from nltk.stem.snowball import GermanStemmer  # noqa: E402

LANGUAGE = "german"
STOPWORDS = snowball_stopwords(LANGUAGE)
LETTERS = "abcdefghijklmnopqrstuvwxyz\xe4\xf6\xfc\xdf"
# Letters NLTK's branches test for around a suffix, and markers' neighbours
HELPER_ENDINGS = ("niss", "ig", "lich", "er", "en", "e", "st", "b", "t", "k", "n", "r",
                  "au", "eu", "aue", "eye", "uyu", "\xe4u\xf6")
OTHERS = ("0", "7", "2024", "x1", "\u0441\u043b\u043e\u0432\u043e", "\u1e9e", "\u0130",
          "\u2160", "\u00c4", "\u00d6", "\u00dc", "\ufb01", "-", "_", "\U0001d400")


def _assert_equal_to_nltk(words):
    assert_same_stems(nltk_stemmer(LANGUAGE), german.stemmer(STOPWORDS), words)


def _suffix_tuples():
    """NLTK's suffix tuples (class attributes) and the port's, by name."""
    return {name: (getattr(GermanStemmer, f"_GermanStemmer__{name}_suffixes"),
                   getattr(german, f"{name.upper()}_SUFFIXES"))
            for name in ("step1", "step2", "step3")}


def generated_words(count: int, *, seed: int) -> list[str]:
    """A deterministic corpus: stems joined to 1-3 suffixes drawn from every suffix tuple.

    Stems are random German letters (with vowel runs holding ``u`` and ``y``), a few Latin,
    digit or mixed ones; some words are upper-cased or title-cased, some are stopwords.
    """
    rng = random.Random(seed)
    endings = [*german.STEP1_SUFFIXES, *german.STEP2_SUFFIXES, *german.STEP3_SUFFIXES,
               *HELPER_ENDINGS]
    stopwords = sorted(STOPWORDS)
    vowels = german.VOWELS
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
        word = stem + "".join(rng.choice(endings) for _ in range(rng.randint(1, 3)))
        roll = rng.random()
        if roll < 0.05:
            word = word.upper()
        elif roll < 0.08:
            word = word.title()
        words.append(word)
    return words


def test_suffix_tuples_and_letters_are_nltks():
    for name, (theirs, ours) in _suffix_tuples().items():
        assert ours == theirs, name
    assert GermanStemmer._GermanStemmer__vowels == german.VOWELS
    assert GermanStemmer._GermanStemmer__s_ending == german.S_ENDING
    assert GermanStemmer._GermanStemmer__st_ending == german.ST_ENDING


def test_every_step3_suffix_has_exactly_one_branch():
    named = [s for group in german.STEP3_BRANCHES for s in group]
    assert sorted(named) == sorted(german.STEP3_SUFFIXES)


def test_the_branch_tuples_are_the_ones_in_nltks_code():
    """Every tuple of strings written in NLTK's ``stem`` is one the port mirrors."""
    source = textwrap.dedent(inspect.getsource(GermanStemmer.stem))
    theirs = {frozenset(node.value for node in tup.elts)
              for tup in ast.walk(ast.parse(source)) if isinstance(tup, ast.Tuple)
              and tup.elts and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                   for e in tup.elts)}
    ours = {frozenset(t) for t in (german.NISS_SUFFIXES, *german.STEP3_BRANCHES) if len(t) > 1}
    assert theirs == ours


@pytest.mark.parametrize("name", ["step1", "step2", "step3"])
def test_first_suffix_table_is_nltks_first_match(name):
    suffixes = _suffix_tuples()[name][1]
    table = german.FirstSuffix(suffixes, max_size=8)  # small: the table empties and refills
    rng = random.Random(name)
    for suffix in suffixes:
        for end in ("", suffix, "x" + suffix, rng.choice(suffixes) + suffix, suffix[1:],
                    suffix + "z", suffix[:-1], "ni" + suffix):
            first = next((s for s in suffixes if end.endswith(s)), "")
            assert table[end[-table.width:]] == first, end
            assert len(table) <= 8


def test_lower_case_never_gives_the_marks():
    """The port skips replacing ``U`` and ``Y`` in words it did not mark: no lower-cased
    character holds them."""
    assert not [cp for cp in range(sys.maxunicode + 1) if "U" in chr(cp).lower()
                or "Y" in chr(cp).lower()]


def test_equals_nltk_on_the_shared_german_words(shared_dir):
    words = sorted(set(shared_tokens(shared_dir, LANGUAGE)))
    assert len(words) > 1000
    _assert_equal_to_nltk(words)


def test_equals_nltk_on_a_generated_corpus():
    _assert_equal_to_nltk(generated_words(200_000, seed=1))


@pytest.mark.slow
def test_equals_nltk_on_a_bigger_generated_corpus():
    _assert_equal_to_nltk(generated_words(1_000_000, seed=2))


def test_the_generated_corpus_takes_every_branch():
    """Each suffix of every tuple ends some generated word; "niss", marks, stopwords and
    upper case occur."""
    words = generated_words(200_000, seed=1)
    lowered = [w.lower() for w in words]
    endings = {w[-k:] for w in lowered for k in range(1, 9)}
    for name, (_, suffixes) in _suffix_tuples().items():
        missing = set(suffixes) - endings
        assert not missing, (name, missing)
    for helper in ("nisse", "nissen", "nisses", "igung", "igend", "lichkeit", "igkeit",
                   "erlich", "enheit", "uyu", "aue"):
        assert any(helper in w for w in lowered), helper
    assert sum(w in STOPWORDS for w in lowered) > 1000
    assert sum(w != w.lower() for w in words) > 1000


ALPHABET = list(LETTERS + german.VOWELS.upper() + "UY" + string.ascii_letters
                + string.digits) + list(OTHERS) + ["niss", "lich", "keit", "ung", "\u0307"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=16).map("".join) | st.text(max_size=12))
def test_equals_nltk_on_any_text(word):
    _assert_equal_to_nltk([word])
