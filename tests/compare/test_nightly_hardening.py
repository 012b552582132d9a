"""`overlap nightly` on a new user's mistakes (issue 18: as hard to break as score)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import ConfigError

SCORE = "--engine local --bootstrap 0"


@pytest.fixture
def predictions(tmp_path) -> Path:
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": [f"e{i}" for i in range(8)],
                             "prediction": [f"the cat sat on mat {i}" for i in range(8)],
                             "references": [[f"the cat sat on the mat {i}"] for i in range(8)]}),
                   path)
    return path


def _night(root: Path, preds: Path, date: str, run_id: str, score_args: str = SCORE,
           **env: str):
    return CliRunner().invoke(main, ["nightly", str(root), str(preds)],
                              env={"RUN_DATE": date, "RUN_ID": run_id,
                                   "SCORE_ARGS": score_args, "COMPARE_ARGS": "", **env})


@pytest.mark.parametrize(("date", "why"), [("2026-13-01", "no such day"),
                                         ("2026-02-30", "no such day"),
                                         ("2026-1-01", "use YYYY-MM-DD")])
def test_an_impossible_run_date_is_refused_before_anything_is_written(tmp_path, predictions,
                                                                     date, why):
    root = tmp_path / "nights"
    result = _night(root, predictions, date, "n1")
    assert result.exit_code == 2, result.output
    assert f"run date {date!r}: {why}" in result.output
    assert not root.exists()


def test_the_run_date_check_is_the_one_publish_uses():
    from pipeline.config_checks import parse_run_date
    from pipeline.warehouse import common

    assert common.parse_run_date is parse_run_date
    assert str(parse_run_date("2024-02-29")) == "2024-02-29"
    with pytest.raises(ConfigError):
        parse_run_date("2025-02-29")


def test_an_odd_night_is_passed_over_as_the_baseline(tmp_path, predictions):
    root = tmp_path / "nights"
    assert _night(root, predictions, "2025-01-01", "n1").exit_code == 0
    odd = _night(root, predictions, "2025-01-02", "n2", f"{SCORE} --metrics bleu")
    assert odd.exit_code == 2, odd.output  # told so, but its run stays complete
    assert (root / "run_date=2025-01-02" / "run_id=n2" / "_SUCCESS").exists()
    night = _night(root, predictions, "2025-01-03", "n3")
    assert night.exit_code == 0, night.output
    skipped = [line for line in night.output.splitlines() if "passing over" in line]
    assert len(skipped) == 1 and "run_id=n2" in skipped[0], night.output
    doc = json.loads((root / "compare" / "run_date=2025-01-03" / "run_id=n3" / "compare.json")
                     .read_text())
    assert doc["baseline"]["path"].endswith("run_date=2025-01-01/run_id=n1")


def test_no_comparable_baseline_names_the_run_and_baseline_option(tmp_path, predictions):
    root = tmp_path / "nights"
    assert _night(root, predictions, "2025-01-01", "n1", f"{SCORE} --metrics bleu"
                  ).exit_code == 0
    night = _night(root, predictions, "2025-01-02", "n2")
    assert night.exit_code == 2, night.output
    assert "run_id=n1" in night.output and "--baseline" in night.output
    assert "RUN_DATE=" not in night.output


def test_a_missing_references_file_gives_no_resume_advice(tmp_path, predictions):
    result = CliRunner().invoke(main, ["nightly", str(tmp_path / "nights"), str(predictions),
                                       str(tmp_path / "no-such-refs.parquet")],
                                env={"RUN_DATE": "2025-01-01", "RUN_ID": "n1",
                                     "SCORE_ARGS": SCORE})
    assert result.exit_code == 2, result.output
    assert "no-such-refs" in result.output
    assert "resume" not in result.output


def test_a_root_that_is_a_file_is_named_as_not_a_directory(tmp_path, predictions):
    root = tmp_path / "myfile.txt"
    root.write_text("mine\n")
    result = _night(root, predictions, "2025-01-01", "n1")
    assert result.exit_code == 2, result.output
    assert f"ROOT {root} is not a directory" in result.output
    assert "lock" not in result.output and root.read_text() == "mine\n"


def _stderr_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def test_a_night_scored_otherwise_is_passed_over_as_the_baseline(tmp_path, predictions):
    # One misconfigured night must not make every later night fail (exit 2: runs scored
    # differently): the baseline choice leaves it out as the history does.
    pytest.importorskip("jieba")
    root = tmp_path / "nights"
    assert _night(root, predictions, "2026-12-02", "n1").exit_code == 0
    odd = _night(root, predictions, "2026-12-03", "n2", f"{SCORE} --language chinese")
    # no earlier night scored as it was: nothing checked it for a change, which is not a
    # pass (exit 2); its run is kept for the nights after it
    assert odd.exit_code == 2, odd.output
    assert (root / "run_date=2026-12-03" / "run_id=n2" / "_SUCCESS").exists()
    assert not (root / "compare" / "run_date=2026-12-03").exists()
    said = [x for x in odd.output.splitlines() if "passing over" in x]
    assert len(said) == 1 and "run_id=n1" in said[0] and "scored otherwise" in said[0]
    assert "no earlier run under" in odd.output and "was scored as tonight's" in odd.output
    for date, run_id in (("2026-12-04", "n3"), ("2026-12-04", "n3")):  # a retry: the same
        night = _night(root, predictions, date, run_id)
        assert night.exit_code == 0, night.output
        said = [x for x in night.output.splitlines() if "passing over" in x]
        assert len(said) == 1 and "run_date=2026-12-03/run_id=n2" in said[0], night.output
        assert "scored otherwise (tok: xlsum vs rouge-score" in said[0]
        doc = json.loads((root / "compare" / f"run_date={date}" / f"run_id={run_id}"
                          / "compare.json").read_text())
        assert doc["baseline"]["path"].endswith("run_date=2026-12-02/run_id=n1")


def test_a_retried_odd_night_never_compares_with_itself(tmp_path, predictions):
    pytest.importorskip("jieba")
    root = tmp_path / "nights"
    assert _night(root, predictions, "2026-12-02", "n1").exit_code == 0
    args = f"{SCORE} --language chinese"
    assert _night(root, predictions, "2026-12-03", "n2", args).exit_code == 2
    again = _night(root, predictions, "2026-12-03", "n2b", args)  # another attempt, same date
    assert again.exit_code == 2, again.output
    assert "run_id=n2 " not in again.output and "run_id=n2\n" not in again.output
    assert not (root / "compare" / "run_date=2026-12-03").exists()


def test_allow_signature_mismatch_keeps_the_night_scored_otherwise(tmp_path, predictions):
    pytest.importorskip("jieba")
    root = tmp_path / "nights"
    assert _night(root, predictions, "2026-12-02", "n1").exit_code == 0
    odd = _night(root, predictions, "2026-12-03", "n2", f"{SCORE} --language chinese",
                 COMPARE_ARGS="--allow-signature-mismatch")
    assert odd.exit_code in (0, 1), odd.output
    assert "passing over" not in odd.output
    doc = json.loads((root / "compare" / "run_date=2026-12-03" / "run_id=n2"
                      / "compare.json").read_text())
    assert doc["baseline"]["path"].endswith("run_date=2026-12-02/run_id=n1")


def test_bad_input_is_one_line_and_leaves_no_directory(tmp_path):
    dup = tmp_path / "dup_preds.parquet"
    pq.write_table(pa.table({"id": ["a", "a", "b"], "prediction": ["x y", "x", "y"]}), dup)
    refs = tmp_path / "refs.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "references": [["x y"], ["y"]]}), refs)
    for root in (tmp_path / "x", tmp_path / "existing", tmp_path / "new" / "a" / "nights"):
        if root.name == "existing":
            root.mkdir()
        result = CliRunner().invoke(main, ["nightly", str(root), str(dup), str(refs),
                                           "--run-date", "2026-12-01",
                                           "--score-args", SCORE])
        assert result.exit_code == 2, result.output
        lines = _stderr_lines(result)
        assert len(lines) == 1 and "more than once" in lines[0], result.stderr
        assert "Traceback" not in result.output
        # what the nightly created is gone (ROOT's new parents too); a ROOT that was there
        # stays, empty
        assert (root.exists(), list(root.iterdir()) if root.exists() else []) == \
            ((root.name == "existing"), [])
    assert not (tmp_path / "new").exists()


def test_publish_args_with_a_path_as_iceberg_is_refused_before_scoring(tmp_path, predictions):
    root = tmp_path / "nights"
    result = _night(root, predictions, "2026-12-01", "n1",
                    PUBLISH_ARGS=f"--iceberg {tmp_path / 'ice'} --namespace evals")
    assert result.exit_code == 2, result.output
    lines = _stderr_lines(result)
    assert len(lines) == 1 and lines[0].startswith("nightly: PUBLISH_ARGS: --iceberg "), lines
    assert "is a path, not an Iceberg catalog" in lines[0]
    assert not root.exists() and not (tmp_path / "ice").exists()
