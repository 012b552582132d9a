"""Faults: a killed worker, transient and application errors, a killed driver and its resume.

Faults are injected with ``OVERLAP_FAULTS`` (``pipeline.engine.faults``): a score task kills
its own process (as a crashed or OOM-killed worker), raises a transient ExecutionError or an
InputError, or sleeps so that partitions stay in flight long enough to kill the driver
mid-run. Each faulty run is compared with a clean run of the same settings: the examples
sorted by id (the run id aside) and the aggregate.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.api import score
from pipeline.config import ScoreConfig
from pipeline.engine.faults import ENV_VAR
from pipeline.errors import ConfigError, ExecutionError, InputError
from tests.support.ray_cluster import processes_with_env

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data" / "realsumm"
PREDS = str(DATA / "predictions")
REFS = str(DATA / "references.parquet")
# Four partitions of the 2,500 REALSumm examples; a small bootstrap keeps runs quick.
SETTINGS = {"group_by": ("system",), "partition_rows": 700, "bootstrap": 200}
SETTINGS_YAML = "group_by: [system]\npartition_rows: 700\nbootstrap: 200\nnum_cpus: 2\n"
OVERLAP = Path(sys.executable).with_name("overlap")


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory) -> Path:
    """The reference: the same settings, in-process, nothing injected."""
    out = tmp_path_factory.mktemp("clean") / "run"
    score(PREDS, references=REFS, output=str(out),
          config=ScoreConfig(engine="local", **SETTINGS), run_id="clean")
    return out


def _examples(run: Path) -> pa.Table:
    files = sorted((run / "examples").glob("part-*.parquet"))
    table = pa.concat_tables(pq.read_table(f) for f in files)
    return table.drop_columns(["run_id"]).sort_by("id").replace_schema_metadata(None)


def assert_same_results(run: Path, clean: Path) -> None:
    """Examples (sorted by id, run id aside), aggregate and signature equal the clean run's."""
    got, want = _examples(run), _examples(clean)
    assert got.num_rows == want.num_rows == 2500
    assert got.equals(want)
    agg = pq.read_table(run / "aggregate.parquet")
    assert agg.replace_schema_metadata(None).equals(
        pq.read_table(clean / "aggregate.parquet").replace_schema_metadata(None))
    signature = json.loads((clean / "manifest.json").read_text())["signature"]
    assert json.loads((run / "manifest.json").read_text())["signature"] == signature
    assert agg.schema.metadata[b"overlap.signature"].decode() == signature


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _ray_core(tmp: Path) -> list[int]:
    """Processes started by a driver whose TMPDIR is ``tmp``, except Ray's agents."""
    agents = (b"ray::DashboardAgent", b"ray::RuntimeEnvAgent")
    core = []
    for pid in processes_with_env("TMPDIR", str(tmp)):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if not cmdline.startswith(agents):
            core.append(pid)
    return core


def _staging(parent: Path) -> Path:
    [staging] = parent.glob(".run.overlap-staging-*")
    return staging


def _faults(monkeypatch, **faults) -> None:
    monkeypatch.setenv(ENV_VAR, json.dumps(faults))


@pytest.mark.slow
def test_a_worker_killed_mid_run_is_replaced_and_results_equal_a_clean_run(
        local_ray, clean_run, tmp_path, monkeypatch):
    log = tmp_path / "attempts"
    _faults(monkeypatch, partition=1, action="kill", log=str(log))
    run = score(PREDS, references=REFS, output=str(tmp_path / "run"),
                config=ScoreConfig(**SETTINGS))
    killed, retried = (int(line) for line in log.read_text().split())  # two attempts
    assert killed != retried and not _alive(killed)
    where = {e["partition"]: e["where"] for e in run.manifest["outputs"]["examples"]}
    assert where[1]["pid"] == retried  # the partition was written by the replacement
    assert where[1]["node_ip"] == "127.0.0.1"
    assert run.manifest["engine"]["engine"] == "ray"
    assert run.manifest["stages"]["score"] == {"partitions_run": 4, "partitions_reused": 0}
    assert_same_results(tmp_path / "run", clean_run)


@pytest.mark.slow
def test_a_transient_error_is_retried(local_ray, clean_run, tmp_path, monkeypatch):
    log = tmp_path / "attempts"
    _faults(monkeypatch, partition=2, action="transient", log=str(log))
    score(PREDS, references=REFS, output=str(tmp_path / "run"), config=ScoreConfig(**SETTINGS))
    assert len(log.read_text().split()) == 2  # failed once, retried once
    assert_same_results(tmp_path / "run", clean_run)


