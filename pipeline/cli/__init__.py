"""The ``overlap`` command line: thin click commands over :mod:`pipeline.api`.

Exit codes: see :mod:`pipeline.errors` (0 ok, 1 compare alarm, 2 bad usage or input,
3 output exists, 4 execution failure).
"""

from __future__ import annotations

import click

from pipeline import __version__

# Each command's module, imported only when that command runs (or help lists it), so that
# `overlap score` does not pay for compare's imports (pandas) and the reverse.
_COMMANDS = {"compare": "pipeline.cli.compare", "score": "pipeline.cli.score",
             "signature": "pipeline.cli.score"}


class _LazyGroup(click.Group):
    """A group whose commands register themselves when their module is imported."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _COMMANDS and cmd_name not in self.commands:
            import importlib

            importlib.import_module(_COMMANDS[cmd_name])
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="overlap")
def main() -> None:
    """Score word-overlap metrics (ROUGE) exactly and at scale, and compare runs."""
