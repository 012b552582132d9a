"""The bad-input matrix of ``overlap score`` (README "Bad input"), one case per test row.

Each case ends in one of two documented outcomes: a one-line error on stderr naming the
file, column or example ids (at most 5 ids, plus the count) with exit code 2, nothing
written and a previous complete output left byte-identical; or a documented handling whose
counts are in ``manifest.json``. In-process engine (``--engine local``); the same task
functions run on Ray workers.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from pipeline.cli import main
from pipeline.config import DEFAULT_MAX_TOKENS
from tests.support import reference_rouge

FAST = ["--engine", "local", "--bootstrap", "0"]


def write(path: Path, **columns) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return str(path)


def overlap_score(*args: str) -> Result:
    return CliRunner().invoke(main, ["score", *args, *FAST])


def assert_refused(result: Result, out: Path, *fragments: str) -> str:
    """Exit 2, one line on stderr holding every fragment, nothing on stdout or on disk."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert result.stdout == ""
    assert not out.exists()
    assert not [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]
    return lines[0]


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def examples(out: Path) -> dict[str, list]:
    tables = [pq.read_table(f) for f in sorted((out / "examples").glob("part-*.parquet"))]
    return pa.concat_tables(tables).to_pydict()


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def refs(tmp_path: Path) -> str:
    """References for ids a, b, c, one row per reference."""
    return write(tmp_path / "refs.parquet", id=["a", "b", "c"],
                 reference=["the cat sat", "a dog barked", "birds sing"])


# --- columns and types ---------------------------------------------------------------------

def test_missing_id_column_lists_the_columns(tmp_path):
    p = write(tmp_path / "p.parquet", key=["a"], prediction=["x"], references=[["x"]])
    assert_refused(overlap_score(p, "--output", str(tmp_path / "out")), tmp_path / "out",
                   "p.parquet has no column 'id'; its columns: key, prediction, references")


def test_missing_prediction_column_lists_the_columns_and_a_hint(tmp_path, refs):
    p = write(tmp_path / "p.parquet", id=["a"], predictions=["x"])
    assert_refused(overlap_score(p, "--references", refs, "--output", str(tmp_path / "out")),
                   tmp_path / "out", "p.parquet has no column 'prediction'; its columns: id, "
                   "predictions", "did you mean 'predictions'?")


@pytest.mark.parametrize("layout", ["inline", "separate", "named"])
def test_missing_reference_column_lists_the_columns(tmp_path, layout):
    out = tmp_path / "out"
    if layout == "inline":
        p = write(tmp_path / "p.parquet", id=["a"], prediction=["x"], gold=[["x"]])
        message = "p.parquet has no 'references' list column and no --references table " \
                  "was given; its columns: id, prediction, gold"
        result = overlap_score(p, "--output", str(out))
    else:
        p = write(tmp_path / "p.parquet", id=["a"], prediction=["x"])
        r = write(tmp_path / "r.parquet", id=["a"], text=["x"])
        extra = ["--reference-column", "gold"] if layout == "named" else []
        message = ("r.parquet has no column 'gold'; its columns: id, text" if extra else
                   "r.parquet has neither a 'references' (list) nor a 'reference' (string) "
                   "column; its columns: id, text")
        result = overlap_score(p, "--references", r, "--output", str(out), *extra)
    assert_refused(result, out, message)


def test_integer_predictions_name_the_column_type_and_file(tmp_path, refs):
    p = write(tmp_path / "p.parquet", id=["a", "b"], prediction=[1, 2])
    assert_refused(overlap_score(p, "--references", refs, "--output", str(tmp_path / "out")),
                   tmp_path / "out", "column 'prediction' is int64 in ", "p.parquet; expected "
                   "strings")


@pytest.mark.parametrize("where", ["inline", "references table"])
def test_a_struct_where_a_list_of_strings_belongs(tmp_path, where):
    struct = pa.array([{"text": "x", "source": "wiki"}])
    if where == "inline":
        p = write(tmp_path / "p.parquet", id=["a"], prediction=["x"], references=struct)
        args = [p]
        message = "references column 'references' is struct<text: string, source: string> in "
    else:
        p = write(tmp_path / "p.parquet", id=["a"], prediction=["x"])
        args = [p, "--references", write(tmp_path / "r.parquet", id=["a"], references=struct)]
        message = "column 'references' is struct<text: string, source: string> in "
    line = assert_refused(overlap_score(*args, "--output", str(tmp_path / "out")),
                          tmp_path / "out", message, "expected list<string>")
    assert ".parquet" in line


