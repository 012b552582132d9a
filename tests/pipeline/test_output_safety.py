"""Never delete what we did not write; one writer per output (issue 12).

Small inputs, ``--engine local``. The lock's object-store protocol runs on fsspec's
``memory://`` filesystem.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import OutputExistsError
from pipeline.io import lock as lock_module
from pipeline.io.files import locate
from pipeline.io.lock import OutputLock

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--engine", "local", "--bootstrap", "0"]


def _inputs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": ["a", "b"], "prediction": ["the cat", "a dog"],
                             "references": [["the cat sat"], ["a dog barked"]]}),
                   folder / "p.parquet")
    return folder / "p.parquet"


def _score(pred: Path | str, out: Path | str, *extra: str, cwd: Path | None = None):
    if cwd is not None:
        old = os.getcwd()
        os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["score", str(pred), "--output", str(out), *FAST,
                                         *extra])
    finally:
        if cwd is not None:
            os.chdir(old)


def _one_line_exit(result, code: int, *fragments: str) -> None:
    assert result.exit_code == code, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert result.stdout == "" and "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_folder_named_like_an_output_is_never_replaced(tmp_path):
    pred = _inputs(tmp_path / "in")
    mine = tmp_path / "mine"  # the names of an output, none of its contents
    (mine / "examples").mkdir(parents=True)
    (mine / "examples" / "notes.txt").write_text("mine")
    (mine / "manifest.json").write_text('{"anything": 1}')
    (mine / "_SUCCESS").write_text("")
    before = _snapshot(mine)
    _one_line_exit(_score(pred, mine, "--overwrite"), 3, f"output {mine} exists and is not a "
                   "complete overlap output (it holds _SUCCESS, examples/, examples/notes.txt, "
                   "manifest.json)")
    assert _snapshot(mine) == before


def test_a_complete_output_with_a_file_added_is_not_replaced(tmp_path):
    pred = _inputs(tmp_path / "in")
    out = tmp_path / "out"
    assert _score(pred, out).exit_code == 0
    (out / "examples" / "my-analysis.csv").write_text("keep me")
    _one_line_exit(_score(pred, out, "--overwrite"), 3,
                   "files its manifest does not name: examples/my-analysis.csv")
    assert (out / "examples" / "my-analysis.csv").read_text() == "keep me"
    (out / "examples" / "my-analysis.csv").unlink()
    result = _score(pred, out, "--overwrite")  # a complete output of ours: replaced
    assert result.exit_code == 0, result.output


def test_an_output_holding_its_own_input_is_refused_before_any_work(tmp_path):
    data = tmp_path / "data"
    pred = _inputs(data)
    before = _snapshot(tmp_path)
    _one_line_exit(_score(pred, data, "--overwrite"), 2, f"the predictions input {pred} is "
                   f"inside the output {data}")
    _one_line_exit(_score(data, data / "out"), 2, f"output {data / 'out'} is inside the "
                   f"predictions input {data}")
    _one_line_exit(_score(str(data) + "/*.parquet", data / "runs" / "x"), 2,
                   "is inside the predictions input")
    assert _snapshot(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == ["data"]


def test_output_dot_is_refused_cleanly(tmp_path):
    pred = _inputs(tmp_path / "in")
    work = tmp_path / "work"
    work.mkdir()
    for where in (".", str(work)):
        _one_line_exit(_score(pred, where, cwd=work), 2, "is the current directory or above "
                       "it", "--output runs/tonight")
    _one_line_exit(_score(pred, "..", cwd=work), 2, "is inside the output ..")
    assert os.listdir(work) == []
    assert _score(pred, "runs/x", cwd=work).exit_code == 0  # below it: fine
    assert (work / "runs" / "x" / "_SUCCESS").exists()


def test_a_second_writer_exits_3_at_once_naming_the_holder(tmp_path):
    pred = _inputs(tmp_path / "in")
    out = tmp_path / "out"
    env = {**os.environ, "OVERLAP_FAULTS": json.dumps({"delay_s": 30})}
    first = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "score", str(pred),
                              "--output", str(out), *FAST, "--run-id", "first"], env=env,
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lock = tmp_path / ".out.overlap-lock"
        deadline = time.monotonic() + 120
        while not (lock.exists() and lock.read_text()) and time.monotonic() < deadline:
            time.sleep(0.2)
        holder = json.loads(lock.read_text())
        assert holder["pid"] == first.pid and holder["run_id"] == "first"
        t0 = time.monotonic()
        result = _score(pred, out, "--run-id", "second")
        assert time.monotonic() - t0 < 10
        _one_line_exit(result, 3, f"output {out} is being written by another run (host "
                       f"{holder['host']}, pid {first.pid}, started {holder['started_at']}, "
                       "run id first)")
        first.kill()  # dies holding the lock: the kernel releases it
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    assert lock.exists()  # left behind by the killed holder
    result = _score(pred, out, "--run-id", "third")  # a dead holder's lock is taken over
    assert result.exit_code == 0, result.output
    assert (out / "_SUCCESS").read_text().strip() == "third"
    assert not lock.exists()


def test_the_object_store_lock_names_its_holder_and_takes_over_a_stale_one(monkeypatch):
    pytest.importorskip("fsspec")
    monkeypatch.setattr(lock_module, "SETTLE_S", 0.0)
    final = locate("memory://bucket/runs/out")
    first = OutputLock(final, output="memory://bucket/runs/out")
    first.acquire(run_id="first")
    second = OutputLock(final, output="memory://bucket/runs/out")
    with pytest.raises(OutputExistsError, match="being written by another run .*run id first"):
        second.acquire(run_id="second")
    # a holder that stopped beating (crashed) is taken over
    first._stop.set()
    first._beat.join()
    record = json.loads(final.fs.open_input_stream(first.loc.path).read())
    record["heartbeat_unix_s"] -= lock_module.STALE_S + 1
    with final.fs.open_output_stream(first.loc.path) as fh:
        fh.write(json.dumps(record).encode())
    second.acquire(run_id="second")
    second.release()
    assert final.fs.get_file_info(first.loc.path).type.name == "NotFound"


def test_a_staged_file_of_another_run_is_never_published(tmp_path, monkeypatch):
    from pipeline.io import write as write_module

    pred = _inputs(tmp_path / "in")
    out = tmp_path / "out"
    real = write_module.OutputDir.check_provenance

    def intruder(self, *, run_id):  # another writer's file lands in the staging dir
        staged = Path(self.staging.path) / "run" / "examples" / "part-00000.parquet"
        table = pq.read_table(staged)
        pq.write_table(table.replace_schema_metadata({b"overlap.run_id": b"other"}), staged)
        return real(self, run_id=run_id)

    monkeypatch.setattr(write_module.OutputDir, "check_provenance", intruder)
    result = _score(pred, out, "--run-id", "mine")
    _one_line_exit(result, 3, "was written by run other, not by this run (mine)",
                   "nothing published")
    assert not out.exists()


@pytest.mark.parametrize("planted", ["symlink", "hardlink"])
def test_a_link_planted_as_the_lock_is_never_followed(tmp_path, planted):
    """Issue 19: a `.OUT.overlap-lock -> somefile` got that file truncated and overwritten."""
    pred = _inputs(tmp_path / "in")
    victim = tmp_path / "precious.txt"
    victim.write_text("not yours\n")
    lock = tmp_path / ".out.overlap-lock"
    if planted == "symlink":
        lock.symlink_to(victim)
    else:
        os.link(victim, lock)
    result = _score(pred, tmp_path / "out")
    _one_line_exit(result, 3, ".out.overlap-lock",
                   "a symbolic link" if planted == "symlink" else "links")
    assert victim.read_text() == "not yours\n"
    assert not (tmp_path / "out").exists()
    lock.unlink()  # once it is gone, the run goes through
    assert _score(pred, tmp_path / "out").exit_code == 0
    assert victim.read_text() == "not yours\n"


@pytest.mark.parametrize("planted", ["symlink", "hardlink"])
def test_a_link_planted_at_a_temporary_name_is_never_written_through(tmp_path, planted):
    """Files are written to `.NAME.tmp` and renamed: a link planted there is replaced, its
    target left alone (issue 19: never follow a symlink we did not create)."""
    from pipeline.io.write import write_parquet, write_text

    victim = tmp_path / "precious.txt"
    victim.write_text("not yours\n")
    for name, write in (("state.json", lambda loc: write_text("{}\n", loc)),
                        ("part.parquet", lambda loc: write_parquet(pa.table({"x": [1]}), loc))):
        tmp = tmp_path / f".{name}.tmp"
        if planted == "symlink":
            tmp.symlink_to(victim)
        else:
            os.link(victim, tmp)
        write(locate(str(tmp_path / name)))
        assert victim.read_text() == "not yours\n"
        assert not tmp.exists() and not tmp.is_symlink()
    assert (tmp_path / "state.json").read_text() == "{}\n"
    assert pq.read_table(tmp_path / "part.parquet").num_rows == 1


def _no_reference(folder: Path) -> Path:
    """Predictions the check stage refuses (after the output's directories are made)."""
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": ["a", "b"], "prediction": ["the cat", "a dog"],
                             "references": [["the cat sat"], []]}), folder / "bad.parquet")
    return folder / "bad.parquet"


