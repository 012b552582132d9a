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
    metadata = pq.read_schema(out / "agreement.parquet").metadata
    assert metadata[b"overlap.agree.signature"].decode() == doc["signature"]
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
    ("unknown id", "1 judged id is not in the scores"),
    ("duplicated id", "duplicated id"),
    ("non-numeric", "non-numeric"),
    ("infinite", "out-of-range"),
    ("list lengths", "lists of different lengths"),
    ("no system column", "no system column"),
    ("no input column", "no input column"),
    ("absent input column", "no input column 'doc'"),
    ("absent group column", "no --group-by column 'domain'"),
    ("two rows one cell", "two judged examples"),
    ("two rows one cell", "--system-column and --input-column"),
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
    elif case == "no input column":
        judgments = judgments.drop(columns="input")
    elif case == "absent input column":
        extra = ("--input-column", "doc")
    elif case == "absent group column":
        extra = ("--group-by", "domain")
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


def test_group_by_finds_the_subset_where_agreement_collapses(tmp_path):
    # news: the metric follows the human score; legal: the metric is noise. The legal group's
    # value and its difference from the rest are scipy's on the subsets; the bootstrap test
    # finds it significantly worse and the verdict names it; news is not named.
    rng = np.random.default_rng(3)
    rows = []
    for s in range(8):
        for d in range(30):
            h = float(rng.integers(1, 6))
            domain = "news" if d < 15 else "legal"
            m = h + rng.normal(scale=0.3) if domain == "news" else float(rng.normal())
            rows.append({"id": f"e{s}-{d}", "system": f"s{s}", "document": f"d{d}",
                         "domain": domain, "h": h, "m": m})
    frame = pd.DataFrame(rows)
    frame[["id", "m"]].to_parquet(tmp_path / "s.parquet")
    frame[["id", "system", "document", "domain", "h"]].to_parquet(tmp_path / "j.parquet")
    r = _run([str(tmp_path / "s.parquet"), "--judgments", str(tmp_path / "j.parquet"),
              "--group-by", "domain", "--levels", "global,input", "--n-resamples", "200",
              "--n-permutations", "0", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    tau = {d: stats.kendalltau(sub["m"], sub["h"])[0] for d, sub in frame.groupby("domain")}
    legal = next(x for x in doc["rows"] if x["group"] == {"domain": "legal"}
                 and x["level"] == "global")
    news = next(x for x in doc["rows"] if x["group"] == {"domain": "news"}
                and x["level"] == "global")
    assert legal["value"] == pytest.approx(tau["legal"], abs=1e-12)
    assert legal["delta_vs_rest"] == pytest.approx(tau["legal"] - tau["news"], abs=1e-12)
    assert news["delta_vs_rest"] == pytest.approx(tau["news"] - tau["legal"], abs=1e-12)
    assert legal["p_vs_rest"] < 0.05 and news["p_vs_rest"] < 0.05
    # input level: the mean over the group's documents of scipy's tau-b across systems
    per_doc = {d: stats.kendalltau(sub["m"], sub["h"])[0] for d, sub in frame.groupby("document")}
    legal_docs = [per_doc[f"d{d}"] for d in range(15, 30)]
    row = next(x for x in doc["rows"] if x["group"] == {"domain": "legal"}
               and x["level"] == "input")
    assert row["value"] == pytest.approx(np.nanmean(legal_docs), abs=1e-12)
    collapsed = {(v["level"], c["group"]["domain"]) for v in doc["verdict"]
                 for c in v["collapses"]}
    assert collapsed == {("global", "legal"), ("input", "legal")}
    text = _run([str(tmp_path / "s.parquet"), "--judgments", str(tmp_path / "j.parquet"),
                 "--group-by", "domain", "--levels", "global", "--n-resamples", "200",
                 "--n-permutations", "0"]).output
    assert "collapses on domain=legal" in text and "domain=news:" not in text


def test_the_summary_writes_no_p_of_zero_and_no_negative_zero():
    from pipeline.agree.tables import summary_text

    row = {"measure": "m", "human": "h", "level": "global", "coefficient": "kendall",
           "group": None, "value": 0.5, "low": -0.0001, "high": 0.7, "rank": 2,
           "p_vs_best": 0.0, "reason": None}
    doc = {"verdict": [], "ceiling": [], "rows": [row], "notes": [], "signature": "s",
           "settings": {"n_resamples": 1000, "n_permutations": 1000}}
    line = summary_text(doc).splitlines()[-1]
    assert "[0.000, 0.700]" in line and line.endswith("rank 2, p vs best < 0.001")
    plain = {**row, "measure": "rater 1", "rank": None, "p_vs_best": None}
    line = summary_text({**doc, "rows": [plain]}).splitlines()[-1]
    assert line == line.rstrip() and line.endswith("[0.000, 0.700]")


def test_the_summary_escapes_control_and_bidi_characters_of_the_data():
    # group values, group columns, measure and human names come from the user's files: an
    # escape sequence or a right-to-left override in them must not act on the terminal
    from pipeline.agree.tables import summary_text

    group = {"set\u202e": "ext\x1b[2J\nnews"}
    verdict = {"human": "h\u202e", "level": "input", "coefficient": "kendall",
               "best": "m\x1b[31m", "value": 0.3, "low": 0.2, "high": 0.4, "tested": True,
               "indistinguishable": ["n\u2066"],
               "collapses": [{"group": group, "value": 0.1, "delta_vs_rest": -0.3,
                              "p_vs_rest": 0.01}]}
    row = {"measure": "m\x1b[31m", "human": "h\u202e", "level": "input",
           "coefficient": "kendall", "group": group, "value": 0.1, "low": 0.0, "high": 0.2,
           "rank": None, "p_vs_best": None, "p_vs_rest": 0.01, "delta_vs_rest": -0.3,
           "reason": None}
    doc = {"verdict": [verdict], "ceiling": [], "rows": [row], "notes": [], "signature": "s",
           "settings": {"n_resamples": 1000, "n_permutations": 1000}}
    text = summary_text(doc)
    assert not any(ch in text for ch in "\x1b\u202e\u2066"), repr(text)
    lines = text.splitlines()
    assert lines[1].startswith("  collapses on set\\u202e=ext\\x1b[2J\\x0anews: 0.100"), lines
    assert lines[0].startswith("h\\u202e, input level, Kendall tau-b: m\\x1b[31m agrees best")
    assert "indistinguishable from it: n\\u2066" in lines[0]
    assert lines[-1].startswith("m\\x1b[31m"), lines[-1]


def test_jsonl_scores_and_csv_judgments_with_lists_of_raters(tmp_path):
    # the same tables as Parquet, as JSON Lines and CSV (raters as a JSON array in the cell)
    frame = _tables(tmp_path)
    (tmp_path / "scores.jsonl").write_text("".join(
        json.dumps(r) + "\n" for r in frame[["id", "good", "noisy"]].to_dict("records")))
    csv = frame[["id", "system", "document", "domain"]].assign(
        raters=[json.dumps(list(r)) for r in frame["raters"]])
    csv.to_csv(tmp_path / "judgments.csv", index=False)
    args = ["--coefficients", "pearson,kendall", "--n-resamples", "20",
            "--n-permutations", "0", "--format", "json"]
    a = _run([str(tmp_path / "scores.parquet"), "--judgments",
              str(tmp_path / "judgments.parquet"), *args])
    b = _run([str(tmp_path / "scores.jsonl"), "--judgments", str(tmp_path / "judgments.csv"),
              *args])
    assert a.exit_code == 0 and b.exit_code == 0, b.output
    rows_a, rows_b = json.loads(a.stdout)["rows"], json.loads(b.stdout)["rows"]
    assert [(r["measure"], r["level"], r["coefficient"]) for r in rows_b] == \
        [(r["measure"], r["level"], r["coefficient"]) for r in rows_a]
    for ra, rb in zip(rows_a, rows_b, strict=True):
        assert rb["value"] == pytest.approx(ra["value"], abs=1e-12)
    human = frame["raters"].map(np.mean)
    g = next(r for r in rows_b if r["measure"] == "good" and r["level"] == "global"
             and r["coefficient"] == "kendall" and r["kind"] == "metric")
    assert g["value"] == pytest.approx(stats.kendalltau(frame["good"], human)[0], abs=1e-12)


def test_a_group_is_resampled_from_its_own_systems_and_inputs(tmp_path):
    # systems s0-s3 judged on news, s4-s9 on legal: the news group's bootstrap draws 4
    # systems and 5 inputs per resample, so its rows equal those of its examples alone
    # (groups in sorted order: legal 0, news 1, resampled with seed + 2 + 1)
    rng = np.random.default_rng(5)
    rows = []
    for s in range(10):
        for d in range(5):
            h = float(rng.integers(1, 6))
            rows.append({"id": f"e{s}-{d}", "system": f"s{s}", "document": f"d{d}",
                         "domain": "news" if s < 4 else "legal", "h": h,
                         "m": h + rng.normal(scale=1.0)})
    frame = pd.DataFrame(rows)
    frame[["id", "m"]].to_parquet(tmp_path / "s.parquet")
    frame[["id", "system", "document", "domain", "h"]].to_parquet(tmp_path / "j.parquet")
    news = frame[frame["domain"] == "news"]
    news[["id", "m"]].to_parquet(tmp_path / "ns.parquet")
    news[["id", "system", "document", "h"]].to_parquet(tmp_path / "nj.parquet")
    args = ["--levels", "system,input,global", "--n-resamples", "100",
            "--n-permutations", "0", "--format", "json"]
    whole = _run([str(tmp_path / "s.parquet"), "--judgments", str(tmp_path / "j.parquet"),
                  "--group-by", "domain", "--seed", "100", *args])
    alone = _run([str(tmp_path / "ns.parquet"), "--judgments", str(tmp_path / "nj.parquet"),
                  "--seed", "103", *args])
    assert whole.exit_code == 0 and alone.exit_code == 0, whole.output + alone.output
    grouped = {r["level"]: r for r in json.loads(whole.stdout)["rows"]
               if r["group"] == {"domain": "news"}}
    for r in json.loads(alone.stdout)["rows"]:
        g = grouped[r["level"]]
        assert (g["n_systems"], g["n_inputs"]) == (r["n_systems"], r["n_inputs"])
        for key in ("value", "low", "high", "n_resamples"):
            assert g[key] == pytest.approx(r[key], abs=1e-12), (r["level"], key)


@pytest.mark.parametrize("low, high, words", [
    (0.2, 0.6, "less well than a rater does (a rater against the others: 0.700)"),
    (0.5, 0.9, "as well as a rater does, within its interval (a rater against the others: 0.700)"),
    (0.75, 0.9, "better than a rater does (a rater against the others: 0.700)"),
])
def test_the_verdict_says_how_the_best_measure_stands_to_the_raters(low, high, words):
    from pipeline.agree.tables import summary_text

    verdict = {"human": "h", "level": "system", "coefficient": "kendall", "best": "m",
               "value": (low + high) / 2, "low": low, "high": high, "indistinguishable": [],
               "tested": False, "ceiling": 0.7, "collapses": []}
    doc = {"verdict": [verdict], "ceiling": [], "rows": [], "notes": [], "signature": "s",
           "settings": {}}
    assert summary_text(doc).splitlines()[0].endswith("; " + words)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
@pytest.mark.parametrize("named", [True, False])
def test_a_text_judgment_column_is_refused_even_of_numbers(tmp_path, fmt, named):
    # a typed file (Parquet, JSON Lines) whose judgment column is text, "3.0": refused in
    # one line naming the file and the column, nothing written (CSV cells are text: parsed)
    scores, judgments = _base()
    judgments["h"] = judgments["h"].map(lambda v: f"{v:.1f}")
    scores.to_parquet(tmp_path / "bs.parquet")
    path = tmp_path / f"bj.{fmt}"
    if fmt == "parquet":
        judgments.to_parquet(path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in judgments.to_dict("records")))
    r = _run([str(tmp_path / "bs.parquet"), "--judgments", str(path), "--output",
              str(tmp_path / "out"), "--n-resamples", "5", "--n-permutations", "0",
              *(("--human", "h") if named else ())])
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.output, r.output
    assert str(path) in lines[0] and "column 'h' is non-numeric" in lines[0], lines[0]
    assert "'0.0' at id 'e0'" in lines[0], lines[0]
    assert ("--human" in lines[0]) is not named  # the hint names --human when it was not
    assert not (tmp_path / "out").exists()
    judgments.to_csv(tmp_path / "bj.csv", index=False)  # the same text in CSV: numbers
    ok = _run([str(tmp_path / "bs.parquet"), "--judgments", str(tmp_path / "bj.csv"),
               "--n-resamples", "5", "--n-permutations", "0"])
    assert ok.exit_code == 0, ok.output


def test_text_in_a_list_of_raters_and_a_csv_cell_that_is_no_number_are_refused(tmp_path):
    # a CSV cell holding a JSON array with a string in it
    scores, judgments = _base()
    scores.to_parquet(tmp_path / "bs.parquet")
    judgments["h"] = ["[1, 2]"] * 11 + ['[1, "2"]']
    judgments.to_csv(tmp_path / "lists.csv", index=False)
    r = _run([str(tmp_path / "bs.parquet"), "--judgments", str(tmp_path / "lists.csv"),
              "--output", str(tmp_path / "out"), "--n-resamples", "5"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert "lists.csv" in r.output and "column 'h' is non-numeric" in r.output, r.output
    assert "lists with text" in r.output and "'e11'" in r.output, r.output
    scores, judgments = _base()
    judgments["h"] = judgments["h"].astype(object)
    judgments.loc[7, "h"] = "high"
    scores.to_parquet(tmp_path / "bs.parquet")
    judgments.to_csv(tmp_path / "bj.csv", index=False)
    r = _run([str(tmp_path / "bs.parquet"), "--judgments", str(tmp_path / "bj.csv"),
              "--output", str(tmp_path / "out"), "--n-resamples", "5", "--human", "h"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert "bj.csv" in r.output and "'high' at id 'e7'" in r.output, r.output
    assert not (tmp_path / "out").exists()


def test_missing_judgments_are_left_out_with_a_note_naming_the_count_and_the_file(tmp_path):
    scores, judgments = _base()
    judgments["h"] = judgments["h"].astype(object)
    judgments.loc[[2, 9], "h"] = None
    judgments["h"] = judgments["h"].astype(float)
    judgments.loc[5, "h"] = np.nan
    judgments["r"] = [[1.0, 2.0]] * 11 + [[None, None]]  # no rater's value: missing too
    path = tmp_path / "bj.parquet"
    judgments.to_parquet(path)
    scores.to_parquet(tmp_path / "bs.parquet")
    r = _run([str(tmp_path / "bs.parquet"), "--judgments", str(path), "--levels", "global",
              "--n-resamples", "5", "--n-permutations", "0", "--coefficients", "pearson"])
    assert r.exit_code == 0, r.output
    assert (f"note: 3 judged examples have no 'h' judgment (null or NaN) in {path} and are "
            "left out of its coefficients") in r.stdout, r.stdout
    assert (f"note: 1 judged example has no 'r' judgment (null or NaN) in {path} and is "
            "left out of its coefficients") in r.stdout, r.stdout
    j = _run([str(tmp_path / "bs.parquet"), "--judgments", str(path), "--levels", "global",
              "--n-resamples", "5", "--n-permutations", "0", "--coefficients", "pearson",
              "--format", "json"])
    doc = json.loads(j.stdout)
    assert sum("no 'h' judgment" in n for n in doc["notes"]) == 1
    # left out pairwise: the value is Pearson's r over the 9 judged examples (scipy)
    keep = judgments["h"].notna()
    row = next(x for x in doc["rows"] if x["human"] == "h")
    assert row["value"] == pytest.approx(
        stats.pearsonr(scores["m"][keep], judgments["h"][keep])[0], abs=1e-12)
