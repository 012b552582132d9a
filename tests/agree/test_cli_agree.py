"""``overlap agree`` end to end on small tables: outputs, values against scipy computed
here from the raw numbers, and bad input (one line, documented exit code, nothing written)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from scipy import stats

from pipeline.cli import main

M, N = 6, 10  # systems x inputs


def _tables(tmp_path, *, raters=3, seed=0):
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=M)
    rows = []
    for s in range(M):
        for d in range(N):
            q = quality[s] + rng.normal(scale=0.7)
            rows.append({"id": f"ex-{s}-{d}", "system": f"sys{s}", "document": f"doc{d}",
                         "good": q + rng.normal(scale=0.3), "noisy": q + rng.normal(scale=2),
                         "domain": "news" if d < N // 2 else "legal",
                         "raters": [int(np.clip(round(3 + q + rng.normal(scale=0.8)), 1, 5))
                                    for _ in range(raters)]})
    frame = pd.DataFrame(rows)
    scores = frame[["id", "good", "noisy"]]
    judgments = frame[["id", "system", "document", "domain", "raters"]]
    scores.to_parquet(tmp_path / "scores.parquet")
    judgments.to_parquet(tmp_path / "judgments.parquet")
    return frame


def _run(args):
    return CliRunner().invoke(main, ["agree", *args])


def test_outputs_and_values_against_scipy(tmp_path):
    frame = _tables(tmp_path)
    out = tmp_path / "out"
    r = _run([str(tmp_path / "scores.parquet"), "--judgments", str(tmp_path / "judgments.parquet"),
              "--coefficients", "pearson,kendall", "--n-resamples", "50",
              "--n-permutations", "30", "--output", str(out)])
    assert r.exit_code == 0, r.output
    assert "agrees best" in r.output.splitlines()[0]
    doc = json.loads((out / "agreement.json").read_text())
    table = pq.read_table(out / "agreement.parquet").to_pandas()
    assert len(table) == len(doc["rows"])
    assert doc["signature"].startswith("levels:system+input+global|coef:pearson+kendall|")
    human = frame["raters"].map(np.mean)
    for measure in ("good", "noisy"):
        sys_x = frame.groupby("system")[measure].mean()
        sys_z = human.groupby(frame["system"]).mean()
        row = next(r for r in doc["rows"] if r["measure"] == measure and r["level"] == "system"
                   and r["coefficient"] == "kendall" and r["group"] is None)
        assert row["value"] == pytest.approx(stats.kendalltau(sys_x, sys_z)[0], abs=1e-12)
        assert row["low"] <= row["high"]
        assert {"measure", "human", "level", "coefficient", "group", "value", "low", "high",
                "n_systems", "n_inputs"} <= set(row)
        assert (row["n_systems"], row["n_inputs"]) == (M, N)
        g = next(r for r in doc["rows"] if r["measure"] == measure and r["level"] == "global"
                 and r["coefficient"] == "pearson")
        assert g["value"] == pytest.approx(stats.pearsonr(frame[measure], human)[0], abs=1e-12)
    assert doc["tests"] and doc["ceiling"][0]["n_raters"] == 3
    assert sum(1 for r in doc["rows"] if r["kind"] == "rater") == 3 * 3 * 2


def test_group_by_gives_each_subset_its_rows(tmp_path):
    frame = _tables(tmp_path)
    r = _run([str(tmp_path / "scores.parquet"), "--judgments", str(tmp_path / "judgments.parquet"),
              "--group-by", "domain", "--n-resamples", "40", "--n-permutations", "0",
              "--format", "json", "--levels", "global"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    legal = [x for x in doc["rows"] if x["group"] == {"domain": "legal"}
             and x["measure"] == "good"]
    assert len(legal) == 1
    sub = frame[frame["domain"] == "legal"]
    expected = stats.kendalltau(sub["good"], sub["raters"].map(np.mean))[0]
    assert legal[0]["value"] == pytest.approx(expected, abs=1e-12)
    assert legal[0]["p_vs_rest"] is not None


def test_a_system_level_table(tmp_path):
    pd.DataFrame({"id": list("abcdef"), "system": list("abcdef"),
                  "bleu": [1, 2, 3, 4, 5, 6.0]}).to_parquet(tmp_path / "s.parquet")
    pd.DataFrame({"id": list("abcdef"), "system": list("abcdef"),
                  "mqm": [1, 3, 2, 4, 6, 5.0]}).to_parquet(tmp_path / "j.parquet")
    r = _run([str(tmp_path / "s.parquet"), "--judgments", str(tmp_path / "j.parquet"),
              "--format", "json", "--n-resamples", "20"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["rows"]
    assert [x["level"] for x in rows] == ["system"]
    assert rows[0]["value"] == pytest.approx(
        stats.kendalltau([1, 2, 3, 4, 5, 6], [1, 3, 2, 4, 6, 5])[0], abs=1e-12)


def _bad(tmp_path, scores: pd.DataFrame, judgments: pd.DataFrame, *extra):
    scores.to_parquet(tmp_path / "bs.parquet")
    judgments.to_parquet(tmp_path / "bj.parquet")
    r = _run([str(tmp_path / "bs.parquet"), "--judgments", str(tmp_path / "bj.parquet"),
              "--output", str(tmp_path / "bad-out"), "--n-resamples", "5",
              "--n-permutations", "0", *extra])
    return r


def _base():
    ids = [f"e{i}" for i in range(12)]
    scores = pd.DataFrame({"id": ids, "m": np.arange(12.0)})
    judgments = pd.DataFrame({"id": ids, "system": [f"s{i % 4}" for i in range(12)],
                              "input": [f"d{i // 4}" for i in range(12)],
                              "h": np.arange(12.0) % 5})
    return scores, judgments


@pytest.mark.parametrize("case, needle", [
    ("unknown id", "not in the scores"),
    ("duplicated id", "duplicated id"),
    ("non-numeric", "non-numeric"),
    ("infinite", "out-of-range"),
    ("list lengths", "lists of different lengths"),
    ("no system column", "no system column"),
    ("two rows one cell", "two judged examples"),
    ("unknown measure", "no measure"),
    ("unknown coefficient", "unknown coefficient"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, case, needle):
    scores, judgments = _base()
    extra: tuple[str, ...] = ()
    if case == "unknown id":
        judgments.loc[3, "id"] = "nope"
    elif case == "duplicated id":
        judgments.loc[3, "id"] = "e2"
    elif case == "non-numeric":
        judgments["h"] = judgments["h"].astype(object)
        judgments.loc[5, "h"] = "high"
        judgments["h"] = judgments["h"].astype(str)
        extra = ("--human", "h")
    elif case == "infinite":
        scores.loc[4, "m"] = np.inf
    elif case == "list lengths":
        judgments["h"] = [[1, 2, 3]] * 11 + [[1, 2]]
    elif case == "no system column":
        judgments = judgments.drop(columns="system")
    elif case == "two rows one cell":
        judgments.loc[5, ["system", "input"]] = judgments.loc[4, ["system", "input"]].values
    elif case == "unknown measure":
        extra = ("--metrics", "rouge9")
    elif case == "unknown coefficient":
        extra = ("--coefficients", "kendal")
    r = _bad(tmp_path, scores, judgments, *extra)
    assert r.exit_code == 2, r.output
    assert needle in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "bad-out").exists()


def test_undefined_coefficients_are_nan_with_a_reason(tmp_path):
    scores, judgments = _base()
    judgments["h"] = 3.0  # constant
    r = _bad(tmp_path, scores, judgments, "--format", "json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["rows"]
    assert all(x["value"] is None for x in rows)
    assert {x["reason"] for x in rows} >= {"constant human score"}
    scores, judgments = _base()
    judgments["system"] = [f"s{i % 2}" for i in range(12)]
    judgments["input"] = [f"d{i // 2}" for i in range(12)]
    r = _bad(tmp_path, scores, judgments, "--format", "json", "--overwrite")
    rows = json.loads(r.stdout)["rows"]
    system = next(x for x in rows if x["level"] == "system")
    assert system["value"] is None and system["reason"] == "fewer than 3 systems"


def test_output_in_the_way_is_exit_3(tmp_path):
    _tables(tmp_path)
    args = [str(tmp_path / "scores.parquet"), "--judgments", str(tmp_path / "judgments.parquet"),
            "--n-resamples", "5", "--n-permutations", "0", "--output", str(tmp_path / "o")]
    assert _run(args).exit_code == 0
    r = _run(args)
    assert r.exit_code == 3 and "--overwrite" in r.output
    assert _run([*args, "--overwrite"]).exit_code == 0
    (tmp_path / "f").write_text("x")
    r = _run([*args[:-1], str(tmp_path / "f")])
    assert r.exit_code == 3
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "agreement.json").write_text("{}")
    r = _run([*args[:-1], str(foreign), "--overwrite"])
    assert r.exit_code == 3 and (foreign / "agreement.json").read_text() == "{}"


def test_help():
    r = CliRunner().invoke(main, ["agree", "--help"])
    assert r.exit_code == 0 and "Exit codes" in r.output and "--judgments" in r.output


@pytest.mark.parametrize("epsilon, expected", [("0", 0.6), ("2", 0.4), ("auto", 0.7)])
def test_acc23_epsilon_from_the_command_line(tmp_path, epsilon, expected):
    # mt-metrics-eval's published values, as a system-level table of 5 systems
    pd.DataFrame({"id": list("abcde"), "system": list("abcde"),
                  "metric": [2, 1, 1.5, 5, 3]}).to_parquet(tmp_path / "s.parquet")
    pd.DataFrame({"id": list("abcde"), "system": list("abcde"),
                  "gold": [1, 2, 2, 3, 4.0]}).to_parquet(tmp_path / "j.parquet")
    r = _run([str(tmp_path / "s.parquet"), "--judgments", str(tmp_path / "j.parquet"),
              "--coefficients", "acc23", "--epsilon", epsilon, "--format", "json",
              "--n-resamples", "10"])
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)["rows"][0]
    assert row["value"] == pytest.approx(expected, abs=1e-12)