def test_a_refused_run_removes_the_directories_it_made_and_no_other(tmp_path):
    bad = _no_reference(tmp_path / "in")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    out = mine / "new" / "a" / "b" / "out"
    _one_line_exit(_score(bad, out), 2, "empty or null list of references")
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]  # new/a/b gone
    empty = tmp_path / "empty"  # there before the run, empty: not ours to remove
    empty.mkdir()
    _one_line_exit(_score(bad, empty / "b" / "out"), 2, "empty or null list of references")
    assert empty.is_dir() and list(empty.iterdir()) == []
    result = _score(_inputs(tmp_path / "good"), out)  # a run that goes through keeps them
    assert result.exit_code == 0, result.output
    assert (out / "_SUCCESS").is_file()


def test_the_directories_made_stay_while_they_hold_anything(tmp_path):
    from pipeline.io.write import OutputDir

    out = OutputDir(str(tmp_path / "new" / "a" / "out"), overwrite=False, key="k")
    out.prepare(run_id="r1")
    out.release()  # an interrupted run: its staging stays for a resume, and so do they
    assert (tmp_path / "new" / "a" / ".out.overlap-staging-k" / "state.json").is_file()
    again = OutputDir(str(tmp_path / "new" / "a" / "out"), overwrite=False, key="k")
    assert again.prepare(run_id="r1")  # resumed; new/a were there before this run
    (tmp_path / "new" / "other.txt").write_text("someone else's")
    again.abort()
    again.release()
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["a", "other.txt"]
    assert list((tmp_path / "new" / "a").iterdir()) == []


