"""explain and the report show the per-language tokens (``--language``), quoted and marked.

A per-language token cannot be followed back to a span of the text (segmented, cleaned,
stemmed), and jieba's and pythainlp's ``' '`` tokens match like words: the report lists the
tokens as compared, each quoted, the matched ones marked; ``explain`` quotes them in its
listings. Under ``--language column:COL`` each example is explained in its row's language.
The tokens and scores are ``multilingual-rouge==0.0.1``'s (the XL-Sum code).
"""

from __future__ import annotations

import html
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.hostile_runs import invoke
from tests.support.xlsum_oracle import oracle_scorer, oracle_tokens

pytest.importorskip("jieba")
REFERENCES = {"zh": "我们是人，爱和平。", "th": "แมวนั่งบนเสื่อสีแดง",
              "ru": "Кошки сидели на красном ковре"}
BASE = {"zh": "我们是中国人", "th": "แมวนอนบนเตียง", "ru": "Кошка сидит"}
CAND = {"zh": "我们是中国人。我们爱和平", "th": "แมวนั่งบนเสื่อ", "ru": "Кошки сидели на ковре"}
LANGUAGE = {"zh": "chinese", "th": "thai", "ru": "russian"}
ITEM = re.compile(r'<(span|mark)(?: class="(\w*)")?>(.*?)</\1>')


def _score_base_and_cand(root, references, base, cand, *options, columns=None):
    # runs ROOT/base and ROOT/cand (run ids base, cand) of the same references, texts kept
    ids = list(references)
    for name, texts in (("base", base), ("cand", cand)):
        pq.write_table(pa.table({"id": ids, **(columns or {}),
                                 "prediction": [texts[i] for i in ids],
                                 "references": [[references[i]] for i in ids]}),
                       root / f"{name}.parquet")
        result = invoke("score", root / f"{name}.parquet", "--output", root / name, *options,
                        "--keep-text", "--bootstrap", "0", "--run-id", name)
        assert result.exit_code == 0, result.output
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return _score_base_and_cand(
        tmp_path_factory.mktemp("languages"), REFERENCES, BASE, CAND,
        "--metrics", "rouge1,rougeL", "--language", "column:lang", "--stemmer", "language",
        columns={"lang": [LANGUAGE[i] for i in REFERENCES]})


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("nltk"))
    return {i: oracle_scorer(["rouge1"], lang=LANGUAGE[i], stem=True, tmp=tmp)
            for i in REFERENCES}


def _sections(page: str) -> dict[str, str]:
    found = re.findall(r'<section class="example">\s*<h3>\d+\. id = (\w+):(.*?)</section>', page,
                       flags=re.S)
    return {key: body for key, body in found}


def _token_lines(section: str) -> list[list[tuple[str, str | None]]]:
    """Each tokens paragraph: (the token as shown, its mark class or None when unmarked)."""
    return [[(html.unescape(text), cls if kind == "mark" else None)
             for kind, cls, text in ITEM.findall(body)]
            for body in re.findall(r'<p class="tokens">(.*?)</p>', section, flags=re.S)]


def test_the_report_lists_each_examples_tokens_in_its_language_quoted_and_marked(
        runs, oracle, tmp_path):
    out = tmp_path / "report.html"
    result = invoke("report", runs / "cand", "--baseline", runs / "base", "--output", out,
                    "--metrics", "rouge1.fmeasure")
    assert result.exit_code == 0, result.output
    sections = _sections(out.read_text("utf-8"))
    assert set(sections) == set(REFERENCES)
    for key, section in sections.items():
        scorer = oracle[key]
        base, cand, ref = _token_lines(section)  # baseline, this run, the reference
        assert [t for t, _ in base] == [repr(t) for t in oracle_tokens(scorer, BASE[key])]
        assert [t for t, _ in cand] == [repr(t) for t in oracle_tokens(scorer, CAND[key])]
        assert [t for t, _ in ref] == [repr(t) for t in oracle_tokens(scorer, REFERENCES[key])]
        # marked: rouge1's clipped matches, as many as the oracle's precision says
        for line, text in ((base, BASE[key]), (cand, CAND[key])):
            p = scorer.score(REFERENCES[key], text)["rouge1"].precision
            assert sum(1 for _, c in line if c is not None) == round(p * len(line))
    # jieba's ' ' between the sentences matched the reference's: it is shown and marked
    _, cand, ref = _token_lines(sections["zh"])
    assert ("' '", "cand") in cand and ("' '", "cand") in ref


def test_explain_of_a_run_takes_the_rows_language_and_quotes_the_tokens(runs, oracle):
    result = invoke("explain", runs / "cand", "--id", "zh", "--metrics", "rouge1")
    assert result.exit_code == 0, result.output
    tokens = oracle_tokens(oracle["zh"], CAND["zh"])
    assert f"prediction: {len(tokens)} tokens: " + " ".join(map(repr, tokens)) in result.output
    assert "|lang:chinese|" in result.output
    listing = result.output.split("clipped n-grams:", 1)[1]
    assert "' ' x1" in listing and "'爱' x1" in listing