# --- corrupt, truncated, empty and disagreeing files ------------------------------------------

def _shards(tmp_path: Path, n: int = 3) -> Path:
    folder = tmp_path / "preds"
    for i in range(n):
        write(folder / f"part-{i}.parquet", id=[f"id{i}"], prediction=[f"text {i}"],
              references=[[f"text {i}"]])
    return folder


def test_a_truncated_shard_is_named(tmp_path):
    folder = _shards(tmp_path)
    shard = folder / "part-1.parquet"
    data = shard.read_bytes()
    shard.write_bytes(data[:len(data) // 2])
    assert_refused(overlap_score(str(folder), "--output", str(tmp_path / "out")),
                   tmp_path / "out", f"predictions: {shard} is not a readable Parquet file",
                   "magic bytes not found")


def test_a_zero_byte_shard_is_named_not_skipped(tmp_path):
    folder = _shards(tmp_path)
    (folder / "part-3.parquet").write_bytes(b"")
    assert_refused(overlap_score(str(folder), "--output", str(tmp_path / "out")),
                   tmp_path / "out", f"{folder / 'part-3.parquet'} is not a readable Parquet "
                   "file (Parquet file size is 0 bytes)")


def test_a_corrupt_data_page_behind_a_valid_footer_is_named(tmp_path):
    n = 500
    p = tmp_path / "p.parquet"
    write(p, id=[f"i{k}" for k in range(n)], prediction=[f"w{k} v{k * 7}" for k in range(n)],
          references=[["w1 v7"]] * n)
    column = pq.read_metadata(p).row_group(0).column(1)
    data = bytearray(p.read_bytes())
    start = column.data_page_offset + 40
    data[start:start + 200] = b"\xab" * 200
    p.write_bytes(bytes(data))
    assert_refused(overlap_score(str(p), "--output", str(tmp_path / "out")), tmp_path / "out",
                   f"cannot read {p}: ")


@pytest.mark.parametrize("change", ["overwritten in place", "replaced by a rename"])
def test_an_input_rewritten_after_planning_stops_the_run(tmp_path, monkeypatch, change):
    # The footers plan the run and manifest.json describes the files by them; before, a
    # file rewritten between the plan and the read was scored with its new content under
    # the old file's size (exit 0).
    import os

    import pipeline.engine as engine

    folder = _shards(tmp_path)
    shard = folder / "part-1.parquet"
    plan_it = engine.make_plan

    def make_plan(*args, **kwargs):
        plan = plan_it(*args, **kwargs)
        target = shard if change == "overwritten in place" else tmp_path / "new.parquet"
        write(target, id=["id1", "id9"], prediction=["new text", "more"],
              references=[["new text"], ["more"]])
        if target != shard:
            os.replace(target, shard)
        return plan

    monkeypatch.setattr(engine, "make_plan", make_plan)
    out = tmp_path / "out"
    assert_refused(overlap_score(str(folder), "--output", str(out)), out,
                   f"predictions: {shard} changed while the run read it", "now ")


def test_shards_whose_types_disagree_name_both_files_and_the_column(tmp_path, refs):
    write(tmp_path / "p" / "0.parquet", id=["a"], prediction=["x"])
    write(tmp_path / "p" / "1.parquet", id=["b"], prediction=[7])
    assert_refused(overlap_score(str(tmp_path / "p"), "--references", refs, "--output",
                                 str(tmp_path / "out")), tmp_path / "out",
                   f"column 'prediction' is string in {tmp_path / 'p' / '0.parquet'} but int64 "
                   f"in {tmp_path / 'p' / '1.parquet'}")


def test_a_column_missing_from_one_shard_names_that_shard(tmp_path, refs):
    write(tmp_path / "p" / "0.parquet", id=["a"], prediction=["x"], system=["s1"])
    write(tmp_path / "p" / "1.parquet", id=["b"], prediction=["y"])
    assert_refused(overlap_score(str(tmp_path / "p"), "--references", refs, "--group-by",
                                 "system", "--output", str(tmp_path / "out"), "--on-missing",
                                 "skip"), tmp_path / "out",
                   f"{tmp_path / 'p' / '1.parquet'} has no column 'system'; its columns: id, "
                   "prediction")


def test_shards_of_compatible_types_are_scored_together(tmp_path):
    """string vs large_string, int32 vs int64: one kind, read as the wider type."""
    t0 = pa.table({"id": pa.array([1], pa.int32()), "prediction": ["the cat sat"],
                   "system": pa.array(["s1"], pa.string()),
                   "references": pa.array([["the cat sat"]], pa.list_(pa.string()))})
    t1 = pa.table({"id": pa.array([2], pa.int64()), "prediction": pa.array(["a dog"],
                                                                           pa.large_string()),
                   "system": pa.array(["s2"], pa.large_string()),
                   "references": pa.array([["a cat"]], pa.large_list(pa.large_string()))})
    (tmp_path / "p").mkdir()
    pq.write_table(t0, tmp_path / "p" / "0.parquet")
    pq.write_table(t1, tmp_path / "p" / "1.parquet")
    out = tmp_path / "out"
    result = overlap_score(str(tmp_path / "p"), "--group-by", "system", "--output", str(out))
    assert result.exit_code == 0, result.output
    ex = examples(out)
    assert ex["id"] == [1, 2] and ex["system"] == ["s1", "s2"]
    assert ex["rouge1_fmeasure"] == [1.0, 0.5]
    assert pq.read_schema(next((out / "examples").iterdir())).field("system").type \
        == pa.large_string()


@pytest.mark.parametrize("column", ["prediction", "references"])
def test_text_that_is_not_utf8_names_the_file_column_and_ids(tmp_path, column):
    """A sloppy writer can put any bytes in a string column; Parquet readers do not check."""
    def as_string(values: list[bytes]) -> pa.Array:
        return pa.array(values, pa.binary()).view(pa.string())

    texts = as_string([b"fine", b"caf\xe9 latin-1", b"ok", b"\xff\xfe"])
    refs = pa.ListArray.from_arrays([0, 1, 2, 3, 4], texts if column == "references"
                                    else as_string([b"fine"] * 4))
    p = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c", "d"],
                             "prediction": texts if column == "prediction"
                             else as_string([b"x"] * 4), "references": refs}), p)
    assert_refused(overlap_score(str(p), "--output", str(tmp_path / "out")), tmp_path / "out",
                   f"predictions: column {column!r} of {p} is not valid UTF-8 in 2 rows "
                   "(ids 'b', 'd')", "re-encode the text as UTF-8")


