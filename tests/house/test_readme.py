"""The README starts a user in five minutes, and it and docs/ link only to what exists.

Checks what can drift silently: the test command CI runs is the README's, verbatim; the
README stays about 250 lines and no page about 3,000 words (issue 29: a page serves one
task); no page tells the project's history by issue number; every relative link of
README.md and docs/*.md names a file of the repository and, with ``#anchor``, a heading of
that file (GitHub's anchor rule).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_WORDS = 3_000  # "no page over about 3,000 words" (issue 29), as `wc -w` counts them
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_ci_runs_the_readme_test_command_verbatim():
    command = ("python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && "
               ".venv/bin/python -m pytest -m ''")
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert f"\n{command}\n" in readme and f"\n{command}\n" in ci


def test_the_readme_stays_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 260


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_no_page_is_longer_than_one_task(page):
    words = len(page.read_text().split())
    assert words <= MAX_WORDS, f"{page.name}: {words} words; split it by task"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_no_page_tells_history_by_issue(page):
    found = re.findall(r"[^.\n]*\b(?:before|since|until|after) issue \d+[^.\n]*|"
                       r"\(issue \d+\)", page.read_text(), flags=re.I)
    assert not found, f"{page.name}: history belongs in commit messages: {found}"


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, flags=re.M)}


def _links() -> list[tuple[Path, str]]:
    out = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in LINK.findall(text):
            if not re.match(r"[a-z]+:", target):
                out.append((page, target))
    return out


def test_slug_follows_github():
    assert _slug("Why a score: `overlap explain`") == "why-a-score-overlap-explain"
    assert _slug("The ROUGE-1.5.5 metrics") == "the-rouge-155-metrics"


@pytest.mark.parametrize("page, target", _links(),
                         ids=[f"{p.name}->{t}" for p, t in _links()])
def test_every_relative_link_resolves(page, target):
    path, _, anchor = target.partition("#")
    file = (page.parent / path).resolve() if path else page
    assert file.exists(), f"{page.name}: {target} names no file"
    if anchor:
        assert anchor in _anchors(file), f"{page.name}: {target}: no such heading"