def test_explaining_part_of_a_run_drops_the_options_only_the_rest_reads(tmp_path):
    """A run's wlcs_weight is rougeWsum's; its japanese_dictionary its Japanese rows'."""
    pq.write_table(pa.table({"id": ["en", "ru"], "lang": ["english", "russian"],
                             "prediction": ["the cat sat on the mat", "Кошка сидит"],
                             "references": [["the cat sat on a red mat"],
                                            ["Кошки сидели на ковре"]]}),
                   tmp_path / "in.parquet")
    for name, args in (("w", ["--metrics", "rouge1,rougeWsum", "--tokenizer", "rouge155",
                              "--wlcs-weight", "1.5"]),
                       ("l", ["--metrics", "rouge1", "--language", "column:lang",
                              "--japanese-dictionary", "unidic"])):
        result = invoke("score", tmp_path / "in.parquet", "--output", tmp_path / name,
                        "--keep-text", "--bootstrap", "0", *args)
        assert result.exit_code == 0, result.output
    result = invoke("explain", tmp_path / "w", "--id", "en", "--metrics", "rouge1")
    assert result.exit_code == 0, result.output
    assert "rouge1: P 0.8333  R 0.7143" in result.output  # 5 of 6, 5 of 7 (by hand)
    result = invoke("explain", tmp_path / "w", "--id", "en", "--metrics", "rouge1",
                    "--wlcs-weight", "2")  # given by the user: still refused
    assert result.exit_code == 2 and "only rougeWsum reads it" in result.output
    result = invoke("explain", tmp_path / "l", "--id", "ru")
    assert result.exit_code == 0, result.output
    assert "|lang:russian|" in result.output
    pq.write_table(pa.table({"id": ["en", "ru"], "prediction": ["the cat sat", "Кошка"],
                             "references": [["the cat sat on a red mat"],
                                            ["Кошки сидели на ковре"]]}),
                   tmp_path / "short.parquet")
    result = invoke("score", tmp_path / "short.parquet", "--output", tmp_path / "w2",
                    "--keep-text", "--bootstrap", "0", "--metrics", "rouge1,rougeWsum",
                    "--tokenizer", "rouge155", "--wlcs-weight", "1.5")
    assert result.exit_code == 0, result.output
    result = invoke("report", tmp_path / "w2", "--baseline", tmp_path / "w", "--output",
                    tmp_path / "r.html", "--metrics", "rouge1.fmeasure")
    assert result.exit_code == 0, result.output
    assert '<mark class="base">' in (tmp_path / "r.html").read_text("utf-8")


AUTO_BASE = {**BASE, "mix": "the cat sat on the mat and the dog ran off"}
AUTO_CAND = {**CAND, "mix": "我们是中国人"}
AUTO_REFERENCES = {**REFERENCES, "mix": "我们是人"}
# By hand, from the scripts (Han, Thai, Cyrillic words): mix's baseline has more words of
# Latin letters (11) than the reference has Han characters (4), its candidate none.
DETECTED = {"baseline": {"zh": "chinese", "th": "thai", "ru": "other", "mix": "other"},
            "this run": {"zh": "chinese", "th": "thai", "ru": "other", "mix": "chinese"}}


@pytest.fixture(scope="module")
def auto_runs(tmp_path_factory):
    return _score_base_and_cand(tmp_path_factory.mktemp("auto"), AUTO_REFERENCES, AUTO_BASE,
                                AUTO_CAND, "--metrics", "rouge1", "--language", "auto")


def _said(language: str) -> str:
    return "other (XL-Sum's fallback tokenizer)" if language == "other" else language


def test_explain_says_the_language_auto_detected_for_the_example(auto_runs):
    import json

    from pipeline.metrics.rouge.languages import detected_languages

    for key, language in DETECTED["this run"].items():
        # the scorer's detection agrees with the hand labels
        assert detected_languages([AUTO_CAND[key]], [[AUTO_REFERENCES[key]]]) == [language]
        result = invoke("explain", auto_runs / "cand", "--id", key, "--metrics", "rouge1")
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        assert lines[0].startswith("settings: ") and "|lang:auto|" in lines[0]
        assert lines[1] == (f"language: {_said(language)}, detected from the scripts of the "
                            "texts (--language auto)"), lines[:3]
        doc = json.loads(invoke("explain", auto_runs / "cand", "--id", key, "--format",
                                "json").output)
        assert doc["settings"]["detected_language"] == language
    fixed = invoke("explain", "--prediction", "Кошка", "--reference", "Кошки",
                   "--language", "russian", "--metrics", "rouge1")
    assert fixed.exit_code == 0 and "detected" not in fixed.output  # nothing to detect


def test_the_report_says_each_sides_detected_language_by_its_tokens(auto_runs, tmp_path):
    out = tmp_path / "report.html"
    result = invoke("report", auto_runs / "cand", "--baseline", auto_runs / "base",
                    "--output", out, "--metrics", "rouge1.fmeasure")
    assert result.exit_code == 0, result.output
    sections = _sections(out.read_text("utf-8"))
    assert set(sections) == set(AUTO_REFERENCES)
    for key, section in sections.items():
        labels = [html.unescape(x) for x in re.findall(r'<div class="label">([^<]*tokens as '
                                                       r'compared[^<]*)</div>', section)]
        base, cand, ref = labels  # the reference's tokens are this run's
        for label, side in ((base, "baseline"), (cand, "this run"), (ref, "this run")):
            assert label.endswith(f", language {_said(DETECTED[side][key])} (detected)"), \
                (key, label)
