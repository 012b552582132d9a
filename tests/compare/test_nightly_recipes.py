"""Issue 24 (failures 8 and 9): retried nights, and the cron and Airflow recipes of
docs/compare.md run as written (paths replaced by temporary ones)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from pipeline import api
from pipeline.config import ScoreConfig
from tests.compare.test_compare_fixtures import realsumm, truncate_half

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "compare.md"
OVERLAP = Path(sys.executable).parent / "overlap"


@pytest.fixture(scope="module")
def texts():
    return realsumm().head(60).reset_index(drop=True)


def _predictions(path: Path, frame, *, seed: int, cut: bool = False,
                 with_references: bool = False) -> Path:
    rng = np.random.default_rng(seed)
    out = frame[["id", "prediction"]].copy()
    if with_references:
        out["references"] = [[r] for r in frame["reference"]]
    words = [t.split() for t in out["prediction"]]
    out["prediction"] = [" ".join(w for w in ws if rng.random() > 0.05) for ws in words]
    if cut:
        out["prediction"] = [truncate_half(t) for t in out["prediction"]]
    path.parent.mkdir(parents=True, exist_ok=True)
    out.to_parquet(path)
    return path


def _references(path: Path, frame) -> Path:
    refs = frame[["id"]].copy()
    refs["references"] = [[r] for r in frame["reference"]]
    path.parent.mkdir(parents=True, exist_ok=True)
    refs.to_parquet(path)
    return path


def _block(kind: str) -> str:
    text = DOC.read_text()
    found = re.findall(rf"```{kind}\n(.*?)```", text, flags=re.S)
    assert len(found) == 1, f"one ```{kind} block expected in docs/compare.md"
    return found[0]


CONFIG = ScoreConfig(metrics=("rouge1",), bootstrap=0, engine="local", keep_text=True)


def test_a_retried_night_without_run_id_keeps_its_alarm(tmp_path, texts):
    # failure 8: the retry compared against the night's first attempt and passed
    root = str(tmp_path / "root")
    opts = {"n_bootstrap": 200, "top": 2}
    for t, date in enumerate(("2025-01-01", "2025-01-02")):
        night = api.nightly(root, str(_predictions(tmp_path / f"p{t}.parquet", texts, seed=t,
                                                    with_references=True)),
                            run_date=date, run_id=f"n{t}", config=CONFIG,
                            compare_options=opts, plot=False)
        assert night.exit_code == 0
    cut = str(_predictions(tmp_path / "cut.parquet", texts, seed=7, cut=True,
                           with_references=True))
    first = api.nightly(root, cut, run_date="2025-01-03", config=CONFIG, compare_options=opts,
                        plot=False)
    assert first.exit_code == 1 and first.baseline.endswith("run_id=n1")
    retry = api.nightly(root, cut, run_date="2025-01-03", config=CONFIG, compare_options=opts,
                        plot=False)
    assert retry.run_dir != first.run_dir  # a new run id: a second attempt of the night
    assert retry.exit_code == 1, "the retry turned the alarm into a pass"
    assert retry.baseline.endswith("run_date=2025-01-02/run_id=n1")
    docs = [json.loads((Path(r.compare_dir) / "compare.json").read_text())
            for r in (first, retry)]
    assert docs[0]["alarms"] == docs[1]["alarms"] != []
    assert [r["delta"] for r in docs[0]["rows"]] == [r["delta"] for r in docs[1]["rows"]]
    # the history holds earlier dates only, never the night's first attempt
    assert [n["run_date"] for n in docs[1]["history"]["nights"]] == ["2025-01-01",
                                                                      "2025-01-02"]
    # the next night takes the newest attempt of the retried date as its baseline
    nxt = api.nightly(root, cut, run_date="2025-01-04", run_id="n4", config=CONFIG,
                      compare_options=opts, plot=False)
    assert nxt.baseline == retry.run_dir and nxt.exit_code == 0


@pytest.mark.skipif(not OVERLAP.exists(), reason="the overlap console script is not installed")
def test_the_cron_recipe_mails_alarms_and_logs_every_night(tmp_path, texts):
    # failure 9: the recipe redirected everything to a log, so cron had nothing to mail
    block = _block("cron")
    env_lines = [ln for ln in block.splitlines() if re.match(r"^[A-Z_]+=", ln)]
    jobs = [ln for ln in block.splitlines() if ln.strip() and ln not in env_lines]
    assert len(jobs) == 1 and jobs[0].split()[:5] == ["30", "2", "*", "*", "*"]
    assert "MAILTO=" in env_lines[0]
    command = jobs[0].split(None, 5)[5]
    assert "%" not in command  # cron turns an unescaped % into a newline
    srv, data = tmp_path / "srv", tmp_path / "data"
    (srv / ".venv" / "bin").mkdir(parents=True)
    (srv / ".venv" / "bin" / "overlap").symlink_to(OVERLAP)
    (srv / "scripts").mkdir()
    (srv / "scripts" / "nightly.sh").symlink_to(REPO / "scripts" / "nightly.sh")
    (srv / "configs").mkdir()
    (srv / "configs" / "nightly.yaml").write_text(
        "metrics: [rougeL]\nbootstrap: 0\nengine: local\n")
    log = tmp_path / "log" / "overlap-nightly.log"
    log.parent.mkdir()
    tonight = data / "evals" / "tonight" / "predictions"
    refs = _references(data / "evals" / "frozen" / "references", texts)
    command = (command.replace("/srv/overlap-pipeline", str(srv))
               .replace("/var/log/overlap-nightly.log", str(log))
               .replace("/data/overlap", str(data / "overlap"))
               .replace("s3://evals/tonight/predictions", str(tonight / "p.parquet"))
               .replace("s3://evals/frozen/references", str(refs)))
    assert "s3://" not in command and "/srv/" not in command

    def cron(date: str, cut: bool) -> subprocess.CompletedProcess:
        _predictions(tonight / "p.parquet", texts, seed=int(date[-2:]), cut=cut)
        env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "SHELL": "/bin/sh",
               "LOGNAME": "cron", "RUN_DATE": date}
        # cron runs the line with /bin/sh and mails stdout and stderr together
        return subprocess.run(["/bin/sh", "-c", command], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300, cwd="/")

    quiet = [cron("2025-01-01", False), cron("2025-01-02", False)]
    for done in quiet:
        assert done.returncode == 0 and done.stdout == "", done.stdout  # no mail
    alarm = cron("2025-01-03", True)
    assert alarm.returncode == 1
    assert "ALARM" in alarm.stdout and "exited 1" in alarm.stdout  # cron mails this
    logged = log.read_text()
    assert logged.count("== exit 0") == 2 and logged.count("== exit 1") == 1
    assert "no alarm" in logged and "ALARM" in logged
    # a failure (unreadable predictions) is mailed too
    (tonight / "p.parquet").write_text("not parquet")
    failed = subprocess.run(["/bin/sh", "-c", command],
                            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
                                 "RUN_DATE": "2025-01-04"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=300, cwd="/")
    assert failed.returncode == 2 and "overlap score failed" in failed.stdout


class _BashOperator:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


@pytest.mark.skipif(not OVERLAP.exists(), reason="the overlap console script is not installed")
def test_the_airflow_recipe_with_a_retry_keeps_the_alarm(tmp_path, texts, monkeypatch):
    # failure 8 as Airflow runs it: RUN_DATE without RUN_ID, the task retried
    airflow = types.ModuleType("airflow")
    operators = types.ModuleType("airflow.operators")
    bash = types.ModuleType("airflow.operators.bash")
    bash.BashOperator = _BashOperator
    for name, mod in (("airflow", airflow), ("airflow.operators", operators),
                      ("airflow.operators.bash", bash)):
        monkeypatch.setitem(sys.modules, name, mod)
    scope: dict = {}
    exec(_block("python"), scope)  # noqa: S102 - the recipe as the docs print it
    task = scope["nightly_overlap"].kwargs
    assert task["append_env"] is True and task["retries"] >= 1
    srv, data = tmp_path / "srv", tmp_path / "data"
    (srv / ".venv" / "bin").mkdir(parents=True)
    (srv / ".venv" / "bin" / "overlap").symlink_to(OVERLAP)
    (srv / "configs").mkdir()
    (srv / "configs" / "nightly.yaml").write_text(
        "metrics: [rougeL]\nbootstrap: 0\nengine: local\n")
    refs = _references(data / "evals" / "frozen" / "references", texts)

    def localize(text: str) -> str:
        return (text.replace("/srv/overlap-pipeline", str(srv))
                .replace("/data/overlap", str(data / "overlap"))
                .replace("s3://evals/frozen/references", str(refs))
                .replace("s3://evals/", f"{data}/evals/"))

    def run_task(ds: str, attempt: int) -> subprocess.CompletedProcess:
        render = lambda s: localize(s.replace("{{ ds }}", ds))  # noqa: E731
        env = {**os.environ, **{k: render(v) for k, v in task["env"].items()}}
        env.pop("RUN_ID", None)
        cwd = tmp_path / f"airflow-tmp-{ds}-{attempt}"  # Airflow runs in a temporary dir
        cwd.mkdir()
        return subprocess.run(["bash", "-c", render(task["bash_command"])], env=env,
                              capture_output=True, text=True, timeout=300, cwd=cwd)

    for ds, cut in (("2025-01-01", False), ("2025-01-02", False), ("2025-01-03", True)):
        _predictions(data / "evals" / ds / "predictions" / "p.parquet", texts,
                     seed=int(ds[-2:]), cut=cut)
    assert run_task("2025-01-01", 1).returncode == 0
    assert run_task("2025-01-02", 1).returncode == 0
    first = run_task("2025-01-03", 1)
    assert first.returncode == 1, first.stderr  # the task fails: Airflow alerts and retries
    retry = run_task("2025-01-03", 2)
    assert retry.returncode == 1, retry.stderr  # the retry fails the same way
    assert "run_date=2025-01-02/run_id=" in retry.stderr.split("comparing", 1)[1]
    nights = sorted((data / "overlap" / "compare" / "run_date=2025-01-03").iterdir())
    docs = [json.loads((n / "compare.json").read_text()) for n in nights]
    assert len(docs) == 2 and docs[0]["alarms"] == docs[1]["alarms"] != []
