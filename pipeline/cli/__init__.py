"""The ``overlap`` command line: thin click commands over :mod:`pipeline.api`.

Exit codes: see :mod:`pipeline.errors` (0 ok, 1 compare alarm, 2 bad usage or input,
3 output exists or is held by another run, 4 execution failure or a result that cannot be
written to stdout, 130 Ctrl-C, 143 SIGTERM).
Only the result goes to stdout; notes, progress and errors go to stderr.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

import click

from pipeline import __version__


class _Discard(io.TextIOBase):
    """A text stream that drops what it is given (Ray's messages without --verbose)."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return len(text)


@contextlib.contextmanager
def results_only_stdout() -> Iterator[None]:
    """Keep stdout for the result: whatever the engine prints meanwhile goes elsewhere.

    The result a script parses is printed after the block. Ray writes to the process's
    stdout from its own threads (a retried task's failure with its traceback, its
    warnings) and from C++ code (a raylet's death dump). Inside the block file descriptor 1
    points to stderr, and Python's ``sys.stdout`` to stderr with ``overlap --verbose``, to
    nowhere without it (our own notes and errors use stderr; the run's failure, if any, is
    reported in one line after the block). Both are restored after it.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:
        saved: int | None = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no file descriptors (an embedding host): Python's level only
        saved = None
    # ``overlap --verbose`` sets it too (see main)
    verbose = os.environ.get("OVERLAP_VERBOSE", "").strip().lower() not in (
        "", "0", "false", "no", "off")
    try:
        with contextlib.redirect_stdout(sys.stderr if verbose else _Discard()):
            yield
    finally:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_STDOUT_FAILED = 4  # the result could not be written to stdout (an execution failure)


class _GuardedStdout(io.RawIOBase):
    """stdout's file descriptor, whose first failed write is kept instead of raised.

    Installed as the process's ``sys.stdout`` (under a text wrapper) when ``overlap`` runs
    as a process, so that a result that cannot be written (``> /dev/full``: ENOSPC; a
    reader that went away, ``| head``: EPIPE) never interrupts the command with a
    traceback: the command ends as it would have, and :func:`_stdout_outcome` decides the
    exit code. Later writes are dropped. The descriptor is not closed with the object.
    """

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd
        self.error: OSError | None = None

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        try:
            return os.isatty(self.fd)
        except OSError:
            return False

    def write(self, b: Any) -> int:
        size = len(memoryview(b))
        if self.error is None:
            try:
                return os.write(self.fd, b)
            except OSError as e:
                self.error = e
        return size


def _guard_stdout() -> _GuardedStdout | None:
    """Put a :class:`_GuardedStdout` under ``sys.stdout``; None when stdout is no descriptor."""
    stream = sys.stdout
    try:
        fd = stream.fileno()
        stream.flush()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    raw = _GuardedStdout(fd)
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(raw), encoding=stream.encoding,
                                  errors=stream.errors,
                                  line_buffering=bool(getattr(stream, "line_buffering", False)))
    return raw


def _stdout_outcome(guard: _GuardedStdout, code: int) -> int:
    """The exit code of a command whose stdout may have failed (see :class:`_GuardedStdout`).

    A reader that went away (EPIPE: ``overlap compare ... | head -1``) stopped reading by
    choice: the command's own code stands (1 stays an alarm, 0 no alarm). Any other failure
    (ENOSPC on a full disk, EIO) lost the result: one line on stderr naming the error and the
    code the command ended with, and exit 4 in place of 0 or 1 (never 1, which means an
    alarm to compare and nightly); a command that failed already keeps its code.
    """
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    err = guard.error
    if err is None or err.errno == errno.EPIPE:
        return code
    reason = err.strerror or str(err)
    try:
        sys.stderr.write(f"Error: cannot write the result to stdout: {reason} (errno "
                         f"{err.errno}); the command itself ended with exit code {code}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return EXIT_STDOUT_FAILED if code in (0, 1) else code


class _Signals:
    """The first of SIGINT / SIGTERM the command got (None: none yet)."""

    received: int | None = None  # a signal.Signals value
    pid = 0  # the process whose handlers these are
    forking = 0  # forks under way in this process (see _install_handlers)
    fork_hooks = False


def _fork_begins() -> None:
    _Signals.forking += 1


def _fork_ends() -> None:
    _Signals.forking = max(0, _Signals.forking - 1)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # The first signal stops the command: raised as KeyboardInterrupt (Ray's waits pass
    # that one through intact; another exception raised inside them comes out as a
    # SystemError), so every clean-up that runs for Ctrl-C runs for SIGTERM too. Later ones
    # are ignored: the clean-up of the first (stopping Ray, the forked workers, releasing the
    # output's lock) runs to its end, and the command ends with the first one's exit code.
    if os.getpid() != _Signals.pid:
        # A process forked from the command (the in-process engine's workers) that has not
        # set its own dispositions yet: act as they will be set (SIGTERM ends it, SIGINT is
        # left to the command, which stops it). Raised here, the KeyboardInterrupt came out
        # of Python's after-fork callbacks as a traceback on the command's stderr.
        if signum == signal.SIGTERM:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        return
    if _Signals.received is not None:
        return
    if _Signals.forking or _importing(frame):
        # Raised inside an import, the exception leaves the module half-initialised for the
        # rest of the process (pyarrow imports pandas on first use: a later import of
        # pandas, in the clean-up, then failed with an AttributeError and a traceback).
        # Raised in a fork's callbacks (logging's locks), it is printed and dropped, and the
        # command ran on to its end (exit 0). The signal is delivered again once the import
        # or the fork is over.
        retry = threading.Timer(_IMPORT_RETRY_S, _deliver_again, (signum,))
        retry.daemon = True
        retry.start()
        return
    _Signals.received = signum
    raise KeyboardInterrupt


# Seconds between checks whether an import a signal came in has finished.
_IMPORT_RETRY_S = 0.05


def _importing(frame: FrameType | None) -> bool:
    """Whether the interrupted code runs inside an import (a frame of importlib's)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _deliver_again(signum: int) -> None:
    if _Signals.received is None and signal.getsignal(signum) is _on_signal:
        os.kill(os.getpid(), signum)


def _install_handlers() -> dict[int, Any]:
    """Handle SIGINT and SIGTERM with :func:`_on_signal`; return the handlers replaced.

    Only in the main thread (where Python runs handlers); a signal the process inherited
    as ignored (a background job's SIGINT, ``nohup``) stays ignored. Already in place (the
    process's entry point installed them): nothing is replaced.
    """
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: dict[int, Any] = {}
    for s in (signal.SIGINT, signal.SIGTERM):
        current = signal.getsignal(s)
        if current is not signal.SIG_IGN and current is not _on_signal:
            previous[s] = current
            signal.signal(s, _on_signal)
    if previous:
        _Signals.received = None
        _Signals.pid = os.getpid()
        if not _Signals.fork_hooks and hasattr(os, "register_at_fork"):
            # registered last, the "before" hook runs first and the "after" one last
            os.register_at_fork(before=_fork_begins, after_in_parent=_fork_ends,
                                after_in_child=_fork_ends)
            _Signals.fork_hooks = True
    return previous


def _local_rays() -> list[Any]:
    """The local Ray instances running in this process (Ray is not imported for it)."""
    module = sys.modules.get("pipeline.engine.ray_runner")
    return [] if module is None else module.local_instances()


def _stop_local_rays(before: list[Any]) -> None:
    """Stop the local Ray instances the command started and left running, here.

    ``score`` leaves its instance running to print the result first (``defer_engine_stop``).
    Stopped here, in the main thread, a Ctrl-C during the stop waits for its end and gives
    exit 130; stopped by the ``atexit`` handler, it gave a traceback, exit 0 and the temp dir
    left behind. Instances that were running before the command (a test session's) are
    left alone.
    """
    started = [r for r in _local_rays() if r not in before]
    if started:
        sys.modules["pipeline.engine.ray_runner"].stop_local_instances(started)


# Each command's module, imported only when that command runs (or help lists it), so that
# `overlap score` does not pay for compare's, publish's or report's imports.
_COMMANDS = {"compare": "pipeline.cli.compare", "explain": "pipeline.cli.explain",
             "nightly": "pipeline.cli.nightly",
             "publish": "pipeline.cli.publish", "report": "pipeline.cli.report",
             "score": "pipeline.cli.score", "signature": "pipeline.cli.score"}
_COMMANDS["agree"] = "pipeline.cli.agree"


class OneLineUsageError(click.UsageError):
    """A click usage error shown as one line: ``Error: MESSAGE (see 'overlap CMD --help')``.

    Click shows a usage error as four lines (the usage, a "Try ... --help" line, a blank
    line, the error); the house rule is one line on stderr and exit 2. Wraps the error
    click raised (``original``), whose :meth:`~click.ClickException.format_message` gives the
    message (e.g. ``Missing option '--output'.``).
    """

    def __init__(self, original: click.UsageError, *, command: str = "overlap") -> None:
        super().__init__(original.format_message(), original.ctx)
        self.original = original
        self.command = command

    def show(self, file: Any = None) -> None:
        """Print the one line on ``file`` (default: stderr)."""
        click.echo(f"Error: {one_line_text(self.message)} (see '{self.command} --help')",
                   file=file if file is not None else sys.stderr)


def one_line_text(text: str) -> str:
    """``text`` with its line breaks and runs of spaces joined into single spaces."""
    return " ".join(text.split())


@contextlib.contextmanager
def _usage_errors_in_one_line(group: click.Context | None = None) -> Iterator[None]:
    """Raise click's usage errors raised inside as :class:`OneLineUsageError`.

    The command named is the one whose context the error has, else the subcommand ``group``
    (the ``overlap`` context) was invoking (click's option parser raises without a context),
    else ``overlap``. Left as they are: an error already wrapped, and "no arguments: show the
    help" (click's ``NoArgsIsHelpError``, which prints the help, not an error).
    """
    try:
        yield
    except click.UsageError as err:
        if isinstance(err, OneLineUsageError) or type(err).__name__ == "NoArgsIsHelpError":
            raise
        words = ["overlap"]
        if err.ctx is not None and err.ctx is not group:
            words += err.ctx.command_path.split()[1:]
        elif group is not None and group.invoked_subcommand:
            words.append(group.invoked_subcommand)
        raise OneLineUsageError(err, command=" ".join(words)) from err


class _Main(click.Group):
    """The command group: usage errors in one line; Ctrl-C and SIGTERM in one line too.

    A usage error of any command (a missing option, a bad value, an unknown command) is one
    line on stderr and exit 2 (:class:`OneLineUsageError`). On Ctrl-C or SIGTERM the
    command's own clean-up runs first (``finally`` blocks: a local Ray instance is stopped
    and its temp dir removed), then one line and exit 130 / 143; a score run's staging
    directory stays, so that running the same command again resumes it.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _COMMANDS and cmd_name not in self.commands:
            import importlib

            importlib.import_module(_COMMANDS[cmd_name])
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """As click's, with "did you mean ...?" for a near miss of a command name."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as err:
            from pipeline.errors import did_you_mean

            hint = did_you_mean(args[0], self.list_commands(ctx)) if args else None
            if not hint or type(err).__name__ == "NoArgsIsHelpError":
                raise
            raise click.UsageError(f"{err.format_message()} ({hint})", ctx) from err

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        with _usage_errors_in_one_line():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        previous = _install_handlers()
        completed = False
        rays = _local_rays()
        try:
            try:
                with _usage_errors_in_one_line(ctx):
                    result = super().invoke(ctx)
                completed = True
            finally:
                _stop_local_rays(rays)
            return result
        except SystemExit as e:
            if e.code != signal.SIGTERM or _Signals.received is not None:
                raise
            # Ray's own SIGTERM handler (sys.exit), in place while ray.init connects to a
            # cluster: the clean-up has run by then.
            _Signals.received = signal.SIGTERM
            self._stopped(ctx, completed=completed)
        except KeyboardInterrupt as interrupt:
            if _Signals.received is None:  # raised by a handler of the caller's
                _Signals.received = signal.SIGINT
            self._stopped(ctx, completed=completed,
                          resume_hint=getattr(interrupt, "resume_hint", None))
        finally:
            if self._process:
                # The process ends now (see __call__): a signal can no longer stop anything,
                # only cut the exit short (a traceback from an atexit callback).
                for sig in (signal.SIGINT, signal.SIGTERM):
                    if signal.getsignal(sig) is _on_signal:
                        signal.signal(sig, signal.SIG_IGN)
            for s, handler in previous.items():
                signal.signal(s, handler)

    @staticmethod
    def _stopped(ctx: click.Context, *, completed: bool, resume_hint: str | None = None
                 ) -> None:
        # resume_hint: what to run to resume (nightly: its RUN_DATE and RUN_ID), in the line
        name, code = (("terminated (SIGTERM)", EXIT_TERMINATED)
                      if _Signals.received == signal.SIGTERM
                      else ("interrupted (Ctrl-C)", EXIT_INTERRUPTED))
        if completed:
            click.echo(f"Error: {name} while stopping the local Ray instance; the command "
                       "itself had completed", err=True)
        elif resume_hint:
            click.echo(f"Error: {name} {resume_hint}", err=True)
        else:
            click.echo(f"Error: {name}; running the same command again resumes a score run",
                       err=True)
        ctx.exit(code)

    _process = False  # running as the process itself (see __call__)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run as the process (``overlap``, ``python -m pipeline.cli``), not in a test runner.

        After an interrupt, and after any command run from the program's own command line
        (called without arguments, as the ``overlap`` script and ``python -m pipeline.cli``
        call it), the process ends with ``os._exit`` once the clean-up has run, stdout and
        stderr are flushed and the ``atexit`` callbacks have run (Ray's shutdown, temporary
        directories' finalizers, multiprocessing's): no thread is waited for (a bootstrap in
        the driver's threads would hold an interrupted exit up; after a failed comparison,
        the reading of texts no one will print), no C++ exit handler runs (Ray's destroys a
        core worker under its running threads, should one be left: a SIGSEGV instead of exit
        130 / 143), and the interpreter does not take its modules apart one by one (0.2-0.4
        s with pandas and pyarrow loaded). Called with arguments (``main([...])`` from
        Python), a command that ends normally raises ``SystemExit`` as click's do.
        """
        self._process = True
        _install_handlers()  # as early as possible: before the command's imports
        own_command_line = not args and kwargs.get("args") is None
        guard = _guard_stdout() if own_command_line else None
        try:
            return self.main(*args, **kwargs)
        except SystemExit as e:
            if e.code is not None and not isinstance(e.code, int):
                raise  # a message: Python prints it and exits 1
            if _Signals.received is None and not own_command_line:
                raise
            if guard is not None:
                e.code = _stdout_outcome(guard, e.code or 0)
            import atexit

            atexit._run_exitfuncs()  # e.g. the plot cache dir; Ray's shutdown: a no-op now
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(e.code or 0)


_MAIN_EPILOG = """\b
A tour on the bundled data (README.md, "A five-minute tour"):
  overlap score pipeline/data/realsumm/predictions \\
      --references pipeline/data/realsumm/references.parquet \\
      --output runs/realsumm --group-by system
  overlap compare runs/realsumm runs/shorter
  overlap report runs/shorter --baseline runs/realsumm --output report.html
  overlap publish runs/realsumm --delta warehouse --label model=bart
  overlap nightly nights PREDICTIONS REFERENCES
  overlap explain runs/realsumm --id ID

\b
COMMAND --help shows its options and an example; docs/ holds the details.
Exit codes: 0 ok, 1 alarm (compare, nightly), 2 bad usage or input,
3 output in the way, 4 execution failure (also: stdout cannot be written),
130 Ctrl-C, 143 SIGTERM."""


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=_MAIN_EPILOG)
@click.version_option(__version__, prog_name="overlap")
@click.option("--verbose", is_flag=True, envvar="OVERLAP_VERBOSE",
              help="Show what Ray prints while a command runs (retried tasks' tracebacks, "
                   "warnings), on stderr (env OVERLAP_VERBOSE=1).")
def main(verbose: bool = False) -> None:
    """Score ROUGE, BLEU, chrF and token F1 on Parquet data, exactly and at scale.

    Score a run, compare it with a baseline (alarms beyond run-to-run noise), publish it to
    Delta or Iceberg tables, write an HTML report, explain one example's score.
    """
    if verbose:  # read where Ray's output is kept or shown (here and pipeline.engine)
        os.environ["OVERLAP_VERBOSE"] = "1"
