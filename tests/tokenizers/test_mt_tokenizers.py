"""sacrebleu's tokenizers on a batch: token lists equal to sacrebleu's own tokenizers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import ConfigError
from pipeline.tokenizers.sacrebleu import _CJK, _FLAGS, MT_TOKENIZERS, tokenize, tokenize_mt
from tests.support.mt_data import bundled_realsumm

pytest.importorskip("sacrebleu")
from sacrebleu.metrics.chrf import CHRF  # noqa: E402
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a  # noqa: E402
from sacrebleu.tokenizers.tokenizer_char import TokenizerChar  # noqa: E402
from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International  # noqa: E402
from sacrebleu.tokenizers.tokenizer_none import NoneTokenizer  # noqa: E402
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh  # noqa: E402

SACRE = {"13a": Tokenizer13a(), "intl": TokenizerV14International(), "zh": TokenizerZh(),
         "char": TokenizerChar(), "none": NoneTokenizer(),
         "chrf-words": lambda s: " ".join(CHRF(word_order=2)._remove_punctuation(s))}


def sacre_tokens(name: str, text: str) -> list[str]:
    return SACRE[name](text).split()


@pytest.mark.parametrize("name", sorted(SACRE))
def test_bundled_texts(name):
    preds, refs = bundled_realsumm(100)
    texts = preds + [r[0] for r in refs]
    batch = tokenize_mt(texts, tokenizer=name)
    assert [batch.strings(i) for i in range(len(texts))] == [sacre_tokens(name, t)
                                                             for t in texts]


CHARS = st.sampled_from(list("ab cAB.,-&;:/1 2\n\t'\"()$%[]{}~`@^_|\\") + [
    "&amp;", "&quot;", "&lt;", "&gt;", "<skipped>", "-\n", "Σ", "中", "文", "。", "，", "é",
    "…", "—", "\u3000", "\xa0", "\x1c", "\u2009", "٣", "½", "€", "¿", "¡", "\U0001F600",
    "\U00020001", "\u2001", "\u2a6d", "\u2f81", "\ufe31", "\u0301"])
TEXT = st.lists(CHARS, max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(TEXT, min_size=1, max_size=4), name=st.sampled_from(sorted(SACRE)))
def test_random_texts(texts, name):
    batch = tokenize_mt(texts, tokenizer=name)
    for i, text in enumerate(texts):
        assert batch.strings(i) == sacre_tokens(name, text)


def test_equal_tokens_share_ids():
    batch = tokenize_mt(["a b, a", "b a."], tokenizer="13a")
    assert batch.strings(0) == ["a", "b", ",", "a"] and batch.strings(1) == ["b", "a", "."]
    assert list(batch.ids) == [0, 1, 2, 0, 1, 0, 3] and batch.n_types == 4


def test_zh_character_set_is_sacrebleus():
    # sacrebleu compares strings, so two of its ranges are not what they look like
    ours = {c for c in range(0x10000) if _FLAGS[c] & _CJK}
    theirs = {c for c in range(0x10000) if TokenizerZh._is_chinese_char(chr(c))}
    assert ours == theirs


def test_one_text_and_unknown_name():
    assert tokenize("Hello, world.", tokenizer="13a") == ["Hello", ",", "world", "."]
    assert set(MT_TOKENIZERS) == {"13a", "intl", "zh", "char", "none", "ja-mecab", "ko-mecab"}
    with pytest.raises(ConfigError, match="13a"):
        tokenize("x", tokenizer="13A")


@pytest.mark.parametrize("name", ["13a", "intl", "zh"])
def test_text_that_grows_at_every_rewrite(name):
    text = "a." * 3000 + "1-" * 2000 + "$.,中" * 2000 + "x"
    assert tokenize_mt(["short", text], tokenizer=name).strings(1) == sacre_tokens(name, text)
