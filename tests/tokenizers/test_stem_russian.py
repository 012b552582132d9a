"""pipeline.tokenizers.stemmers.russian against NLTK's RussianStemmer itself.

The outside truth is ``nltk.stem.snowball.SnowballStemmer("russian")`` with XL-Sum's
stopwords (``ignore_stopwords=True`` as multilingual-rouge builds it), on: every token of
the shared russian examples, a generated corpus built from NLTK's own suffix tuples,
hypothesis text, and NLTK's private transliteration and region helpers for the parts.
The structural tests (the port's suffix sets against the class's tuples and the ``suffix
in (...)`` conditions of its ``stem`` source, and the tuples' order) run with any NLTK, so
an upgrade that changes them fails; the equality tests skip when NLTK is not the version
the port reproduces.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import random
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.tokenizers.multilingual import snowball_stopwords
from pipeline.tokenizers.stemmers import russian
from tests.support.stemming import assert_same_stems, nltk_stemmer, shared_tokens

nltk = pytest.importorskip("nltk")
from nltk.stem.snowball import RussianStemmer, SnowballStemmer  # noqa: E402

SAME_VERSION = pytest.mark.skipif(
    nltk.__version__ != russian.NLTK_VERSION,
    reason=f"NLTK {nltk.__version__} is installed; the port reproduces NLTK "
           f"{russian.NLTK_VERSION}")

LOWER = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
PRIVATE = "_RussianStemmer__"


def nltk_tuples() -> dict[str, tuple[str, ...]]:
    """RussianStemmer's suffix tuples by name, ``perfective_gerund`` ... ``derivational``."""
    return {name[len(PRIVATE):-len("_suffixes")]: value
            for name, value in vars(RussianStemmer).items()
            if name.startswith(PRIVATE) and isinstance(value, tuple)}