# --- nothing to score -----------------------------------------------------------------------

@pytest.mark.parametrize("case, message", [
    ("empty directory", "predictions: no *.parquet file in directory {d}"),
    ("no such path", "does not exist"),
    ("glob without a match", "no file matches"),
    ("zero prediction rows", "holds no rows (1 file(s))"),
    ("zero reference rows", "references: {r} holds no rows (1 file(s))"),
])
def test_no_input_files_or_zero_rows(tmp_path, refs, case, message):
    d = tmp_path / "empty"
    d.mkdir()
    r = refs
    args: list[str]
    if case == "empty directory":
        (d / "_SUCCESS").write_text("")  # markers are not data
        args = [str(d), "--references", refs]
        message = message.format(d=d)
    elif case == "no such path":
        args = [str(tmp_path / "nope.parquet"), "--references", refs]
    elif case == "glob without a match":
        args = [str(d / "*.parquet"), "--references", refs]
    elif case == "zero prediction rows":
        args = [write(tmp_path / "p.parquet", id=pa.array([], pa.string()),
                      prediction=pa.array([], pa.string())), "--references", refs]
    else:
        r = write(tmp_path / "r.parquet", id=pa.array([], pa.string()),
                  reference=pa.array([], pa.string()))
        args = [write(tmp_path / "p.parquet", id=["a"], prediction=["x"]), "--references", r]
        message = message.format(r=r)
    assert_refused(overlap_score(*args, "--output", str(tmp_path / "out")), tmp_path / "out",
                   message)


