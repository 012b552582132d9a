"""`overlap nightly` and its history under hostile use (issue 25, items 2, 3, 6, 7, 10, 11,
15, 16, 19, 21, 29).

Outside truth: the dates and night counts follow from the directories written here; the
signature fields from the settings each night was scored with.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline import api
from pipeline.cli import main
from pipeline.config import ScoreConfig

SCORE = "--engine local --bootstrap 0"
CONFIG = ScoreConfig(metrics=("rouge1", "rougeL"), bootstrap=0, engine="local")


def _table(n: int = 8, *, shift: int = 0, refs: bool = True) -> pa.Table:
    columns = {"id": [f"e{i}" for i in range(n)],
               "prediction": [f"The cat sat on mat {i + shift} today" for i in range(n)]}
    if refs:
        columns["references"] = [[f"the cat sat on the mat {i}"] for i in range(n)]
    return pa.table(columns)


@pytest.fixture
def predictions(tmp_path) -> Path:
    path = tmp_path / "p.parquet"
    pq.write_table(_table(), path)
    return path


def _night(root: Path, preds: Path, date: str, run_id: str | None, *refs: str,
           score_args: str = SCORE, compare_args: str = "", **env: str):
    return CliRunner().invoke(main, ["nightly", str(root), str(preds), *refs],
                              env={"RUN_DATE": date, "RUN_ID": run_id,
                                   "SCORE_ARGS": score_args, "COMPARE_ARGS": compare_args,
                                   **env})


def _run(root: Path, date: str, run_id: str, tmp_path: Path, *, shift: int = 0,
         config: ScoreConfig = CONFIG) -> Path:
    preds = tmp_path / f"p-{date}-{run_id}.parquet"
    pq.write_table(_table(shift=shift), preds)
    out = root / f"run_date={date}" / f"run_id={run_id}"
    api.score(str(preds), output=str(out), config=config, run_id=run_id)
    return out


def _doc(root: Path, date: str, run_id: str) -> dict:
    path = root / "compare" / f"run_date={date}" / f"run_id={run_id}" / "compare.json"
    return json.loads(path.read_text())


# --- item 2: a fixed RUN_ID ---------------------------------------------------------------

def test_a_fixed_run_id_keeps_every_earlier_night_and_says_the_history_is_short(
        tmp_path, predictions):
    root = tmp_path / "nights"
    for day in ("01", "02", "03"):
        night = _night(root, predictions, f"2025-01-{day}", "nightly")
        assert night.exit_code == 0, night.output
    doc = _doc(root, "2025-01-03", "nightly")
    assert [n["run_date"] for n in doc["history"]["nights"]] == ["2025-01-01", "2025-01-02"]
    assert all(n["run_id"] == "nightly" for n in doc["history"]["nights"])
    short = [n for n in doc["notes"] if n.startswith("history: 2 nights")]
    assert short and "fewer than the 7" in short[0], doc["notes"]
    assert "nightly: note: history: 2 nights" in night.output


def test_an_empty_history_is_said(tmp_path):
    from pipeline.compare import compare_runs

    base = _run(tmp_path / "a", "2025-01-01", "b", tmp_path)
    cand = _run(tmp_path / "a", "2025-01-02", "c", tmp_path, shift=1)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = compare_runs(str(base), str(cand), history=str(empty), n_bootstrap=20, top=0)
    assert any(n.startswith("history: no earlier night under") for n in result.notes)


def test_the_history_table_keys_nights_by_date_not_run_id(tmp_path):
    from pipeline.compare import read_history_table
    from pipeline.io.runs import open_run

    root = tmp_path / "root"
    deltalake = pytest.importorskip("deltalake")
    runs = [_run(root, f"2025-01-0{t}", "nightly", tmp_path, shift=t) for t in (1, 2, 3)]

    # the aggregates table as publish writes it, one run id for every night
    for t, run in enumerate(runs, start=1):
        table = pq.read_table(run / "aggregate.parquet")
        n = table.num_rows
        table = (table.append_column("run_id", pa.array(["nightly"] * n))
                 .append_column("run_date", pa.array([f"2025-01-0{t}"] * n))
                 .append_column("signature", pa.array([json.loads(
                     (run / "manifest.json").read_text())["signature"]] * n)))
        deltalake.write_deltalake(str(tmp_path / "wh" / "aggregates"), table, mode="append")
    history = read_history_table(delta=str(tmp_path / "wh"), candidate=open_run(str(runs[2])),
                                 window=14)
    assert [n.run_date for n in history.nights] == ["2025-01-01", "2025-01-02"]


# --- item 3: nights scored otherwise ---------------------------------------------------------

def test_history_nights_scored_otherwise_are_left_out_with_a_note(tmp_path):
    from pipeline.compare import compare_runs

    root = tmp_path / "root"
    mixed = ScoreConfig(metrics=("rouge1", "rougeL"), bootstrap=0, engine="local",
                        case_sensitive=True)
    for t in (1, 2, 3):
        _run(root, f"2025-01-0{t}", f"n{t}", tmp_path, shift=t, config=mixed)
    base = _run(root, "2025-01-04", "n4", tmp_path, shift=4)
    cand = _run(root, "2025-01-05", "n5", tmp_path, shift=5)
    result = compare_runs(str(base), str(cand), history=str(root), n_bootstrap=20, top=0)
    doc = result.to_document()
    assert [n["run_date"] for n in doc["history"]["nights"]] == ["2025-01-04"]
    left = [n for n in result.notes if "left out" in n and "scored differently" in n]
    assert len(left) == 1, result.notes
    assert left[0].startswith("history: 2025-01-01, 2025-01-02, 2025-01-03 left out")
    assert "case: mixed vs lc" in left[0]
    assert (result.comparison.rows["history_nights"] == 1).all()


def test_a_night_scored_otherwise_for_one_metric_keeps_the_others(tmp_path):
    from pipeline.compare import compare_runs

    root = tmp_path / "root"
    both = dict(metrics=("rouge1", "bleu"), bootstrap=0, engine="local")
    intl = ScoreConfig(**both, bleu_tokenize="intl")
    _run(root, "2025-01-01", "n1", tmp_path, shift=1, config=intl)
    base = _run(root, "2025-01-02", "n2", tmp_path, shift=2, config=ScoreConfig(**both))
    cand = _run(root, "2025-01-03", "n3", tmp_path, shift=3, config=ScoreConfig(**both))
    result = compare_runs(str(base), str(cand), history=str(root), n_bootstrap=20, top=0)
    rows = result.comparison.rows.set_index(["group", "metric"])
    assert rows.loc[("all", "rouge1"), "history_nights"] == 2
    assert rows.loc[("all", "bleu"), "history_nights"] == 1
    assert any(n.startswith("history: 2025-01-01 left out for bleu") and "bleu-tok: intl vs"
               in n for n in result.notes), result.notes


def test_a_reference_run_scored_with_another_stemmer_is_refused(tmp_path):
    from pipeline.compare import compare_runs
    from pipeline.errors import SignatureMismatchError

    root = tmp_path / "root"
    base = _run(root, "2025-01-01", "n1", tmp_path, shift=1)
    cand = _run(root, "2025-01-02", "n2", tmp_path, shift=2)
    porter = ScoreConfig(metrics=("rouge1", "rougeL"), bootstrap=0, engine="local",
                         stemmer="porter")
    ref = _run(tmp_path / "elsewhere", "2025-01-01", "ref", tmp_path, config=porter)
    with pytest.raises(SignatureMismatchError, match="--reference-run .*stem: porter vs none"):
        compare_runs(str(base), str(cand), history=str(root), reference_run=str(ref),
                     n_bootstrap=20, top=0)
    allowed = compare_runs(str(base), str(cand), history=str(root), reference_run=str(ref),
                           n_bootstrap=20, top=0, allow_signature_mismatch=True)
    assert any(n.startswith(f"--reference-run {ref} was scored differently")
               for n in allowed.notes)
    refused = _night(root, tmp_path / "p-2025-01-02-n2.parquet", "2025-01-03", "n3",
                     compare_args=f"--reference-run '{ref}'")
    assert refused.exit_code == 2, refused.output
    assert refused.output.startswith("nightly: COMPARE_ARGS: ")
    assert "stem: porter vs none" in refused.output
    assert not (root / "run_date=2025-01-03").exists()


# --- items 6 and 16: what the history reads ------------------------------------------------

def _rewrite_aggregate(run: Path, mean: pa.Array) -> None:
    path = run / "aggregate.parquet"
    table = pq.read_table(path)
    metadata = table.schema.metadata
    table = table.set_column(table.column_names.index("mean"), "mean", mean)
    pq.write_table(table.replace_schema_metadata(metadata), path)
    manifest = json.loads((run / "manifest.json").read_text())
    entry = manifest["outputs"]["aggregate"]
    entry["size_bytes"] = path.stat().st_size
    entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (run / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("kind", ["text", "lists", "structs"])
def test_a_history_aggregate_whose_mean_is_not_numbers_is_left_out(tmp_path, kind):
    from pipeline.compare import compare_runs

    root = tmp_path / "root"
    runs = [_run(root, f"2025-01-0{t}", f"n{t}", tmp_path, shift=t) for t in (1, 2, 3)]
    n = pq.read_table(runs[0] / "aggregate.parquet").num_rows
    mean = {"text": pa.array(["0.5"] * n), "lists": pa.array([[0.5]] * n),
            "structs": pa.array([{"v": 0.5}] * n)}[kind]
    _rewrite_aggregate(runs[0], mean)
    result = compare_runs(str(runs[1]), str(runs[2]), history=str(root), n_bootstrap=20, top=0)
    assert [n.run_date for n in result.history.nights] == ["2025-01-02"]
    assert any(n.startswith("history: 2025-01-01 left out: ") and "column 'mean' holds" in n
               for n in result.notes), result.notes
    # tonight's own aggregate so: exit 2 naming the file, no traceback
    _rewrite_aggregate(runs[2], mean)
    cli = CliRunner().invoke(main, ["compare", str(runs[1]), str(runs[2]), "--history",
                                    str(root), "--n-bootstrap", "20"])
    assert cli.exit_code == 2, cli.output
    assert "aggregate.parquet: the aggregate's column 'mean' holds" in cli.output
    assert "Traceback" not in cli.output


def test_history_reads_only_the_aggregate(tmp_path):
    from pipeline.compare import compare_runs

    root = tmp_path / "root"
    runs = [_run(root, f"2025-01-0{t}", f"n{t}", tmp_path, shift=t) for t in (1, 2, 3, 4)]
    shutil.rmtree(runs[0] / "examples")  # a retention policy: aggregates kept, examples gone
    part = next((runs[1] / "examples").glob("part-*.parquet"))
    part.write_bytes(b"not parquet any more")  # never read, never hashed
    result = compare_runs(str(runs[2]), str(runs[3]), history=str(root), n_bootstrap=20, top=0)
    assert [n.run_date for n in result.history.nights] == ["2025-01-01", "2025-01-02",
                                                           "2025-01-03"]
    # what is read is verified: a changed aggregate is left out, with a note
    path = runs[0] / "aggregate.parquet"
    table = pq.read_table(path)
    edited = table.set_column(table.column_names.index("mean"), "mean",
                              pa.compute.add(table.column("mean"), 0.25))
    pq.write_table(edited.replace_schema_metadata(table.schema.metadata), path)
    again = compare_runs(str(runs[2]), str(runs[3]), history=str(root), n_bootstrap=20, top=0)
    assert [n.run_date for n in again.history.nights] == ["2025-01-02", "2025-01-03"]
    assert any(n.startswith("history: 2025-01-01 left out: ") and "changed since" in n
               for n in again.notes), again.notes


# --- item 7: earlier nights' compare.json -------------------------------------------------------

@pytest.mark.parametrize("doc", [
    {"alarms": [{"group": "all", "metric": None, "measure": None, "kind": "missing"}],
     "settings": {"measures": 5}},
    {"alarms": [{"group": "all", "metric": None, "measure": None, "kind": "missing"}],
     "settings": "x"},
    {"alarms": "x"},
    {"alarms": [{"group": "all", "metric": "rouge1", "measure": "fmeasure", "kind": 3}]},
    {"alarms": [5]},
    "[" * 100_000 + "]" * 100_000,
    "not json",
])
def test_an_earlier_nights_odd_compare_json_never_stops_the_report(tmp_path, doc):
    root = tmp_path / "root"
    runs = [_run(root, f"2025-01-0{t}", f"n{t}", tmp_path, shift=t) for t in (1, 2, 3)]
    old = root / "compare" / "run_date=2025-01-02" / "run_id=n2"
    old.mkdir(parents=True)
    (old / "compare.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    out = tmp_path / "cmp"
    api.compare(str(runs[1]), str(runs[2]), output=str(out), history=str(root),
                n_bootstrap=20)
    html = tmp_path / "r.html"
    api.report(str(runs[2]), output=str(html), comparison=str(out / "compare.json"), top=1)
    text = html.read_text()
    assert "<h2>Nightly trend</h2>" in text
    assert "2025-01-02&#x27;s compare.json left out" in text or \
        "2025-01-02's compare.json left out" in text


def test_earlier_alarms_are_still_marked(tmp_path):
    from pipeline.compare.history import History, Night, night_alarms

    root = tmp_path / "root"
    night = root / "compare" / "run_date=2025-01-02" / "run_id=n2"
    night.mkdir(parents=True)
    (night / "compare.json").write_text(json.dumps({
        "settings": {"measures": ["rouge1.fmeasure"]},
        "alarms": [{"group": "all", "metric": None, "measure": None, "kind": "missing"},
                   {"group": "all", "metric": "rouge1", "measure": "fmeasure",
                    "kind": "change"},
                   {"group": "s=a", "metric": "rouge1", "measure": "fmeasure",
                    "kind": "drift"}]}))
    import pandas as pd

    history = History(str(root), (Night("2025-01-02", "n2",
                                        str(root / "run_date=2025-01-02" / "run_id=n2"),
                                        pd.DataFrame()),), 14)
    marks, notes = night_alarms(history)
    assert marks == {("2025-01-02", "n2"): [
        {"group": "all", "metric": "rouge1", "measure": "fmeasure", "kind": "missing"},
        {"group": "all", "metric": "rouge1", "measure": "fmeasure", "kind": "change"},
        {"group": "s=a", "metric": "rouge1", "measure": "fmeasure", "kind": "drift"}]}
    assert notes == []


# --- item 10: impossible dates ---------------------------------------------------------------

def test_impossible_run_date_directories_are_not_nights(tmp_path, predictions):
    from pipeline.compare.history import complete_runs

    root = tmp_path / "nights"
    assert _night(root, predictions, "2025-02-27", "a").exit_code == 0
    for bad in ("2025-02-30", "0000-00-00", "2025-01-32"):
        shutil.copytree(root / "run_date=2025-02-27", root / f"run_date={bad}")
    assert [r.run_date for r in complete_runs(str(root))] == ["2025-02-27"]
    night = _night(root, predictions, "2025-03-01", "b")
    assert night.exit_code == 0, night.output
    doc = _doc(root, "2025-03-01", "b")
    assert doc["baseline"]["path"].endswith("run_date=2025-02-27/run_id=a")
    assert [n["run_date"] for n in doc["history"]["nights"]] == ["2025-02-27"]
    assert any("3 run_date= directories" in n and "run_date=2025-02-30" in n
               for n in doc["notes"]), doc["notes"]


# --- items 11, 19, 21: the *_ARGS strings ------------------------------------------------------

@pytest.mark.parametrize("env, named", [
    ({"COMPARE_ARGS": "--confidence 2"}, "COMPARE_ARGS"),
    ({"COMPARE_ARGS": "--band -1"}, "COMPARE_ARGS"),
    ({"COMPARE_ARGS": "--band rouge1.fmeasure=-1"}, "COMPARE_ARGS"),
    ({"COMPARE_ARGS": "--n-bootstrap 0"}, "COMPARE_ARGS"),
    ({"COMPARE_ARGS": "--metrics nosuch.fmeasure"}, "COMPARE_ARGS"),
    ({"COMPARE_ARGS": "--metrics rouge1.fmeasure", "SCORE_ARGS": f"{SCORE} --metrics bleu"},
     "COMPARE_ARGS"),
    ({"COMPARE_ARGS": "--reference-run /no/such/run"}, "COMPARE_ARGS"),
    ({"COMPARE_ARGS": "--band abc"}, "COMPARE_ARGS"),
    ({"COMPARE_ARGS": "--output b"}, "COMPARE_ARGS"),
    ({"COMPARE_ARGS": "--history c"}, "COMPARE_ARGS"),
    ({"COMPARE_ARGS": "--plot x.png"}, "COMPARE_ARGS"),
    ({"SCORE_ARGS": "--run-id x"}, "SCORE_ARGS"),
    ({"SCORE_ARGS": "--output x"}, "SCORE_ARGS"),
    ({"SCORE_ARGS": "--references x"}, "SCORE_ARGS"),
    ({"SCORE_ARGS": "--overwrite"}, "SCORE_ARGS"),
    ({"PUBLISH_ARGS": "--run-date 2025-01-01 --delta x"}, "PUBLISH_ARGS"),
])
def test_bad_or_owned_args_are_refused_before_anything_is_written(tmp_path, predictions, env,
                                                                 named):
    root = tmp_path / "nights"
    env = {"SCORE_ARGS": SCORE, **env}
    result = CliRunner().invoke(main, ["nightly", str(root), str(predictions)],
                                env={"RUN_DATE": "2025-01-01", "RUN_ID": "n1", **env})
    assert result.exit_code == 2, (env, result.output)
    assert result.output.startswith(f"nightly: {named}"), result.output
    assert "Usage:" not in result.output and "Traceback" not in result.output
    assert not root.exists()


def test_a_baseline_that_is_no_run_is_refused_before_anything_is_written(tmp_path,
                                                                        predictions):
    root = tmp_path / "nights"
    result = _night(root, predictions, "2025-01-01", "n1", BASELINE=str(tmp_path / "nope"))
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"nightly: BASELINE: {tmp_path / 'nope'}: no such run")
    assert not root.exists()


def test_owned_options_are_named(tmp_path, predictions):
    result = _night(tmp_path / "n", predictions, "2025-01-01", "n1",
                    compare_args="--output b --history c")
    assert result.exit_code == 2
    assert "COMPARE_ARGS: --history, --output are the nightly's own" in result.output
    assert "remove them from COMPARE_ARGS" in result.output


# --- item 15: interrupted without RUN_ID -------------------------------------------------------

def test_an_interrupted_night_without_run_id_resumes_and_leaves_no_staging(tmp_path,
                                                                          predictions):
    root = tmp_path / "nights"
    config = ScoreConfig(metrics=("rouge1",), bootstrap=0, engine="local", num_cpus=1,
                         partition_rows=2)
    date_dir = root / "run_date=2025-01-01"

    def stop(stage: str, done: int, total: int) -> None:
        if stage == "score" and done >= 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        api.score(str(predictions), output=str(date_dir / "run_id=first"), config=config,
                  run_id="first", progress=stop)
    assert [p.name for p in date_dir.iterdir() if "overlap-staging" in p.name]
    logs: list[str] = []
    night = api.nightly(str(root), str(predictions), run_date="2025-01-01", config=config,
                        plot=False, log=logs.append)
    assert night.exit_code == 0, logs
    assert night.run_dir.endswith("run_date=2025-01-01/run_id=first")
    assert logs[0] == f"resuming the interrupted run {night.run_dir}"
    manifest = json.loads((date_dir / "run_id=first" / "manifest.json").read_text())
    assert manifest["resumed"] is True
    assert manifest["stages"]["score"]["partitions_reused"] >= 2, manifest["stages"]
    assert not [p.name for p in date_dir.iterdir() if "overlap-staging" in p.name]


@pytest.mark.parametrize("given", [None, "mine"])
def test_the_interrupt_hint_names_the_run_id_and_following_it_resumes(tmp_path, predictions,
                                                                     monkeypatch, given):
    # the hint gave RUN_DATE alone; with a RUN_ID set (or one drawn for the night) a rerun
    # by RUN_DATE alone does not find that run: the hint names both, and following it resumes
    root = tmp_path / "nights"
    config = ScoreConfig(metrics=("rouge1",), bootstrap=0, engine="local", num_cpus=1,
                         partition_rows=2)
    real_score = api.score

    def interrupted(*args, progress=None, **kwargs):
        def stop(stage: str, done: int, total: int) -> None:
            if progress is not None:
                progress(stage, done, total)
            if stage == "score" and done >= 2:
                raise KeyboardInterrupt
        return real_score(*args, progress=stop, **kwargs)

    monkeypatch.setattr(api, "score", interrupted)
    logs: list[str] = []
    with pytest.raises(KeyboardInterrupt) as stopped:
        api.nightly(str(root), str(predictions), run_date="2025-01-01", run_id=given,
                    config=config, plot=False, log=logs.append)
    staged = [p.name for p in (root / "run_date=2025-01-01").iterdir()]
    assert len(staged) == 1 and ".overlap-staging-" in staged[0], staged
    run_id = staged[0].removeprefix(".run_id=").partition(".overlap-staging-")[0]
    assert given is None or run_id == given
    run_dir = root / "run_date=2025-01-01" / f"run_id={run_id}"
    hint = stopped.value.resume_hint  # the CLI's one line says it (see the next test)
    assert not any("resume" in line for line in logs), logs
    assert hint.startswith(f"while scoring {root}/run_date=2025-01-01/run_id="), hint
    assert hint.endswith(f"to resume, run again with RUN_DATE=2025-01-01 RUN_ID={run_id}"), hint
    monkeypatch.setattr(api, "score", real_score)
    again: list[str] = []
    night = api.nightly(str(root), str(predictions), run_date="2025-01-01", run_id=run_id,
                        config=config, plot=False, log=again.append)
    assert night.exit_code == 0, again
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["resumed"] is True and manifest["run_id"] == run_id
    assert manifest["stages"]["score"]["partitions_reused"] >= 2, manifest["stages"]


def test_an_interrupted_nightly_says_one_line_with_the_resume_hint(tmp_path, predictions,
                                                                   monkeypatch):
    root = tmp_path / "nights"
    real_score = api.score

    def interrupted(*args, progress=None, **kwargs):
        def stop(stage: str, done: int, total: int) -> None:
            if progress is not None:
                progress(stage, done, total)
            if stage == "score" and done >= 1:
                raise KeyboardInterrupt
        return real_score(*args, progress=stop, **kwargs)

    monkeypatch.setattr(api, "score", interrupted)
    result = CliRunner().invoke(main, ["nightly", str(root), str(predictions),
                                       "--run-date", "2025-01-01", "--run-id", "mine",
                                       "--no-plot", "--score-args", "--metrics rouge1 "
                                       "--bootstrap 0 --engine local"])
    assert result.exit_code == 130, result.output
    stopped = [line for line in result.stderr.splitlines()
               if line.startswith("Error") or "to resume" in line]
    assert stopped == [f"Error: interrupted (Ctrl-C) while scoring {root}/run_date=2025-01-01/"
                       "run_id=mine; to resume, run again with RUN_DATE=2025-01-01 "
                       "RUN_ID=mine"], result.stderr


# --- item 29: missing predictions -------------------------------------------------------------

def test_missing_predictions_reach_the_missing_alarm(tmp_path):
    root = tmp_path / "nights"
    refs = tmp_path / "refs.parquet"
    pq.write_table(pa.table({"id": [f"e{i}" for i in range(8)],
                             "references": [[f"the cat sat on the mat {i}"]
                                            for i in range(8)]}), refs)
    full = tmp_path / "full.parquet"
    pq.write_table(_table(refs=False), full)
    some = tmp_path / "some.parquet"
    pq.write_table(_table(refs=False).slice(0, 6), some)
    assert _night(root, full, "2025-01-01", "n1", str(refs)).exit_code == 0
    night = _night(root, some, "2025-01-02", "n2", str(refs))
    assert night.exit_code == 1, night.output
    doc = _doc(root, "2025-01-02", "n2")
    assert {"group": "all", "metric": None, "measure": None, "kind": "missing"} \
        in doc["alarms"]
    assert doc["pairing"]["n_baseline_only"] == 2
    # said explicitly, the run's own choice stands
    strict = _night(root, some, "2025-01-03", "n3", str(refs),
                    score_args=f"{SCORE} --on-missing error")
    assert strict.exit_code == 2, strict.output
