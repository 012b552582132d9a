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


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("languages")
    ids = list(REFERENCES)
    for name, texts in (("base", BASE), ("cand", CAND)):
        pq.write_table(pa.table({"id": ids, "lang": [LANGUAGE[i] for i in ids],
                                 "prediction": [texts[i] for i in ids],
                                 "references": [[REFERENCES[i]] for i in ids]}),
                       root / f"{name}.parquet")
        result = invoke("score", root / f"{name}.parquet", "--output", root / name,
                        "--metrics", "rouge1,rougeL", "--language", "column:lang",
                        "--stemmer", "language", "--keep-text", "--bootstrap", "0",
                        "--run-id", name)
        assert result.exit_code == 0, result.output
    return root


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