def nltk_conditions() -> dict[str, set[str]]:
    """The ``suffix in (...)`` tuples of ``RussianStemmer.stem``, by the list looped over."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(RussianStemmer.stem)))
    out: dict[str, set[str]] = {}
    for loop in ast.walk(tree):
        if not (isinstance(loop, ast.For) and isinstance(loop.iter, ast.Attribute)):
            continue
        name = loop.iter.attr.removeprefix("__").removesuffix("_suffixes")
        for node in itertools.chain.from_iterable(ast.walk(b) for b in loop.body):
            if (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In)
                    and isinstance(node.left, ast.Name) and node.left.id == "suffix"
                    and isinstance(node.comparators[0], ast.Tuple)):
                out.setdefault(name, set()).update(
                    e.value for e in node.comparators[0].elts if isinstance(e, ast.Constant))
    return out


@pytest.fixture(scope="module")
def reference():
    return nltk_stemmer("russian")


@pytest.fixture(scope="module")
def port():
    return russian.stemmer(snowball_stopwords("russian"))


# --- structure: the port mirrors NLTK's class (any NLTK version) -------------------------

def test_suffix_sets_are_nltk_tuples():
    tuples = nltk_tuples()
    assert set(tuples) == set(russian.SUFFIXES)
    for name, suffixes in tuples.items():
        assert russian.SUFFIXES[name] == set(suffixes), name


def test_after_a_sets_are_nltk_conditions():
    """The suffixes NLTK removes only after "a" are the ``suffix in (...)`` tuples."""
    conditions = nltk_conditions()
    assert conditions == {name: set(s) for name, s in russian.AFTER_A.items()}
    source = inspect.getsource(RussianStemmer.stem)
    # the condition each of them is tested with: "i^a" or "a" just before the suffix
    assert source.count('rv[-len(suffix) - 3 : -len(suffix)] == "i^a"') == len(conditions)
    assert source.count('rv[-len(suffix) - 1 : -len(suffix)] == "a"') == len(conditions)


@pytest.mark.parametrize("name", sorted(nltk_tuples()))
def test_each_suffix_comes_before_its_own_suffixes(name):
    """Longest first is NLTK's order: no suffix of a tuple is listed before a longer one
    that ends with it (the tuples are not all sorted by length, e.g. adjectival)."""
    suffixes = nltk_tuples()[name]
    assert len(set(suffixes)) == len(suffixes)
    late = [(longer, shorter) for i, shorter in enumerate(suffixes)
            for longer in suffixes[i + 1:] if longer.endswith(shorter)]
    assert not late, late


def test_transliteration_table_is_nltk_chain():
    to_roman = getattr(RussianStemmer(), PRIVATE + "cyrillic_to_roman")
    for code in range(0x100, 0x530):
        assert chr(code).translate(russian.TO_ROMAN) == to_roman(chr(code)), hex(code)
    text = "".join(chr(c) for c in range(0x400, 0x460)) + "^`'ABCabc"
    assert text.translate(russian.TO_ROMAN) == to_roman(text)
    every = "".join(map(chr, range(0x1000))) + "\U0001f600"
    assert every.translate(russian._TO_ROMAN) == every.translate(russian.TO_ROMAN)
    assert every.translate(russian._BACK_SINGLE) == every.translate(russian.BACK_SINGLE)


ROMAN = "i^uashctkez`'ynbop"
# NLTK's multi-letter patterns back to Cyrillic, their pieces, and letters around them
PIECES = ["i^u", "i^a", "shch", "kh", "t^s", "ch", "e`", "i`", "sh", "zh", "''", "t^", "i^",
          "hch", "^s", "h", "c", "s", "'", "i", "e", "a", "u", "t", "z", "k", "^", "`", "y"]


@SAME_VERSION
def test_back_transliteration_is_nltk_chain_on_every_short_string():
    """Every string of 1-4 letters of the patterns, and of 1-3 patterns or their pieces
    (their overlaps, e.g. ``t^shch``: NLTK replaces ``shch`` before ``t^s``)."""
    to_cyrillic = getattr(RussianStemmer(), PRIVATE + "roman_to_cyrillic")
    texts = itertools.chain(
        ("".join(p) for n in range(1, 5) for p in itertools.product(ROMAN, repeat=n)),
        ("".join(p) for n in range(1, 4) for p in itertools.product(PIECES, repeat=n)))
    for text in texts:
        assert russian._to_cyrillic(text) == to_cyrillic(text), text


@SAME_VERSION
@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=ROMAN + "ABCEUgdlmrfv-0ё ", max_size=24))
def test_back_transliteration_is_nltk_chain(text):
    to_cyrillic = getattr(RussianStemmer(), PRIVATE + "roman_to_cyrillic")
    assert russian._to_cyrillic(text) == to_cyrillic(text)


@SAME_VERSION
@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=LOWER + LOWER.upper() + "AEUaeiouy^`'bz1 ", max_size=20))
def test_regions_are_nltk_regions(text):
    regions = getattr(RussianStemmer(), PRIVATE + "regions_russian")
    roman = text.translate(russian.TO_ROMAN)
    assert russian._regions(roman) == regions(roman)


@SAME_VERSION
@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=LOWER, max_size=16))
def test_regions_of_lower_case_words_are_nltk_regions(text):
    """The one-match regions of a word of lower-case Cyrillic letters (the common case)."""
    regions = getattr(RussianStemmer(), PRIVATE + "regions_russian")
    roman = text.translate(russian.TO_ROMAN)
    m = russian._REGIONS_LOWER(roman)
    rv = roman[m.end(1):] if m else ""
    r2 = roman[m.end(3):] if m and m.end(3) >= 0 else ""
    assert (rv, r2) == regions(roman)


# --- words: equal to NLTK ------------------------------------------------------------------

@SAME_VERSION
def test_shared_russian_tokens(shared_dir, reference, port):
    words = sorted(set(shared_tokens(shared_dir, "russian")))
    assert len(words) > 2000
    assert_same_stems(reference, port, words)


def generated_words(n: int, *, seed: int) -> tuple[list[str], set[tuple[str, str]]]:
    """``n`` words: a random stem and a chain of 1-3 suffixes from NLTK's tuples.

    Stems are 0-6 lower-case Cyrillic letters, often ending in а or я (the condition of
    group-1 suffixes); suffixes are drawn family first (each of NLTK's seven tuples equally
    often), in Cyrillic (NLTK's own back-transliteration of the tuple's entry) or, for 3%,
    in its Latin form. Some words are then upper-cased or capitalized, get a Latin or digit
    stem, a Latin upper-case A, U or E, or are replaced by a stopword (as is, upper-cased).

    Returns:
        The words, and the (family, suffix) pairs drawn (every one of every tuple, for n
        large enough).
    """
    rng = random.Random(seed)
    to_cyrillic = getattr(RussianStemmer(), PRIVATE + "roman_to_cyrillic")
    families = {name: sorted(s) for name, s in nltk_tuples().items()}
    names = sorted(families)
    stopwords = sorted(snowball_stopwords("russian"))
    drawn: set[tuple[str, str]] = set()
    words = []
    for _ in range(n):
        stem = "".join(rng.choice(LOWER) for _ in range(rng.randint(0, 6)))
        if rng.random() < 0.4:
            stem += rng.choice("ая")
        chain = []
        for _ in range(rng.randint(1, 3)):
            name = rng.choice(names)
            suffix = rng.choice(families[name])
            drawn.add((name, suffix))
            chain.append(suffix if rng.random() < 0.03 else to_cyrillic(suffix))
        word = stem + "".join(chain)
        r = rng.random()
        if r < 0.04:
            word = word.upper()
        elif r < 0.08:
            word = word.capitalize()
        elif r < 0.10:
            word = rng.choice(["abc", "Mix", "x", "2019", "7", "ё", "ё-"]) + word
        elif r < 0.12:
            i = rng.randint(0, len(word))
            word = word[:i] + rng.choice("AUE^`'h") + word[i:]
        elif r < 0.13:
            word = rng.choice(stopwords)
            word = word.upper() if rng.random() < 0.3 else word
        words.append(word)
    words += ["", "1234", "abcd", "ÄÖÜß", "ёлка", "ЁЛКА", "шчшч", "ььь", "цhч", "t^sщ"]
    return words, drawn


@SAME_VERSION
def test_generated_corpus(reference, port):
    words, drawn = generated_words(200_000, seed=20261205)
    assert drawn == {(name, s) for name, t in nltk_tuples().items() for s in t}
    assert_same_stems(reference, port, words)


@SAME_VERSION
@pytest.mark.slow
def test_generated_corpus_large(reference, port):
    words, _ = generated_words(1_000_000, seed=7)
    assert_same_stems(reference, port, words)


OTHERS = "іїєґўÀÿµ" + "ωΣ" + "中" + "\u0301\u00ad\u200d" + "\U0001f600"


@SAME_VERSION
@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=LOWER + LOWER.upper() + "".join(map(chr, range(32, 127))) + OTHERS,
               max_size=16))
def test_hypothesis_text(reference, port, text):
    assert port(text) == reference(text)


@SAME_VERSION
@settings(max_examples=500, deadline=None)
@given(st.text())
def test_hypothesis_any_text(reference, port, text):
    assert port(text) == reference(text)


@SAME_VERSION
def test_stopwords_are_kept_and_only_those(reference):
    stopwords = snowball_stopwords("russian")
    port = russian.stemmer(stopwords)
    for word in stopwords:
        assert port(word) == word == reference(word)
    plain = russian.stemmer(frozenset())
    bare = SnowballStemmer("russian").stem
    changed = [w for w in stopwords if bare(w) != w]
    assert changed  # some stopwords do get stemmed without the list
    assert [plain(w) for w in changed] == [bare(w) for w in changed]


@SAME_VERSION
@pytest.mark.parametrize(("word", "nltk_stem"), [
    ("веснушчатый", "веснущат"), ("ёлками", "елк"), ("сььа", "съа"),
    ("abcjqwxдом", "абcjqwxд"), ("шчёт", "щет"), ("дом", "дом"), ("word", "word")])
def test_quirks_named_in_the_docstring(word, nltk_stem, reference, port):
    """NLTK's own quirks (шч -> щ, ё -> е, ьь -> ъ, Latin letters to Cyrillic), kept."""
    assert reference(word) == nltk_stem
    assert port(word) == nltk_stem