def test_no_example_left_after_skipping_is_an_error(tmp_path, refs):
    p = write(tmp_path / "p.parquet", id=["x", "y"], prediction=["a", "b"])
    assert_refused(overlap_score(p, "--references", refs, "--on-missing", "skip", "--output",
                                 str(tmp_path / "out")), tmp_path / "out",
                   "no example left to score", "2 predictions have no references")


# --- ids ------------------------------------------------------------------------------------

def test_duplicate_prediction_ids_show_five_ids_and_the_count(tmp_path):
    ids = [f"id{k}" for k in range(8)] * 2
    p = write(tmp_path / "p.parquet", id=ids, prediction=["x"] * 16,
              references=[["x"]] * 16)
    line = assert_refused(overlap_score(p, "--output", str(tmp_path / "out"),
                                        "--on-missing", "zero"), tmp_path / "out",
                          "8 ids occur more than once among the predictions (ids: ")
    assert len(re.findall(r"'id\d'", line)) == 5 and ", ...)" in line


def _missing_inputs(tmp_path: Path) -> tuple[str, str]:
    """Predictions a, b, p1..p6 (no references for p*), references a, b, r1..r7 (no
    prediction for r*)."""
    pred_ids = ["a", "b"] + [f"p{k}" for k in range(1, 7)]
    ref_ids = ["a", "b"] + [f"r{k}" for k in range(1, 8)]
    p = write(tmp_path / "p.parquet", id=pred_ids, prediction=["the cat sat"] * 8,
              system=["s"] * 8)
    r = write(tmp_path / "r.parquet", id=ref_ids, reference=["the cat sat"] * 9)
    return p, r


def test_ids_on_one_side_only_are_an_error_by_default(tmp_path):
    p, r = _missing_inputs(tmp_path)
    line = assert_refused(overlap_score(p, "--references", r, "--output",
                                        str(tmp_path / "out")), tmp_path / "out",
                          "6 predictions have no references (ids: 'p1', 'p2', 'p3', 'p4', "
                          "'p5', ...)", "7 ids in the references have no prediction (ids: ",
                          "--on-missing skip or zero")
    assert line.count("'r") == 5


def test_on_missing_skip_leaves_them_out_and_counts_them(tmp_path):
    p, r = _missing_inputs(tmp_path)
    out = tmp_path / "out"
    result = overlap_score(p, "--references", r, "--on-missing", "skip", "--output", str(out))
    assert result.exit_code == 0, result.output
    assert examples(out)["id"] == ["a", "b"]
    counts = manifest(out)["counts"]
    assert counts["examples_scored"] == 2
    assert counts["skipped"] == {"missing_references": 6, "orphan_references": 7,
                                 "no_reference": 0, "null_reference": 0}
    assert counts["skipped_ids"]["missing_references"] == ["p1", "p2", "p3", "p4", "p5"]
    assert len(counts["skipped_ids"]["orphan_references"]) == 5
    assert counts["missing_predictions_scored_zero"] == 0
    assert "13 examples left out" in result.stdout


def test_on_missing_zero_scores_a_missing_prediction_as_empty_never_better(tmp_path):
    p, r = _missing_inputs(tmp_path)
    out = tmp_path / "zero"
    result = overlap_score(p, "--references", r, "--on-missing", "zero", "--group-by",
                           "system", "--keep-text", "--output", str(out))
    assert result.exit_code == 0, result.output
    ex = examples(out)
    assert ex["id"] == ["a", "b"] + [f"r{k}" for k in range(1, 8)]
    assert ex["prediction"][2:] == [None] * 7 and ex["system"][2:] == [None] * 7
    assert ex["rouge1_fmeasure"] == [1.0, 1.0] + [0.0] * 7
    assert ex["n_references"] == [1] * 9
    counts = manifest(out)["counts"]
    assert counts["missing_predictions_scored_zero"] == 7
    assert counts["null_predictions"] == 0  # the added rows are not input nulls
    assert counts["skipped"]["missing_references"] == 6  # nothing to score them against
    assert counts["skipped"]["orphan_references"] == 0
    skip = tmp_path / "skip"
    assert overlap_score(p, "--references", r, "--on-missing", "skip", "--output",
                         str(skip)).exit_code == 0

    def overall_mean(run: Path) -> float:
        agg = pq.read_table(run / "aggregate.parquet").to_pylist()
        return next(a["mean"] for a in agg if a["scope"] == "all" and a["metric"] == "rouge1"
                    and a["measure"] == "fmeasure")

    assert overall_mean(out) == pytest.approx(2 / 9) and overall_mean(skip) == 1.0


