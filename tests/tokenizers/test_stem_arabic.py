"""pipeline.tokenizers.stemmers.arabic against NLTK's own ArabicStemmer (the outside truth).

NLTK's instance is built as ``multilingual.py`` and XL-Sum build it: ``SnowballStemmer
("arabic")`` with the shipped stopword list added to its ``stopwords`` set. NLTK's
``suffixes_verb_step1_success`` flag is never reset, so results depend on the words stemmed
before: words are compared in sequence (one instance each side) and also each on fresh
instances.
"""

from __future__ import annotations

import dis
import inspect
import random
import sys
from collections.abc import Callable, Iterable
from types import CodeType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

nltk = pytest.importorskip("nltk")

from nltk.stem.snowball import ArabicStemmer  # noqa: E402

from pipeline.tokenizers.multilingual import snowball_stopwords  # noqa: E402
from pipeline.tokenizers.stemmers import arabic  # noqa: E402
from tests.support.stemming import assert_same_stems, nltk_stemmer, shared_tokens  # noqa: E402

SAME_NLTK = pytest.mark.skipif(
    nltk.__version__ != arabic.NLTK_VERSION,
    reason=f"the port reproduces NLTK {arabic.NLTK_VERSION}; NLTK {nltk.__version__} is "
           "installed")

PRIVATE = "_ArabicStemmer__"
STOPWORDS = snowball_stopwords("arabic")
LETTERS = [chr(c) for c in range(0x0621, 0x064B)]  # hamza .. yeh, alef maqsura included
MARKS = [chr(c) for c in range(0x064B, 0x0653)] + ["\u0640"]  # harakat, shadda, tatweel
PUNCTUATION = ["\u060c", "\u061b", "\u061c", "\u061e", "\u061f", "\u0610", "-", ".", "_"]
OTHERS = (list("abcxyzABCXYZ0123456789") + [chr(c) for c in range(0x0660, 0x066A)]
          + ["\u067e", "\u0686", "\u06af", "\u06cc", "\u06a9", "\u0671", "\u0653", "\u0654",
             "\u00e9", "\u0436", "\u4e2d", "\U0001d7d8", "\ud800", "\x00", " "])
CHARS = LETTERS + MARKS + PUNCTUATION + OTHERS


def nltk_attributes() -> dict[str, object]:
    """NLTK's ArabicStemmer private class attributes that are data (not methods)."""
    return {name[len(PRIVATE):]: value for name, value in vars(ArabicStemmer).items()
            if name.startswith(PRIVATE) and not callable(value)}


def nltk_tables() -> dict[str, tuple[str, ...] | str]:
    return {k: v for k, v in nltk_attributes().items() if isinstance(v, (tuple, str))}


def nltk_stem() -> Callable[[str], str]:
    return nltk_stemmer("arabic")


def port_stem() -> Callable[[str], str]:
    return arabic.stemmer(STOPWORDS)


def assert_equal_to_nltk(words: list[str], *, fresh: bool = False) -> None:
    """In sequence on one stemmer each (NLTK's has a memory), or on fresh ones per word."""
    if fresh:
        for word in words:
            assert_same_stems(nltk_stem(), port_stem(), [word])
    else:
        assert_same_stems(nltk_stem(), port_stem(), words)


# --- the port mirrors NLTK's class (runs whatever NLTK is installed) ----------------------

def test_every_table_of_nltk_is_mirrored():
    tables = nltk_tables()
    assert set(tables) == set(arabic.MIRRORED)
    for name, value in tables.items():
        assert type(arabic.MIRRORED[name]) is type(value), name
        assert arabic.MIRRORED[name] == value, name


def test_every_pattern_of_nltk_is_mirrored():
    patterns = {k: v.pattern for k, v in nltk_attributes().items() if hasattr(v, "sub")}
    assert patterns == arabic.MIRRORED_PATTERNS
    others = set(nltk_attributes()) - set(patterns) - set(nltk_tables())
    assert not others, f"NLTK attributes the port does not know: {others}"


def test_nltk_flags_are_the_ones_the_port_models():
    flags = {k for k, v in vars(ArabicStemmer).items() if isinstance(v, bool)}
    assert flags == {
        "is_verb", "is_noun", "is_defined", "suffixes_verb_step1_success",
        "suffix_verb_step2a_success", "suffix_verb_step2b_success",
        "suffix_noun_step2c2_success", "suffix_noun_step1a_success",
        "suffix_noun_step2a_success", "suffix_noun_step2b_success",
        "suffixe_noun_step1b_success", "prefix_step2a_success",
        "prefix_step3a_noun_success", "prefix_step3b_noun_success"}


