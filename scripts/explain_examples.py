"""Regenerate the example outputs of docs/explain.md from the bundled REALSumm data.

The example is the bundled example with the fewest words (prediction and reference
together, ties by id): ``realsumm-abs-0-t5_out_large``. Each block between
``<!-- example:NAME -->`` and ``<!-- /example:NAME -->`` in docs/explain.md is replaced by
the command and what ``overlap explain`` prints for it (run in-process with click's runner,
so the output is the command's own).

    .venv/bin/python scripts/explain_examples.py [--check]

``--check`` exits 1 when a block differs from what the code prints now, writing nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pyarrow.parquet as pq
from click.testing import CliRunner

from pipeline.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "explain.md"
DATA = ROOT / "pipeline" / "data" / "realsumm"
EXAMPLES = {
    "rouge": ["--metrics", "rouge2,rougeL,rougeLsum", "--stemmer", "porter"],
    "rouge155": ["--rouge155", "-x -w 1.2 -2 4 -U -m"],
    "bleu": ["--metrics", "bleu"],
    "chrf": ["--metrics", "chrf"],
    "squad": ["--metrics", "token_f1,exact_match"],
}


def shortest_example() -> tuple[str, str, str]:
    """(id, prediction, reference) of the bundled example with the fewest words."""
    preds = pq.read_table(DATA / "predictions").to_pydict()
    refs = pq.read_table(DATA / "references.parquet").to_pydict()
    by_id = dict(zip(refs["id"], refs["reference"], strict=True))
    rows = [(len(p.split()) + len(by_id[i].split()), i, p, by_id[i])
            for i, p in zip(preds["id"], preds["prediction"], strict=True)]
    _, ident, prediction, reference = min(rows)
    return ident, prediction, reference


def block(args: list[str], prediction: str, reference: str) -> str:
    result = CliRunner().invoke(main, ["explain", "--prediction", prediction, "--reference",
                                       reference, *args])
    if result.exit_code != 0:
        raise SystemExit(f"overlap explain {' '.join(args)} failed: {result.output}")
    shown = " ".join(f"'{a}'" if " " in a else a for a in args)
    return (f'```\n$ overlap explain --prediction "$P" --reference "$R" {shown}\n'
            f"{result.stdout.rstrip()}\n```")


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    ident, prediction, reference = shortest_example()
    text = DOC.read_text(encoding="utf-8")
    new = text
    for name, flags in EXAMPLES.items():
        pattern = re.compile(rf"(<!-- example:{name} -->\n).*?(<!-- /example:{name} -->)",
                             re.S)
        body = block(flags, prediction, reference)
        new, n = pattern.subn(lambda m, body=body: m.group(1) + body + "\n" + m.group(2), new)
        if n != 1:
            raise SystemExit(f"{DOC}: no block <!-- example:{name} -->")
    source = (f"<!-- example:source -->\n`{ident}`:\n\n```\nP=$'"
              + prediction.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
              + "'\nR=$'"
              + reference.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
              + "'\n```\n<!-- /example:source -->")
    new = re.sub(r"<!-- example:source -->.*?<!-- /example:source -->", lambda m: source,
                 new, flags=re.S)
    if args.check:
        return 0 if new == text else 1
    if new != text:
        tmp = DOC.with_name(f".{DOC.name}.tmp")
        tmp.write_text(new, encoding="utf-8")
        tmp.replace(DOC)
    return 0


if __name__ == "__main__":
    sys.exit(main_())