def test_the_directories_made_on_object_storage_are_removed_too(monkeypatch):
    pytest.importorskip("fsspec")
    import uuid

    from pipeline.io.write import OutputDir

    monkeypatch.setattr(lock_module, "SETTLE_S", 0.0)
    bucket = f"memory://made-{uuid.uuid4().hex[:8]}"
    keep = locate(f"{bucket}/keep")
    keep.fs.create_dir(keep.path)
    out = OutputDir(f"{bucket}/keep/new/a/out", overwrite=False, key="k")
    out.prepare(run_id="r1")
    assert keep.fs.get_file_info(f"{keep.path}/new/a").type.name == "Directory"
    out.abort()
    out.release()
    assert keep.fs.get_file_info(f"{keep.path}/new").type.name == "NotFound"
    assert keep.fs.get_file_info(keep.path).type.name == "Directory"


def test_a_staging_directory_that_cannot_be_made_releases_the_lock(tmp_path):
    from pipeline.errors import ExecutionError
    from pipeline.io.lock import lock_location
    from pipeline.io.write import OutputDir

    out = OutputDir(str(tmp_path / "out"), overwrite=False, key="k")
    planted = tmp_path / ".out.overlap-staging-k"
    planted.write_text("a file where the staging directory goes")
    with pytest.raises(ExecutionError, match="cannot create"):
        out.prepare(run_id="r1")
    assert planted.read_text() == "a file where the staging directory goes"  # not ours
    assert lock_location(locate(str(tmp_path / "out"))).path not in \
        [str(p) for p in tmp_path.iterdir()]
    planted.unlink()  # the next run is not refused by a lock nobody holds
    again = OutputDir(str(tmp_path / "out"), overwrite=False, key="k")
    assert not again.prepare(run_id="r1")
    again.release()