ALL_CODE_POINTS = "".join(map(chr, range(sys.maxunicode + 1)))


def test_pre_normalisation_deletes_what_nltks_patterns_delete():
    attributes = nltk_attributes()
    kept = ALL_CODE_POINTS
    for name in ("vocalization", "kasheeda", "arabic_punctuation_marks"):
        kept = attributes[name].sub("", kept)  # type: ignore[attr-defined]
    deleted = set(ALL_CODE_POINTS) - set(kept)
    assert deleted == arabic.PRE_DELETED
    assert arabic._PRE.sub("", ALL_CODE_POINTS) == kept
    assert {c for c in ALL_CODE_POINTS if arabic._PRE.search(c)} == deleted


def test_post_normalisation_maps_what_nltks_patterns_map():
    attributes = nltk_attributes()
    for text in (ALL_CODE_POINTS, "\u0623" + ALL_CODE_POINTS, "\u0622\u0625\u0623\u0624\u0626"):
        expected = text
        for name in ("initial_hamzat", "waw_hamza", "yeh_hamza", "alefat"):
            replacement = {"waw_hamza": "\u0648", "yeh_hamza": "\u064a"}.get(name, "\u0627")
            expected = attributes[name].sub(replacement, expected)  # type: ignore[attr-defined]
        assert arabic._hamzat_to_letters(text) == expected
    changed = {c for c in ALL_CODE_POINTS if arabic._hamzat_to_letters(c) != c}
    assert changed == {c for c in ALL_CODE_POINTS if arabic._POST.search(c)}
    last_hamzat = nltk_tables()["last_hamzat"]
    assert changed == set(last_hamzat) and len(last_hamzat) == len(changed)


def none_ends_another(items: Iterable[str], *, prefixes: bool = False) -> bool:
    """Whether no item is a proper suffix (prefix) of another: then at most one matches."""
    items = list(items)
    ends = str.startswith if prefixes else str.endswith
    return not any(a != b and ends(b, a) for a in items for b in items)


def test_order_of_every_tuple_is_what_the_port_relies_on():
    t = nltk_tables()
    # one dictionary lookup per length: at most one element can match
    for name in ("suffix_verb_step1", "suffix_noun_step1a", "suffix_verb_step2b",
                 "checks2", "last_hamzat"):
        assert none_ends_another(t[name]), name
    for name in ("prefix_step2a", "prefix_step3_verb", "prefix_step4_verb",
                 "prefix_step3a_noun", "checks1", "prefixes1"):
        assert none_ends_another(t[name], prefixes=True), name
    # step-1 suffixes of length k need k + 3 characters: the conjugation tuples by length
    for step, kind in (("suffix_verb_step1", "verb"), ("suffix_noun_step1a", "noun")):
        for k in (1, 2, 3):
            assert {s for s in t[step] if len(s) == k} == set(t[f"conjugation_suffix_{kind}_{k}"])
    # verb step 2a: the one-letter suffixes come first and always apply (the conditions are
    # length >= 4, the loop's own length > 3), so no longer suffix is ever reached
    step2a = t["suffix_verb_step2a"]
    singles = [s for s in step2a if len(s) == 1]
    assert list(step2a[:len(singles)]) == singles
    assert set(singles) == {"\u062a", *t["conjugation_suffix_verb_4"]}
    assert all(s[-1] in singles for s in step2a)
    # verb step 2c: "و" first, and "تمو" ends with it (applies only below 4 letters, needs 6)
    assert t["suffix_verb_step2c"] == ("\u0648", "\u062a\u0645\u0648")
    # prefix step 1: the lone "أ" has no branch; the others become their second letter
    assert t["prefix_step1"][0] == "\u0623"
    assert none_ends_another(t["prefix_step1"][1:], prefixes=True)
    # prefix step 3b: "ب" (any length > 3), then "ك"/"ل" (> 4), "كك" only reached after "ك"
    assert t["prefix_step3b_noun"] == ("\u0628", "\u0643", "\u0644", *t["prepositions2"])
    assert t["prepositions1"] == ("\u0643", "\u0644")
    # strings NLTK loops over character by character
    assert t["suffix_noun_step2b"] == "\u0627\u062a" and isinstance(t["suffix_noun_step2b"], str)
    for name in ("suffix_noun_step1b", "suffix_noun_step2c1", "suffix_noun_step2c2",
                 "suffix_noun_step3", "suffix_all_alef_maqsura"):
        assert isinstance(t[name], str) and len(t[name]) == 1, name


