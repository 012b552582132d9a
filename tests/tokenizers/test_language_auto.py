"""``--language auto``: each example's segmenter picked by its script, against the oracle.

The oracle is ``multilingual-rouge==0.0.1`` given the language each generated example is
written in (no stemmer: ``auto`` has none); the shared data's expected values are checked in
tests/metrics/test_multilingual_parity.py.
"""

from __future__ import annotations

import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.errors import ConfigError
from pipeline.scoring import Scorer
from pipeline.tokenizers.multilingual import AUTO_FALLBACK, detect_language
from tests.support.xlsum_oracle import oracle_scorer

pytest.importorskip("multilingual_rouge")
pytest.importorskip("jieba")

MEASURES = ("precision", "recall", "fmeasure")
HAN = list("中国人民的我们是在有这个了上大会不和时东京")
KANA = list("ひらがなカタカナのはにをです")
THAI = list("ภาษาไทยเป็นของคนไทยสวัสดีครับ")
BURMESE = [chr(c) for c in range(0x1000, 0x102B)] + ["\u103a", "\u1037", "\u102c", "\u1039"]
CYRILLIC = list("абвгдежзийклмнопрстуфхцчшщыьэюя")
DEVANAGARI = [chr(c) for c in range(0x0905, 0x0939)] + ["\u093e", "\u0947"]
LATIN = list("abcdefghijklmnopqrstuvwxyz")
SEP = [" ", " ", "\n", ".", ",", "1"]
# (the language an example is written in, the letters it is written with)
SCRIPTS = [("chinese", HAN), ("japanese", HAN + KANA + KANA), ("thai", THAI),
           ("burmese", BURMESE), ("russian", CYRILLIC), ("hindi", DEVANAGARI),
           ("english", LATIN)]


def text(letters: list[str]) -> st.SearchStrategy[str]:
    # words of 1-6 letters of one script between separators, so the script is clear
    word = st.lists(st.sampled_from(letters), min_size=1, max_size=6).map("".join)
    return st.lists(st.tuples(word, st.sampled_from(SEP)), min_size=3, max_size=12).map(
        lambda parts: "".join(w + s for w, s in parts))


def example_text(k: int) -> st.SearchStrategy[str]:
    # a Japanese text without kana is detected as Chinese (documented): give each some kana
    language, letters = SCRIPTS[k]
    return text(letters).map(lambda t: t + "です。") if language == "japanese" \
        else text(letters)


@pytest.mark.parametrize(("texts", "want"), [
    (["今天天气很好", "今天天气不错"], "chinese"),
    (["今日はいい天気です", "東京"], "japanese"),
    (["演员阵容中还有Christine Baranski，Cynthia Nixon和Morgan Spector等。"], "chinese"),
    (['"""Sure, OP."', "「もちろんよ、OP。"], "japanese"),
    (["สวัสดีครับ hello"], "thai"),
    (["မြန်မာစာ"], "burmese"),
    (["Hello world, 東京"], AUTO_FALLBACK),
    (["Привет, мир"], AUTO_FALLBACK),
    (["123 !!", None, ""], AUTO_FALLBACK),
])
def test_detected_language(texts, want):
    assert detect_language(texts) == want


def test_auto_equals_the_oracle_given_each_examples_language(tmp_path):
    metrics = ("rouge1", "rouge2", "rougeL")
    scorer = Scorer(metrics=metrics, language="auto")
    oracles = {lang: oracle_scorer(list(metrics), lang=lang, stem=False, tmp=str(tmp_path))
               for lang, _ in SCRIPTS}

    @settings(max_examples=60, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.sampled_from(range(len(SCRIPTS))).flatmap(
        lambda k: st.tuples(st.just(SCRIPTS[k][0]), example_text(k), example_text(k))),
        min_size=1, max_size=6))
    def check(examples):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = scorer.score_batch([p for _, p, _ in examples],
                                       [[r] for _, _, r in examples]).table.to_pydict()
        for i, (lang, pred, ref) in enumerate(examples):
            want = oracles[lang].score(ref, pred)
            for m in metrics:
                got = tuple(table[f"{m}_{x}"][i] for x in MEASURES)
                assert got == tuple(want[m]), (lang, m, pred, ref)

    check()


def test_auto_refuses_a_stemmer_and_signs_itself():
    from importlib.metadata import version

    with pytest.raises(ConfigError, match="auto detects the script"):
        Scorer(metrics=("rouge1",), language="auto", stemmer="language")
    fields = Scorer(metrics=("rouge1",), language="auto").settings.signature_fields()
    assert fields["tok"] == "xlsum" and fields["lang"] == "auto"
    for package in ("jieba", "pythainlp", "fugashi", "pyonmttok"):
        assert f"{package}-{version(package)}" in fields["seg"]


def test_explain_uses_the_detected_language():
    from pipeline.explanation import explain

    got = explain("今天天气很好", ["今天天气不错"], metrics=("rouge1",), language="auto")
    want = explain("今天天气很好", ["今天天气不错"], metrics=("rouge1",), language="chinese")
    assert got.metrics["rouge1"].measures == want.metrics["rouge1"].measures
    assert got.metrics["rouge1"].prediction.tokens == want.metrics["rouge1"].prediction.tokens
    assert got.metrics["rouge1"].prediction.tokens != ["今天天气很好"]


def test_explain_detects_the_language_once(monkeypatch):
    # the explanation's settings show the language and ROUGE's explainer tokenizes with it:
    # one detection serves both
    from pipeline.explanation import explain
    from pipeline.tokenizers import multilingual

    calls = []
    real = multilingual.detect_language

    def counted(texts):
        calls.append(list(texts))
        return real(texts)

    monkeypatch.setattr(multilingual, "detect_language", counted)
    got = explain("今天天气很好", ["今天天气不错"], metrics=("rouge1", "rougeL"),
                  language="auto")
    assert calls == [["今天天气很好", "今天天气不错"]]
    assert got.settings["detected_language"] == "chinese"
    want = explain("今天天气很好", ["今天天气不错"], metrics=("rouge1", "rougeL"),
                   language="chinese")
    assert got.metrics["rougeL"].measures == want.metrics["rougeL"].measures
