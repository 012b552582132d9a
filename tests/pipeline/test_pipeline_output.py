"""The output contract: files, atomic publish, overwrite, signature, thresholds, seeds.

In-process engine (``--engine local``); the same checks on Ray are in test_pipeline_ray.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.api import score
from pipeline.cli import main
from pipeline.config import ScoreConfig, Threshold
from pipeline.errors import ConfigError, OutputExistsError
from pipeline.signature import Signature

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data" / "realsumm"
PREDS = str(DATA / "predictions")
REFS = str(DATA / "references.parquet")


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _run(tmp_path: Path, name: str = "run", *extra: str) -> tuple[int, str, str]:
    return _cli("score", PREDS, "--references", REFS, "--output", str(tmp_path / name),
                "--engine", "local", "--bootstrap", "50", *extra)


def test_output_layout_manifest_and_signature_everywhere(tmp_path):
    code, out, err = _run(tmp_path, "run", "--group-by", "system", "--run-id", "r1",
                          "--metrics", "rouge1,rougeLsum")
    assert code == 0, err
    run = tmp_path / "run"
    assert sorted(p.name for p in run.iterdir()) == ["_SUCCESS", "aggregate.parquet",
                                                      "examples", "manifest.json"]
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # no staging left
    manifest = json.loads((run / "manifest.json").read_text())
    sig = manifest["signature"]
    assert sig.startswith("metrics:rouge1+rougeLsum|tok:rouge-score|stem:none|case:lc|"
                          "ref:max|nrefs:1|bs:50-poisson|ci:0.95|seed:12345|maxtok:100000|version:")
    for f in [run / "aggregate.parquet", *sorted((run / "examples").iterdir())]:
        meta = pq.read_schema(f).metadata
        assert meta[b"overlap.signature"].decode() == sig
        assert meta[b"overlap.run_id"] == b"r1"
    assert manifest["run_id"] == "r1"
    assert manifest["config"]["group_by"] == ["system"]
    assert manifest["counts"]["examples_scored"] == 2500
    assert manifest["counts"]["prediction_rows"] == manifest["counts"]["reference_rows"] == 2500
    files = manifest["inputs"]["predictions"]["files"]
    assert [f["num_rows"] for f in files] == [700, 600, 800, 400]
    assert all(f["size_bytes"] > 0 for f in files)
    assert manifest["outputs"]["examples"][0]["path"] == "examples/part-00000.parquet"
    assert set(manifest["seconds"]) >= {"plan", "read_check", "score", "aggregate", "write",
                                        "total"}
    assert manifest["started_at"] <= manifest["finished_at"]
    assert (run / "_SUCCESS").read_text().strip() == "r1"
    # stdout: the table, grouped, and where the output went.
    assert "system" in out and "bart_out" in out and "(all)" in out
    assert f"output: {run}" in out


def test_complete_output_is_refused_without_overwrite(tmp_path):
    assert _run(tmp_path)[0] == 0
    before = (tmp_path / "run" / "manifest.json").read_text()
    code, out, err = _run(tmp_path)
    assert code == 3
    assert "already holds a complete run" in err and "--overwrite" in err
    assert (tmp_path / "run" / "manifest.json").read_text() == before
    code, _, err = _run(tmp_path, "run", "--overwrite", "--run-id", "second")
    assert code == 0, err
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["run_id"] == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_only_a_complete_overlap_output_is_ever_replaced(tmp_path):
    (tmp_path / "run" / "examples").mkdir(parents=True)
    (tmp_path / "run" / "examples" / "part-00000.parquet").write_text("half written")
    code, _, err = _run(tmp_path, "run", "--overwrite")  # no manifest, no _SUCCESS
    assert code == 3 and "is not a complete overlap output (it holds examples/, " \
        "examples/part-00000.parquet)" in err
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "thesis.tex").write_text("precious")
    code, _, err = _run(tmp_path, "home", "--overwrite")
    assert code == 3 and "not a complete overlap output (it holds thesis.tex)" in err
    assert (tmp_path / "home" / "thesis.tex").read_text() == "precious"


def test_a_failed_run_leaves_nothing_and_keeps_the_previous_output(tmp_path):
    assert _run(tmp_path, "run", "--run-id", "good")[0] == 0
    code, _, err = _cli("score", PREDS, "--output", str(tmp_path / "run"), "--engine",
                        "local", "--overwrite")  # no references: bad input
    assert code == 2 and "no --references table" in err
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["run_id"] == "good"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_thresholds_columns_and_pass_rates(tmp_path):
    code, out, err = _run(tmp_path, "run", "--threshold", "rougeL.fmeasure=0.3",
                          "--threshold", "rouge1.recall=0.5", "--group-by", "system")
    assert code == 0, err
    ex = pq.read_table(tmp_path / "run" / "examples")
    for col, measure, at in (("passed_rougeL_fmeasure", "rougeL_fmeasure", 0.3),
                             ("passed_rouge1_recall", "rouge1_recall", 0.5)):
        assert ex.schema.field(col).type == "bool"
        assert ex.column(col).to_pylist() == [v >= at for v in ex.column(measure).to_pylist()]
    agg = pq.read_table(tmp_path / "run" / "aggregate.parquet").to_pylist()
    rates = [r for r in agg if r["statistic"] == "pass_rate" and r["scope"] == "all"]
    assert [(r["metric"], r["measure"], r["threshold"]) for r in rates] == [
        ("rougeL", "fmeasure", 0.3), ("rouge1", "recall", 0.5)]
    passed = ex.column("passed_rougeL_fmeasure").to_pylist()
    assert rates[0]["mean"] == sum(passed) / len(passed)
    assert "pass rougeL.fmeasure>=0.3" in out


def test_same_seed_same_interval_different_seed_in_the_signature(tmp_path):
    cfg = ScoreConfig(engine="local", bootstrap=200, group_by=("system",))
    a = score(PREDS, references=REFS, output=str(tmp_path / "a"), config=cfg)
    b = score(PREDS, references=REFS, output=str(tmp_path / "b"), config=cfg)
    c = score(PREDS, references=REFS, output=str(tmp_path / "c"),
              config=ScoreConfig(engine="local", bootstrap=200, group_by=("system",), seed=7))
    assert a.aggregate.equals(b.aggregate)
    assert a.aggregate.column("mean").equals(c.aggregate.column("mean"))
    assert not a.aggregate.column("ci_low").equals(c.aggregate.column("ci_low"))
    assert Signature.parse(a.signature).as_dict()["seed"] == "12345"
    assert Signature.parse(c.signature).as_dict()["seed"] == "7"
    meta = pq.read_schema(tmp_path / "c" / "aggregate.parquet").metadata
    assert b"seed:7|" in meta[b"overlap.signature"]


def test_config_file_and_flags(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("metrics: [rougeL]\nbootstrap: 0\nthreshold: [rougeL.fmeasure=0.25]\n"
                   "engine: local\n")
    code, out, err = _cli("score", PREDS, "--references", REFS, "--output",
                          str(tmp_path / "run"), "--config", str(cfg), "--seed", "3")
    assert code == 0, err
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["metrics"] == ["rougeL"]
    assert manifest["config"]["seed"] == 3
    assert manifest["config"]["threshold"] == ["rougeL.fmeasure=0.25"]
    assert "fmeasure means without an interval (--bootstrap 0);" in " ".join(out.split())


def test_signature_command():
    code, out, _ = _cli("signature", "--stemmer", "porter", "--seed", "1", "--n-references",
                        "var", "--sentence-split", "punctuation")
    assert code == 0
    assert out.startswith("metrics:rouge1+rouge2+rougeL+rougeLsum|tok:rouge-score|stem:porter"
                          "|case:lc|ref:max|nrefs:var|bs:1000-poisson|ci:0.95|seed:1|split:punct|"
                          "maxtok:100000|version:")
    assert _cli("signature", "--n-references", "0")[0] == 2


def test_run_id_must_be_path_safe(tmp_path):
    for bad in ("../escape", "a/b", "", ".hidden"):
        with pytest.raises(ConfigError, match="run id"):
            score(PREDS, references=REFS, output=str(tmp_path / "x"),
                  config=ScoreConfig(engine="local"), run_id=bad)


def test_output_exists_error_from_the_library(tmp_path):
    cfg = ScoreConfig(engine="local", bootstrap=0, thresholds=(Threshold("rouge1", "recall",
                                                                         0.1),))
    score(PREDS, references=REFS, output=str(tmp_path / "run"), config=cfg)
    with pytest.raises(OutputExistsError) as err:
        score(PREDS, references=REFS, output=str(tmp_path / "run"), config=cfg)
    assert err.value.exit_code == 3


def test_overall_interval_does_not_depend_on_grouping_or_partitioning(tmp_path):
    """Weights are keyed by id and sums are exact: grouping, partition size and engine leave the
    overall interval unchanged (same seed, same signature, same interval)."""
    def overall(name, *extra):
        assert _run(tmp_path, name, "--metrics", "rouge1", *extra)[0] == 0
        agg = pq.read_table(tmp_path / name / "aggregate.parquet").to_pandas()
        row = agg[(agg["metric"] == "rouge1") & (agg["measure"] == "fmeasure")].iloc[0]
        return row["mean"], row["ci_low"], row["ci_high"]

    config = tmp_path / "small-partitions.yaml"
    config.write_text("partition_rows: 250\n")
    plain = overall("plain")
    assert overall("grouped", "--group-by", "system") == plain
    assert overall("partitioned", "--config", str(config)) == plain