def test_a_null_prediction_scores_as_empty_and_is_counted(tmp_path, refs):
    p = write(tmp_path / "p.parquet", id=["a", "b", "c"],
              prediction=["the cat sat", None, "birds sing"])
    out = tmp_path / "out"
    assert overlap_score(p, "--references", refs, "--output", str(out)).exit_code == 0
    ex = examples(out)
    assert ex["rouge1_fmeasure"] == [1.0, 0.0, 1.0] and ex["rouge1_prediction_units"][1] == 0
    assert manifest(out)["counts"]["null_predictions"] == 1


def _empty_reference_inputs(tmp_path: Path) -> tuple[str, str]:
    """Inline lists: a ok, b empty, c null, d holds a null reference."""
    p = write(tmp_path / "p.parquet", id=["a", "b", "c", "d"], prediction=["x y"] * 4,
              references=pa.array([["x y"], [], None, ["x", None]], pa.list_(pa.string())))
    r = write(tmp_path / "r.parquet", id=["a", "d", "d"], reference=["x y", "x", None])
    return p, r


def test_null_or_empty_reference_lists_are_an_error_by_default(tmp_path):
    p, r = _empty_reference_inputs(tmp_path)
    assert_refused(overlap_score(p, "--output", str(tmp_path / "out")), tmp_path / "out",
                   "2 examples have an empty or null list of references (ids: 'b', 'c'); "
                   "1 reference is null (ids: 'd')", "--on-empty-references skip")
    p2 = write(tmp_path / "p2.parquet", id=["a", "d"], prediction=["x y", "x y"])
    assert_refused(overlap_score(p2, "--references", r, "--output", str(tmp_path / "out")),
                   tmp_path / "out", "1 reference is null (ids: 'd')")


def test_on_empty_references_skip_leaves_them_out_and_counts_them(tmp_path):
    p, r = _empty_reference_inputs(tmp_path)
    out = tmp_path / "inline"
    result = overlap_score(p, "--on-empty-references", "skip", "--output", str(out))
    assert result.exit_code == 0, result.output
    assert examples(out)["id"] == ["a"]
    counts = manifest(out)["counts"]
    assert counts["skipped"] == {"missing_references": 0, "orphan_references": 0,
                                 "no_reference": 2, "null_reference": 1}
    assert counts["skipped_ids"] == {"no_reference": ["b", "c"], "null_reference": ["d"]}
    # One row per reference: a null reference row skips its example too.
    p2 = write(tmp_path / "p2.parquet", id=["a", "d"], prediction=["x y", "x y"])
    out2 = tmp_path / "rows"
    assert overlap_score(p2, "--references", r, "--on-empty-references", "skip", "--output",
                         str(out2)).exit_code == 0
    assert examples(out2)["id"] == ["a"]
    assert manifest(out2)["counts"]["skipped"]["null_reference"] == 1


# --- huge texts -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def huge_text() -> str:
    """About 5.9 MB, a million tokens on one line."""
    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(5000)])
    return " ".join(rng.choice(words, 1_000_000))


def test_a_huge_text_is_cut_flagged_and_counted(tmp_path, huge_text):
    p = write(tmp_path / "p.parquet", id=["big", "small"], prediction=[huge_text, "w1 w2"],
              references=[["w1 w2 w3"], ["w1 w2 w3"]])
    out = tmp_path / "out"
    start = time.perf_counter()
    result = overlap_score(p, "--output", str(out))
    seconds = time.perf_counter() - start
    assert result.exit_code == 0, result.output
    assert seconds < 30, seconds
    ex = examples(out)
    assert ex["truncated"] == [True, False]
    assert ex["rougeL_prediction_units"] == [DEFAULT_MAX_TOKENS, 2]
    assert all(np.isfinite(ex["rougeLsum_fmeasure"]))
    m = manifest(out)
    assert m["counts"]["truncated_examples"] == 1
    assert "|maxtok:100000|" in m["signature"]
    assert pq.read_schema(out / "aggregate.parquet").metadata[b"overlap.signature"].decode() \
        == m["signature"]
    assert "1 example had a text cut at 100000 tokens" in result.stdout


