"""An exact, faster port of TurkishStemmer 1.3's ``TurkishStemmer().stem``.

Source of the definition: PyPI ``TurkishStemmer==1.3`` (Hanefi Onaldi,
github.com/hanefi/turkish-stemmer-python), the stemmer XL-Sum's multilingual ROUGE
(``multilingual-rouge==0.0.1``) calls for Turkish: ``TurkishStemmer/__init__.py`` (class
``TurkishStemmer``), its three suffix state machines (``states/NominalVerbState.py``,
``states/NounState.py``, ``states/DerivationalState.py``), their suffixes
(``suffixes/*.py``) and its four word lists (``resources/*.txt``). It follows the
affix-stripping stemmer of Eryiğit and Adalı ("An affix stripping morphological analyzer
for Turkish", 2004) as the Snowball Turkish stemmer and the elasticsearch-analysis-
turkishstemmer Java code implement it (http://snowball.tartarus.org/algorithms/turkish/stemmer.html).

:func:`stemmer` returns a function equal to ``TurkishStemmer().stem`` for every ``str``
(any case, any script, empty): a word with a character outside the 29 lower-case Turkish
letters, with fewer than two vowels, or in the protected-word list comes back unchanged;
otherwise the nominal-verb machine runs on the word, the noun machine on the word and each
stem found so far, the derivational machine likewise, and the candidate stems (after the
last-consonant rule b/c/d/ğ -> p/ç/t/k) are ranked by distance of their length from 4, the
average-stem-size exceptions first. Every quirk of the library is kept: the optional letter
of a suffix is checked (and may be cut) even when the suffix itself was not removed; a
transition's ``marked`` argument is ignored (only transitions marked later by a non-final
step are dropped); the noun state M lists ``-(s)U`` twice.

How it is computed differently, and why the result is the same:

- Suffixes are found by dictionary lookups of the word's last letters instead of one
  regular expression ``(a|b|...)$`` search per suffix: every alternative of a suffix has
  the same length k (checked at import and by the tests), and the machines only see words
  of Turkish letters (no newline for ``$`` to match before), so a suffix's regex matches
  exactly when the last k letters are one of its alternatives, and ``re.sub`` removes
  exactly those k letters. For each state a table built at import maps every two-letter
  tail to the edges of its one- and two-letter suffixes and to the longer suffixes' tables
  worth looking up; the edges come out in the order of the state's list (the library's
  priority).
- The library's ``stemWord`` is evaluated when a transition is created instead of when it
  is taken (it depends only on the word and the suffix), and a transition that leaves the
  word unchanged is not queued: when its turn comes the library does nothing with it, and
  dropping or marking it has no effect on any other transition. The queue keeps the
  library's order and its rules: a transition into a final state records its stem and
  drops the pending transitions between the same two states and the marked ones; one
  into a non-final state marks the pending transitions between the same two states.
- The final choice: every stem is a prefix of the word, so the candidates have distinct
  lengths and the library's sort, whose comparator is a total order as long as at most one
  candidate is an average-stem-size exception, returns the exception if there is one and
  otherwise the candidate with the smallest (abs(length - 4), length). No word can have two
  exception candidates (no exception is a prefix of another, up to the last-consonant rule;
  the tests check this on the lists).

Licence: TurkishStemmer is released under the Apache License 2.0: its dist-info's
``LICENSE.txt`` is that licence's text and its README says "licensed under the Apache
Software License, Version 2.0" (the metadata's License field says UNKNOWN; it is not MIT).
This module follows its algorithm and holds its four word lists and suffix and state
tables unchanged (Copyright Hanefi Onaldi and contributors, Apache-2.0); the code is
written anew.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["TURKISHSTEMMER_VERSION", "stemmer"]

TURKISHSTEMMER_VERSION = "1.3"

ALPHABET = "abcçdefgğhıijklmnoöprsştuüvyz"
VOWELS = "üiıueöao"
CONSONANTS = "bcçdfgğhjklmnprsştvyz"
ROUNDED_VOWELS = "oöuü"
FOLLOWING_ROUNDED_VOWELS = "aeuü"
UNROUNDED_VOWELS = "iıea"
FRONT_VOWELS = "eiöü"
BACK_VOWELS = "ıuao"
LAST_CONSONANT_RULES = {"b": "p", "c": "ç", "d": "t", "ğ": "k"}
AVERAGE_STEMMED_SIZE = 4

# resources/*.txt of TurkishStemmer 1.3, in the files' order
PROTECTED_WORDS = frozenset("""
abiye adın adana akılsız alaska alet ağda ağız alarm altınbaşak altınyıldız anakucağı
anasayfa anime antifriz araba ardeşen armanı aroma arma arsız asa askı astra asus atkı
ayakkabı aynı ayı banka başka batık bayı belge bellona benten benzin beşinci bilgi bitki
boyut branda bütün buzlu çağrı camsız çanta çarşı ceyiz çıkış cımbiz dalga damla derece
dişli düğün ege elbise fendi filtre fiyat forma gazete gemi görüntü igne ince internet iyi
kayısı kama katı kötü kumanda lamba lazım litre mağaza magaza makara makine malzeme mana
marka masa maskara mine mini nine numara odun oyun ölçü örgü öykü özen parça perde pompa
pırlanta raket ranza şamdan şapka şifre sunu soyad tabaka takım talımat tarla tasma törpü
tozlu tüplü uçurtma üfleme ürün ütü uygun uzatma uzun vana yağlı yapma yardım yasa yıldız
zayıflama zemin
""".split())
VOWEL_HARMONY_EXCEPTIONS = frozenset("""
alkoller değerın generali generale projektörlar saatler tabletlar tersyüz yaninda yani
""".split())
LAST_CONSONANT_EXCEPTIONS = frozenset("ad at ked".split())
AVERAGE_STEM_SIZE_EXCEPTIONS = frozenset("""
al am aparat ara bilet bisiklet bulut diyet ev es fiyat fırsat general git gıt iç ip
internet iyi kağıt kartuş katı kot kötü kumanda lamba mağaza magaza makara makine marka
maskara ne otomat palet perde raket ranza robot sepet servis soyad su tabaka tablet takım
talımat tanıt tarla tasma tenis törpü uç uygun var yasa
""".split())

# Suffixes: name -> (library name, alternatives, optional letter(s) or None, check harmony),
# in each module's VALUES order (the priority of the suffixes in the initial state).
NOMINAL_VERB_SUFFIXES = {
    "S11": ("-cAsInA", "casına|çasına|cesine|çesine", None, True),
    "S4": ("-sUnUz", "sınız|siniz|sunuz|sünüz", None, True),
    "S14": ("-(y)mUş", "muş|miş|müş|mış", "y", True),
    "S15": ("-(y)ken", "ken", "y", True),
    "S2": ("-sUn", "sın|sin|sun|sün", None, True),
    "S5": ("-lAr", "lar|ler", None, True),
    "S9": ("-nUz", "nız|niz|nuz|nüz", None, True),
    "S10": ("-DUr", "tır|tir|tur|tür|dır|dir|dur|dür", None, True),
    "S3": ("-(y)Uz", "ız|iz|uz|üz", "y", True),
    "S1": ("-(y)Um", "ım|im|um|üm", "y", True),
    "S12": ("-(y)DU", "dı|di|du|dü|tı|ti|tu|tü", "y", True),
    "S13": ("-(y)sA", "sa|se", "y", True),
    "S6": ("-m", "m", None, True),
    "S7": ("-n", "n", None, True),
    "S8": ("-k", "k", None, True),
}
NOUN_SUFFIXES = {
    "S16": ("-nDAn", "ndan|ntan|nden|nten", None, True),
    "S7": ("-lArI", "ları|leri", None, True),
    "S3": ("-(U)mUz", "mız|miz|muz|müz", "ı|i|u|ü", True),
    "S5": ("-(U)nUz", "nız|niz|nuz|nüz", "ı|i|u|ü", True),
    "S1": ("-lAr", "lar|ler", None, True),
    "S14": ("-nDA", "nta|nte|nda|nde", None, True),
    "S15": ("-DAn", "dan|tan|den|ten", None, True),
    "S17": ("-(y)lA", "la|le", "y", True),
    "S10": ("-(n)Un", "ın|in|un|ün", "n", True),
    "S19": ("-(n)cA", "ca|ce", "n", True),
    "S4": ("-Un", "ın|in|un|ün", None, True),
    "S9": ("-nU", "nı|ni|nu|nü", None, True),
    "S12": ("-nA", "na|ne", None, True),
    "S13": ("-DA", "da|de|ta|te", None, True),
    "S18": ("-ki", "ki", None, False),
    "S2": ("-(U)m", "m", "ı|i|u|ü", True),
    "S6": ("-(s)U", "ı|i|u|ü", "s", True),
    "S8": ("-(y)U", "ı|i|u|ü", "y", True),
    "S11": ("-(y)A", "a|e", "y", True),
}
DERIVATIONAL_SUFFIXES = {
    "S1": ("-lU", "lı|li|lu|lü", None, True),
}

# States: name -> (initial, final, suffix names in the library's order)
NOMINAL_VERB_STATES = {
    "A": (True, False, tuple(NOMINAL_VERB_SUFFIXES)),
    "B": (False, True, ("S14",)),
    "C": (False, True, ("S10", "S12", "S13", "S14")),
    "D": (False, False, ("S12", "S13")),
    "E": (False, True, ("S1", "S2", "S3", "S4", "S5", "S14")),
    "F": (False, True, ()),
    "G": (False, False, ("S14",)),
    "H": (False, False, ("S1", "S2", "S3", "S4", "S5", "S14")),
}
NOUN_STATES = {
    "A": (True, True, tuple(NOUN_SUFFIXES)),
    "B": (False, True, ("S1", "S2", "S3", "S4", "S5")),
    "C": (False, False, ("S6", "S7")),
    "D": (False, False, ("S10", "S13", "S14")),
    "E": (False, True, ("S1", "S2", "S3", "S4", "S5", "S6", "S7", "S18")),
    "F": (False, False, ("S6", "S7", "S18")),
    "G": (False, True, ("S1", "S2", "S3", "S4", "S5", "S18")),
    "H": (False, True, ("S1",)),
    "K": (False, True, ()),
    "L": (False, True, ("S18",)),
    "M": (False, True, ("S1", "S2", "S3", "S4", "S5", "S6", "S6", "S7")),
}
DERIVATIONAL_STATES = {
    "A": (True, False, ("S1",)),
    "B": (False, True, ()),
}


def _by(pairs: str) -> dict[str, str]:
    """``"S1 S2:B S3:C"``-style tables: suffix -> next state."""
    return dict(item.split(":") for item in pairs.split())


# Next state of a suffix, one table per (initial, final) kind of state, as in the library
NOMINAL_VERB_NEXT = {
    (True, False): _by("S1:B S2:B S3:B S4:B S5:C S6:D S7:D S8:D S9:D S10:E S12:F S13:F "
                       "S14:F S15:F S11:H"),
    (False, True): _by("S1:G S2:G S3:G S4:G S5:G S10:F S12:F S13:F S14:F"),
    (False, False): _by("S1:G S2:G S3:G S4:G S5:G S12:F S13:F S14:F"),
}
NOUN_NEXT = {
    (True, True): _by("S8:B S11:B S13:B S9:C S16:C S18:D S10:E S17:E S12:F S14:F S15:G "
                      "S2:H S3:H S4:H S5:H S6:H S7:K S1:L S19:M"),
    (False, True): _by("S18:D S2:H S3:H S4:H S5:H S6:H S7:K S1:L"),
    (False, False): _by("S18:D S7:K S13:B S10:E S14:F S6:H"),
}
DERIVATIONAL_NEXT = {(True, False): _by("S1:B")}

# --- compiled tables ----------------------------------------------------------------------

_VOWEL_SET = frozenset(VOWELS)
_CONSONANT_SET = frozenset(CONSONANTS)
_IS_TURKISH = re.compile(f"[{ALPHABET}]*").fullmatch
# a word of Turkish letters with at least two vowels, with one
_TWO_VOWELS = re.compile(f"[{VOWELS}][{CONSONANTS}]*[{VOWELS}]").search
_A_VOWEL = re.compile(f"[{VOWELS}]").search
# pairs (second-to-last vowel, last vowel) that obey the library's vowel harmony
_HARMONY = frozenset(
    a + b for a in VOWELS for b in VOWELS
    if ((a in UNROUNDED_VOWELS and b in UNROUNDED_VOWELS)
        or (a in ROUNDED_VOWELS and b in FOLLOWING_ROUNDED_VOWELS))
    and ((a in FRONT_VOWELS and b in FRONT_VOWELS) or (a in BACK_VOWELS and b in BACK_VOWELS)))

# One compiled suffix: (k, alternatives, optional letters or None, optional is a vowel,
# check harmony). One edge: (position in the state's list, suffix, next state). One compiled
# state: (final, {tail: (edges, longer)}). The tail is a word's last two letters
# (the whole word if shorter); a tail that is not a key takes no edge. ``edges`` are the
# state's edges whose suffix (of one or two letters) ends the word, and ``longer`` the
# (k, {alternative: edges}) tables of its suffixes of k >= 3 letters that end in the tail,
# by decreasing k: a word takes ``edges`` and the edges its last k letters find in
# ``longer``, in the order of the state's list.
_Suffix = tuple[int, frozenset[str], "frozenset[str] | None", bool, bool]
_Edge = tuple[int, _Suffix, int]
_Longer = tuple[tuple[int, dict[str, tuple[_Edge, ...]]], ...]
_State = tuple[bool, dict[str, tuple[tuple[_Edge, ...], _Longer]]]


def _compile(suffixes: Mapping[str, tuple[str, str, str | None, bool]],
             states: Mapping[str, tuple[bool, bool, tuple[str, ...]]],
             following: Mapping[tuple[bool, bool], dict[str, str]]) -> tuple[_State, ...]:
    """The machine's states as tuples (index 0 is the initial state ``A``)."""
    compiled: dict[str, _Suffix] = {}
    for name, (_, pattern, optional, harmony) in suffixes.items():
        alternatives = pattern.split("|")
        k = len(alternatives[0])
        if any(len(a) != k for a in alternatives):
            raise ValueError(f"suffix {name}: alternatives of different lengths")
        letters = None if optional is None else frozenset(optional.split("|"))
        compiled[name] = (k, frozenset(alternatives), letters,
                          bool(letters and letters <= _VOWEL_SET), harmony)
    index = {name: i for i, name in enumerate(states)}
    out: list[_State] = []
    for initial, final, names in states.values():
        edges = [(position, compiled[name], index[following[initial, final][name]])
                 for position, name in enumerate(names)]
        longer: dict[int, dict[str, tuple[_Edge, ...]]] = {}
        short: dict[str, list[_Edge]] = {}
        long_tails: dict[str, set[int]] = {}
        for edge in edges:
            k = edge[1][0]
            for alternative in sorted(edge[1][1]):
                if k >= 3:
                    table = longer.setdefault(k, {})
                    table[alternative] = (*table.get(alternative, ()), edge)
                    long_tails.setdefault(alternative[-2:], set()).add(k)
                else:  # the tails a one- or two-letter alternative ends
                    ends = [alternative] + ([c + alternative for c in ALPHABET] if k == 1 else [])
                    for tail in ends:
                        short.setdefault(tail, []).append(edge)
        by_tail = {tail: (tuple(sorted(short.get(tail, ()))),
                          tuple((k, longer[k]) for k in sorted(long_tails.get(tail, ()),
                                                               reverse=True)))
                   for tail in short.keys() | long_tails.keys()}
        out.append((final, by_tail))
    return tuple(out)


