"""Which texts a whitespace-based tokenizer cannot split: scripts written without spaces.

Chinese, Japanese, Thai, Lao, Khmer, Burmese and Tibetan are written without spaces between
words. A tokenizer that splits on white space and punctuation (BLEU's ``13a``, the SQuAD
normalization of ``token_f1``) keeps a whole clause of them as one "word", so two texts
that share most of their words still score 0: the silent zero the notes of
:mod:`pipeline.metrics` warn about. Script classes are the Unicode ``Script`` property as
the ``regex`` package reads it.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable
from typing import Any

NO_SPACE_SCRIPTS = ("Han", "Hiragana", "Katakana", "Thai", "Lao", "Khmer", "Myanmar",
                    "Tibetan")


_JAPANESE_SCRIPTS = ("Han", "Hiragana", "Katakana")


@functools.cache
def _no_space(han_split: bool, japanese_split: bool = False) -> Any:
    """The pattern of a character of a script written without spaces that is not split.

    ``han_split`` leaves out Han, ``japanese_split`` Han, Hiragana and Katakana. Compiled on
    first use, so that importing this module (the kernels' build imports the metric modules)
    needs no ``regex``.
    """
    import regex

    scripts = [s for s in NO_SPACE_SCRIPTS if not (han_split and s == "Han")
               and not (japanese_split and s in _JAPANESE_SCRIPTS)]
    return regex.compile("[" + "".join(f"\\p{{{s}}}" for s in scripts) + "]")


def count_unsegmented(texts: Iterable[str | None], *, han_split: bool = False,
                      japanese_split: bool = False) -> int:
    """The number of texts holding a character of a script written without spaces.

    Args:
        texts: any texts (None is empty).
        han_split: the tokenizer splits Han characters itself (sacrebleu's ``zh``): only
            the other scripts count.
        japanese_split: the tokenizer segments Japanese (sacrebleu's ``ja-mecab``): Han,
            Hiragana and Katakana do not count.

    Returns:
        A count, 0 <= . <= the number of texts.
    """
    pattern = _no_space(han_split, japanese_split)
    return sum(1 for t in texts if t and pattern.search(t) is not None)


def letter_script(text: str) -> str | None:
    """The script of the first letter of a text, or None when the text has no letter.

    The first word of the letter's Unicode name: ``CJK``, ``CYRILLIC``, ``DEVANAGARI``,
    ``ARABIC``, ``HIRAGANA``, ``THAI``...
    """
    for char in text:
        if unicodedata.category(char).startswith("L"):
            name = unicodedata.name(char, "")
            return name.split(" ")[0] if name else None
    return None


__all__ = ["NO_SPACE_SCRIPTS", "count_unsegmented", "letter_script"]
