"""``python -m pipeline.cli``: the ``overlap`` command."""

from pipeline.cli import main

main(prog_name="overlap")
