"""No silent zeros: non-Latin text that scores 0 for a tokenizer's reason is said loudly.

The counts are checked against the reference tokenizers themselves: rouge-score 0.1.2's
tokenizer returns no token for Chinese, Russian, Hindi and Arabic text; SQuAD's and
sacrebleu 13a's words are white-space runs, so a Chinese sentence is one word.
"""

from __future__ import annotations

import json
import warnings

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.scoring import Scorer

ROWS = {"id": ["a", "b", "c", "d"],
        "lang": ["chinese", "russian", "hindi", "arabic"],
        "prediction": ["我们是中国人", "Мы идём домой", "हम घर जा रहे हैं", "نحن ذاهبون إلى المنزل"],
        "references": [["我们是人"], ["Мы идём в школу"], ["हम स्कूल जा रहे हैं"],
                       ["نحن ذاهبون إلى المدرسة"]]}


@pytest.fixture
def mixed(tmp_path):
    path = tmp_path / "mixed.parquet"
    pq.write_table(pa.table(ROWS), path)
    return path


def _rouge_score_empty() -> int:
    from rouge_score import tokenize

    texts = ROWS["prediction"] + [r for refs in ROWS["references"] for r in refs]
    return sum(1 for t in texts if not tokenize.tokenize(t, None))


def test_score_warns_first_with_counts_per_family_and_the_fix(mixed, tmp_path):
    result = CliRunner().invoke(main, ["score", str(mixed), "--output", str(tmp_path / "r"),
                                       "--metrics", "rouge1,token_f1,bleu", "--bootstrap", "0"])
    assert result.exit_code == 0, result.output
    n_rouge = _rouge_score_empty()
    assert n_rouge == 8
    err = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert err[0].startswith(f"warning: {n_rouge} non-empty texts produced no token with "
                             "tokenizer rouge-score") and "--language LANG" in err[0]
    # 13a and SQuAD's words: the Chinese prediction and reference (2 texts)
    assert any(line.startswith("warning: 2 texts") and "--bleu-tokenize zh" in line
               for line in err)
    assert any(line.startswith("warning: 2 texts") and "token_f1" in line for line in err)
    # in the summary, right under the first line (before the table)
    lines = result.stdout.splitlines()
    assert lines[1].startswith("warning: 8 non-empty texts")
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["counts"]["zero_token_texts"] == 8
    assert manifest["counts"]["bleu_unsegmented_texts"] == 2
    assert manifest["counts"]["squad_unsegmented_texts"] == 2


def test_the_fixes_silence_the_warnings(mixed, tmp_path):
    result = CliRunner().invoke(main, ["score", str(mixed), "--output", str(tmp_path / "r"),
                                       "--metrics", "rouge1,bleu", "--bootstrap", "0",
                                       "--language", "column:lang", "--bleu-tokenize", "zh",
                                       "--group-by", "lang"])
    assert result.exit_code == 0, result.output
    assert "warning:" not in result.stderr
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    # counts added for this issue are left out while 0 (earlier runs' manifests unchanged)
    assert "bleu_unsegmented_texts" not in manifest["counts"]
    assert "zero_token_texts_language" not in manifest["counts"]
    assert manifest["config"]["language"] == "column:lang"
    assert "|lang:column:lang|" in manifest["signature"]


def test_a_missing_extra_exits_2_in_one_line(mixed, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "jieba", None)
    result = CliRunner().invoke(main, ["score", str(mixed), "--output", str(tmp_path / "r"),
                                       "--metrics", "rouge1", "--language", "chinese"])
    assert result.exit_code == 2
    err = result.stderr.strip().splitlines()
    assert len(err) == 1 and "multilingual" in err[0] and "Traceback" not in result.output
    assert not (tmp_path / "r").exists()


def test_the_library_warns_too():
    from pipeline.metrics.rouge.family import ZeroTokenWarning
    from pipeline.metrics.squad import UnsegmentedTextWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Scorer(metrics=("rouge1", "token_f1")).score_batch(["Мы идём", "我们"],
                                                           [["Мы идём"], ["我们"]])
    messages = {w.category: str(w.message) for w in caught}
    assert "scripts: CYRILLIC, CJK" in messages[ZeroTokenWarning]
    assert messages[UnsegmentedTextWarning].startswith("2 texts")


def test_explain_says_which_texts_have_no_token_before_the_tokens():
    from rouge_score import tokenize

    prediction, references = ROWS["prediction"][1], [ROWS["references"][1][0], "the cat"]
    assert [bool(tokenize.tokenize(t, None)) for t in [prediction, *references]] == \
        [False, False, True]  # rouge-score's tokenizer: no token for the Russian texts
    result = CliRunner().invoke(main, ["explain", "--prediction", prediction,
                                       "--reference", references[0], "--reference",
                                       references[1], "--metrics", "rouge1"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1] == ("warning: prediction, reference 0 have no token in view rouge "
                        "(scripts: CYRILLIC), so ROUGE is 0 (for text not in Latin script: "
                        "--language LANG, XL-Sum's per-language tokenizer, or --tokenizer "
                        "unicode)")
    fixed = CliRunner().invoke(main, ["explain", "--prediction", prediction, "--reference",
                                      references[0], "--metrics", "rouge1",
                                      "--language", "russian"])
    assert fixed.exit_code == 0, fixed.output
    assert "warning:" not in fixed.output


def test_the_report_says_it_first(mixed, tmp_path):
    run = tmp_path / "r"
    scored = CliRunner().invoke(main, ["score", str(mixed), "--output", str(run),
                                       "--metrics", "rouge1,bleu", "--bootstrap", "0"])
    assert scored.exit_code == 0, scored.output
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(run), "--output", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text("utf-8")
    box = page.index("Scores of 0 that say nothing about the texts")
    # before the run's facts, with the counts of rouge-score's tokenizer and 13a's words
    assert box < page.index("<h2>This run</h2>")
    assert f"{_rouge_score_empty()} non-empty texts produced no token with tokenizer " \
           "rouge-score" in page[box:page.index("</div>", box)]
    assert "2 texts are in a script written without spaces" in page[box:]
