"""The hostile matrix of the metric families and ``--rouge155`` (issue 19, part 3).

Each case ends in a documented outcome: the right numbers (checked by hand or against the
same input stored plainly), or one line on stderr with exit 2 and nothing written (no
output, no staging directory). In-process engine; the same functions run on Ray workers.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from pipeline.cli import main
from pipeline.metrics.rouge155.family import Rouge155Options, score_rouge155
from tests.pipeline.test_bad_input import assert_refused

FAST = ["--engine", "local", "--bootstrap", "0"]


def score(*args: str) -> Result:
    return CliRunner().invoke(main, ["score", *args, *FAST])


def examples(out: Path) -> pa.Table:
    tables = [pq.read_table(f) for f in sorted((out / "examples").glob("part-*.parquet"))]
    return pa.concat_tables(tables).drop_columns(["run_id"]).sort_by("id")


@pytest.fixture
def predictions(tmp_path: Path) -> str:
    path = tmp_path / "in" / "predictions.parquet"
    path.parent.mkdir()
    # skip bigrams by hand: the reference "a b c d" has ab ac ad bc bd cd (6); the
    # prediction "a c b d" has ac ab ad cb cd bd, 5 of them in the reference: R = P = 5/6
    pq.write_table(pa.table({"id": [1, 2], "prediction": ["a c b d", "w x y z"],
                             "references": [["a b c d"], ["w x y z"]]}), path)
    return str(path)


# --- --rouge155 values beyond what the kernels take -------------------------------------

@pytest.mark.parametrize("gap", ["9223372036854775807", "100000000000000000000", "2",
                                 "1000000"])
def test_a_skip_gap_of_any_size_at_least_the_text_counts_every_skip_bigram(
        tmp_path, predictions, gap):
    # before: 9223372036854775807 overflowed int64 in the kernel (rougeS 0 for every
    # example), 1e20 did not fit the kernel's int64 (a traceback)
    out = tmp_path / "out"
    result = score(predictions, "--output", str(out), "--rouge155", f"-2 {gap} -U -x")
    assert result.exit_code == 0, result.output
    got = examples(out).to_pydict()
    assert got[f"rougeS{gap}_recall"] == pytest.approx([5 / 6, 1.0])
    assert got[f"rougeS{gap}_reference_units"] == [6, 6]
    # ROUGE-SU adds the unigrams but the last (the script's loop): 3 more units, 3 matches
    assert got[f"rougeSU{gap}_recall"] == pytest.approx([8 / 9, 1.0])


def test_a_skip_gap_below_the_text_still_limits(tmp_path, predictions):
    # gap 0: adjacent pairs only: reference ab bc cd, prediction ac cb bd: no match
    out = tmp_path / "out"
    assert score(predictions, "--output", str(out), "--rouge155", "-2 0 -x").exit_code == 0
    got = examples(out).to_pydict()
    assert got["rougeS0_matches"] == [0, 3] and got["rougeS0_reference_units"] == [3, 3]


def test_a_huge_skip_gap_by_metric_name_equals_no_limit():
    preds = ["the cat sat on the mat\nit purred", "police killed the gunman"]
    refs = [["the cat was on the mat", "a cat sat"], ["the gunman was killed by police"]]
    got = score_rouge155(preds, refs, ["rougeS", "rougeS99999999999999999999999",
                                       "rougeSU", "rougeSU9223372036854775807"],
                         Rouge155Options())
    for stat in ("recall", "precision", "matches", "reference_units", "prediction_units"):
        assert got[f"rougeS99999999999999999999999_{stat}"].tolist() == \
            got[f"rougeS_{stat}"].tolist()
        assert got[f"rougeSU9223372036854775807_{stat}"].tolist() == \
            got[f"rougeSU_{stat}"].tolist()


@pytest.mark.parametrize("flags, same_as", [
    ("-l 99999999999999999999999 -2 4 -U", "-2 4 -U"),
    ("-b 99999999999999999999999 -2 4 -U", "-2 4 -U"),
    ("-2 -99999999999999999999999 -U", "-2 -1 -U"),
])
def test_huge_limits_are_no_limits(tmp_path, predictions, flags, same_as):
    outs = []
    for k, f in enumerate((flags, same_as)):
        outs.append(tmp_path / f"out{k}")
        result = score(predictions, "--output", str(outs[-1]), "--rouge155", f)
        assert result.exit_code == 0, result.output
    got, want = examples(outs[0]), examples(outs[1])
    assert got.select(want.column_names).equals(want)


@pytest.mark.parametrize("flags, fragment", [
    ("-w 1e308", "wlcs_weight"),      # before: OverflowError traceback, staging left
    ("-w 1e-300", "wlcs_weight"),     # before: OverflowError traceback in the aggregate
    ("-w 0.5", "wlcs_weight"),        # before: recall 4.04, silently
    ("-w 5.01", "wlcs_weight"),
    ("-w nan", "wlcs_weight"),
    ("-w inf", "wlcs_weight"),
    ("-w 0", "wlcs_weight"),
    ("-2 1e20", "not a whole number"),
    ("-2 x", "not a whole number"),
    ("-n 0", "outside 1..9"),
    ("-n 10", "outside 1..9"),
    ("-l -1", "limit_words"),
    ("-b 1.5", "not a whole number"),
    ("-l 5 -b 5", "cannot both be set"),
    ("-p 2", "alpha"),
    ("-p nan", "alpha"),
    ("-f C", "-f"),
    ("-3 HM", "-3"),
    ("-M", "-M"),
    ("-q", "unknown rouge155 flag -q"),
    ("-n 2 settings.xml", "not a flag"),
    ("-x", "ask for no metric"),
    ("-n '2", "rouge155 flags"),
])
def test_rouge155_values_out_of_range_are_one_line_and_nothing_written(
        tmp_path, predictions, flags, fragment):
    out = tmp_path / "out"
    result = score(predictions, "--output", str(out), "--rouge155", flags)
    assert_refused(result, out, fragment)


@pytest.mark.parametrize("option, value", [("--wlcs-weight", "7"), ("--wlcs-weight", "0.9")])
def test_the_weight_option_has_the_same_range(tmp_path, predictions, option, value):
    out = tmp_path / "out"
    result = score(predictions, "--output", str(out), "--metrics", "rougeWsum",
                   "--tokenizer", "rouge155", option, value)
    assert_refused(result, out, "wlcs_weight")


@pytest.mark.parametrize("weight", ["1", "5"])
def test_the_weight_range_is_inclusive(tmp_path, predictions, weight):
    out = tmp_path / "out"
    result = score(predictions, "--output", str(out), "--rouge155", f"-w {weight}")
    assert result.exit_code == 0, result.output
    got = examples(out).to_pydict()
    # weight 1: the weighted LCS is the LCS ("a c d" or "a b d": 3 of 4 by hand)
    if weight == "1":
        assert got["rougeWsum_recall"] == pytest.approx([0.75, 1.0])
        assert got["rougeWsum_recall"] == pytest.approx(got["rougeLsum_recall"])
    assert all(0.0 <= v <= 1.0 for v in got["rougeWsum_recall"] + got["rougeWsum_precision"])


# --- encoded inputs read as the plain columns --------------------------------------------

PREDICTIONS = ["the cat sat on the mat", "a dog ran far away", "police killed the gunman",
               "the cat sat", "", "Who wrote it? Shakespeare."]
REFERENCES = [["the cat was on the mat"], ["the dog ran away", "a dog ran"],
              ["the gunman was killed by police"], ["a cat sat"], ["nothing"],
              ["Shakespeare wrote it."]]
GROUPS = ["a", "b", "a", "b", "c", "a"]
IDS = list(range(1, 7))
ENCODINGS = {
    "pandas Categorical group": lambda: pa.Table.from_pandas(pd.DataFrame(
        {"id": IDS, "prediction": PREDICTIONS, "references": REFERENCES,
         "group": pd.Categorical(GROUPS)}), preserve_index=False),
    "dictionary prediction, list<string_view> references, string_view group":
        lambda: pa.table({"id": IDS, "prediction": pa.array(PREDICTIONS).dictionary_encode(),
                          "references": pa.array(REFERENCES, pa.list_(pa.string_view())),
                          "group": pa.array(GROUPS, pa.string_view())}),
    "string_view prediction, dictionary group":
        lambda: pa.table({"id": IDS, "prediction": pa.array(PREDICTIONS, pa.string_view()),
                          "references": pa.array(REFERENCES, pa.large_list(pa.string())),
                          "group": pa.array(GROUPS).dictionary_encode()}),
    "dictionary references inside the list, dictionary ids":
        lambda: pa.table({"id": pa.array(IDS).dictionary_encode(),
                          "prediction": PREDICTIONS,
                          "references": pa.array(REFERENCES, pa.list_(
                              pa.dictionary(pa.int32(), pa.string()))),
                          "group": GROUPS}),
}
METRIC_RUNS = {
    "rouge, bleu, chrf, squad": ["--metrics", "rouge1,rougeL,rougeLsum,bleu,chrf,token_f1,"
                                 "exact_match"],
    "rouge155": ["--rouge155", "-n 2 -w 1.2 -2 4 -U -m"],
}


def _plain(tmp_path: Path) -> str:
    path = tmp_path / "plain" / "predictions.parquet"
    path.parent.mkdir(exist_ok=True)
    pq.write_table(pa.table({"id": IDS, "prediction": PREDICTIONS, "references": REFERENCES,
                             "group": GROUPS}), path)
    return str(path)


def _same(out: Path, plain_out: Path) -> None:
    got, want = examples(out), examples(plain_out)
    assert got.cast(want.schema).equals(want)
    got_agg = pq.read_table(out / "aggregate.parquet")
    want_agg = pq.read_table(plain_out / "aggregate.parquet")
    assert got_agg.cast(want_agg.schema).equals(want_agg)


@pytest.mark.parametrize("metrics", METRIC_RUNS.values(), ids=METRIC_RUNS.keys())
@pytest.mark.parametrize("encoding", ENCODINGS.values(), ids=ENCODINGS.keys())
def test_encoded_columns_score_and_group_as_plain_strings(tmp_path, encoding, metrics):
    # before: "not strings" (exit 2) for every encoding here
    path = tmp_path / "enc" / "predictions.parquet"
    path.parent.mkdir()
    pq.write_table(encoding(), path)
    plain_out, out = tmp_path / "plain_out", tmp_path / "out"
    args = ["--group-by", "group", *metrics]
    assert score(_plain(tmp_path), "--output", str(plain_out), *args).exit_code == 0
    result = score(str(path), "--output", str(out), *args)
    assert result.exit_code == 0, result.output
    _same(out, plain_out)


@pytest.mark.parametrize("reference_type", [pa.string_view(),
                                            pa.dictionary(pa.int8(), pa.string())],
                         ids=["string_view", "dictionary"])
def test_encoded_reference_rows_score_as_plain_strings(tmp_path, reference_type):
    rows = [(i, r) for i, refs in zip(IDS, REFERENCES, strict=True) for r in refs]
    ids, refs = [i for i, _ in rows], [r for _, r in rows]
    d = tmp_path / "in"
    d.mkdir()
    pq.write_table(pa.table({"id": IDS, "prediction": PREDICTIONS}), d / "p.parquet")
    pq.write_table(pa.table({"id": ids, "reference": refs}), d / "plain_refs.parquet")
    pq.write_table(pa.table({"id": ids, "reference": pa.array(refs).cast(reference_type)}),
                   d / "refs.parquet")
    plain_out, out = tmp_path / "plain_out", tmp_path / "out"
    metrics = ["--metrics", "rouge1,rougeLsum,chrf,token_f1"]
    assert score(str(d / "p.parquet"), "--references", str(d / "plain_refs.parquet"),
                 "--output", str(plain_out), *metrics).exit_code == 0
    result = score(str(d / "p.parquet"), "--references", str(d / "refs.parquet"),
                   "--output", str(out), *metrics)
    assert result.exit_code == 0, result.output
    _same(out, plain_out)


def test_dictionary_encoded_integers_are_still_refused_as_not_strings(tmp_path):
    path = tmp_path / "in" / "p.parquet"
    path.parent.mkdir()
    pq.write_table(pa.table({"id": [1], "prediction": pa.array([1]).dictionary_encode(),
                             "references": [["x"]]}), path)
    out = tmp_path / "out"
    assert_refused(score(str(path), "--output", str(out)), out, "'prediction'",
                   "expected strings")
