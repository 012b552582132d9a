"""The in-process engine on several cores: forked score workers, threads for the rest.

Each run is ``overlap score --engine local`` in its own process (no Ray in it, so the engine
forks), on the bundled REALSumm data in five partitions. The reference for every result is
the same command with ``num_cpus: 1`` (one task at a time, nothing forked), whose own values
the parity tests check against rouge-score.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data" / "realsumm"

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or (os.cpu_count() or 1) < 2, reason="forks on Linux, >= 2 CPUs")


def _command(tmp: Path, name: str, cpus: int) -> list[str]:
    config = tmp / f"{name}.yaml"
    config.write_text(f"group_by: [system]\npartition_rows: 500\nbootstrap: 200\n"
                      f"num_cpus: {cpus}\n")
    return [sys.executable, "-m", "pipeline.cli", "score", str(DATA / "predictions"),
            "--references", str(DATA / "references.parquet"), "--output", str(tmp / name),
            "--config", str(config), "--engine", "local"]


def _run(cmd: list[str], faults: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    if faults is not None:
        env["OVERLAP_FAULTS"] = json.dumps(faults)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, timeout=300)


def _examples(run: Path) -> pa.Table:
    table = pq.read_table(run / "examples").drop_columns(["run_id"])
    return table.sort_by("id").replace_schema_metadata(None)


@pytest.fixture(scope="module")
def sequential(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("sequential")
    result = _run(_command(tmp, "run", 1))
    assert result.returncode == 0, result.stderr
    return tmp / "run"


def test_forked_workers_write_what_one_process_writes(sequential, tmp_path):
    result = _run(_command(tmp_path, "run", 2))
    assert result.returncode == 0, result.stderr
    run = tmp_path / "run"
    assert _examples(run).equals(_examples(sequential))
    assert pq.read_table(run / "aggregate.parquet").equals(
        pq.read_table(sequential / "aggregate.parquet"))
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["engine"]["num_cpus"] == 2
    driver = manifest["engine"]["pid"]
    writers = {e["where"]["pid"] for e in manifest["outputs"]["examples"]}
    assert len(manifest["outputs"]["examples"]) == 5
    assert driver not in writers and 1 <= len(writers) <= 2  # written by forked workers
    one = json.loads((sequential / "manifest.json").read_text())
    assert {e["where"]["pid"] for e in one["outputs"]["examples"]} == {one["engine"]["pid"]}


@pytest.mark.slow
def test_a_killed_worker_fails_the_run_in_one_line_and_the_rerun_resumes(sequential, tmp_path):
    cmd = _command(tmp_path, "run", 2)
    log = tmp_path / "attempts"
    result = _run(cmd, {"partition": 3, "action": "kill", "log": str(log)})
    assert result.returncode == 4, result.stderr
    [line] = result.stderr.strip().splitlines()[-1:]
    assert "died with signal SIGKILL" in line and "resumes" in line
    assert "Traceback" not in result.stderr
    [killed] = (int(p) for p in log.read_text().split())
    assert not Path(f"/proc/{killed}").exists()
    assert not (tmp_path / "run").exists()  # nothing published

    again = _run(cmd, {"partition": 3, "action": "kill", "log": str(log)})  # acts once only
    assert again.returncode == 0, again.stderr
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["resumed"]
    assert _examples(tmp_path / "run").equals(_examples(sequential))


def test_an_error_inside_a_worker_reaches_the_user_as_itself(tmp_path):
    result = _run(_command(tmp_path, "run", 2),
                  {"partition": 2, "action": "input", "log": str(tmp_path / "attempts")})
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "Error: injected input error in partition 2")


def _slow_run(tmp: Path) -> subprocess.Popen:
    env = {**{k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"},
           "OVERLAP_FAULTS": json.dumps({"delay_s": 60})}
    # A shell's background job inherits SIGINT ignored: give the run a terminal's default.
    return subprocess.Popen(_command(tmp, "run", 2), env=env, cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _workers_of(proc: subprocess.Popen, count: int = 2) -> list[int]:
    """The forked workers of ``proc``, once ``count`` of them run."""
    deadline = time.monotonic() + 120
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    while time.monotonic() < deadline:
        workers = [int(p) for p in children.read_text().split()] if children.exists() else []
        if len(workers) >= count:
            return workers
        time.sleep(0.2)
    raise AssertionError("the workers did not start")


def _gone(pids: list[int], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(Path(f"/proc/{p}").exists() for p in pids):
            return True
        time.sleep(0.1)
    return False


def test_sigterm_stops_the_forked_workers(tmp_path):
    proc = _slow_run(tmp_path)
    try:
        workers = _workers_of(proc)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1].startswith("Error: terminated (SIGTERM)")
    assert _gone(workers)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stopped_worker_does_not_hold_up_a_signal(tmp_path, sig, code):
    proc = _slow_run(tmp_path)
    try:
        workers = _workers_of(proc)
        os.kill(workers[0], signal.SIGSTOP)  # SIGTERM stays pending on a stopped process
        start = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        stopped_in = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert stopped_in < 15
    assert _gone(workers)


@pytest.mark.slow
def test_workers_die_with_a_killed_driver_and_the_rerun_resumes_at_once(sequential, tmp_path):
    proc = _slow_run(tmp_path)
    try:
        workers = _workers_of(proc)
        proc.kill()  # SIGKILL: no clean-up runs in the driver
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _gone(workers)  # they no longer hold the output's lock
    result = _run(_command(tmp_path, "run", 2))
    assert result.returncode == 0, result.stderr
    assert _examples(tmp_path / "run").equals(_examples(sequential))


# Run in a fresh interpreter: the test session may have Ray initialized (no fork then).
FORK_CHECK = """
import os
import pyarrow as pa
from pipeline.engine import local
from pipeline.engine.base import small_result

