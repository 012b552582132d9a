"""XL-Sum's multilingual ROUGE (PyPI ``multilingual-rouge==0.0.1``) set up as a test oracle.

The oracle needs two files it does not ship or cannot find here: NLTK's stopword corpus
(its Snowball stemmers use ``ignore_stopwords=True``; we point NLTK at the lists this
package ships, which are the nltk_data files unchanged) and the RafiStemmer rules for
Bengali (its wheel vendors the code but not ``common.rules``). Japanese is given
fugashi with unidic-lite explicitly, because ``multilingual-rouge`` pulls in the ``unidic``
package whose dictionary is not downloaded here (fugashi would otherwise pick it and fail).
"""

from __future__ import annotations

import io
import os
import shutil
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data"


@cache
def _nltk_data(tmp: str) -> str:
    target = Path(tmp) / "corpora" / "stopwords"
    target.mkdir(parents=True, exist_ok=True)
    for f in (DATA / "stopwords").iterdir():
        if f.name != "NOTICE":
            shutil.copy(f, target / f.name)
    return tmp


def oracle_module():
    """The ``multilingual_rouge`` modules, or skip when the oracle is not installed."""
    pytest.importorskip("multilingual_rouge")
    from multilingual_rouge import rouge_scorer, tokenization_wrapper

    return rouge_scorer, tokenization_wrapper


def oracle_scorer(rouge_types, *, lang: str, stem: bool, tmp: str):
    """``multilingual_rouge.rouge_scorer.RougeScorer`` for a language, files supplied."""
    rouge_scorer, _ = oracle_module()
    import nltk

    path = _nltk_data(tmp)
    if path not in nltk.data.path:
        nltk.data.path.insert(0, path)
    kwargs = {}
    canonical = rouge_scorer.SPECIAL_LANGID_CONVERSION_MAP.get(lang, lang)
    if canonical == "japanese":
        import fugashi
        import unidic_lite

        rc = os.path.join(unidic_lite.DICDIR, "mecabrc")
        tagger = fugashi.Tagger(f'-r "{rc}" -d "{unidic_lite.DICDIR}" -O wakati -b 50000')
        kwargs["callable_tokenizer"] = lambda text: tagger.parse(text).split()
    if stem and canonical == "bengali":
        from multilingual_rouge.bengali_stemmer import RafiStemmer

        rules = (DATA / "bengali" / "common.rules").read_text("utf-8")
        kwargs["callable_stemmer"] = RafiStemmer(io.StringIO(rules)).stem_word
    return rouge_scorer.RougeScorer(list(rouge_types), use_stemmer=stem, lang=lang, **kwargs)


def oracle_tokens(scorer, text: str) -> list[str]:
    """The oracle's tokens of a whole text (its ``score`` tokenizes exactly so)."""
    _, tokenization_wrapper = oracle_module()
    return tokenization_wrapper.tokenize(text, scorer._stemmer, scorer._tokenizer)


def oracle_xlsum_line_tokens(scorer, line: str) -> list[str]:
    """The oracle's tokens of one line in its own rougeLsum (no segmenter)."""
    _, tokenization_wrapper = oracle_module()
    return tokenization_wrapper.tokenize(line, scorer._stemmer)
