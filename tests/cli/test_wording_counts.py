"""Counts in the CLI's lines read as English: "1 example", "2 examples", "comparison rows"."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.warehouse.common import PublishedTable


@pytest.mark.parametrize(("n", "word"), [(1, "example"), (2, "examples")])
def test_score_says_example_for_one_and_examples_for_more(tmp_path, n, word):
    preds = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": [f"e{i}" for i in range(n)],
                             "prediction": ["the cat sat"] * n,
                             "references": [["the cat sat down"]] * n}), preds)
    result = CliRunner().invoke(main, ["score", str(preds), "--output", str(tmp_path / "run"),
                                       "--engine", "local", "--bootstrap", "0"])
    assert result.exit_code == 0, result.output
    assert f"scored {n} {word} in " in result.stdout


@pytest.mark.parametrize(("table", "rows", "said"), [
    ("examples", 1, "appended 1 row of the run ("),
    ("aggregates", 300, "appended 300 rows of the run ("),
    ("comparisons", 1, "appended 1 comparison row ("),
    ("comparisons", 100, "appended 100 comparison rows ("),
])
def test_publish_names_what_its_rows_are(table, rows, said):
    line = PublishedTable("delta", table, f"wh/{table}", rows, True, 1).describe()
    assert line == f"delta {table}: {said}wh/{table}, version 1)"
