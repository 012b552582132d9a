"""A local run is closed to the network and stops cleanly on a signal (issue 12).

``overlap score`` runs as a subprocess with its own HOME (an empty directory) and TMPDIR, on
the bundled REALSumm data, each score task slowed down (``OVERLAP_FAULTS``) so that the run
is still going when its listening sockets are read from /proc and a signal is sent. Only the
processes of that subprocess's tree are looked at.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.listening import is_loopback, listening_sockets, process_tree

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data" / "realsumm"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc")]


@pytest.fixture
def short_tmp():
    """A temp dir short enough for Ray's socket paths (pytest's are too deep)."""
    path = Path(tempfile.mkdtemp(prefix="ov-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _start(tmp_path: Path, short_tmp: Path, *, delay_s: float
           ) -> tuple[subprocess.Popen, dict[str, str]]:
    (tmp_path / "home").mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home"), "TMPDIR": str(short_tmp),
           "OVERLAP_FAULTS": json.dumps({"delay_s": delay_s})}
    env.pop("RAY_ADDRESS", None)
    cmd = [sys.executable, "-m", "pipeline.cli", "score", str(DATA / "predictions"),
           "--references", str(DATA / "references.parquet"), "--output",
           str(tmp_path / "out"), "--bootstrap", "0", "--engine", "ray"]
    # A shell's background job inherits SIGINT ignored (and Python keeps it so): give the
    # run the default disposition a user's terminal gives it.
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
                            ), env


def _wait_for_workers(proc: subprocess.Popen, timeout_s: float = 240.0) -> set[tuple]:
    """Poll the tree's listening sockets until GCS, raylet and a worker are up."""
    seen: set[tuple] = set()
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        seen |= set(listening_sockets(process_tree(proc.pid)))
        names = {name for name, _, _ in seen}
        if {"gcs_server", "raylet"} <= names and any(
                n.startswith("ray::") and "RuntimeEnv" not in n for n in names):
            time.sleep(1.0)
            return seen | set(listening_sockets(process_tree(proc.pid)))
        time.sleep(0.3)
    raise AssertionError(f"Ray did not come up (exit {proc.poll()}): {sorted(seen)}")


@pytest.mark.parametrize(("sig", "code", "line"), [
    (signal.SIGTERM, 143, "Error: terminated (SIGTERM); "),
    (signal.SIGINT, 130, "Error: interrupted (Ctrl-C); "),
])
def test_a_local_run_listens_on_loopback_only_and_stops_cleanly_on_a_signal(
        tmp_path, short_tmp, sig, code, line):
    proc, env = _start(tmp_path, short_tmp, delay_s=60)
    try:
        sockets = _wait_for_workers(proc)
        # every listener of the run's processes is on loopback
        assert sockets and all(is_loopback(ip) for _, ip, _ in sockets), sorted(sockets)
        # token authentication, with the token in the run's own temp dir, private
        (ray_tmp,) = short_tmp.glob("overlap-ray-*")
        token = ray_tmp / "private" / "auth_token"
        assert len(token.read_text()) == 64
        assert stat.S_IMODE(token.stat().st_mode) == 0o600
        assert stat.S_IMODE(token.parent.stat().st_mode) == 0o700
        tree = process_tree(proc.pid)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert out == ""
    assert err.splitlines() == [line + "running the same command again resumes a score run"]
    time.sleep(2)
    assert [p for p in tree if Path(f"/proc/{p}").exists()] == []  # Ray's processes stopped
    assert list(short_tmp.iterdir()) == []  # its temp dir removed
    assert not (tmp_path / "out").exists()
    assert len(list(tmp_path.glob(".out.overlap-staging-*"))) == 1  # kept for resuming
    assert list((tmp_path / "home").iterdir()) == []  # nothing written to HOME
    if sig == signal.SIGTERM:  # the same command resumes and finishes
        # ... with a retried task, which Ray reports (traceback included) on the driver:
        # on stderr with --verbose (OVERLAP_VERBOSE=1), never on stdout
        env["OVERLAP_FAULTS"] = json.dumps({"partition": 0, "action": "transient",
                                            "log": str(tmp_path / "attempts")})
        env["OVERLAP_VERBOSE"] = "1"
        result = subprocess.run(proc.args, env=env, capture_output=True, text=True,
                                cwd=ROOT, timeout=300)
        assert result.returncode == 0, result.stderr
        assert len((tmp_path / "attempts").read_text().split()) == 2  # retried once
        assert result.stdout.startswith("scored 2,500 examples")  # only the result
        assert "Traceback" not in result.stdout and "retried" not in result.stdout
        # score_joined, or score_partition when the check was saved before the signal
        assert re.search(r"Task score_(joined|partition) failed", result.stderr)
        assert (tmp_path / "out" / "_SUCCESS").exists()
        assert json.loads((tmp_path / "out" / "manifest.json").read_text())["resumed"]
        assert list((tmp_path / "home").iterdir()) == []


@pytest.mark.parametrize("mplconfigdir", [None, "user"])
def test_no_command_writes_to_home(tmp_path, mplconfigdir):
    """score, compare --plot (matplotlib's config and font cache) and signature leave an
    empty HOME empty; a user's own MPLCONFIGDIR is respected."""
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": "", "XDG_CONFIG_HOME": ""}
    env.pop("MPLCONFIGDIR", None)
    if mplconfigdir:
        env["MPLCONFIGDIR"] = str(tmp_path / "mpl")
    run = [sys.executable, "-m", "pipeline.cli"]
    for args in (["score", str(DATA / "predictions"), "--references",
                  str(DATA / "references.parquet"), "--output", str(tmp_path / "a"),
                  "--engine", "local", "--bootstrap", "0"],
                 ["compare", str(tmp_path / "a"), str(tmp_path / "a"), "--plot",
                  str(tmp_path / "delta.png"), "--n-bootstrap", "50"],
                 ["signature"]):
        result = subprocess.run(run + args, env=env, capture_output=True, text=True, cwd=ROOT,
                                timeout=300)
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "delta.png").stat().st_size > 0
    assert list(home.iterdir()) == []
    if mplconfigdir:
        assert (tmp_path / "mpl").is_dir()
