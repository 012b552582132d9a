"""The ``overlap`` command line: thin click commands over :mod:`pipeline.api`.

Exit codes: see :mod:`pipeline.errors` (0 ok, 1 compare alarm, 2 bad usage or input,
3 output exists or is held by another run, 4 execution failure, 130 Ctrl-C, 143 SIGTERM).
Only the result goes to stdout; notes, progress and errors go to stderr.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

import click

from pipeline import __version__

EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM


class _Signals:
    """Which signal stopped the command (SIGTERM arrives as a KeyboardInterrupt)."""

    terminated = False


def _on_sigterm(signum: int, frame: Any) -> None:
    # Raised as KeyboardInterrupt: Ray's waits pass that one through intact (another
    # exception raised inside them comes out as a SystemError) and every clean-up that
    # runs for Ctrl-C runs for SIGTERM too.
    _Signals.terminated = True
    raise KeyboardInterrupt


# Each command's module, imported only when that command runs (or help lists it), so that
# `overlap score` does not pay for compare's, publish's or report's imports.
_COMMANDS = {"compare": "pipeline.cli.compare", "explain": "pipeline.cli.explain",
             "nightly": "pipeline.cli.nightly",
             "publish": "pipeline.cli.publish", "report": "pipeline.cli.report",
             "score": "pipeline.cli.score", "signature": "pipeline.cli.score"}


class _Main(click.Group):
    """The command group: turns Ctrl-C and SIGTERM into one line and exit 130 / 143.

    The command's own clean-up runs first (``finally`` blocks: a local Ray instance is
    stopped and its temp dir removed); a score run's staging directory stays, so that
    running the same command again resumes it.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _COMMANDS and cmd_name not in self.commands:
            import importlib

            importlib.import_module(_COMMANDS[cmd_name])
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        previous = None
        if threading.current_thread() is threading.main_thread():
            _Signals.terminated = False
            previous = signal.signal(signal.SIGTERM, _on_sigterm)
        try:
            return super().invoke(ctx)
        except SystemExit as e:
            if e.code != signal.SIGTERM:
                raise
            # Ray's own handler, in place while a local instance starts, exits with the
            # signal's number; the instance has been stopped by then.
            _Signals.terminated = True
            self._stopped(ctx)
        except KeyboardInterrupt:
            self._stopped(ctx)
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    @staticmethod
    def _stopped(ctx: click.Context) -> None:
        name, code = (("terminated (SIGTERM)", EXIT_TERMINATED) if _Signals.terminated
                      else ("interrupted (Ctrl-C)", EXIT_INTERRUPTED))
        click.echo(f"Error: {name}; running the same command again resumes a score run",
                   err=True)
        ctx.exit(code)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="overlap")
def main() -> None:
    """Score word-overlap metrics (ROUGE) exactly and at scale, and compare runs."""