def _complete_run(tmp_path: Path) -> tuple[Path, Path]:
    pred = _inputs(tmp_path / "in")
    run = tmp_path / "runs" / "realsumm"
    assert _score(pred, run).exit_code == 0
    return pred, run


def test_no_command_writes_into_a_complete_score_run(tmp_path):
    pred, run = _complete_run(tmp_path)
    before = _snapshot(run)
    judgments = tmp_path / "j.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "system": ["s", "s"], "input": ["a", "b"],
                             "human": [1.0, 2.0]}), judgments)
    runner = CliRunner()
    attempts = {
        "compare into the run": ["compare", str(run), str(run), "--output", str(run)],
        "compare below the run": ["compare", str(run), str(run), "--output", str(run / "c")],
        "report into the run": ["report", str(run), "--output", str(run / "report.html")],
        "agree into the run": ["agree", str(run), "--judgments", str(judgments),
                               "--output", str(run)],
        "score below the run": ["score", str(pred), "--output", str(run / "sub"), *FAST],
        "publish below the run": ["publish", str(run), "--delta", str(run / "tables")],
    }
    for what, args in attempts.items():
        result = runner.invoke(main, args)
        _one_line_exit(result, 3, f"the overlap score run {os.path.realpath(run)}")
        assert _snapshot(run) == before, what
        assert sorted(p.name for p in run.parent.iterdir()) == ["realsumm"], what
    # The run stays one that --overwrite replaces.
    assert _score(pred, run, "--overwrite").exit_code == 0


def test_a_comparison_beside_a_run_is_still_written(tmp_path):
    _, run = _complete_run(tmp_path)
    result = CliRunner().invoke(main, ["compare", str(run), str(run), "--output",
                                       str(tmp_path / "runs" / "cmp")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "runs" / "cmp" / "compare.json").is_file()


def test_a_dangling_symlink_output_is_refused_before_any_work(tmp_path):
    pred = _inputs(tmp_path / "in")
    link = tmp_path / "linkout"
    link.symlink_to(tmp_path / "nonexistent")
    _one_line_exit(_score(pred, link), 3, f"output {link} is a symbolic link; refusing to "
                   "replace it", "pass the real path")
    assert link.is_symlink() and os.readlink(link) == str(tmp_path / "nonexistent")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "linkout"]  # nothing staged


def test_a_symlink_to_an_empty_directory_is_not_replaced(tmp_path):
    pred = _inputs(tmp_path / "in")
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "linkout"
    link.symlink_to(target)
    _one_line_exit(_score(pred, link, "--overwrite"), 3, "is a symbolic link")
    assert link.is_symlink() and list(target.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "linkout", "target"]


def test_agree_refuses_a_symlink_output(tmp_path):
    _, run = _complete_run(tmp_path)
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "agreeout"
    link.symlink_to(target)
    result = CliRunner().invoke(main, ["agree", str(run), "--judgments",
                                       str(tmp_path / "j.parquet"), "--output", str(link)])
    _one_line_exit(result, 3, "is a symbolic link")
    assert link.is_symlink() and list(target.iterdir()) == []


def _glob_inputs(tmp_path: Path) -> None:
    for shard, ids in (("preds1.parquet", ["a", "b"]), ("preds2.parquet", ["c", "d"])):
        pq.write_table(pa.table({"id": ids, "prediction": ["the cat", "a dog"],
                                 "references": [["the cat sat"], ["a dog barked"]]}),
                       tmp_path / shard)


def test_a_glob_input_conflicts_only_with_an_output_it_could_match(tmp_path):
    _glob_inputs(tmp_path)
    result = _score("preds*.parquet", "runs/globtest", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "runs" / "globtest" / "_SUCCESS").is_file()
    # preds_out/aggregate.parquet would match preds*.parquet: a real conflict.
    _one_line_exit(_score("preds*.parquet", "preds_out", cwd=tmp_path), 2,
                   "output preds_out is inside the predictions input preds*.parquet")
    assert not (tmp_path / "preds_out").exists()


def test_a_glob_without_a_match_says_so(tmp_path):
    _glob_inputs(tmp_path)
    _one_line_exit(_score("nomatch*.parquet", "runs/globtest", cwd=tmp_path), 2,
                   "no file matches nomatch*.parquet")
    assert not (tmp_path / "runs").exists()