_NOMINAL_VERB = _compile(NOMINAL_VERB_SUFFIXES, NOMINAL_VERB_STATES, NOMINAL_VERB_NEXT)
_NOUN = _compile(NOUN_SUFFIXES, NOUN_STATES, NOUN_NEXT)
_DERIVATIONAL = _compile(DERIVATIONAL_SUFFIXES, DERIVATIONAL_STATES, DERIVATIONAL_NEXT)
_NOMINAL_VERB_A, _NOUN_A, _DERIVATIONAL_A = _NOMINAL_VERB[0], _NOUN[0], _DERIVATIONAL[0]
_NOMINAL_VERB_TAILS, _NOUN_TAILS, _DERIVATIONAL_TAILS = (
    _NOMINAL_VERB_A[1], _NOUN_A[1], _DERIVATIONAL_A[1])
_NONE: tuple[tuple[_Edge, ...], _Longer] = ((), ())


def _moves(start: int, state: _State, word: str) -> list[list[Any]]:
    """The transitions ``[start, next state, stem, marked]`` from a state that change a word.

    The state's edges whose suffix ends the word (of Turkish letters), in the state's order,
    and the library's ``stemWord(word, suffix)`` for each: the
    suffix is removed unless the word is protected or, for a suffix that checks harmony,
    the word is neither harmonious nor a vowel-harmony exception; then a trailing optional
    letter is cut if the letter before it is a consonant (for a vowel) or a vowel (for a
    consonant), and otherwise the word is left whole. A transition that leaves the word
    unchanged does nothing when its turn comes, and dropping or marking it touches no other
    transition, so it is not queued at all.
    """
    edges, longer = state[1].get(word[-2:], _NONE)
    for k, table in longer:
        hit = table.get(word[-k:])
        if hit:
            edges = tuple(sorted(edges + hit)) if edges else hit
    moves: list[list[Any]] = []
    if not edges:
        return moves
    allowed = word not in PROTECTED_WORDS
    harmonious = None
    for _, suffix, nxt in edges:
        k, _, letters, letter_is_vowel, harmony = suffix
        stem = word
        if allowed:
            if not harmony:
                stem = word[:-k]
            else:
                if harmonious is None:
                    # HasVowelHarmony: fewer than two vowels, or the last two agree (_HARMONY)
                    last = word.rstrip(CONSONANTS)
                    before = last[:-1].rstrip(CONSONANTS)
                    harmonious = (not before or (before[-1] + last[-1]) in _HARMONY
                                  or word in VOWEL_HARMONY_EXCEPTIONS)
                if harmonious:
                    stem = word[:-k]
        if letters is not None and stem[-1:] in letters:
            if len(stem) >= 2 and ((stem[-2] in _CONSONANT_SET) if letter_is_vowel
                                   else (stem[-2] in _VOWEL_SET)):
                stem = stem[:-1]
            else:
                continue  # the library goes back to the word: no change
        if stem != word:
            moves.append([start, nxt, stem, False])
    return moves