@pytest.mark.slow  # a fresh interpreter with pyarrow, numpy and the CLI: the slow tier
def test_a_huge_text_has_bounded_memory(tmp_path, huge_text):
    """A fresh process scores a 5.9 MB, million-token prediction against a 3,000-character
    reference: its peak RSS stays far below a blow-up (about 300 MB measured, of which
    ~250 MB is the interpreter with pyarrow, numpy and numba loaded)."""
    p = write(tmp_path / "p.parquet", id=["big", "small"], prediction=[huge_text, "w1 w2"],
              references=[[huge_text[:3000]], ["w1 w2 w3"]])
    # VmHWM, the peak of this process's own memory map: ru_maxrss would also keep the
    # pytest process's size at the fork before exec (1-2.3 GB late in a full run)
    code = ("import sys\n"
            "from pipeline.cli import main\n"
            "try:\n"
            "    main(sys.argv[1:], standalone_mode=False)\n"
            "finally:\n"
            "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
            "    print('peak_kb', hwm[0].split()[1], file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code, "score", p, "--output",
                           str(tmp_path / "out"), *FAST], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    peak_mb = int(done.stderr.split("peak_kb")[-1].split()[0]) / 1024
    assert peak_mb < 1024, peak_mb
    assert manifest(tmp_path / "out")["counts"]["truncated_examples"] == 1


def test_max_tokens_is_configurable_and_in_the_signature(tmp_path):
    p = write(tmp_path / "p.parquet", id=["a", "b"], prediction=["w1 w2 w3 w4", "w1"],
              references=[["w1 w2"], ["w1 w2 w3 w9 w9"]])
    out = tmp_path / "out"
    assert overlap_score(p, "--max-tokens", "3", "--output", str(out)).exit_code == 0
    ex = examples(out)
    assert ex["truncated"] == [True, True]
    want = reference_rouge.statistics("w1 w2 w3", "w1 w2", "rouge1")
    assert (ex["rouge1_matches"][0], ex["rouge1_prediction_units"][0],
            ex["rouge1_reference_units"][0]) == want
    assert ex["rouge1_reference_units"][1] == 3
    assert "|maxtok:3|" in manifest(out)["signature"]
    sig = CliRunner().invoke(main, ["signature", "--max-tokens", "3"]).stdout
    assert "|maxtok:3|version:" in sig


def test_on_long_text_error_names_the_examples(tmp_path, huge_text):
    ids = [f"long{k}" for k in range(7)]
    p = write(tmp_path / "p.parquet", id=[*ids, "ok"],
              prediction=[huge_text[:2000]] * 7 + ["w1"], references=[["w1"]] * 8)
    assert_refused(overlap_score(p, "--max-tokens", "100", "--on-long-text", "error",
                                 "--output", str(tmp_path / "out")), tmp_path / "out",
                   "7 examples have a text longer than max_tokens (ids: 'long0', 'long1', "
                   "'long2', 'long3', 'long4', ...)", "raise --max-tokens")


