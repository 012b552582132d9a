"""How the command line takes SIGINT and SIGTERM (issue 19), in small processes of their own.

The whole-run trials are in tests/engine/test_interrupts.py (slow); these check the mechanisms.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _python(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, capture_output=True,
                          text=True, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_an_import_is_raised_after_it(tmp_path, sig):
    """Raised inside an import, KeyboardInterrupt leaves the module half-initialised for the
    rest of the process: pyarrow imports pandas on first use, and an interrupt landing in it
    made every later import of pandas fail (an AttributeError traceback, exit 1)."""
    (tmp_path / "slow_module.py").write_text(textwrap.dedent(f"""
        import os, time
        os.kill(os.getpid(), {int(sig)})
        time.sleep(0.3)  # the handler runs here, inside the import
        COMPLETE = True
    """))
    result = _python("""
        import sys, time
        from pipeline.cli import _install_handlers, _Signals
        _install_handlers()
        try:
            import slow_module
            time.sleep(5)
            print("no interrupt")
        except KeyboardInterrupt:
            module = sys.modules.get("slow_module")
            print("interrupted after the import:", getattr(module, "COMPLETE", False))
            print("signal:", int(_Signals.received))
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["interrupted after the import: True",
                                          f"signal: {int(sig)}"]


def test_a_second_signal_during_the_clean_up_is_ignored(tmp_path):
    """The first signal decides the exit code; a later one cannot cut the clean-up short."""
    result = _python("""
        import os, signal, time
        from pipeline.cli import _install_handlers
        _install_handlers()
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except KeyboardInterrupt:
            os.kill(os.getpid(), signal.SIGINT)  # during the clean-up
            time.sleep(0.3)
            print("clean-up finished")
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "clean-up finished\n"


def test_an_ignored_sigint_stays_ignored(tmp_path):
    """A background job (``cmd &`` in a script, ``nohup``) inherits SIGINT ignored."""
    result = subprocess.run(
        [sys.executable, "-c", "import os, signal, time\n"
         "from pipeline.cli import _install_handlers\n_install_handlers()\n"
         "os.kill(os.getpid(), signal.SIGINT)\ntime.sleep(0.3)\nprint('still here')"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "still here\n"


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, 0)],
                         ids=["SIGTERM", "SIGINT"])
def test_a_forked_worker_does_not_take_the_commands_handler(tmp_path, sig, status):
    """A worker forked by the in-process engine and signalled before it set its own
    dispositions (the command stopping its workers as they start): SIGTERM ends it, SIGINT
    is left to the command; before, the inherited handler raised KeyboardInterrupt in
    Python's after-fork callbacks, a traceback on the command's stderr."""
    result = _python(f"""
        import os, signal, sys, time
        from pipeline.cli import _install_handlers
        _install_handlers()
        pid = os.fork()
        if pid == 0:
            os.kill(os.getpid(), {int(sig)})
            time.sleep(0.3)
            os._exit(0)
        _, code = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(code))
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{status}\n"
    assert result.stderr == ""


def test_a_signal_during_a_fork_is_raised_after_it(tmp_path):
    """Raised in a fork's callbacks (logging's locks), the KeyboardInterrupt was printed as
    'Exception ignored' and dropped, and the command ran on to exit 0."""
    result = _python("""
        import os, signal, time
        from pipeline.cli import _fork_begins, _fork_ends, _install_handlers
        _install_handlers()
        _fork_begins()  # as os.fork() calls it, before the fork
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.3)
            print("not raised during the fork")
        finally:
            _fork_ends()
        try:
            time.sleep(5)
        except KeyboardInterrupt:
            print("raised after it")
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["not raised during the fork", "raised after it"]


def test_the_command_line_ends_at_once_and_main_called_from_python_returns(tmp_path):
    """`python -m pipeline.cli` ends with os._exit after flushing (its output complete, its
    exit status kept, and code after the command never runs); `main([...])` called from a
    Python program raises SystemExit and hands control back, as click's commands do."""
    script = tmp_path / "embed.py"
    script.write_text(textwrap.dedent("""\
        import atexit, sys
        from pipeline.cli import main
        atexit.register(lambda: print("atexit ran", flush=True))
        try:
            main(sys.argv[1:])
        except SystemExit as e:
            print("returned", e.code)
        """))
    run = subprocess.run([sys.executable, str(script), "--version"], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["overlap, version 0.1.0", "returned 0", "atexit ran"]
    bad = subprocess.run([sys.executable, str(script), "compare", str(tmp_path / "nowhere"),
                          str(tmp_path / "nowhere")], capture_output=True, text=True,
                         timeout=120)
    assert "returned 2" in bad.stdout, (bad.stdout, bad.stderr)

    cli = subprocess.run([sys.executable, "-c", textwrap.dedent("""\
        import atexit, sys
        from pipeline.cli import main
        atexit.register(lambda: print("atexit ran", flush=True))
        sys.argv = ["overlap", "--version"]
        try:
            main()
        finally:
            print("after the command")  # never: the process has ended
        """)], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.splitlines() == ["overlap, version 0.1.0", "atexit ran"]
    cli = subprocess.run([sys.executable, "-m", "pipeline.cli", "compare",
                          str(tmp_path / "nowhere"), str(tmp_path / "nowhere")],
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 2 and "no such run directory" in cli.stderr, cli.stderr
