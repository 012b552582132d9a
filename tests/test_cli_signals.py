"""How the command line takes SIGINT and SIGTERM (issue 19), in small processes of their own.

The whole-run trials are in tests/test_interrupts.py (slow); these check the mechanisms.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

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
