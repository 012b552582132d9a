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


def _documented_notes(text: str) -> list[str]:
    """``note: N ...`` / ``warning: N ...`` lines of the docs' example outputs, unwrapped."""
    out: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(("note: ", "warning: ")) and line.split()[1].isdigit():
            parts = [line]
            for more in lines[i + 1:]:
                if not more.startswith("  "):
                    break
                parts.append(more.strip())
            out.append(" ".join(" ".join(parts).split()))
    return out


def test_the_docs_show_the_data_notes_as_the_summary_prints_them():
    from pathlib import Path

    from pipeline.metrics import registry

    root = Path(__file__).resolve().parents[2]
    shown = [n for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
             for n in _documented_notes(page.read_text())]
    checked = 0
    for note in registry.data_notes():
        plural_start = " ".join(note.message.split()[1:4])  # e.g. "texts have several"
        singular_start = " ".join(note.text(1, {}).split()[1:4]) if note.message_one else None
        for line in shown:
            words = line.split()
            n, start = int(words[1]), " ".join(words[2:5])
            if start not in (plural_start, singular_start):
                continue
            checked += 1
            prefix = "warning: " if note.loud else "note: "
            config = {"tokenizer": "rouge-score", "language": "?"}
            assert line == prefix + " ".join(note.text(n, config).split()), line
    assert checked  # the docs show at least one of them