# --- equal to NLTK, word for word ----------------------------------------------------------

@SAME_NLTK
def test_the_never_reset_flag_is_kept():
    # a word that only verb step 1 sets the flag with, then one whose stem depends on it
    words = ["\u0643\u062a\u0628\u0648\u0627", "\u0643\u062a\u0627\u0628\u0647",
             "\u0643\u062a\u0628\u0648\u0627"]
    theirs, ours = nltk_stem(), port_stem()
    expected = [theirs(w) for w in words]
    assert expected[0] != expected[2]  # NLTK's own answer changed in between
    assert [ours(w) for w in words] == expected


# a word whose verb suffix NLTK's step 1 removes: it sets the flag
SETS_THE_FLAG = "\u0643\u062a\u0627\u0628\u0647"


def nltk_stem_with_the_flag_set() -> Callable[[str], str]:
    stem = nltk_stem()
    stem(SETS_THE_FLAG)
    return stem


@SAME_NLTK
def test_with_the_flag_set_from_the_start_stems_do_not_depend_on_order():
    # kana (they were) stems to kan on a fresh NLTK stemmer and to kanu once the flag is set
    kanu = "\u0643\u0627\u0646\u0648\u0627"
    fresh, settled = nltk_stem(), nltk_stem_with_the_flag_set()
    assert fresh(kanu) != settled(kanu)
    ours = arabic.stemmer(STOPWORDS, verb_suffix_seen=True)
    assert ours(kanu) == settled(kanu) == ours(kanu)
    words = generated_words(50_000, seed=7)
    assert_same_stems(nltk_stem_with_the_flag_set(),
                      arabic.stemmer(STOPWORDS, verb_suffix_seen=True), words)
    backwards = arabic.stemmer(STOPWORDS, verb_suffix_seen=True)
    assert [backwards(w) for w in reversed(words)][::-1] == [ours(w) for w in words]


@SAME_NLTK
@pytest.mark.parametrize("fresh", [False, True], ids=["in-sequence", "fresh"])
def test_equal_to_nltk_on_the_shared_arabic_tokens(shared_dir, fresh):
    tokens = shared_tokens(shared_dir, "arabic")
    assert len(tokens) > 2000
    assert_equal_to_nltk(tokens, fresh=fresh)


def nltk_pieces(kind: str) -> list[str]:
    """Every affix of NLTK's tables of one kind ("suffix" or "prefix")."""
    names = {"suffix": ("suffix", "checks2", "last_hamzat", "conjugation"),
             "prefix": ("prefix", "checks1", "articles", "prepositions")}[kind]
    pieces = set()
    for name, value in nltk_tables().items():
        if name.startswith(names):
            pieces.update((value,) if isinstance(value, str) else value)
    return sorted(pieces)


def generated_words(n_words: int, *, seed: int) -> list[str]:
    """Deterministic words built so that every step of NLTK's stemmer is taken.

    Random stems (Arabic letters, with marks, a few Latin, digit and mixed ones) between
    0-2 prefixes and 1-3 suffixes drawn from NLTK's own tables; some with diacritics, tatweel
    or punctuation put anywhere, some upper-cased, some stopwords (bare, marked, affixed).
    """
    rng = random.Random(seed)
    suffixes, prefixes = nltk_pieces("suffix"), nltk_pieces("prefix")
    stopwords = sorted(STOPWORDS)
    latin = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    words = []
    for _ in range(n_words):
        kind = rng.random()
        if kind < 0.85:
            alphabet = LETTERS if rng.random() < 0.9 else rng.choice([latin, CHARS])
            stem = "".join(rng.choices(alphabet, k=rng.randint(0, 5)))
        else:
            stem = rng.choice(stopwords)
        word = ("".join(rng.choices(prefixes, k=rng.choice((0, 0, 1, 1, 2)))) + stem
                + "".join(rng.choices(suffixes, k=rng.choice((0, 1, 1, 2, 3)))))
        extra = rng.random()
        if extra < 0.15:
            at = rng.randint(0, len(word))
            word = word[:at] + rng.choice(MARKS + PUNCTUATION[:5]) + word[at:]
        elif extra < 0.18:
            word = word.upper()
        words.append(word)
    return words