def test_ray_retries_the_transient_errors_only():
    """What Ray is told to retry (the slow tier's Ray runs check that it does): the
    injected transient failure's class and raw I/O errors, never an input or config error."""
    from pipeline.engine.ray_runner import TRANSIENT_ERRORS

    assert issubclass(ExecutionError, TRANSIENT_ERRORS)
    assert issubclass(OSError, TRANSIENT_ERRORS)
    assert not issubclass(InputError, TRANSIENT_ERRORS)
    assert not issubclass(ConfigError, TRANSIENT_ERRORS)


@pytest.mark.slow
def test_an_input_error_on_a_worker_fails_once_clearly(local_ray, tmp_path, monkeypatch):
    _an_input_error_fails_once_clearly(tmp_path, monkeypatch, ScoreConfig(**SETTINGS))


def test_after_a_failed_stage_a_reused_ray_session_s_tasks_are_waited_for():
    """The Ray test above shares the session's Ray: the other partitions' tasks keep running
    after partition 0's InputError, and partition 1 writes its examples just as partition 0
    fails. The driver waits for them before deleting the staging directory (a file written
    during the deletion left it behind, under load); a Ray instance of the runner's own is
    stopped instead, at once."""
    from pipeline.engine.ray_runner import CANCEL_WAIT_S, RayRunner

    class FakeRay:
        def __init__(self):
            self.waits = []

        def wait(self, refs, *, num_returns, timeout):
            self.waits.append((refs, num_returns, timeout))
            return refs, []

    def cancel_in_handler(runner, error):  # as the engine calls it: handling the failure
        try:
            raise error
        except BaseException:
            runner.cancel(["a", "b", "c"])

    reused = RayRunner.__new__(RayRunner)
    reused._local, reused._connected, reused._ray = None, False, FakeRay()
    cancel_in_handler(reused, InputError("bad"))
    assert reused._ray.waits == [(["a", "b", "c"], 3, CANCEL_WAIT_S)]
    cancel_in_handler(reused, KeyboardInterrupt())  # Ctrl-C: no wait, the staging is kept
    assert len(reused._ray.waits) == 1
    for local, connected in ((object(), False), (None, True)):
        own = RayRunner.__new__(RayRunner)
        own._local, own._connected, own._ray = local, connected, FakeRay()
        cancel_in_handler(own, InputError("bad"))
        assert own._ray.waits == []


def test_an_input_error_in_process_fails_once_clearly(tmp_path, monkeypatch):
    """The same on the in-process engine (the fast tier's twin of the Ray test above)."""
    _an_input_error_fails_once_clearly(tmp_path, monkeypatch,
                                       ScoreConfig(engine="local", **SETTINGS))


def _an_input_error_fails_once_clearly(tmp_path, monkeypatch, config: ScoreConfig) -> None:
    log = tmp_path / "attempts"
    _faults(monkeypatch, partition=0, action="input", log=str(log))
    with pytest.raises(InputError, match=r"^injected input error in partition 0$"):
        score(PREDS, references=REFS, output=str(tmp_path / "run"), config=config)
    assert len(log.read_text().split()) == 1  # never retried
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attempts"]  # nothing kept


def test_after_an_infrastructure_failure_a_rerun_scores_only_unfinished_partitions(
        clean_run, tmp_path, monkeypatch):
    # in-process, one task at a time: partitions run in order
    cfg = ScoreConfig(engine="local", num_cpus=1, **SETTINGS)
    _faults(monkeypatch, partition=2, action="transient", log=str(tmp_path / "attempts"))
    with pytest.raises(ExecutionError, match="injected transient failure in partition 2"):
        score(PREDS, references=REFS, output=str(tmp_path / "run"), config=cfg)
    assert not (tmp_path / "run").exists()  # nothing under the final path
    staging = _staging(tmp_path)
    assert sorted(p.name for p in (staging / "completions").iterdir()) == [
        "part-00000.json", "part-00001.json"]
    staged = staging / "run" / "examples"
    inodes = {p.name: p.stat().st_ino for p in staged.iterdir()}
    assert sorted(inodes) == ["part-00000.parquet", "part-00001.parquet"]
    # every unit's rows are in the exchange files, kept for the rerun (4 + 1 units)
    assert sorted(p.name for p in (staging / "exchange").iterdir()) == [
        *(f"predictions-{i:05d}.arrow" for i in range(4)), "references-00000.arrow"]
    run_id = json.loads((staging / "state.json").read_text())["run_id"]

    monkeypatch.delenv(ENV_VAR)
    run = score(PREDS, references=REFS, output=str(tmp_path / "run"), config=cfg)
    assert run.run_id == run_id  # the interrupted run's id, so its parts fit
    assert run.manifest["resumed"] is True
    assert run.manifest["stages"] == {
        "split": {"units_run": 0, "units_reused": 5},  # no input read again
        "check": {"partitions_run": 0, "partitions_reused": 4},
        "score": {"partitions_run": 2, "partitions_reused": 2}}
    for name, inode in inodes.items():  # moved into place, not rewritten
        assert (tmp_path / "run" / "examples" / name).stat().st_ino == inode
    assert_same_results(tmp_path / "run", clean_run)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attempts", "run"]  # staging gone


