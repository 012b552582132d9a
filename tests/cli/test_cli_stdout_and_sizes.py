"""The command line under hostile use: stdout that cannot be written (a full disk, a closed
pipe) and sizes no machine can hold (issue 25, items 4 and 5).

Run as the ``overlap`` process (``python -m pipeline.cli``): stdout is a real file
descriptor, and the exit code is the process's own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main

N = 40
WORDS = [f"w{i}" for i in range(12)]


def _inputs(folder: Path, *, drop: int) -> str:
    """N examples whose prediction is the reference minus its last ``drop`` words."""
    folder.mkdir(parents=True, exist_ok=True)
    refs = [" ".join(WORDS[i % 3:]) for i in range(N)]
    preds = [" ".join(r.split()[:len(r.split()) - drop]) for r in refs]
    path = folder / "p.parquet"
    pq.write_table(pa.table({"id": [f"e{i}" for i in range(N)], "prediction": preds,
                             "references": [[r] for r in refs]}), path)
    return str(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[str, str]:
    """A baseline and a candidate that lost a third of its words: compare alarms (exit 1)."""
    tmp = tmp_path_factory.mktemp("runs")
    out = []
    for name, drop in (("base", 0), ("cand", 4)):
        result = CliRunner().invoke(main, ["score", _inputs(tmp / name, drop=drop), "--output",
                                           str(tmp / f"run-{name}"), "--metrics", "rouge1",
                                           "--engine", "local", "--bootstrap", "20"])
        assert result.exit_code == 0, result.output
        out.append(str(tmp / f"run-{name}"))
    return out[0], out[1]


def overlap(*args: str, stdout=subprocess.PIPE, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=300, cwd=cwd, env=env)


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("Error")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr, stderr
    return lines[0]


# --- item 4: stdout on a full disk, stdout a closed pipe --------------------------------------

@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("command", ["signature", "compare-alarm", "compare-quiet", "score",
                                     "explain", "report", "nightly"])
def test_a_full_stdout_is_one_line_and_exit_4_never_the_alarms_1(runs, tmp_path, command):
    base, cand = runs
    args = {"signature": ["signature", "--metrics", "rouge1"],
            "compare-alarm": ["compare", base, cand],
            "compare-quiet": ["compare", base, base],
            "score": ["score", _inputs(tmp_path / "in", drop=1), "--output",
                      str(tmp_path / "out"), "--metrics", "rouge1", "--engine", "local",
                      "--bootstrap", "0"],
            "explain": ["explain", "--prediction", "the cat sat", "--reference", "the cat"],
            "report": ["report", cand, "--baseline", base, "--output",
                       str(tmp_path / "report.html")],
            "nightly": ["nightly", str(tmp_path / "nights"), _inputs(tmp_path / "in", drop=1)],
            }[command]
    env = {**os.environ, "RUN_DATE": "2025-01-02", "SCORE_ARGS": "--engine local --bootstrap 0"}
    if command == "nightly":  # a first night, which prints nothing on stdout
        first = overlap(*args[:-1], _inputs(tmp_path / "first", drop=0),
                        env={**env, "RUN_DATE": "2025-01-01"})
        assert first.returncode == 0, first.stderr
    with open("/dev/full", "w") as full:
        done = overlap(*args, stdout=full, env=env)
    assert done.returncode == 4, (done.returncode, done.stderr)
    line = _one_error_line(done.stderr)
    assert "stdout" in line and "No space left on device" in line, line
    would = {"compare-alarm": "1", "signature": "0", "compare-quiet": "0", "score": "0",
             "explain": "0", "report": "0", "nightly": "1"}
    assert f"exit code {would[command]}" in line, line
    if command == "score":  # the run itself is complete: only its summary was lost
        assert (tmp_path / "out" / "_SUCCESS").exists()


def test_a_closed_pipe_keeps_the_commands_exit_code_without_a_traceback(runs):
    base, cand = runs
    for args, code in ((["compare", base, cand, "--format", "table"], 1),
                       (["compare", base, base, "--format", "table"], 0)):
        proc = subprocess.Popen([sys.executable, "-m", "pipeline.cli", *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader is gone before the command writes (`| head -0`)
        stderr = proc.stderr.read().decode()
        assert proc.wait(timeout=300) == code, stderr
        assert "Traceback" not in stderr and "Error" not in stderr, stderr


# --- item 5: sizes no machine can hold -------------------------------------------------------

def test_score_bootstrap_beyond_memory_is_refused_up_front_with_nothing_staged(tmp_path):
    out = tmp_path / "out"
    done = overlap("score", _inputs(tmp_path / "in", drop=1), "--output", str(out),
                   "--engine", "local", "--bootstrap", str(10**10))
    assert done.returncode == 2, done.stderr
    line = _one_error_line(done.stderr)
    assert "bootstrap" in line and "memory" in line and "at most" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]  # no staging, no output
    big = overlap("score", _inputs(tmp_path / "in", drop=1), "--output", str(out),
                  "--engine", "local", "--bootstrap", str(10**20))
    assert big.returncode == 2 and "at most" in _one_error_line(big.stderr), big.stderr


def test_score_bootstrap_beyond_the_maximum_is_refused_up_front_with_nothing_staged(tmp_path):
    # 200,000 resamples of 40 rows fit in any memory (about 20 MB) but pass the documented
    # maximum (docs/failures.md): refused in one line before any work, not run for minutes
    from pipeline.config import MAX_BOOTSTRAP

    done = overlap("score", _inputs(tmp_path / "in", drop=1), "--output", str(tmp_path / "out"),
                   "--engine", "local", "--bootstrap", str(2 * MAX_BOOTSTRAP))
    assert done.returncode == 2, done.stderr
    line = _one_error_line(done.stderr)
    assert "bootstrap" in line and "200,000" in line and "100,000" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]  # no staging, no output


def test_score_bootstrap_beyond_the_work_limit_is_refused_before_anything_is_staged(
        tmp_path, monkeypatch):
    # rows x resamples above the limit: refused once the footers give the row count, before
    # the staging directory exists; the default 1,000 resamples are taken at any size. The
    # limit is lowered to 40 rows x 1,500 resamples here (a million-row input would be slow).
    import pipeline.config

    monkeypatch.setattr(pipeline.config, "MAX_BOOTSTRAP_WORK", N * 1500)
    path = _inputs(tmp_path / "in", drop=1)
    args = ["score", path, "--metrics", "rouge1", "--engine", "local"]
    refused = CliRunner().invoke(main, [*args, "--output", str(tmp_path / "a"),
                                        "--bootstrap", "1501"])
    assert refused.exit_code == 2, refused.output
    errors = [x for x in refused.output.splitlines() if x.startswith("Error")]
    assert len(errors) == 1 and "Traceback" not in refused.output, refused.output
    assert f"1,501 resamples over {N} examples" in errors[0], errors[0]
    assert "at most 1,500 resamples" in errors[0], errors[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]
    within = CliRunner().invoke(main, [*args, "--output", str(tmp_path / "b"),
                                       "--bootstrap", "1500"])
    assert within.exit_code == 0, within.output
    monkeypatch.setattr(pipeline.config, "MAX_BOOTSTRAP_WORK", N * 10)
    default = CliRunner().invoke(main, [*args, "--output", str(tmp_path / "c")])
    assert default.exit_code == 0, default.output  # 1,000 resamples: taken at any size


def test_compare_n_bootstrap_beyond_memory_is_refused_with_exit_2(runs, tmp_path):
    base, cand = runs
    for n in (10**10, 10**20):
        done = overlap("compare", base, cand, "--n-bootstrap", str(n), "--output",
                       str(tmp_path / "cmp"))
        assert done.returncode == 2, done.stderr
        line = _one_error_line(done.stderr)
        assert "n_bootstrap" in line and "memory" in line, line
        assert not (tmp_path / "cmp").exists()


def test_compare_n_bootstrap_beyond_the_maximum_is_refused_with_exit_2(runs, tmp_path):
    # 200,000 resamples of 40 pairs fit in any memory but pass score's documented maximum
    # (docs/failures.md), which compare shares: one line before any work, nothing written
    from pipeline.config import MAX_BOOTSTRAP

    base, cand = runs
    done = overlap("compare", base, cand, "--n-bootstrap", str(2 * MAX_BOOTSTRAP), "--output",
                   str(tmp_path / "cmp"))
    assert done.returncode == 2, done.stderr
    line = _one_error_line(done.stderr)
    assert "n_bootstrap: 200,000 resamples is more than the maximum of 100,000" in line, line
    assert not (tmp_path / "cmp").exists() and done.stdout == ""


@pytest.mark.parametrize("engine", ["local", None])  # the engine's and the in-memory pairing
def test_compare_n_bootstrap_beyond_the_work_limit_is_refused_with_exit_2(
        runs, tmp_path, monkeypatch, engine):
    # paired examples x resamples above the limit (lowered to 40 pairs x 1,500 resamples),
    # with the same wording as score's; the default 1,000 resamples are taken at any size
    import pipeline.compare.comparison
    import pipeline.compare.pairing
    from pipeline.compare import compare_runs

    for module in (pipeline.compare.comparison, pipeline.compare.pairing):
        monkeypatch.setattr(module, "MAX_BOOTSTRAP_WORK", N * 1500)
    base, cand = runs
    if engine is None:  # the library's in-memory path (compare_examples' own check)
        monkeypatch.setattr(pipeline.compare.comparison, "MAX_BOOTSTRAP_WORK", 10**12)
        from pipeline.errors import ConfigError

        with pytest.raises(ConfigError, match=f"n_bootstrap: 1,501 resamples over {N} "
                                              "examples are 6e04 weighted draws, more than "
                                              "the limit of 6e04"):
            compare_runs(base, cand, n_bootstrap=1501)
        assert compare_runs(base, cand, n_bootstrap=1500).comparison.n_bootstrap == 1500
        return
    args = ["compare", base, cand, "--engine", engine]
    refused = CliRunner().invoke(main, [*args, "--output", str(tmp_path / "a"),
                                        "--n-bootstrap", "1501"])
    assert refused.exit_code == 2, refused.output
    errors = [x for x in refused.output.splitlines() if x.startswith("Error")]
    assert len(errors) == 1 and "Traceback" not in refused.output, refused.output
    assert f"n_bootstrap: 1,501 resamples over {N} examples" in errors[0], errors[0]
    assert "at most 1,500 resamples" in errors[0], errors[0]
    assert not (tmp_path / "a").exists()
    within = CliRunner().invoke(main, [*args, "--output", str(tmp_path / "b"),
                                       "--n-bootstrap", "1500"])
    assert within.exit_code == 1, within.output  # the candidate's alarm
    for module in (pipeline.compare.comparison, pipeline.compare.pairing):
        monkeypatch.setattr(module, "MAX_BOOTSTRAP_WORK", N * 10)
    default = CliRunner().invoke(main, [*args, "--output", str(tmp_path / "c")])
    assert default.exit_code == 1, default.output  # 1,000 resamples: taken at any size


def test_top_and_history_window_are_bounded_by_the_data_not_refused(runs, tmp_path):
    # --top N lists at most the paired examples and --history-window N at most the nights
    # there are: a huge N costs nothing, so it is taken as "all"
    base, cand = runs
    done = overlap("compare", base, cand, "--top", str(10**20), "--history-window",
                   str(10**20), "--history", str(tmp_path), "--format", "table")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert sum(1 for line in done.stdout.splitlines() if line.strip().startswith("e")) <= N