def _strip(machine: tuple[_State, ...], pending: list[list[Any]], stems: set[str]) -> None:
    """The library's ``_genericSuffixStripper`` from state A: add the stems found to stems.

    ``pending`` holds the word's transitions from state A (see :func:`_moves`): the queue,
    read from position ``head``, of the transitions that change their word. A
    transition into a final state adds its stem and drops the pending transitions between
    the same two states and the marked ones; one into a non-final state marks the pending
    transitions between the same two states. Either way the next state's edges follow.
    """
    head = 0
    while head < len(pending):
        start, nxt, stem, _ = pending[head]
        head += 1
        state = machine[nxt]
        if state[0]:
            if head < len(pending):
                pending = [t for t in pending[head:]
                           if not ((t[0] == start and t[1] == nxt) or t[3])]
                head = 0
            stems.add(stem)
        else:
            for i in range(head, len(pending)):
                t = pending[i]
                if t[0] == start and t[1] == nxt:
                    t[3] = True
        if stem[-2:] in state[1]:  # else the state has no edge for it
            pending += _moves(nxt, state, stem)


def _stem(word: str) -> str:
    """``TurkishStemmer().stem(word)`` (see the module docstring)."""
    if (not word or not _IS_TURKISH(word) or word in PROTECTED_WORDS
            or not _TWO_VOWELS(word)):
        return word
    stems: set[str] = set()
    # (each machine's state A is looked up here first: most words take none of its edges)
    if word[-2:] in _NOMINAL_VERB_TAILS:
        first = _moves(0, _NOMINAL_VERB_A, word)
        if first:
            _strip(_NOMINAL_VERB, first, stems)
    for form in (*stems, word):
        if form[-2:] in _NOUN_TAILS:
            first = _moves(0, _NOUN_A, form)
            if first:
                _strip(_NOUN, first, stems)
    for form in (*stems, word):
        if form[-2:] in _DERIVATIONAL_TAILS:
            first = _moves(0, _DERIVATIONAL_A, form)
            if first:
                _strip(_DERIVATIONAL, first, stems)
    if not stems:
        return word
    best = word
    best_key = -1
    for stem in stems:
        if not _A_VOWEL(stem):
            continue
        if stem not in LAST_CONSONANT_EXCEPTIONS:
            last = LAST_CONSONANT_RULES.get(stem[-1])
            if last:
                stem = stem[:-1] + last
        if stem in AVERAGE_STEM_SIZE_EXCEPTIONS:
            return stem
        # rank by abs(length - 4), then length: 4, 3, 5, 2, 6, 1, 7, ...
        distance = len(stem) - AVERAGE_STEMMED_SIZE
        key = 2 * distance if distance >= 0 else -2 * distance - 1
        if best_key < 0 or key < best_key:
            best, best_key = stem, key
    return best


def stemmer() -> Callable[[str], str]:
    """A function equal to ``TurkishStemmer().stem`` of TurkishStemmer 1.3 for every str.

    Returns:
        ``stem(word: str) -> str``: the word's stem (a prefix of the word, its last letter
        possibly changed by the last-consonant rule), or the word itself when it is empty,
        not all lower-case Turkish letters, protected, of fewer than two vowels, or without
        a suffix the machines remove.
    """
    return _stem