def test_a_rerun_with_other_settings_or_run_id_starts_afresh(tmp_path, monkeypatch):
    cfg = ScoreConfig(engine="local", **SETTINGS)
    _faults(monkeypatch, partition=1, action="transient", log=str(tmp_path / "attempts"))
    with pytest.raises(ExecutionError):
        score(PREDS, references=REFS, output=str(tmp_path / "run"), config=cfg)
    first = _staging(tmp_path)
    monkeypatch.delenv(ENV_VAR)
    other = ScoreConfig(engine="local", stemmer="porter", **SETTINGS)
    run = score(PREDS, references=REFS, output=str(tmp_path / "run"), config=other)
    assert run.manifest["resumed"] is False
    assert run.manifest["stages"]["score"] == {"partitions_run": 4, "partitions_reused": 0}
    assert first.exists()  # another key: left alone, never reused
    assert _staging(tmp_path) == first
    # The same work under another run id: the staged parts carry the old id, so not reused.
    run = score(PREDS, references=REFS, output=str(tmp_path / "again"), config=cfg,
                run_id="other")
    assert run.manifest["resumed"] is False


def test_the_resume_key_follows_inputs_and_settings_not_where_the_work_runs(tmp_path):
    from pipeline.engine import make_plan
    from pipeline.engine.resume import run_key

    shutil.copytree(DATA, tmp_path / "data")
    preds, refs = str(tmp_path / "data" / "predictions"), str(tmp_path / "data" /
                                                              "references.parquet")

    def key(cfg: ScoreConfig) -> str:
        return run_key(make_plan(preds, refs, cfg), cfg)

    cfg = ScoreConfig(engine="local", **SETTINGS)
    first = key(cfg)
    assert len(first) == 16 and first == key(cfg)
    assert key(ScoreConfig(engine="ray", address="10.0.0.1:6379", num_cpus=3, ship_code=False,
                           **SETTINGS)) == first
    assert key(ScoreConfig(engine="local", seed=7, **SETTINGS)) != first
    assert key(ScoreConfig(engine="local", **{**SETTINGS, "partition_rows": 600})) != first
    shard = tmp_path / "data" / "predictions" / "part-0001.parquet"
    stat = shard.stat()
    os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # rewritten input
    assert key(cfg) != first


def test_a_crash_after_the_last_partition_resumes_without_reading_any_input(
        clean_run, tmp_path, monkeypatch):
    from pipeline.engine import run as engine_run
    from pipeline.io.write import OutputDir

    cfg = ScoreConfig(engine="local", **SETTINGS)
    publish = OutputDir.publish

    def crash(self, *, run_id):
        raise ExecutionError("storage went away while publishing")

    monkeypatch.setattr(OutputDir, "publish", crash)
    with pytest.raises(ExecutionError, match="publishing"):
        score(PREDS, references=REFS, output=str(tmp_path / "run"), config=cfg)
    assert len(list((_staging(tmp_path) / "completions").iterdir())) == 4
    monkeypatch.setattr(OutputDir, "publish", publish)

    def no_reading(*args):
        raise AssertionError("an input was read")

    monkeypatch.setattr(engine_run, "exchange_unit", no_reading)
    run = score(PREDS, references=REFS, output=str(tmp_path / "run"), config=cfg)
    assert run.manifest["stages"]["score"] == {"partitions_run": 0, "partitions_reused": 4}
    assert run.manifest["counts"]["examples_scored"] == 2500
    assert_same_results(tmp_path / "run", clean_run)


