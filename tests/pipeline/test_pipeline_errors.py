"""Bad input fails once, in one line that names the file, column or ids, with exit code 2,
and writes nothing. In-process engine; a worker-raised error through Ray is in
test_pipeline_ray.py."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.api import score
from pipeline.cli import main
from pipeline.config import ScoreConfig
from pipeline.errors import ConfigError, InputError

LOCAL = ScoreConfig(engine="local", bootstrap=0)


def _write(path: Path, **columns) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return str(path)


def _score(tmp_path: Path, preds: str, refs: str | None, **cfg) -> None:
    config = ScoreConfig(engine="local", bootstrap=0, **cfg)
    try:
        score(preds, references=refs, output=str(tmp_path / "out"), config=config)
    finally:
        assert not (tmp_path / "out").exists()
        assert not any(p.name.startswith(".out") for p in tmp_path.iterdir())


def test_missing_prediction_column_lists_the_columns(tmp_path):
    p = _write(tmp_path / "p.parquet", id=["a"], text=["x"], references=[["x"]])
    with pytest.raises(InputError, match=r"p\.parquet has no column 'prediction'; its "
                                         r"columns: id, text, references") as err:
        _score(tmp_path, p, None)
    assert err.value.exit_code == 2


def test_reference_column_of_the_wrong_type(tmp_path):
    p = _write(tmp_path / "p.parquet", id=["a"], prediction=["x"])
    r = _write(tmp_path / "r.parquet", id=["a"], reference=[3])
    with pytest.raises(InputError, match=r"column 'reference' is int64 in .*r\.parquet; "
                                         "expected"):
        _score(tmp_path, p, r)


def test_shards_whose_types_disagree_are_named(tmp_path):
    _write(tmp_path / "p" / "0.parquet", id=["a"], prediction=["x"])
    _write(tmp_path / "p" / "1.parquet", id=["b"], prediction=[1])
    r = _write(tmp_path / "r.parquet", id=["a", "b"], reference=["x", "y"])
    with pytest.raises(InputError, match=r"'prediction' is string in .*0\.parquet but int64 "
                                         r"in .*1\.parquet"):
        _score(tmp_path, str(tmp_path / "p"), r)


def test_ids_of_different_types_on_the_two_sides(tmp_path):
    p = _write(tmp_path / "p.parquet", id=[1, 2], prediction=["x", "y"])
    r = _write(tmp_path / "r.parquet", id=["1", "2"], reference=["x", "y"])
    with pytest.raises(InputError, match="ids must have the same type"):
        _score(tmp_path, p, r)


def test_predictions_without_references_name_five_ids_and_the_count(tmp_path):
    ids = [f"ex{i}" for i in range(12)]
    p = _write(tmp_path / "p.parquet", id=ids, prediction=["x"] * 12)
    r = _write(tmp_path / "r.parquet", id=ids[:4], reference=["x"] * 4)
    with pytest.raises(InputError) as err:
        _score(tmp_path, p, r, partition_rows=3)
    message = err.value.message
    assert message.startswith("8 predictions have no references (ids: ")
    assert message.count("'ex") == 5 and message.endswith(", ...)")


def test_references_without_predictions(tmp_path):
    p = _write(tmp_path / "p.parquet", id=["a"], prediction=["x"])
    r = _write(tmp_path / "r.parquet", id=["a", "zz", "zz"], reference=["x", "y", "z"])
    with pytest.raises(InputError, match=r"1 id in the references has no prediction "
                                         r"\(ids: 'zz'\)"):
        _score(tmp_path, p, r)


def test_duplicate_prediction_ids(tmp_path):
    p = _write(tmp_path / "p.parquet", id=["a", "b", "a"], prediction=["x", "y", "z"])
    r = _write(tmp_path / "r.parquet", id=["a", "b"], reference=["x", "y"])
    with pytest.raises(InputError, match=r"1 id occurs more than once among the predictions "
                                         r"\(ids: 'a'\)"):
        _score(tmp_path, p, r)


def test_empty_and_null_references(tmp_path):
    p = _write(tmp_path / "p.parquet", id=["a", "b", "c"], prediction=["x", "y", "z"],
               references=pa.array([["x"], [], None], pa.list_(pa.string())))
    with pytest.raises(InputError, match=r"2 examples have an empty or null list of "
                                         r"references \(ids: 'b', 'c'\)"):
        _score(tmp_path, p, None)
    r = _write(tmp_path / "r.parquet", id=["a", "b", "c"], reference=["x", None, "z"])
    p2 = _write(tmp_path / "p2.parquet", id=["a", "b", "c"], prediction=["x", "y", "z"])
    with pytest.raises(InputError, match=r"1 reference is null \(ids: 'b'\)"):
        _score(tmp_path, p2, r)


def test_null_ids_name_the_file(tmp_path):
    p = _write(tmp_path / "p.parquet", id=["a", None], prediction=["x", "y"])
    r = _write(tmp_path / "r.parquet", id=["a"], reference=["x"])
    with pytest.raises(InputError, match=r"p\.parquet has 1 null ids"):
        _score(tmp_path, p, r)


def test_no_files_no_rows_and_not_parquet(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no \\*.parquet file in directory"):
        _score(tmp_path, str(tmp_path / "empty"), None)
    with pytest.raises(InputError, match="does not exist"):
        _score(tmp_path, str(tmp_path / "nope.parquet"), None)
    p = _write(tmp_path / "p.parquet", id=pa.array([], pa.string()),
               prediction=pa.array([], pa.string()),
               references=pa.array([], pa.list_(pa.string())))
    with pytest.raises(InputError, match="holds no rows"):
        _score(tmp_path, p, None)
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(InputError, match=r"bad\.parquet is not a readable Parquet file"):
        _score(tmp_path, str(tmp_path / "bad.parquet"), None)


def test_group_by_a_missing_or_reserved_column(tmp_path):
    p = _write(tmp_path / "p.parquet", id=["a"], prediction=["x"], references=[["x"]])
    with pytest.raises(InputError, match="has no column 'sytem'"):
        _score(tmp_path, p, None, group_by=("sytem",))
    with pytest.raises(ConfigError, match="cannot group by or keep column 'id'"):
        _score(tmp_path, p, None, group_by=("id",))


@pytest.mark.parametrize("args, code, message", [
    (["--metrics", "rouge1,rogueL"], 2, "Error: unknown metric 'rogueL'"),
    (["--tokenizer", "spacy"], 2, "Invalid value for '--tokenizer'"),
    (["--threshold", "rougeL=0.5"], 2, "is not METRIC.MEASURE=VALUE"),
    (["--bootstrap", "-3"], 2, "bootstrap: expected a count >= 0"),
    (["--config", "/nonexistent.yaml"], 2, "cannot read config file"),
])
def test_cli_usage_errors_exit_2_in_one_line(tmp_path, args, code, message):
    data = Path(__file__).resolve().parents[2] / "pipeline" / "data" / "realsumm"
    result = CliRunner().invoke(main, ["score", str(data / "predictions"), "--references",
                                       str(data / "references.parquet"), "--output",
                                       str(tmp_path / "out"), "--engine", "local", *args])
    assert result.exit_code == code
    assert message in result.stderr
    assert result.stdout == ""
    assert not (tmp_path / "out").exists()


def test_every_command_has_help():
    runner = CliRunner()
    for name, command in main.commands.items():
        assert command.help, name
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.stdout, name
        for param in command.params:
            if isinstance(param, __import__("click").Option):
                assert param.help, f"{name} {param.opts}"


def test_null_list_in_a_references_list_table(tmp_path):
    p = _write(tmp_path / "p.parquet", id=["a", "b", "c"], prediction=["x", "y", "z"])
    r = _write(tmp_path / "r.parquet", id=["a", "b"],
               references=pa.array([["x"], None], pa.list_(pa.string())))
    with pytest.raises(InputError) as err:
        _score(tmp_path, p, r)
    assert err.value.message == ("1 prediction has no references (ids: 'c'); 1 example "
                                 "has an empty or null list of references (ids: 'b')")
    assert err.value.hint == ("--on-missing skip or zero scores the rest; "
                              "--on-empty-references skip leaves them out")
