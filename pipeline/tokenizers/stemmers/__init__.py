"""Fast exact ports of the stemmers XL-Sum calls: NLTK's Snowball stemmers, TurkishStemmer.

Each module returns what the original returns for every string (tested word for word against
it); sources and licences in ``NOTICE``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any


def longest_suffix(suffixes: Iterable[str], ending: Callable[[str], str] = lambda _: ""
                   ) -> str:
    """A regex (its source) matching the longest of ``suffixes`` at a reversed word's start.

    The reversed suffixes form a trie written as nested groups; at each node the longer
    continuations are tried before the end of a suffix, so a match goes as deep as the word
    allows and backs off to the last complete suffix passed (``m.end()`` is its length). No
    suffix: no match. ``ending(suffix)`` is what must follow a suffix's end: nothing, or a
    lookahead for what NLTK requires before the suffix (the reversed word continues with it).
    For a list in which no suffix comes after a longer one ending with it, the longest match
    is NLTK's first ``endswith`` match (the ports' tests check each list).
    """
    trie: dict[str, Any] = {}
    for suffix in suffixes:
        node = trie
        for char in reversed(suffix):
            node = node.setdefault(char, {})
        node[""] = ending(suffix)

    def alternatives(node: dict[str, Any]) -> str:
        branches = [re.escape(c) + alternatives(child) for c, child in sorted(node.items()) if c]
        if "" in node:
            branches.append(node[""])
        return "(?:" + "|".join(branches) + ")"

    return alternatives(trie)


__all__ = ["longest_suffix"]