def test_a_write_cut_short_is_never_published(tmp_path):
    import pyarrow as pa

    from pipeline.io.write import OutputDir, write_parquet

    out = OutputDir(str(tmp_path / "run"), overwrite=False, key="k")
    assert out.prepare(run_id="r") is False
    write_parquet(pa.table({"x": [1]}), out.staged("examples/part-00000.parquet"),
                  metadata={b"overlap.run_id": b"r"})
    (Path(out.staged("examples").path) / ".part-00001.parquet.tmp").write_text("half")
    out.publish(run_id="r")
    assert sorted(p.name for p in (tmp_path / "run" / "examples").iterdir()) == [
        "part-00000.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_bad_fault_settings_are_refused(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, '{"actoin": "kill"}')
    with pytest.raises(ConfigError, match=ENV_VAR):
        score(PREDS, references=REFS, output=str(tmp_path / "run"),
              config=ScoreConfig(engine="local", bootstrap=0))


@pytest.mark.slow
def test_a_killed_driver_is_resumed_redoing_only_unfinished_partitions(clean_run):
    """The CLI on a local Ray, killed with SIGKILL mid-run, then run again as it was."""
    command = [str(OVERLAP)] if OVERLAP.exists() else [
        sys.executable, "-c", "from pipeline.cli import main; main()"]
    tmp = Path(tempfile.mkdtemp(prefix="ovk", dir="/tmp"))  # short: Ray's socket paths
    try:
        (tmp / "settings.yaml").write_text(SETTINGS_YAML)
        out = tmp / "runs" / "run"
        out.parent.mkdir()
        command += ["score", PREDS, "--references", REFS, "--output", str(out),
                    "--config", str(tmp / "settings.yaml"), "--engine", "ray"]
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", ENV_VAR)}
        env["TMPDIR"] = str(tmp)  # Ray's temp dir, and a mark on every process it starts

        # 1. Each partition takes 1 s longer and the last one hangs (so it is unfinished
        # whenever the kill comes): kill the driver once a partition is done.
        hang = tmp / "hang"
        slow = {**env, ENV_VAR: json.dumps({"delay_s": 1.0, "partition": 3, "action": "hang",
                                            "log": str(hang)})}
        proc = subprocess.Popen(command, env=slow, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 240
        markers: list[Path] = []
        while not markers:
            assert proc.poll() is None, proc.communicate()
            assert not out.exists()  # nothing is ever visible under the final path
            assert time.monotonic() < deadline, "no partition finished in time"
            time.sleep(0.05)
            markers = list(out.parent.glob(".run.overlap-staging-*/completions/part-*.json"))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        # Ray's processes and workers go down with the driver (a worker may still finish
        # its partition meanwhile: markers are counted after). Its two agents linger for up
        # to a minute (their parent-health check) and write nothing of ours: not waited for.
        deadline = time.monotonic() + 30
        while _ray_core(tmp) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _ray_core(tmp) == []
        assert not out.exists()
        staging = _staging(out.parent)
        done = sorted(p.name for p in (staging / "completions").iterdir())
        assert 1 <= len(done) < 4 and "part-00003.json" not in done, done
        inodes = {p.name: p.stat().st_ino for p in (staging / "run" / "examples").iterdir()
                  if not p.name.startswith(".")}
        assert sorted(inodes) == [d.replace(".json", ".parquet") for d in done]
        run_id = json.loads((staging / "state.json").read_text())["run_id"]
        print(f"driver killed with {len(done)} of 4 partitions done: {done}")

        # 2. The same command again: it resumes.
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["run_id"] == run_id and manifest["resumed"] is True
        assert manifest["stages"]["split"]["units_run"] == 0  # exchange files reused
        assert {k: manifest["stages"][k] for k in ("check", "score")} == {
            "check": {"partitions_run": 0, "partitions_reused": 4},
            "score": {"partitions_run": 4 - len(done), "partitions_reused": len(done)}}
        for name, inode in inodes.items():  # the finished partitions were not redone
            assert (out / "examples" / name).stat().st_ino == inode
        assert f"resumed an interrupted run: {len(done)} of 4 partitions reused" in again.stdout
        assert_same_results(out, clean_run)
        assert [p.name for p in out.parent.iterdir()] == ["run"]  # staging gone
    finally:
        for pid in processes_with_env("TMPDIR", str(tmp)):  # ours: lingering agents
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)


def test_an_unreachable_cluster_address_fails_fast_with_exit_4(tmp_path):
    """A wrong --address must not hang a nightly job: one line, exit 4, nothing written.

    Run as its own process: in this test session Ray is already initialized, and an
    in-process run would reuse that connection.
    """
    import socket
    import time

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.2", 0))
        port = s.getsockname()[1]
    data = Path(__file__).resolve().parents[2] / "pipeline" / "data" / "realsumm"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", "from pipeline.cli import main; main()", "score",
         str(data / "predictions"), "--references", str(data / "references.parquet"),
         "--output", str(tmp_path / "out"), "--address", f"127.0.0.2:{port}",
         "--allow-local-paths"],
        env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 4, result.stderr
    assert "could not connect to the Ray cluster at 127.0.0.2:" in result.stderr
    assert time.monotonic() - start < 60
    assert not (tmp_path / "out").exists()
