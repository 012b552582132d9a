"""The README tour's ``overlap agree`` step, run as printed on the bundled REALSumm data:
the lines the README shows are the first lines the command prints (regenerate them from
this test's failure message when the output changes)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> list[tuple[list[str], list[str]]]:
    """Each ``$ overlap ...`` command of the README's blocks, with the lines shown after it."""
    text = (ROOT / "README.md").read_text()
    out = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```$", text, flags=re.S | re.M):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ overlap "):
                i += 1
                continue
            command = lines[i][2:]
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + " " + lines[i].strip()
            i += 1
            shown = []
            while i < len(lines) and not lines[i].startswith("$ "):
                shown.append(lines[i])
                i += 1
            out.append((shlex.split(command)[1:], shown))
    return out


@pytest.mark.slow
def test_the_readme_agree_step_prints_what_the_readme_shows(tmp_path, monkeypatch):
    commands = _commands()
    score = next(c for c, _ in commands if c[:2] == ["score", "pipeline/data/realsumm/predictions"])
    agree, shown = next((c, s) for c, s in commands if c[0] == "agree")
    assert shown and shown[-1] == "..."
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pipeline").symlink_to(ROOT / "pipeline")
    runner = CliRunner()
    r = runner.invoke(main, score)
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, agree)
    assert r.exit_code == 0, r.output
    printed = r.stdout.splitlines()[:len(shown) - 1]
    assert printed == shown[:-1], "the README should show:\n" + "\n".join(printed)
    assert (tmp_path / "runs" / "agree" / "agreement.json").is_file()


def test_the_help_shows_the_readme_agree_command():
    # the first example of `overlap agree --help` is the README's step, which runs
    (agree,) = [c for c, _ in _commands() if c[0] == "agree"]
    help_text = CliRunner().invoke(main, ["agree", "--help"]).output
    example = help_text.split("Examples:")[1].split("overlap ")[1]
    assert shlex.split(example.replace("\\\n", " "))[:len(agree)] == agree
