"""CSV and JSON Lines inputs, read with pyarrow's readers: same columns, same checks, same
scores as Parquet; anything else gets a one-line error with the conversion."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import api
from pipeline.config import ScoreConfig
from pipeline.errors import InputError
from tests.pipeline.test_bad_input import assert_refused, overlap_score
from tests.support.mt_data import BUNDLED


def bundled(n: int = 300) -> tuple[pa.Table, dict[str, str]]:
    """The bundled REALSumm predictions (id, system, prediction) and references by id."""
    preds = pq.read_table(BUNDLED / "predictions").slice(0, n)
    refs = pq.read_table(BUNDLED / "references.parquet")
    return preds, dict(zip(refs["id"].to_pylist(), refs["reference"].to_pylist(), strict=True))


def write_csv(path: Path, header: list[str], rows: list[list]) -> str:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return str(path)


def write_jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def score(tmp_path: Path, predictions: str, references: str | None = None, name: str = "run",
          **cfg) -> api.ScoreRun:
    config = ScoreConfig(metrics=("rouge1", "rougeLsum", "bleu"), bootstrap=50,
                         engine="local", group_by=("system",), **cfg)
    return api.score(predictions, output=str(tmp_path / name), references=references,
                     config=config)


def examples(run: api.ScoreRun) -> pa.Table:
    files = sorted(Path(run.output, "examples").glob("part-*.parquet"))
    table = pa.concat_tables([pq.read_table(f) for f in files]).drop_columns(["run_id"])
    return table.sort_by("id")


@pytest.fixture(scope="module")
def parquet_run(tmp_path_factory) -> api.ScoreRun:
    tmp = tmp_path_factory.mktemp("parquet")
    preds, refs = bundled()
    inline = preds.append_column("references", pa.array([[refs[i]] for i in
                                                         preds["id"].to_pylist()]))
    pq.write_table(inline, tmp / "preds.parquet")
    return score(tmp, str(tmp / "preds.parquet"))


def assert_same_scores(run: api.ScoreRun, parquet_run: api.ScoreRun) -> None:
    # the same values; a group column is string here, large_string in the bundled Parquet
    agg, want = run.aggregate, parquet_run.aggregate
    assert agg.column_names == want.column_names
    assert agg.cast(want.schema).equals(want)
    got, want = examples(run), examples(parquet_run)
    assert got.column_names == want.column_names
    assert got.cast(want.schema).equals(want)
    assert run.signature == parquet_run.signature


def test_csv_with_json_array_references_scores_as_parquet(tmp_path, parquet_run):
    preds, refs = bundled()
    rows = [[i, s, p, json.dumps([refs[i]])] for i, s, p in
            zip(*(preds[c].to_pylist() for c in ("id", "system", "prediction")), strict=True)]
    assert any("\n" in r[2] for r in rows)  # texts with newlines, quoted in the CSV
    path = write_csv(tmp_path / "preds.csv", ["id", "system", "prediction", "references"], rows)
    run = score(tmp_path, path)
    assert_same_scores(run, parquet_run)
    assert run.manifest["inputs"]["layout"] == "inline"


def test_jsonl_with_real_lists_scores_as_parquet(tmp_path, parquet_run):
    preds, refs = bundled()
    rows = [{"id": i, "system": s, "prediction": p, "references": [refs[i]]} for i, s, p in
            zip(*(preds[c].to_pylist() for c in ("id", "system", "prediction")), strict=True)]
    for name in ("preds.jsonl", "preds.ndjson"):
        run = score(tmp_path, write_jsonl(tmp_path / name, rows), name=f"run-{name}")
        assert_same_scores(run, parquet_run)


def test_csv_predictions_with_csv_references_one_row_each_or_a_json_list(tmp_path,
                                                                         parquet_run):
    preds, refs = bundled()
    ids = preds["id"].to_pylist()
    pred_csv = write_csv(tmp_path / "preds.csv", ["id", "system", "prediction"],
                         [[i, s, p] for i, s, p in zip(
                             ids, preds["system"].to_pylist(), preds["prediction"].to_pylist(),
                             strict=True)])
    rows_csv = write_csv(tmp_path / "refs_rows.csv", ["id", "reference"],
                         [[i, refs[i]] for i in reversed(ids)])
    run = score(tmp_path, pred_csv, rows_csv, name="rows")
    assert run.manifest["inputs"]["layout"] == "rows"
    assert_same_scores(run, parquet_run)
    list_csv = write_csv(tmp_path / "refs_list.csv", ["id", "references"],
                         [[i, json.dumps([refs[i]])] for i in ids])
    run = score(tmp_path, pred_csv, list_csv, name="list")
    assert run.manifest["inputs"]["layout"] == "list"
    assert_same_scores(run, parquet_run)


def test_csv_ids_stay_text_and_jsonl_numbers_are_integer_ids(tmp_path):
    path = write_csv(tmp_path / "p.csv", ["id", "prediction", "references"],
                     [["007", "42", '["42"]'], ["7", "the cat", '["a cat", "the cat"]']])
    run = api.score(path, output=str(tmp_path / "csv"),
                    config=ScoreConfig(metrics=("rouge1",), bootstrap=0,
                                       engine="local"))
    table = examples(run)
    assert table["id"].to_pylist() == ["007", "7"]
    assert table["rouge1_fmeasure"].to_pylist() == [1.0, 1.0]
    assert table["n_references"].to_pylist() == [1, 2]
    path = write_jsonl(tmp_path / "p.jsonl", [{"id": 7, "prediction": "a", "references": ["a"]},
                                              {"id": 3, "prediction": "b", "references": []}])
    run = api.score(path, output=str(tmp_path / "jsonl"),
                    config=ScoreConfig(metrics=("rouge1",), bootstrap=0,
                                       engine="local", on_empty_references="skip"))
    assert pa.types.is_int64(examples(run).schema.field("id").type)
    assert examples(run)["id"].to_pylist() == [7]


# --- bad input: one line on stderr naming the file and column, exit 2, nothing written ----

def test_a_cell_that_is_not_a_json_array_names_file_column_and_id(tmp_path):
    path = write_csv(tmp_path / "p.csv", ["id", "prediction", "references"],
                     [["a", "x", '["x"]'], ["b", "y", "['y']"]])  # pandas' repr, not JSON
    out = tmp_path / "out"
    assert_refused(overlap_score(path, "--output", str(out)), out, "p.csv", "'references'",
                   "'b'", "not a JSON array", "json.dumps")


def test_a_missing_column_in_csv_or_jsonl_names_the_file_and_its_columns(tmp_path):
    out = tmp_path / "out"
    path = write_csv(tmp_path / "p.csv", ["id", "text", "references"], [["a", "x", '["x"]']])
    assert_refused(overlap_score(path, "--output", str(out)), out, "p.csv", "'prediction'",
                   "id, text, references")
    path = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "prediction": "x"}])
    assert_refused(overlap_score(path, "--output", str(out)), out, "p.jsonl", "'references'")


def test_unparsable_csv_and_jsonl_name_the_file(tmp_path):
    out = tmp_path / "out"
    bad_csv = tmp_path / "p.csv"
    bad_csv.write_text('id,prediction,references\na,"unclosed\n', encoding="utf-8")
    assert_refused(overlap_score(str(bad_csv), "--output", str(out)), out,
                   "not a readable CSV file", "p.csv")
    bad_json = tmp_path / "p.jsonl"
    bad_json.write_text('{"id": "a", "prediction": \n', encoding="utf-8")
    assert_refused(overlap_score(str(bad_json), "--output", str(out)), out,
                   "not a readable JSON Lines file", "p.jsonl", "one object per line")


def test_prediction_numbers_in_jsonl_are_refused_as_in_parquet(tmp_path):
    out = tmp_path / "out"
    path = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "prediction": 4, "references": ["4"]}])
    assert_refused(overlap_score(path, "--output", str(out)), out, "'prediction'", "int64",
                   "expected strings")


@pytest.mark.parametrize("name", ["preds.tsv", "preds.txt", "preds"])
def test_another_format_gets_the_conversion_hint(tmp_path, name):
    path = tmp_path / name
    path.write_text("id\tprediction\na\tx\n", encoding="utf-8")
    out = tmp_path / "out"
    line = assert_refused(overlap_score(str(path), "--output", str(out)), out, name,
                          "is neither Parquet nor named *.csv, *.jsonl", "rename",
                          "to_parquet")
    assert len(line) - len(str(path)) < 200  # one readable line


def test_read_text_file_columns_and_errors(tmp_path):
    from pipeline.io.files import locate
    from pipeline.io.read import input_format, read_text_file

    assert [input_format(p) for p in ("a.CSV", "s3://b/x.jsonl", "x.ndjson", "x.json",
                                      "x.parquet", "x.csv.gz")] == \
        ["csv", "json", "json", "json", "parquet", "parquet"]
    path = write_csv(tmp_path / "p.csv", ["id", "n", "prediction"], [["1", "2", "3"]])
    table = read_text_file(locate(path), what="predictions", columns=["prediction", "id"])
    assert table.column_names == ["prediction", "id"]
    assert table.schema.types == [pa.string(), pa.string()]
    with pytest.raises(InputError, match="has no column 'x'; its columns: id, n, prediction"):
        read_text_file(locate(path), what="predictions", columns=["x"])


@pytest.mark.parametrize("layout", ["csv-inline", "csv-list", "csv-rows", "jsonl"])
def test_explain_and_report_read_the_texts_back_from_csv_and_jsonl(tmp_path, layout):
    from pipeline.io.runs import open_run
    from pipeline.report.texts import read_texts

    refs = {"a": ["the cat sat on the mat"], "b": ["a dog barked", "the dog"]}
    preds = {"a": "the cat sat", "b": "a dog"}
    references = None
    if layout == "csv-inline":
        path = write_csv(tmp_path / "p.csv", ["id", "prediction", "references"],
                         [[i, preds[i], json.dumps(refs[i])] for i in preds])
    elif layout == "jsonl":
        path = write_jsonl(tmp_path / "p.jsonl", [{"id": i, "prediction": preds[i],
                                                  "references": refs[i]} for i in preds])
    else:
        path = write_csv(tmp_path / "p.csv", ["id", "prediction"], [[i, preds[i]] for i in preds])
        if layout == "csv-list":
            references = write_csv(tmp_path / "r.csv", ["id", "references"],
                                   [[i, json.dumps(refs[i])] for i in refs])
        else:
            references = write_csv(tmp_path / "r.csv", ["id", "reference"],
                                   [[i, r] for i in refs for r in refs[i]])
    run = api.score(path, output=str(tmp_path / "out"), references=references,
                    config=ScoreConfig(metrics=("rouge1",), bootstrap=0, engine="local"))
    assert read_texts(open_run(run.output), ["b", "a"]) == {
        i: (preds[i], refs[i]) for i in preds}
    document = api.explain(run_dir=run.output, example_id="b").to_document()
    assert document["references"] == refs["b"]  # the texts as given (docs/explain.md)
