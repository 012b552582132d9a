"""Messages a new user reads: counts agree with their words, nothing scored silently."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from pipeline.cli import main
from tests.support.hostile_runs import scored_runs


def _score(tmp_path, ids, predictions):
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": ids, "prediction": predictions,
                             "references": [["the cat sat"]] * len(ids)}), path)
    return CliRunner().invoke(main, ["score", str(path), "--output", str(tmp_path / "out"),
                                     "--engine", "local", "--bootstrap", "0"])


def test_a_null_prediction_is_noted(tmp_path):
    result = _score(tmp_path, ["a", "b", "c"], ["the cat sat", None, "a cat"])
    assert result.exit_code == 0, result.output
    assert ("note: 1 prediction was null and scored as an empty text (manifest.json "
            "counts.null_predictions)") in result.output


def test_null_predictions_are_noted_in_the_plural(tmp_path):
    result = _score(tmp_path, ["a", "b", "c"], [None, None, "a cat"])
    assert result.exit_code == 0, result.output
    assert "note: 2 predictions were null and scored as empty texts" in result.output


def test_one_duplicate_id_is_said_in_the_singular(tmp_path):
    result = _score(tmp_path, ["a", "a", "b"], ["the cat", "the cat sat", "a cat"])
    assert result.exit_code == 2, result.output
    assert " id occurs more than once among the predictions" in result.output
    assert "1 ids" not in result.output


def test_comparing_a_run_with_itself_says_so(tmp_path):
    runs = scored_runs(tmp_path)
    result = CliRunner().invoke(main, ["compare", str(runs["a"]), str(runs["a"])])
    assert result.exit_code == 0, result.output
    assert "note: both sides are the same run (run id run-a)" in result.output


def test_two_runs_with_one_run_id_are_not_called_the_same_run(tmp_path):
    # A nightly with a fixed RUN_ID gives every night the same run id, in its own directory.
    import shutil

    runs = scored_runs(tmp_path)
    shutil.copytree(runs["a"], tmp_path / "night2")
    result = CliRunner().invoke(main, ["compare", str(runs["a"]), str(tmp_path / "night2")])
    assert result.exit_code == 0, result.output
    assert "same run" not in result.output


def test_the_default_config_points_at_the_metrics_page():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "configs" / "default.yaml").read_text()
    assert '"Reproducing ROUGE-1.5.5" in docs/metrics.md' in text
    assert "## Reproducing ROUGE-1.5.5" in (Path(__file__).resolve().parents[2] / "docs"
                                            / "metrics.md").read_text()


def test_a_family_data_note_of_one_is_in_the_singular():
    from pipeline.metrics import registry

    notes = {n.key: n for n in registry.data_notes()}
    one = notes["one_line_multi_sentence_texts"].text(1, {})
    assert one.startswith("1 text has several sentences"), one
    assert notes["one_line_multi_sentence_texts"].text(2, {}).startswith(
        "2 texts have several sentences")
    assert notes["zero_token_texts"].text(1, {"tokenizer": "default"}).startswith(
        "1 non-empty text produced no token with tokenizer default")


def test_mixing_rouge_with_rouge155_metrics_says_what_to_do():
    result = CliRunner().invoke(main, ["signature", "--metrics", "rouge1,rougeL,rougeSU4"])
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: rouge1, rougeL and rougeSU4 "), lines
    assert "ROUGE-1.5.5's metrics (rougeSU4)" in lines[0]
    assert "add --tokenizer rouge155" in lines[0] and "two runs" in lines[0]
    done = CliRunner().invoke(main, ["signature", "--metrics", "rouge1,rougeLsum,rougeSU4",
                                     "--tokenizer", "rouge155"])
    assert done.exit_code == 0, done.output
    assert "|tok:rouge155|" in done.stdout


def test_an_output_that_is_a_symbolic_link_is_said_so_in_one_wording_by_every_command(
        tmp_path):
    # score and agree said "symbolic link", compare and report "symlink": one wording, and
    # the real path to pass instead
    runs = scored_runs(tmp_path)
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    preds = tmp_path / "in" / "predictions.parquet"
    commands = {
        "score": ["score", str(tmp_path / "in"), "--output", str(link)],
        "compare": ["compare", str(runs["a"]), str(runs["a"]), "--output", str(link)],
        "compare --plot": ["compare", str(runs["a"]), str(runs["a"]), "--plot", str(link)],
        "report": ["report", str(runs["a"]), "--output", str(link)],
        "agree": ["agree", str(runs["a"]), "--judgments", str(preds), "--output", str(link)],
    }
    for name, args in commands.items():
        result = CliRunner().invoke(main, args)
        errors = [x for x in result.output.splitlines() if x.startswith("Error")]
        assert result.exit_code == 3 and len(errors) == 1, (name, result.output)
        assert f"{link} is a symbolic link" in errors[0], (name, errors[0])
        assert "symlink" not in errors[0], (name, errors[0])
        assert f"{target}" in errors[0] and "pass the real path" in errors[0], (name, errors[0])
    assert list(target.iterdir()) == []


def test_group_values_with_control_and_bidi_characters_are_escaped_in_the_tables(tmp_path):
    # a newline in a group value split the row in two; U+202E turned the terminal's text
    # around. Escaped as the json output escapes them (\x0a, \u202e); the json unchanged.
    import json

    groups = ["line\nbreak", "evil\u202eoc.exe", "tab\there", "esc\x1b[31mred"]
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": [f"e{i}" for i in range(8)],
                             "prediction": ["the cat sat"] * 8,
                             "references": [["the cat sat on"]] * 8,
                             "sys\u202etem": [groups[i % 4] for i in range(8)]}), path)
    base = ["score", str(path), "--engine", "local", "--bootstrap", "0", "--metrics",
            "rouge1", "--group-by", "sys\u202etem"]
    for fmt in ("summary", "wide"):
        result = CliRunner().invoke(main, [*base, "--output", str(tmp_path / fmt),
                                           "--format", fmt])
        assert result.exit_code == 0, result.output
        out = result.output
        assert not any(ch in out for ch in "\u202e\x1b\t"), out
        lines = out.splitlines()
        for shown in ("line\\x0abreak", "evil\\u202eoc.exe", "tab\\x09here",
                      "esc\\x1b[31mred"):
            assert sum(x.startswith(shown) for x in lines) == 1, (shown, out)
        assert any(x.startswith("sys\\u202etem") for x in lines), out
    result = CliRunner().invoke(main, [*base, "--output", str(tmp_path / "j"),
                                       "--format", "json"])
    values = {r["sys\u202etem"] for r in json.loads(result.output)["aggregate"]}
    assert values == {*groups, None}