# --- names ----------------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--metrics", "rouge1,rogueL"], "unknown metric 'rogueL'"),
    (["--tokenizer", "rouge_score"], "did you mean 'rouge-score'?"),
    (["--stemmer", "portr"], "did you mean 'porter'?"),
    (["--on-missing", "skipp"], "did you mean 'skip'?"),
    (["--on-long-text", "truncat"], "did you mean 'truncate'?"),
    (["--max-tokens", "0"], "max_tokens must be a whole number >= 1"),
])
def test_unknown_names_get_did_you_mean(tmp_path, args, message):
    p = write(tmp_path / "p.parquet", id=["a"], prediction=["x"], references=[["x"]])
    result = overlap_score(p, "--output", str(tmp_path / "out"), *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert not (tmp_path / "out").exists()


def test_unknown_config_keys_get_did_you_mean(tmp_path):
    p = write(tmp_path / "p.parquet", id=["a"], prediction=["x"], references=[["x"]])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("max_token: 10\n")
    assert_refused(overlap_score(p, "--config", str(cfg), "--output", str(tmp_path / "out")),
                   tmp_path / "out", "unknown setting 'max_token' (did you mean 'max_tokens'?)")
    cfg.write_text("on_missing: ignore\n")
    assert_refused(overlap_score(p, "--config", str(cfg), "--output", str(tmp_path / "out")),
                   tmp_path / "out", "on_missing: unknown value 'ignore'; choose one of error, "
                   "skip, zero")


# --- a failed run leaves the previous output alone ---------------------------------------------

def test_a_failed_run_leaves_the_previous_complete_output_byte_identical(tmp_path):
    p, r = _missing_inputs(tmp_path)
    out = tmp_path / "out"
    first = overlap_score(p, "--references", r, "--on-missing", "skip", "--output", str(out),
                          "--run-id", "good")
    assert first.exit_code == 0, first.output
    before = tree_digest(out)
    assert {"_SUCCESS", "manifest.json", "aggregate.parquet"} <= set(before)
    bad_pred = write(tmp_path / "bad.parquet", id=["a"], text=["x"])
    long_pred = write(tmp_path / "long.parquet", id=["a", "b"],
                      prediction=["w " * 50, "w"])
    for args in ([bad_pred, "--references", r],                        # plan: no column
                 [p, "--references", r],                               # check: missing ids
                 [long_pred, "--references", r, "--on-missing", "skip",  # score: long text
                  "--max-tokens", "10", "--on-long-text", "error"]):
        result = overlap_score(*args, "--output", str(out), "--overwrite", "--run-id", "bad")
        assert result.exit_code == 2, result.output
        assert len(result.stderr.splitlines()) == 1
        assert tree_digest(out) == before
        assert (out / "_SUCCESS").read_text() == "good\n"
        assert not [q.name for q in tmp_path.iterdir() if q.name.startswith(".out.")]


# --- types the pipeline cannot take (issue 12) ---------------------------------------------

def test_uint64_ids_above_int64_are_refused_naming_the_file(tmp_path):
    ids = pa.array([1, 2**63 + 5], pa.uint64())
    pred = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": ids, "prediction": ["a b", "c"],
                             "references": [["a b"], ["c"]]}), pred)
    out = tmp_path / "out"
    assert_refused(overlap_score(str(pred), "--output", str(out)), out,
                   "column 'id'", str(pred), "uint64", "int64")


def test_uint64_ids_that_fit_are_scored(tmp_path):
    pred = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.uint64()), "prediction": ["a b", "c"],
                             "references": [["a b"], ["c"]]}), pred)
    result = overlap_score(str(pred), "--output", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert examples(tmp_path / "out")["id"] == [1, 2]


@pytest.mark.parametrize("column", ["rouge1_fmeasure", "rougeL_reference_index", "n_references",
                                    "truncated", "run_id", "metric", "mean", "scope"])
def test_group_by_a_column_named_like_an_output_column_is_refused(tmp_path, column):
    pred = write(tmp_path / "p.parquet", id=["a", "b"], prediction=["x", "y"],
                 references=[["x"], ["y"]], **{column: ["s", "t"]})
    out = tmp_path / "out"
    assert_refused(overlap_score(pred, "--output", str(out), "--group-by", column), out,
                   "cannot group by", repr(column))


@pytest.mark.parametrize("values", [
    pa.array([["a"], ["b"]], pa.list_(pa.string())),
    pa.array([{"x": 1}, {"x": 2}], pa.struct([("x", pa.int64())])),
    pa.array([[("k", 1)], [("k", 2)]], pa.map_(pa.string(), pa.int64())),
])
def test_group_by_a_nested_column_is_refused_and_keeping_it_works(tmp_path, values):
    pred = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "prediction": ["x", "y"],
                             "references": [["x"], ["y"]], "meta": values}), pred)
    out = tmp_path / "out"
    assert_refused(overlap_score(str(pred), "--output", str(out), "--group-by", "meta"), out,
                   "cannot group by column 'meta' of type", "--keep-columns")
    result = overlap_score(str(pred), "--output", str(out), "--keep-columns", "meta")
    assert result.exit_code == 0, result.output
