"""What the stemmer ports' tests share: the original stemmers as oracles, the shared data's
tokens, and a word-for-word comparison that names the first differing words."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from pipeline.tokenizers.multilingual import (
    get_language_tokenizer,
    required_modules,
    snowball_stopwords,
)

Stem = Callable[[str], str]


def nltk_stemmer(language: str) -> Stem:
    """NLTK's ``SnowballStemmer(language).stem`` with the shipped stopwords, set the way
    pipeline.tokenizers.multilingual sets them: on the inner stemmer's set, the one its
    ``stem`` reads (assigning ``SnowballStemmer.stopwords`` a new set would leave it empty)."""
    from nltk.stem.snowball import SnowballStemmer

    stemmer = SnowballStemmer(language)
    stemmer.stopwords.update(snowball_stopwords(language))
    return stemmer.stem


def outcome(stem: Stem, word: str) -> Any:
    """The stem, or the type of the exception raised (part of the original's behaviour)."""
    try:
        return stem(word)
    except Exception as error:  # noqa: BLE001
        return type(error)


def first_differences(reference: Stem, port: Stem, words: Iterable[str], *, limit: int = 10
                      ) -> tuple[int, list[tuple[str, Any, Any]]]:
    """(words compared, the first ``limit`` differing (word, original, port)), in order."""
    differences: list[tuple[str, Any, Any]] = []
    n = 0
    for n, word in enumerate(words, 1):  # noqa: B007
        expected, got = outcome(reference, word), outcome(port, word)
        if expected != got:
            differences.append((word, expected, got))
            if len(differences) >= limit:
                break
    return n, differences


def assert_same_stems(reference: Stem, port: Stem, words: Iterable[str]) -> None:
    """Every word's stem (or exception) equal to the original's, in order."""
    n, differences = first_differences(reference, port, words)
    assert not differences, f"first differences of {n} words (word, original, port): {differences}"


def shared_tokens(shared_dir: Path, language: str, *, longer_than: int = 3) -> list[str]:
    """The tokens longer than ``longer_than`` characters (by default those stemmed) of the
    shared data's examples of a language, unstemmed, in data order with repeats; skips when
    the data is absent."""
    import pyarrow.parquet as pq

    path = shared_dir / "data" / "multilingual" / "examples.parquet"
    if not path.exists():
        pytest.skip("../shared/data/multilingual is absent")
    for module in required_modules(language, stem=False):
        pytest.importorskip(module)
    tokenize = get_language_tokenizer(language, stem=False).tokenize
    rows = pq.read_table(path, filters=[("lang", "=", language)]).to_pylist()
    return [token for row in rows for text in (row["prediction"], *row["references"])
            for token in tokenize(text) if len(token) > longer_than]