assert local.can_fork()
made = []

def table():
    made.append(os.getpid())
    return pa.table({"x": list(range(10))})

@small_result
def task(t, i):
    return os.getpid(), t.column("x")[i].as_py()

runner = local.LocalRunner(processes=2)
shared = runner.submit(table)
got = dict(runner.as_completed([runner.submit(task, shared, i) for i in range(6)]))
assert made == [os.getpid()], made  # computed once, here, before the fork
assert sorted(v for _, v in got.values()) == list(range(6)), got
assert os.getpid() not in {pid for pid, _ in got.values()}, got
print("ok")
"""


def test_small_result_tasks_fork_once_their_inputs_are_computed_here():
    result = subprocess.run([sys.executable, "-c", FORK_CHECK], capture_output=True,
                            text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr


def test_without_fork_small_result_tasks_run_here_one_after_the_other(monkeypatch):
    from pipeline.engine import local
    from pipeline.engine.base import small_result

    monkeypatch.setattr(local, "can_fork", lambda: False)
    order = []

    @small_result
    def task(i: int) -> int:
        order.append(i)
        return os.getpid()

    runner = local.LocalRunner(processes=2)
    got = list(runner.as_completed([runner.submit(task, i) for i in range(4)]))
    assert got == [(i, os.getpid()) for i in range(4)] and order == [0, 1, 2, 3]


@pytest.mark.parametrize(("rows", "num_cpus", "processes"), [
    (5_000, None, 1),  # small: this process alone
    (0, None, 1),
    (9_999, None, 1),
    (10_000, None, "all"),  # the threshold: every CPU
    (1_000_000, None, "all"),
    (None, None, "all"),  # rows unknown
    (5_000, 2, 2),  # num_cpus set: as set, whatever the size
])
def test_a_small_run_forks_no_worker_unless_num_cpus_is_set(rows, num_cpus, processes):
    from pipeline.config import ScoreConfig
    from pipeline.engine.run import FORK_MIN_ROWS, make_runner
    from pipeline.machine import usable_cpus

    assert FORK_MIN_ROWS == 10_000
    runner = make_runner(ScoreConfig(engine="local", num_cpus=num_cpus), "local",
                         prediction_rows=rows)
    assert runner.processes == (usable_cpus() if processes == "all" else processes)
