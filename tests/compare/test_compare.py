"""`overlap compare` and pipeline.compare: known-truth runs built from real REALSumm texts."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.cli import main
from pipeline.compare import (
    compare_examples,
    is_alarm,
    measure_column,
    paired_test,
    resolve_measures,
)
from pipeline.errors import ConfigError, InputError, SignatureMismatchError
from tests.compare.test_compare_fixtures import (
    METRICS,
    cut_a_tenth,
    realsumm,
    score,
    signature,
    truncate_half,
    write_run,
)

FMEASURES = [f"{m}.fmeasure" for m in METRICS]


def run_cli(*args: str):
    return CliRunner().invoke(main, ["compare", *map(str, args)], catch_exceptions=False)


@pytest.fixture(scope="module")
def texts() -> pd.DataFrame:
    return realsumm()


@pytest.fixture(scope="module")
def scored(texts) -> pd.DataFrame:
    return score(texts)


@pytest.fixture(scope="module")
def truncated(texts):
    """10% of the predictions (chosen with a seeded RNG) cut to half their words, re-scored."""
    frame, cut_ids = cut_a_tenth(texts)
    return score(frame), cut_ids


@pytest.fixture(scope="module")
def runs(tmp_path_factory, scored, truncated):
    root = tmp_path_factory.mktemp("runs")
    out = {
        "base": write_run(root / "base", scored, run_id="base", keep_text=True),
        "same": write_run(root / "same", scored, run_id="same", keep_text=True),
        "trunc": write_run(root / "trunc", truncated[0], run_id="trunc", keep_text=True),
    }
    return out


# ------------------------------------------------------------------------------ known truth

def test_identical_runs_delta_zero_no_alarm(runs, tmp_path):
    result = run_cli(runs["base"], runs["same"], "--band", "0", "--output", tmp_path / "o")
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "o" / "compare.json").read_text())
    assert doc["alarm"] is False
    assert {f"{r['metric']}.{r['measure']}" for r in doc["rows"]} == set(FMEASURES)
    for row in doc["rows"]:
        assert row["delta"] == 0.0 and row["ci_low"] == 0.0 and row["ci_high"] == 0.0
        assert row["p_value"] == 1.0 and row["n_paired"] == 2500
    assert doc["top"] == []
    assert "no alarm" in result.output and "no example's rouge1.fmeasure changed" in result.output


def test_truncated_tenth_alarms_with_negative_delta_and_those_ids_on_top(runs, scored,
                                                                          truncated):
    frame, cut_ids = truncated
    expected = {m: (frame[measure_column(m)] - scored[measure_column(m)]).mean()
                for m in FMEASURES}
    result = run_cli(runs["base"], runs["trunc"], "--band", "0.002", "--format", "json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["alarm"] is True
    for row in doc["rows"]:
        m = f"{row['metric']}.{row['measure']}"
        assert row["delta"] == pytest.approx(expected[m], abs=1e-12)
        assert row["delta"] < 0 and row["ci_high"] < 0 and row["alarm"]
    assert len(doc["top"]) == 10
    assert {t["id"] for t in doc["top"]} <= cut_ids
    deltas = [abs(t["delta"]) for t in doc["top"]]
    assert deltas == sorted(deltas, reverse=True)
    first = doc["top"][0]
    assert first["candidate_prediction"] == truncate_half(first["baseline_prediction"])


def test_truncation_effect_is_inside_the_default_band_on_realsumm(runs, scored, truncated):
    """Truth about the data, not the tool: halving 10% of summaries moves means by < 0.01."""
    frame, _ = truncated
    biggest = max(abs((frame[measure_column(m)] - scored[measure_column(m)]).mean())
                  for m in FMEASURES)
    assert biggest < 0.01
    assert run_cli(runs["base"], runs["trunc"]).exit_code == 0


def test_noise_well_inside_the_band_does_not_alarm(tmp_path, texts, scored, runs):
    rng = np.random.default_rng(3)
    frame = texts.copy()
    for i in rng.choice(len(frame), size=len(frame) // 10, replace=False):
        words = frame.at[i, "prediction"].split(" ")
        del words[rng.integers(len(words))]          # drop one word
        frame.at[i, "prediction"] = " ".join(words)
    noisy = write_run(tmp_path / "noisy", score(frame), run_id="noisy")
    result = run_cli(runs["base"], noisy, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert not doc["alarm"]
    assert all(0 < abs(r["delta"]) < 0.01 / 5 for r in doc["rows"])


def test_ids_in_one_run_only_are_counted_overall_and_per_group(tmp_path, scored):
    base = scored.drop(index=range(0, 7))                       # 7 ids only in the candidate
    cand = scored.drop(index=range(100, 105)).copy()            # 5 ids only in the baseline
    extra = cand.head(3).assign(id=["new-1", "new-2", "new-3"])  # 3 more only in the candidate
    cand = pd.concat([cand, extra], ignore_index=True)
    b = write_run(tmp_path / "b", base.reset_index(drop=True), run_id="b", group_by=["source"])
    c = write_run(tmp_path / "c", cand, run_id="c", group_by=["source"])
    result = run_cli(b, c, "--format", "json", "--metric", "rougeL.fmeasure")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["pairing"]["n_paired"] == 2500 - 7 - 5
    assert doc["pairing"]["n_baseline_only"] == 5
    assert doc["pairing"]["n_candidate_only"] == 10
    assert sorted(k["id"] for k in doc["pairing"]["baseline_only_ids"]) == \
        sorted(scored["id"][100:105])
    rows = {r["group"]: r for r in doc["rows"]}
    assert rows["all"]["n_baseline_only"] == 5 and rows["all"]["n_candidate_only"] == 10
    per_source = scored.assign(b_only=scored.index.isin(range(100, 105)),
                               c_only=scored.index.isin(range(0, 7)))
    for source in ("abs", "ext"):
        part = per_source[per_source["source"] == source]
        row = rows[f"source={source}"]
        extra_here = int((extra["source"] == source).sum())
        assert row["n_baseline_only"] == int(part["b_only"].sum())
        assert row["n_candidate_only"] == int(part["c_only"].sum()) + extra_here
        assert row["n_paired"] == len(part) - part["b_only"].sum() - part["c_only"].sum()


def test_grouped_runs_pair_on_id_and_group(tmp_path, scored):
    """Document ids repeat across sources; the pairing key must include the group column."""
    bart = scored[scored["system"] == "bart_out"].assign(id=lambda f: f["doc"].str[4:])
    other = scored[scored["system"].isin(["t5_out_large", "matchsumm_out"])].assign(
        id=lambda f: f["doc"].str[4:])
    assert bart["id"].duplicated().any()                # the same id in abs and ext
    b = write_run(tmp_path / "b", bart.reset_index(drop=True), run_id="b", group_by=["source"])
    c = write_run(tmp_path / "c", other.reset_index(drop=True), run_id="c", group_by=["source"])
    doc = json.loads(run_cli(b, c, "--format", "json", "--band", "1").stdout)
    rows = {(r["group"], r["metric"]): r for r in doc["rows"]}
    for source, system in (("abs", "t5_out_large"), ("ext", "matchsumm_out")):
        want = (scored.loc[(scored["source"] == source) & (scored["system"] == system),
                           "rouge2_fmeasure"].mean()
                - scored.loc[(scored["source"] == source) & (scored["system"] == "bart_out"),
                             "rouge2_fmeasure"].mean())
        row = rows[(f"source={source}", "rouge2")]
        assert row["n_paired"] == 100 and row["source"] == source
        assert row["delta"] == pytest.approx(want, abs=1e-12)
    assert rows[("all", "rouge2")]["n_paired"] == 200


# ------------------------------------------------------------------------------ signatures

def test_signature_mismatch_is_refused_naming_the_field(tmp_path, texts, runs):
    porter = write_run(tmp_path / "porter", score(texts, stemmer="porter"), run_id="porter",
                       sig=signature(stemmer="porter"))
    result = CliRunner().invoke(main, ["compare", str(runs["base"]), str(porter)])
    assert result.exit_code == 2
    assert "stem: none vs porter" in result.output
    assert "--allow-signature-mismatch" in result.output
    allowed = run_cli(runs["base"], porter, "--allow-signature-mismatch", "--format", "json",
                      "--band", "1")
    assert allowed.exit_code == 0
    assert json.loads(allowed.stdout)["signature_differences"] == ["stem"]
    assert "signatures differ in stem" in allowed.stderr


def test_signature_from_parquet_metadata_when_manifest_lacks_it(tmp_path, scored, runs):
    run = write_run(tmp_path / "r", scored, run_id="r")
    manifest = json.loads((run / "manifest.json").read_text())
    del manifest["signature"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert run_cli(runs["base"], run).exit_code == 0


def test_different_metric_sets_compare_the_shared_measures_with_a_note(tmp_path, scored, runs):
    # issue 17: a metric added (or dropped) is a note; the shared measures were scored alike
    fewer = write_run(tmp_path / "fewer", scored, run_id="fewer", metrics=("rouge1", "rougeL"))
    result = CliRunner().invoke(main, ["compare", str(runs["base"]), str(fewer),
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    assert "note: the signatures differ in metrics:" in result.stderr
    assert "which no compared measure depends on" in result.stderr
    assert [f"{r['metric']}.{r['measure']}" for r in json.loads(result.stdout)["rows"]] == \
        ["rouge1.fmeasure", "rougeL.fmeasure"]


def test_a_later_scoring_setting_is_checked_and_run_fields_are_only_noted(tmp_path, scored,
                                                                          runs):
    split = signature().replace("|version:", "|split:punctuation|version:")
    other = write_run(tmp_path / "split", scored, run_id="split", sig=split)
    refused = CliRunner().invoke(main, ["compare", str(runs["base"]), str(other)])
    assert refused.exit_code == 2 and "split: (absent) vs punctuation" in refused.output
    seeded = write_run(tmp_path / "seed", scored, run_id="seed",
                       sig=signature().replace("seed:12345", "seed:7"))
    noted = run_cli(runs["base"], seeded, "--format", "json")
    assert noted.exit_code == 0
    assert any("seed: 12345 vs 7" in n for n in json.loads(noted.stdout)["notes"])


def test_signature_mismatch_error_pickles_with_its_hint():
    err = SignatureMismatchError("runs differ", hint="pass --allow-signature-mismatch")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is SignatureMismatchError and back.hint == err.hint
    assert back.exit_code == 2 and isinstance(back, InputError)


# ------------------------------------------------------------------------------ bad input

@pytest.mark.parametrize("args, message", [
    (["--metric", "rougeL"], "not a measure"),
    (["--metric", "rouge3.fmeasure"], "not in the baseline run"),
    (["--confidence", "1.5"], "confidence"),
    (["--n-bootstrap", "0"], "n_bootstrap"),
    (["--band", "-0.1"], "band"),
    (["--top", "-1"], "-1"),
    (["--format", "csv"], "csv"),
])
def test_bad_options_exit_2(runs, args, message):
    result = CliRunner().invoke(main, ["compare", str(runs["base"]), str(runs["same"]), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_incomplete_and_missing_runs_exit_2(tmp_path, scored, runs):
    half = write_run(tmp_path / "half", scored.head(10), run_id="half", success=False)
    result = CliRunner().invoke(main, ["compare", str(runs["base"]), str(half)])
    assert result.exit_code == 2 and "_SUCCESS" in result.output
    result = CliRunner().invoke(main, ["compare", str(tmp_path / "nowhere"), str(runs["base"])])
    assert result.exit_code == 2 and "no such run directory" in result.output


def test_an_input_folder_given_as_a_run_is_said_to_be_one(tmp_path, runs):
    from pathlib import Path

    bundled = Path(__file__).resolve().parents[2] / "pipeline/data/realsumm/predictions"
    nested = tmp_path / "preds" / "day=1"  # shards below the folder count too
    nested.mkdir(parents=True)
    (nested / "part-0.parquet").write_bytes(next(bundled.glob("*.parquet")).read_bytes())
    for folder in (bundled, tmp_path / "preds"):
        for args in (["compare", str(runs["base"]), str(folder)],
                     ["report", str(folder), "--output", str(tmp_path / "r.html")]):
            result = CliRunner().invoke(main, args)
            assert result.exit_code == 2, result.output
            lines = result.stderr.splitlines()
            assert len(lines) == 1 and "Traceback" not in result.output, result.output
            assert f"{folder} is not a run directory" in lines[0], lines[0]
            assert "; it looks like input predictions: score it first" in lines[0], lines[0]
            assert "_SUCCESS" not in lines[0]
    assert not (tmp_path / "r.html").exists()
    (tmp_path / "empty").mkdir()  # nothing in it: still the unfinished-run message
    result = CliRunner().invoke(main, ["compare", str(runs["base"]), str(tmp_path / "empty")])
    assert result.exit_code == 2 and "no _SUCCESS marker" in result.output


def test_a_file_or_a_nightly_root_given_as_a_run_is_said_to_be_one(tmp_path, scored, runs):
    # an existing file is no "no such run directory"; a nightly ROOT (run_date=/run_id=
    # directories holding Parquet files) is no "input predictions" to be scored
    afile = tmp_path / "afile.parquet"
    afile.write_bytes(b"PAR1")
    root = tmp_path / "nights"
    write_run(root / "run_date=2026-12-01" / "run_id=a", scored.head(20), run_id="a")
    write_run(root / "run_date=2026-12-02" / "run_id=b", scored.head(20), run_id="b")
    write_run(root / "run_date=2026-12-03" / "run_id=c", scored.head(20), run_id="c",
              success=False)  # unfinished: not the night to name
    empty_root = tmp_path / "young"
    write_run(empty_root / "run_date=2026-12-01" / "run_id=a", scored.head(20), run_id="a",
              success=False)
    cases = [(afile, [f"{afile} is a file, not a run directory"]),
             (root, [f"{root} is a nightly root (run_date= directories), not a run directory",
                     f"e.g. {root}/run_date=2026-12-02/run_id=b;",
                     "take the root as --history"]),
             (empty_root, [f"{empty_root}/run_date=YYYY-MM-DD/run_id=ID once one is complete"])]
    for path, needles in cases:
        for args in (["compare", str(runs["base"]), str(path)],
                     ["report", str(path), "--output", str(tmp_path / "r.html")]):
            result = CliRunner().invoke(main, args)
            assert result.exit_code == 2, result.output
            lines = result.stderr.splitlines()
            assert len(lines) == 1 and "Traceback" not in result.output, result.output
            for needle in needles:
                assert needle in lines[0], lines[0]
            assert "no such run directory" not in lines[0], lines[0]
            assert "input predictions" not in lines[0] and "_SUCCESS" not in lines[0]
    assert not (tmp_path / "r.html").exists()


def test_no_common_example_exits_2(tmp_path, scored, runs):
    other = write_run(tmp_path / "o", scored.assign(id=scored["id"] + "-x"), run_id="o")
    result = CliRunner().invoke(main, ["compare", str(runs["base"]), str(other)])
    assert result.exit_code == 2 and "no example in common" in result.output


def test_duplicate_ids_exit_2(tmp_path, scored, runs):
    dup = write_run(tmp_path / "d", pd.concat([scored, scored.head(2)]), run_id="d")
    result = CliRunner().invoke(main, ["compare", str(runs["base"]), str(dup)])
    assert result.exit_code == 2 and "same key" in result.output


# ------------------------------------------------------------------------------ outputs

def test_output_files_read_back_with_types(runs, tmp_path):
    result = run_cli(runs["base"], runs["trunc"], "--band", "0.002", "--output", tmp_path / "o",
                     "--format", "json")
    assert result.exit_code == 1
    table = pd.read_parquet(tmp_path / "o" / "compare.parquet")
    assert list(table.columns[:4]) == ["baseline_run_id", "candidate_run_id", "group", "metric"]
    assert table["baseline_run_id"].unique().tolist() == ["base"]
    assert str(table["n_paired"].dtype) == "int64" and str(table["delta"].dtype) == "float64"
    assert table["alarm"].dtype == bool and table["alarm"].all()
    document = json.loads((tmp_path / "o" / "compare.json").read_text())
    assert document == json.loads(result.stdout)
    import pyarrow.parquet as pq

    meta = pq.read_schema(tmp_path / "o" / "compare.parquet").metadata
    assert meta[b"overlap.baseline_signature"].decode() == signature()
    assert json.loads(meta[b"overlap.compare"])["settings"]["band"] == 0.002


def test_table_output_names_the_alarm_and_shows_texts(runs):
    result = run_cli(runs["base"], runs["trunc"], "--band", "0.002", "--top", "3",
                     "--format", "table")
    assert result.exit_code == 1
    out = result.stdout
    assert "ALARM: 4 alarms (4 change, 0 drift, 0 missing)" in out
    assert "3 examples that moved most (rouge1.fmeasure)" in out
    # issue 17: a word diff shows where the texts differ (the cut tail), however long they are
    doc = json.loads(run_cli(runs["base"], runs["trunc"], "--band", "0.002", "--top", "3",
                             "--format", "json").stdout)
    for t in doc["top"]:
        base, cand = t["baseline_prediction"].split(), t["candidate_prediction"].split()
        assert base[:len(cand)] == cand and len(base) > len(cand)
        assert f"[-{' '.join(base[len(cand):])}-]" in out


def test_plot_is_a_png(runs, tmp_path):
    png = tmp_path / "delta.png"
    assert run_cli(runs["base"], runs["trunc"], "--plot", png).exit_code == 0
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_plot_of_grouped_runs(tmp_path, scored, truncated):
    b = write_run(tmp_path / "b", scored, run_id="b", group_by=["system"])
    c = write_run(tmp_path / "c", truncated[0], run_id="c", group_by=["system"])
    png = tmp_path / "grouped.png"
    result = run_cli(b, c, "--metric", "rougeL.fmeasure", "--plot", png, "--top", "0",
                     "--format", "table")
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert result.stdout.count("system=") == scored["system"].nunique()


def test_texts_from_readable_inputs_when_not_kept(tmp_path, texts, scored, truncated):
    inputs = tmp_path / "preds.parquet"
    texts[["id", "prediction"]].to_parquet(inputs)
    b = write_run(tmp_path / "b", scored, run_id="b", predictions_path=str(inputs))
    c = write_run(tmp_path / "c", truncated[0], run_id="c",
                  predictions_path=str(tmp_path / "gone.parquet"))
    result = run_cli(b, c, "--format", "json", "--top", "2")
    doc = json.loads(result.stdout)
    by_id = texts.set_index("id")["prediction"]
    assert [t["baseline_prediction"] for t in doc["top"]] == [by_id[t["id"]] for t in doc["top"]]
    assert all(t["candidate_prediction"] is None for t in doc["top"])
    assert "candidate: no prediction texts" in result.stderr


def test_compare_has_help():
    result = CliRunner().invoke(main, ["compare", "--help"])
    assert result.exit_code == 0
    for option in ("--metric", "--band", "--confidence", "--n-bootstrap", "--seed", "--top",
                   "--output", "--plot", "--allow-signature-mismatch", "--format"):
        assert option in result.output


# ------------------------------------------------------------------------------ pure core

@pytest.mark.parametrize("delta, low, high, band, alarm", [
    (-0.02, -0.03, -0.01, 0.01, True),     # below zero, beyond the band
    (0.02, 0.01, 0.03, 0.01, True),        # above zero: either direction alarms
    (-0.005, -0.008, -0.002, 0.01, False),  # significant but inside the band
    (-0.02, -0.05, 0.01, 0.01, False),     # beyond the band but the interval holds 0
    (0.0, 0.0, 0.0, 0.0, False),           # identical runs
    (0.5, float("nan"), float("nan"), 0.0, False),  # no interval (one pair)
])
def test_alarm_rule(delta, low, high, band, alarm):
    assert is_alarm(delta, low, high, band=band) is alarm


def test_same_seed_same_interval_other_seed_other_interval():
    rng = np.random.default_rng(0)
    b, c = rng.random(300), rng.random(300)
    one, two = paired_test(b, c, seed=1), paired_test(b, c, seed=1)
    three = paired_test(b, c, seed=2)
    assert one.ci_low == two.ci_low and one.p_value == two.p_value
    assert one.ci_low != three.ci_low
    assert one.delta == three.delta


def test_constant_shift_and_single_pair():
    b = np.linspace(0.2, 0.8, 50)
    shifted = paired_test(b, b - 0.03)
    assert shifted.delta[0] == pytest.approx(-0.03)
    assert shifted.ci_low[0] == pytest.approx(-0.03) and shifted.ci_high[0] == pytest.approx(-0.03)
    assert shifted.p_value[0] == pytest.approx(1 / 1001)
    single = paired_test([0.4], [0.9])
    assert single.delta[0] == pytest.approx(0.5) and np.isnan(single.ci_low[0])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=60),
       st.integers(0, 2**32 - 1))
def test_paired_test_properties(pairs, seed):
    b, c = np.array(pairs).T
    forward = paired_test(b, c, n_bootstrap=200, seed=seed)
    backward = paired_test(c, b, n_bootstrap=200, seed=seed)
    assert forward.delta[0] == pytest.approx(np.mean(c - b), abs=1e-12)
    assert forward.delta[0] == pytest.approx(-backward.delta[0], abs=1e-12)
    # the same resamples, mirrored: the interval flips sign, the p-value is the same
    assert forward.ci_low[0] == pytest.approx(-backward.ci_high[0], abs=1e-12)
    assert forward.p_value[0] == pytest.approx(backward.p_value[0])
    assert 1 / 201 <= forward.p_value[0] <= 1.0
    assert forward.ci_low[0] <= forward.ci_high[0]
    assert min(c - b) - 1e-12 <= forward.ci_low[0] and forward.ci_high[0] <= max(c - b) + 1e-12


def test_one_and_several_measures_resample_alike():
    """Every measure gets the same weights: a column alone gives the same resamples."""
    from pipeline.compare import bootstrap_mean_differences

    d = np.random.default_rng(5).normal(size=(300, 3))
    together = bootstrap_mean_differences(d, n_bootstrap=50, seed=1)
    alone = bootstrap_mean_differences(d[:, 1:2], n_bootstrap=50, seed=1)
    assert np.array_equal(together[:, 1], alone[:, 0])


def test_paired_test_against_plain_weights_and_its_mde():
    from statistics import NormalDist

    from tests.support.plain_bootstrap import plain_mix64, plain_weights

    rng = np.random.default_rng(8)
    b, c = rng.random(120), rng.random(120)
    test = paired_test(b, c, n_bootstrap=200, seed=4, confidence=0.9)
    hashes = [plain_mix64(i) for i in range(120)]
    w = plain_weights(hashes, seed=4, count=200, kind="poisson")
    deltas = (w @ (c - b)) / w.sum(axis=1)
    assert test.ci_low[0] == pytest.approx(np.quantile(deltas, 0.05), abs=1e-12)
    assert test.ci_high[0] == pytest.approx(np.quantile(deltas, 0.95), abs=1e-12)
    z = NormalDist().inv_cdf(0.95) + NormalDist().inv_cdf(0.8)
    assert test.mde[0] == pytest.approx(z * deltas.std(), rel=1e-9)
    flips = plain_weights(hashes, seed=4, count=200, kind="flip")
    trials = np.abs((2 * flips @ (c - b) - (c - b).sum()) / 120)
    extreme = (trials >= abs(np.mean(c - b)) - 1e-12).sum()
    assert test.p_value[0] == pytest.approx((extreme + 1) / 201)


def test_resolve_measures():
    both = ("rouge1.precision", "rouge1.fmeasure", "rougeL.fmeasure")
    assert resolve_measures(None, both, both[::-1]) == ("rouge1.fmeasure", "rougeL.fmeasure")
    assert resolve_measures(["rouge1.precision", "rouge1.precision"], both, both) == \
        ("rouge1.precision",)
    with pytest.raises(ConfigError):
        resolve_measures(["rouge1.f1"], both, both)
    with pytest.raises(InputError, match="candidate"):
        resolve_measures(["rouge1.precision"], both, ("rouge1.fmeasure",))


def test_compare_examples_rejects_non_finite_scores():
    frame = pd.DataFrame({"id": ["a", "b"], "rouge1_fmeasure": [0.5, np.nan]})
    with pytest.raises(InputError, match="non-finite"):
        compare_examples(frame, frame, measures=["rouge1.fmeasure"])


def test_runs_and_output_on_a_uri(runs):
    """Run directories and the output behind a URI (fsspec's in-memory filesystem)."""
    fsspec = pytest.importorskip("fsspec")
    memory = fsspec.filesystem("memory")
    for name in ("base", "trunc"):
        memory.put(str(runs[name]), f"/compare-test/{name}", recursive=True)
    try:
        result = run_cli("memory://compare-test/base", "memory://compare-test/trunc", "--band",
                         "0.002", "--output", "memory://compare-test/out", "--top", "1")
        assert result.exit_code == 1, result.output
        document = json.loads(memory.cat("/compare-test/out/compare.json"))
        assert document["alarm"] and document["baseline"]["run_id"] == "base"
    finally:
        memory.rm("/compare-test", recursive=True)


def test_integer_ids(tmp_path, scored, truncated):
    b = write_run(tmp_path / "b", scored.assign(id=range(len(scored))), run_id="b")
    c = write_run(tmp_path / "c", truncated[0].assign(id=range(len(scored))).iloc[1:],
                  run_id="c")
    result = run_cli(b, c, "--format", "json", "--band", "0.002", "--top", "2")
    doc = json.loads(result.stdout)
    assert result.exit_code == 1
    assert doc["pairing"]["baseline_only_ids"] == [0]
    assert all(isinstance(t["id"], int) for t in doc["top"])