def executed_lines(codes: Iterable[CodeType], make_stem: Callable[[], Callable[[str], str]],
                   words: list[str], *, n_fresh: int) -> set[tuple[CodeType, int]]:
    """(code, line) of the given functions run while stemming the words: the first n_fresh
    each with a fresh stemmer (NLTK's never-reset flag unset), the rest with one."""
    codes, seen = set(codes), set()

    def trace(frame, event, arg):
        if frame.f_code in codes:
            seen.add((frame.f_code, frame.f_lineno))
            return trace
        return None

    stem = make_stem()
    sys.settrace(trace)
    try:
        for i, word in enumerate(words):
            if i < n_fresh:
                stem = make_stem()
            stem(word)
    finally:
        sys.settrace(None)
    return seen


def missed_lines(code: CodeType, seen: set[tuple[CodeType, int]]) -> set[int]:
    body = {line for _, line in dis.findlinestarts(code) if line and line > code.co_firstlineno}
    return body - {line for c, line in seen if c is code}


@SAME_NLTK
def test_generated_words_take_every_line_of_the_port():
    code = port_stem().__code__
    seen = executed_lines([code], port_stem, generated_words(16_000, seed=7), n_fresh=8_000)
    assert missed_lines(code, seen) == set()


# Lines of NLTK's class no word reaches (module docstring of the port): the two- and
# three-letter branches of verb step 2a, "تمو" of step 2c, and the alef-maqsura step.
NLTK_UNREACHABLE = {
    *(("Suffix_Verb_Step2a", line) for line in (
        "if suffix in self.__conjugation_suffix_verb_past and len(token) >= 5:",
        "token = token[:-2]  # past", "self.suffix_verb_step2a_success = True", "break",
        "if suffix in self.__conjugation_suffix_verb_present and len(token) > 5:",
        "token = token[:-2]  # present",
        'if suffix == "\\u062a\\u0645\\u0627" and len(token) >= 6:',
        "token = token[:-3]")),
    ("Suffix_Verb_Step2c", "token = token[:-3]"), ("Suffix_Verb_Step2c", "break"),
    *(("Suffix_All_alef_maqsura", line) for line in (
        "for suffix in self.__suffix_all_alef_maqsura:", "if token.endswith(suffix):",
        'token = suffix_replace(token, suffix, "\\u064a")', "return token")),
    ("stem", "modified_word = self.__Suffix_Noun_Step2a(modified_word)"),
    ("stem", "modified_word = self.__Suffix_All_alef_maqsura(modified_word)"),
}


@SAME_NLTK
def test_generated_words_take_every_reachable_line_of_nltk():
    codes = {f.__code__: name.removeprefix(PRIVATE) for name, f in vars(ArabicStemmer).items()
             if inspect.isfunction(f) and name != "__init__"}
    seen = executed_lines(codes, nltk_stem, generated_words(16_000, seed=7), n_fresh=8_000)
    source = inspect.getsource(sys.modules[ArabicStemmer.__module__]).splitlines()
    missed = {(name, source[line - 1].strip()) for code, name in codes.items()
              for line in missed_lines(code, seen)}
    assert missed == NLTK_UNREACHABLE


@SAME_NLTK
def test_equal_to_nltk_on_generated_words():
    words = generated_words(200_000, seed=2026)
    assert len(set(words)) > 150_000
    assert_equal_to_nltk(words)
    assert_equal_to_nltk(words[:20_000], fresh=True)


@SAME_NLTK
@pytest.mark.slow
def test_equal_to_nltk_on_many_generated_words():
    words = generated_words(2_000_000, seed=5)
    assert_equal_to_nltk(words)
    assert_equal_to_nltk(words[:300_000], fresh=True)


WORDS = st.text(alphabet=st.sampled_from(CHARS), max_size=12) | st.lists(
    st.sampled_from(CHARS + nltk_pieces("prefix") + nltk_pieces("suffix")
                    + sorted(STOPWORDS)[:20]), max_size=6).map("".join)


@SAME_NLTK
@settings(max_examples=500, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=8))
def test_equal_to_nltk_on_any_text(words):
    assert_equal_to_nltk(words)


@SAME_NLTK
@settings(max_examples=200, deadline=None)
@given(st.text(max_size=10))
def test_equal_to_nltk_on_any_unicode_text(word):
    assert_equal_to_nltk([word], fresh=True)
