"""The ``overlap`` command line: thin click commands over :mod:`pipeline.api`.

Exit codes: see :mod:`pipeline.errors` (0 ok, 1 compare alarm, 2 bad usage or input,
3 output exists, 4 execution failure).
"""

from __future__ import annotations

import click

from pipeline import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="overlap")
def main() -> None:
    """Score word-overlap metrics (ROUGE) exactly and at scale, and compare runs."""


from pipeline.cli import compare as _compare  # noqa: E402,F401 - registers `overlap compare`
from pipeline.cli import explain as _explain  # noqa: E402,F401 - registers `overlap explain`
from pipeline.cli import publish as _publish  # noqa: E402,F401 - registers `overlap publish`
from pipeline.cli import report as _report  # noqa: E402,F401 - registers `overlap report`
from pipeline.cli import score as _score  # noqa: E402,F401 - registers `overlap score`, `overlap signature`
