"""What README.md, ``score --help`` and configs/default.yaml claim is what the code does.

Each claim is checked against the code it describes (the engine choice, the accepted input
formats, the default token limit, the language values), and the README tour's outputs
against .gitignore, so a clone stays clean after the tour.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from click.testing import CliRunner

from pipeline.cli import main
from pipeline.config import DEFAULT_MAX_TOKENS, ScoreConfig
from pipeline.engine.run import choose_engine

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DEFAULT_YAML = (ROOT / "configs" / "default.yaml").read_text()


def _comment_above(key: str) -> str:
    """The comment lines right above ``key:`` in configs/default.yaml, joined."""
    lines = DEFAULT_YAML.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:"))
    above = []
    for line in reversed(lines[:at]):
        if not line.startswith("#"):
            break
        above.insert(0, line.lstrip("# "))
    return " ".join(above)


def test_the_engine_comment_says_what_auto_chooses():
    huge = SimpleNamespace(prediction_rows=50_000_000)
    assert choose_engine(ScoreConfig(engine="auto"), huge)[0] == "local"  # type: ignore[arg-type]
    comment = _comment_above("engine")
    assert "in-process at any size" in comment
    assert not re.search(r"\d[\d,]* prediction rows", comment)


def test_the_language_comment_names_every_special_value():
    comment = _comment_above("language")
    for value in ("auto", "column:COL", "any other name"):
        assert value in comment, value


def test_inputs_are_said_to_be_parquet_csv_or_jsonl():
    from pipeline.io.read import TEXT_FORMATS

    assert {".csv", ".jsonl"} <= set(TEXT_FORMATS)  # what the reader accepts by name
    help_text = " ".join(CliRunner().invoke(main, ["score", "--help"]).output.split())
    assert "Parquet, CSV or JSON Lines file" in help_text
    assert "CSV and JSON Lines" in " ".join(README.split()[:80])


def test_float_for_float_mentions_the_default_token_limit():
    intro = " ".join(README.split("## ")[0].split())
    assert "float for float" in intro
    assert f"maxtok:{DEFAULT_MAX_TOKENS}" in intro and "--max-tokens" in intro


def test_the_metric_table_says_which_rouge_equals_multilingual_rouge():
    row = next(line for line in README.splitlines() if line.startswith("| any ROUGE with"))
    equals = row.split(" | ")[2]
    assert "rougeLsum with `--xlsum-rougelsum`" in equals


def test_the_tour_leaves_nothing_untracked():
    written = set()
    for command in re.findall(r"^\$ (.+)$", README, flags=re.M):
        written.update(re.findall(r"--output (\S+)", command))
        written.update(re.findall(r"--delta (\S+)", command))
        written.update(re.findall(r"^overlap nightly (\S+)", command))
        written.update(re.findall(r"'([\w.-]+\.parquet)'\)", command))
    assert {"report.html", "shorter.parquet", "nights", "warehouse"} <= {
        w.split("/")[0] for w in written}
    ignored = set((ROOT / ".gitignore").read_text().splitlines())
    for path in written:
        top = path.split("/")[0]
        pattern = f"/{top}/" if "." not in top else f"/{top}"
        assert pattern in ignored, f"{path}: add {pattern} to .gitignore"
