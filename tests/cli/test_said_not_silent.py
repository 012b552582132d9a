"""Settings that used to change or drop something silently are now said or refused.

- A ``--language`` name with no segmenter or stemmer of its own (a typo, a capital, an ISO
  code) is scored with XL-Sum's fallback tokenizer, as the reference does, and warned about
  in one line naming the language meant; per distinct value of ``column:COL`` too.
- Options no requested metric reads are refused (exit 2, one line), from flags and config
  files alike; a config file's bad value names the file; a null ``column:COL`` language
  names its ids.
- The summary's interval sentence, and BLEU's advice under the tokenizer it would advise.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from tests.support.xlsum_oracle import oracle_scorer

ROWS = {"id": ["a", "b", "c"],
        "lang": ["english", "engish", "chinese"],
        "prediction": ["The cats were running home", "The dogs were sleeping",
                       "我们是中国人"],
        "references": [["The cat runs home"], ["The dog sleeps"], ["我们是人"]]}


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table(ROWS), path)
    return path


def _score(table, tmp_path, *args: str, config: str | None = None):
    extra = []
    if config is not None:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(config)
        extra = ["--config", str(cfg)]
    return CliRunner().invoke(main, ["score", str(table), "--output", str(tmp_path / "r"),
                                     "--bootstrap", "0", *extra, *args])


@pytest.mark.parametrize(("name", "meant"), [
    ("chinse", "chinese"), ("Chinese", "chinese"), ("zh", "chinese"), ("ja", "japanese"),
    ("ru", "russian"), ("engish", "english"), ("Bangla", "bangla"), ("turkis", "turkish")])
def test_a_name_that_falls_back_gets_the_name_meant(name, meant):
    from pipeline.tokenizers.multilingual import unnamed_language_note

    assert unnamed_language_note(name) == (
        f"language {name!r} is not a named language: scored with the fallback tokenizer "
        f"(did you mean {meant}?)")


@pytest.mark.parametrize("name", ["chinese", "bangla", "chinese_traditional", "mundo",
                                  "swedish", "hindi", "burmese"])
def test_named_languages_and_aliases_have_no_note(name):
    from pipeline.tokenizers.multilingual import unnamed_language_note

    assert unnamed_language_note(name) is None


@pytest.mark.parametrize("name", ["xhosa", "croatian", "persian", "ukrainian"])
def test_a_language_far_from_every_name_gets_no_hint(name):
    from pipeline.tokenizers.multilingual import unnamed_language_note

    # croatian is 0.75 like romanian, persian 0.71 like russian: languages, not typos
    assert unnamed_language_note(name) == (f"language {name!r} is not a named language: "
                                           "scored with the fallback tokenizer")


def test_a_misspelt_language_is_scored_as_the_reference_does_and_said_first(table, tmp_path):
    pytest.importorskip("jieba")
    result = _score(table, tmp_path, "--metrics", "rouge1", "--language", "chinse")
    assert result.exit_code == 0, result.output
    line = ("warning: language 'chinse' is not a named language: scored with the fallback "
            "tokenizer (did you mean chinese?)")
    # once on stderr (before scoring), and in the summary under its first line
    assert result.stderr.splitlines().count(line) == 1
    summary = result.stdout.split("\nsignature: ")[0]  # before the signature and table
    assert " ".join(line.split()) in " ".join(summary.split())
    # the fallback's scores: XL-Sum's scorer under the same unknown name
    scorer = oracle_scorer(["rouge1"], lang="chinse", stem=False, tmp=str(tmp_path / "nltk"))
    want = [scorer.score(r[0], p)["rouge1"].fmeasure
            for p, r in zip(ROWS["prediction"], ROWS["references"], strict=True)]
    got = pq.read_table(tmp_path / "r" / "examples").sort_by("id")
    assert got.column("rouge1_fmeasure").to_pylist() == want


def test_a_named_language_has_no_warning(table, tmp_path):
    pytest.importorskip("jieba")
    result = _score(table, tmp_path, "--metrics", "rouge1", "--language", "chinese")
    assert result.exit_code == 0, result.output
    assert "not a named language" not in result.output


def test_each_unnamed_value_of_a_language_column_is_warned_with_its_rows(table, tmp_path):
    pytest.importorskip("jieba")
    result = _score(table, tmp_path, "--metrics", "rouge1", "--language", "column:lang",
                    "--stemmer", "language")
    assert result.exit_code == 0, result.output
    line = ("warning: language 'engish' (column 'lang', 1 row) is not a named language: "
            "scored with the fallback tokenizer (did you mean english?)")
    assert result.stderr.splitlines().count(line) == 1
    assert " ".join(line.split()) in " ".join(result.stdout.split())  # wrapped at 100
    assert "'english'" not in result.output and "'chinese'" not in result.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["counts"]["unnamed_languages"] == {"engish": 1}
    # and in the report's warning boxes, at the top
    report = CliRunner().invoke(main, ["report", str(tmp_path / "r"), "--output",
                                       str(tmp_path / "report.html")])
    assert report.exit_code == 0, report.output
    html = (tmp_path / "report.html").read_text()
    assert "Languages scored with the fallback tokenizer" in html
    assert "language &#x27;engish&#x27; (column &#x27;lang&#x27;, 1 row)" in html


def test_a_null_language_names_its_ids(tmp_path):
    pytest.importorskip("jieba")
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({**ROWS, "lang": ["english", None, " "]}), path)
    result = _score(path, tmp_path, "--metrics", "rouge1", "--language", "column:lang")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "Error: predictions: column 'lang' has an empty or null language in 2 rows (ids: "
        "'b', 'c') (give every row a language name)"]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(("args", "config", "message"), [
    (["--stopwords", "smart"], None, "stopwords 'smart' is ROUGE-1.5.5's -s"),
    (["--metrics", "bleu", "--stopwords", "smart"], None,
     "stopwords 'smart' is ROUGE-1.5.5's -s"),
    ([], "stopwords: smart\n", "stopwords 'smart' is ROUGE-1.5.5's -s"),
    (["--metrics", "rougeS4", "--tokenizer", "unicode"], None,
     "rougeS4 is ROUGE-1.5.5's and always tokenizes as the script does"),
    (["--metrics", "rougeWsum"], "tokenizer: whitespace\n",
     "rougeWsum is ROUGE-1.5.5's and always tokenizes as the script does"),
    (["--japanese-dictionary", "unidic"], None, "japanese_dictionary needs --language"),
    ([], "japanese_dictionary: unidic\n", "japanese_dictionary needs --language"),
    (["--xlsum-rougelsum"], None, "xlsum_rougelsum needs --language"),
    (["--limit-words", "3"], None, "limit_words 3 is ROUGE-1.5.5's -l: it needs tokenizer "
     "rouge155 or a ROUGE-1.5.5 metric"),
    (["--metrics", "bleu", "--limit-bytes", "9"], None, "limit_bytes 9 is ROUGE-1.5.5's -b"),
    ([], "alpha: 0.3\n", "alpha 0.3 is ROUGE-1.5.5's -p"),
    (["--metrics", "rouge1,rougeLsum", "--tokenizer", "rouge155", "--wlcs-weight", "1.5"],
     None, "wlcs_weight 1.5 is ROUGE-W's weight (the script's -w): only rougeWsum reads it"),
    ([], "metrics: rougeS4\nwlcs_weight: 2\n", "wlcs_weight 2.0 is ROUGE-W's weight"),
    (["--language", "russian", "--japanese-dictionary", "unidic"], None,
     "japanese_dictionary 'unidic' is read under --language japanese only: language "
     "'russian' never reads it"),
    ([], "language: ja\njapanese_dictionary: unidic\n",  # a code is not the language
     "japanese_dictionary 'unidic' is read under --language japanese only"),
    (["--metrics", "bleu", "--language", "russian"], None,
     "language 'russian' is read by the rouge metrics (rouge1 ... rougeLsum) alone, and none "
     "is requested"),
    (["--metrics", "bleu", "--stemmer", "porter"], None,
     "stemmer 'porter' is read by the rouge metrics (rouge1 ... rougeLsum) or the rouge155 "
     "metrics (rougeWsum ... rougeSU) alone, and none is requested"),
    (["--metrics", "rouge1,chrf", "--bleu-tokenize", "zh"], None,
     "bleu_tokenize 'zh' is read by the bleu metrics (bleu) alone"),
    ([], "metrics: token_f1\ncase_sensitive: true\n",
     "case_sensitive is read by the rouge metrics"),
    (["--metrics", "rougeWsum", "--japanese-dictionary", "unidic"], None,
     "japanese_dictionary 'unidic' is read by the rouge metrics (rouge1 ... rougeLsum) alone"),
    ([], "metrics: chrf\nxlsum_rougelsum: true\n",
     "xlsum_rougelsum is read by the rouge metrics"),
    (["--metrics", "rouge1", "--language", "russian", "--xlsum-rougelsum"], None,
     "xlsum_rougelsum is read by rougeLsum alone, which is not requested"),
])
def test_an_option_nothing_reads_is_refused_in_one_line(table, tmp_path, args, config,
                                                        message):
    result = _score(table, tmp_path, *args, config=config)
    assert result.exit_code == 2, result.output
    err = result.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"Error: {message}"), err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("args", [
    ["--stopwords", "smart", "--tokenizer", "rouge155", "--metrics", "rouge1"],
    ["--stopwords", "smart", "--metrics", "rougeS4"],
    ["--metrics", "rougeS4", "--tokenizer", "rouge155"],
    ["--metrics", "rougeS4", "--stemmer", "porter-rouge155"],
])
def test_the_options_where_they_are_read_still_run(table, tmp_path, args):
    result = _score(table, tmp_path, *args)
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert "tok:rouge155" in manifest["signature"]
    assert ("stop:smart" in manifest["signature"]) == ("smart" in args)


@pytest.mark.parametrize(("args", "config", "fields"), [
    (["--tokenizer", "rouge155", "--metrics", "rouge1", "--limit-words", "3", "--alpha",
      "0.3"], None, ["lw:3", "alpha:0.3"]),
    (["--metrics", "rougeS4", "--limit-bytes", "20"], None, ["lb:20"]),
    (["--metrics", "rougeWsum", "--wlcs-weight", "1.5"], None, ["wlcs:1.5"]),
    # the defaults, written out (default.yaml lists every key): not a value the user set
    ([], "stopwords: none\nlimit_words: 0\nlimit_bytes: 0\nalpha: 0.5\nwlcs_weight: 1.2\n"
         "japanese_dictionary: unidic-lite\n", ["tok:rouge-score"]),
    (["--language", "auto", "--japanese-dictionary", "unidic", "--metrics", "rouge1"], None,
     ["tok:xlsum"]),
])
def test_the_rouge155_options_and_the_dictionary_where_they_are_read(table, tmp_path, args,
                                                                     config, fields):
    if "--language" in args:
        pytest.importorskip("jieba")
    result = _score(table, tmp_path, *args, config=config)
    assert result.exit_code == 0, result.output
    signature = json.loads((tmp_path / "r" / "manifest.json").read_text())["signature"]
    for field in fields:
        assert field in signature.split("|"), (field, signature)


def test_a_config_file_value_error_names_the_file(table, tmp_path):
    result = _score(table, tmp_path, config="stemmer: portr\n")
    assert result.exit_code == 2
    err = result.stderr.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"Error: config file {tmp_path / 'c.yaml'}: stemmer: unknown "
                             "value 'portr'"), err


def test_a_flag_value_error_does_not_name_a_file(table, tmp_path):
    result = _score(table, tmp_path, "--seed", "3", config="seed: 4\n")
    assert result.exit_code == 0, result.output
    result = _score(table, tmp_path, "--stemmer", "porter", "--overwrite",
                    config="stemmer: none\n")
    assert result.exit_code == 0, result.output


def test_the_interval_sentence_reads_right(table, tmp_path):
    result = _score(table, tmp_path, "--metrics", "rouge1,bleu")
    assert result.exit_code == 0, result.output
    assert ("means of each metric's primary measure (rouge1: fmeasure, bleu: score), and "
            "corpus scores from summed statistics where marked (corpus), without an interval "
            "(--bootstrap 0); every measure is in aggregate.parquet") in \
        " ".join(result.stdout.split())
    result = CliRunner().invoke(main, ["score", str(table), "--output", str(tmp_path / "b"),
                                       "--metrics", "rouge1", "--bootstrap", "20"])
    assert result.exit_code == 0, result.output
    assert ("fmeasure means with a 95% percentile bootstrap interval (20 resamples, seed "
            in " ".join(result.stdout.split()))


@pytest.mark.parametrize(("tokenize", "advice"), [
    ("13a", "(--bleu-tokenize zh for Chinese, ja-mecab for Japanese, char for the others)"),
    ("zh", "(--bleu-tokenize ja-mecab for Japanese, char for the others)")])
def test_bleu_never_advises_the_tokenizer_in_use(tmp_path, tokenize, advice):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": ["a"], "prediction": ["これはペンです"],
                             "references": [["これはペンだ"]]}), path)
    result = _score(path, tmp_path, "--metrics", "bleu", "--bleu-tokenize", tokenize)
    assert result.exit_code == 0, result.output
    warning = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and warning[0].endswith(advice), warning
    assert f"--bleu-tokenize {tokenize} " not in warning[0].split("(", 1)[1]


def test_the_library_warns_too():
    pytest.importorskip("jieba")
    import warnings

    from pipeline.scoring import Scorer

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Scorer(metrics=("rouge1",), language="zh").score_batch(["我们"], [["我们"]])
        Scorer(metrics=("rouge1",), language="column:lang").score_batch(
            ["a b", "c d", "e f"], [["a b"], ["c d"], ["e f"]],
            columns={"lang": ["engish", "engish", "english"]})
    messages = [str(w.message) for w in caught if type(w.message).__name__ ==
                "UnnamedLanguageWarning"]
    assert messages == [
        "language 'zh' is not a named language: scored with the fallback tokenizer (did you "
        "mean chinese?)",
        "language 'engish' (column 'lang', 2 rows) is not a named language: scored with the "
        "fallback tokenizer (did you mean english?)"]


def test_explain_says_it_under_the_settings():
    pytest.importorskip("jieba")
    args = ["explain", "--prediction", "我们是中国人", "--reference", "我们是人", "--metrics",
            "rouge1", "--language"]
    result = CliRunner().invoke(main, [*args, "chinse"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1] == (
        "warning: language 'chinse' is not a named language: scored with the fallback "
        "tokenizer (did you mean chinese?)")
    named = CliRunner().invoke(main, [*args, "chinese"])
    assert named.exit_code == 0 and "warning" not in named.output
