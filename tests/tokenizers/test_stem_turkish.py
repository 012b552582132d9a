"""pipeline.tokenizers.stemmers.turkish against TurkishStemmer 1.3 itself.

The oracle is ``TurkishStemmer().stem`` (PyPI ``TurkishStemmer==1.3``, the stemmer XL-Sum's
multilingual ROUGE calls for Turkish): on the shared data's Turkish tokens, on a generated
corpus built from every suffix of the library's three state machines (checked, by watching
the library, to take every reachable transition of every state, remove every suffix, and
reach the protected-word, vowel-harmony, optional-letter, last-consonant and
average-stem-size rules), on hypothesis text, and on the
examples of the library's own documentation. The port's tables are compared with the
library's objects, so a change of the library cannot pass silently.
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from importlib import import_module
from importlib.metadata import version

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.tokenizers.stemmers import turkish as port
from tests.support.stemming import assert_same_stems, shared_tokens

pytest.importorskip("TurkishStemmer")

if version("TurkishStemmer") != port.TURKISHSTEMMER_VERSION:
    pytest.skip(f"TurkishStemmer {version('TurkishStemmer')} is installed; the port reproduces "
                f"TurkishStemmer {port.TURKISHSTEMMER_VERSION}", allow_module_level=True)

import TurkishStemmer as library  # noqa: E402  (after the version check)

MACHINES = {"NominalVerb": (port.NOMINAL_VERB_SUFFIXES, port.NOMINAL_VERB_STATES,
                            port.NOMINAL_VERB_NEXT),
            "Noun": (port.NOUN_SUFFIXES, port.NOUN_STATES, port.NOUN_NEXT),
            "Derivational": (port.DERIVATIONAL_SUFFIXES, port.DERIVATIONAL_STATES,
                             port.DERIVATIONAL_NEXT)}
ALL_ALTERNATIVES = sorted({a for suffixes, _, _ in MACHINES.values()
                           for _, pattern, _, _ in suffixes.values() for a in pattern.split("|")})
TURKISH = list(port.ALPHABET)
OTHERS = list("ABCÇĞIİÖŞÜâîûqwxQWX0123456789 -'.\u0307\u00e9") + ["\n", "\U0001f600"]


@functools.cache
def oracle():
    return library.TurkishStemmer().stem


def assert_equal_to_the_library(words):
    assert_same_stems(oracle(), port.stemmer(), words)


# --- the tables mirror the library's -------------------------------------------------------

@pytest.mark.parametrize("machine", list(MACHINES))
def test_suffix_tables_mirror_the_library(machine):
    module = import_module(f"TurkishStemmer.suffixes.{machine}Suffix")
    suffixes = MACHINES[machine][0]
    assert tuple(getattr(module, name) for name in suffixes) == module.VALUES
    for name, (label, pattern, optional, harmony) in suffixes.items():
        theirs = getattr(module, name)
        assert theirs.name == label
        assert theirs.pattern.pattern == f"({pattern})$"
        assert theirs.checkHarmony is harmony
        if optional is None:
            assert theirs._optionalLetterPattern is None
        else:
            assert theirs._optionalLetterPattern.pattern == f"({optional})$"
        # the port's set lookup of the last k characters needs alternatives of one length
        assert len({len(a) for a in pattern.split("|")}) == 1, name


@pytest.mark.parametrize("machine", list(MACHINES))
def test_state_tables_mirror_the_library(machine):
    module = import_module(f"TurkishStemmer.states.{machine}State")
    suffix_module = import_module(f"TurkishStemmer.suffixes.{machine}Suffix")
    _, states, following = MACHINES[machine]
    names = {id(getattr(suffix_module, n)): n for n in MACHINES[machine][0]}
    state_names = {id(getattr(module, n)): n for n in states}
    theirs_all = getattr(module, "ALL", (module.A, module.B))
    assert [state_names[id(s)] for s in theirs_all] == list(states)
    for name, (initial, final, suffixes) in states.items():
        theirs = getattr(module, name)
        assert (theirs.initialState, theirs.finalState) == (initial, final)
        assert tuple(names[id(s)] for s in theirs.suffixes) == suffixes
        for suffix in theirs.suffixes:
            assert state_names[id(theirs.NextState(suffix))] == \
                following[initial, final][names[id(suffix)]]
    # each (initial, final) table holds exactly the library's entries
    for kind, table in following.items():
        if machine == "Derivational":
            continue
        values = {(True, False): "TF_VALUES", (False, True): "FT_VALUES",
                  (False, False): "FF_VALUES", (True, True): "TT_VALUES"}[kind]
        theirs_table = getattr(module, values)
        assert {names[id(s)]: state_names[id(n)] for s, n in theirs_table.items()} == table


def test_word_lists_and_letters_mirror_the_library():
    held = library.DefaultSetHolder
    assert port.PROTECTED_WORDS == held.DEFAULT_PROTECTED_WORDS
    assert port.VOWEL_HARMONY_EXCEPTIONS == held.DEFAULT_VOWEL_HARMONY_EXCEPTIONS
    assert port.LAST_CONSONANT_EXCEPTIONS == held.DEFAULT_LAST_CONSONANT_EXCEPTIONS
    assert port.AVERAGE_STEM_SIZE_EXCEPTIONS == held.DEFAULT_AVERAGE_STEM_SIZE_EXCEPTIONS_FILE
    stemmer = library.TurkishStemmer()
    assert stemmer.averageStemSizeExceptions == port.AVERAGE_STEM_SIZE_EXCEPTIONS
    for name in ("ALPHABET", "VOWELS", "CONSONANTS", "ROUNDED_VOWELS",
                 "FOLLOWING_ROUNDED_VOWELS", "UNROUNDED_VOWELS", "FRONT_VOWELS", "BACK_VOWELS"):
        assert frozenset(getattr(port, name)) == getattr(library, name), name
    assert port.LAST_CONSONANT_RULES == library.LAST_CONSONANT_RULES
    assert port.AVERAGE_STEMMED_SIZE == library.AVERAGE_STEMMED_SIZE


def test_no_word_has_two_average_stem_size_exception_candidates():
    # The library sorts the candidates with a comparator that is a total order only while
    # at most one candidate is an exception; the port relies on it. Candidates are the
    # word's prefixes after the last-consonant rule, so two exceptions would need one to be
    # a shorter prefix of the other, after the rule.
    def rule(word):
        if word in port.LAST_CONSONANT_EXCEPTIONS:
            return word
        return word[:-1] + port.LAST_CONSONANT_RULES.get(word[-1], word[-1])

    clashes = [(e, rule(e[:n])) for e in port.AVERAGE_STEM_SIZE_EXCEPTIONS
               for n in range(1, len(e)) if rule(e[:n]) in port.AVERAGE_STEM_SIZE_EXCEPTIONS]
    assert clashes == []


# --- outside values ---------------------------------------------------------------------

# the library's own documentation (its README's usage and "Some examples" table)
@pytest.mark.parametrize(("word", "stem"), [
    ("okuldakilerden", "okul"), ("kalelerimizdekilerden", "kale"),
    ("çocuğuymuşumcasına", "çocuk"), ("kedileriyle", "kedi"), ("çocuklarımmış", "çocuk"),
    ("kitabımızdı", "kitap"), ("doktoruymuşsunuz", "doktor"), ("lityum", "lityum")])
def test_the_documented_examples(word, stem):
    assert port.stemmer()(word) == stem
    assert oracle()(word) == stem


@pytest.mark.parametrize("word", ["", "a", "ev", "EVLERDE", "Evlerde", "evlerde1", "qwerty",
                                  "i\u0307stanbul", "kitâplar", "araba", "arabalar",
                                  "alkoller", "saatler", "adlar", "ked", "kediler", "ları",
                                  "ıda", "kalemler\n", " evler", "yani", "generali"])
def test_edge_cases(word):
    assert port.stemmer()(word) == oracle()(word)


# --- the shared data --------------------------------------------------------------------

def test_shared_turkish_tokens(shared_dir):
    words = sorted(set(shared_tokens(shared_dir, "turkish", longer_than=0)))
    assert sum(len(w) > 3 for w in words) > 1000
    assert_equal_to_the_library(words)


# --- a generated corpus that takes every branch -------------------------------------------

def generated_words(n_words, seed):
    """Random Turkish stems joined to chains of 1-3 suffixes of every machine, and others."""
    rng = random.Random(seed)
    lists = sorted(port.PROTECTED_WORDS | port.VOWEL_HARMONY_EXCEPTIONS
                   | port.LAST_CONSONANT_EXCEPTIONS | port.AVERAGE_STEM_SIZE_EXCEPTIONS)
    vowels, consonants = port.VOWELS, port.CONSONANTS
    words = []
    for i in range(n_words):
        kind = i % 10
        if kind < 6:  # a random stem
            stem = "".join(rng.choice(vowels if rng.random() < 0.4 else consonants)
                           for _ in range(rng.randint(1, 7)))
        elif kind < 8:  # a word of the library's lists
            stem = rng.choice(lists)
        else:  # a stem ending in a consonant the last-consonant rule changes
            stem = "".join(rng.choice(TURKISH) for _ in range(rng.randint(1, 5))) + rng.choice(
                "bcdğ")
        word = stem
        for _ in range(rng.randint(0 if kind >= 6 else 1, 3)):
            glue = rng.choice(["", "", "", "y", "n", "s", rng.choice(vowels)])
            word += glue + rng.choice(ALL_ALTERNATIVES)
        roll = rng.random()
        if roll < 0.02:
            word = word.upper()
        elif roll < 0.04:
            word = word.capitalize()
        elif roll < 0.06:
            position = rng.randint(0, len(word))
            word = word[:position] + rng.choice(OTHERS) + word[position:]
        words.append(word)
    return words


# Transitions no word can take: the noun state M is entered after -(n)cA, whose optional
# "n" is cut when a vowel precedes it (and the transition is dropped when a consonant does),
# so a word in state M never ends in "n" and -Un cannot match there.
UNREACHABLE = [("Noun", "M", "-Un")]


class _Recorder:
    """Counts what the library does while stemming: transitions, suffix removals, rules."""

    def __init__(self, monkeypatch):
        self.counts: Counter = Counter()
        states = import_module("TurkishStemmer.states")
        transition = states.Transition
        counts = self.counts

        class Recording(transition):
            def __init__(self, start, nxt, word, suffix, marked):
                counts["transition", id(start), suffix.name, id(nxt)] += 1
                super().__init__(start, nxt, word, suffix, marked)

        monkeypatch.setattr(states, "Transition", Recording)
        stem_word = library.TurkishStemmer.stemWord
        last_consonant = library.TurkishStemmer.lastConsonant

        def recording_stem_word(this, word, suffix):
            stem = stem_word(this, word, suffix)
            marked = this.shouldBeMarked(word, suffix)
            counts["marked" if marked else "not marked", id(suffix)] += 1
            if word in this.vowelHarmonyExceptions:
                counts["vowel harmony exception"] += 1
            if word in this.protectedWords:
                counts["protected stem"] += 1
            if stem == word and marked:
                counts["optional letter refused", id(suffix)] += 1
            elif stem != word:
                cut = len(word) - len(stem)
                k = len(suffix.pattern.pattern[1:-2].split("|")[0])  # "(a|b)$"
                counts["removed", id(suffix)] += 1
                if cut > k:
                    counts["optional letter cut", id(suffix)] += 1
                elif not marked:
                    counts["optional letter cut without the suffix", id(suffix)] += 1
            return stem

        def recording_last_consonant(this, word):
            out = last_consonant(this, word)
            counts["last consonant " + ("changed" if out != word else
                                        "exception" if word in this.lastConsonantExceptions
                                        else "kept")] += 1
            if out in this.averageStemSizeExceptions:
                counts["average stem size exception"] += 1
            return out

        monkeypatch.setattr(library.TurkishStemmer, "stemWord", recording_stem_word)
        monkeypatch.setattr(library.TurkishStemmer, "lastConsonant", recording_last_consonant)


def _check_corpus(words, monkeypatch):
    recorder = _Recorder(monkeypatch)
    theirs = library.TurkishStemmer().stem
    ours = port.stemmer()
    expected = [theirs(w) for w in words]
    got = [ours(w) for w in words]
    differences = [(w, e, g) for w, e, g in zip(words, expected, got, strict=True) if e != g]
    assert differences[:10] == [], f"{len(differences)} words differ"
    # every branch was taken
    counts = recorder.counts
    never = []
    for machine, (_, states, _) in MACHINES.items():
        module = import_module(f"TurkishStemmer.states.{machine}State")
        for name in states:
            state = getattr(module, name)
            for suffix in state.suffixes:
                key = ("transition", id(state), suffix.name, id(state.NextState(suffix)))
                if counts[key] == 0:
                    never.append((machine, name, suffix.name))
    assert never == UNREACHABLE
    for machine, (suffixes, _, _) in MACHINES.items():
        module = import_module(f"TurkishStemmer.suffixes.{machine}Suffix")
        for name, (label, pattern, optional, harmony) in suffixes.items():
            key = id(getattr(module, name))
            assert counts["removed", key] > 0, (machine, label)
            assert counts["marked", key] > 0, (machine, label)
            # the harmony rule can refuse a suffix unless the suffix's own two vowels decide
            if harmony and not all(len(library.Vowels(a)) >= 2 and library.HasVowelHarmony(a)
                                   for a in pattern.split("|")):
                assert counts["not marked", key] > 0, (machine, label)
            if optional is not None:
                assert counts["optional letter cut", key] > 0, (machine, label)
                assert counts["optional letter refused", key] > 0, (machine, label)
    noun_suffixes = import_module("TurkishStemmer.suffixes.NounSuffix")
    assert counts["optional letter cut without the suffix", id(noun_suffixes.S10)] > 0
    for rule in ("vowel harmony exception", "protected stem", "last consonant changed",
                 "last consonant exception", "last consonant kept",
                 "average stem size exception"):
        assert counts[rule] > 0, rule
    outcomes = Counter("unchanged" if e == w else "stemmed"
                       for w, e in zip(words, expected, strict=True))
    assert min(outcomes.values()) > len(words) // 20, outcomes


def test_generated_corpus(monkeypatch):
    words = generated_words(200_000, seed=20261205)
    assert len(words) >= 200_000
    _check_corpus(words, monkeypatch)


@pytest.mark.slow
def test_generated_corpus_large(monkeypatch):
    _check_corpus(generated_words(2_000_000, seed=1205), monkeypatch)


# --- hypothesis -------------------------------------------------------------------------

@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(TURKISH + OTHERS), max_size=25))
def test_any_text_of_turkish_and_other_letters(text):
    assert port.stemmer()(text) == oracle()(text)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(TURKISH + ALL_ALTERNATIVES), min_size=1, max_size=8)
       .map("".join))
def test_letters_and_suffixes(word):
    assert port.stemmer()(word) == oracle()(word)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20))
def test_any_text(text):
    assert port.stemmer()(text) == oracle()(text)


def test_the_stemmer_pickles_and_holds_no_state():
    import pickle

    stem = port.stemmer()
    assert pickle.loads(pickle.dumps(stem)) is stem
    words = generated_words(2_000, seed=7)
    assert [stem(w) for w in words] == [stem(w) for w in reversed(words)][::-1]
