"""CSV and JSON Lines inputs under hostile use (issue 25, items 1, 12, 17, 20): nesting
that crashed a parser, cells longer than a reader's block, duplicated headers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from tests.io.test_text_inputs import write_csv, write_jsonl
from tests.pipeline.test_bad_input import assert_refused, overlap_score
from tests.support import reference_rouge


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_deeply_nested_jsonl_is_refused_in_a_fresh_process_not_a_sigsegv(tmp_path):
    # 20,000 nested arrays in a column the run does not even read (40 KB): pyarrow's JSON
    # reader recursed once per level and the process died of SIGSEGV (exit 139, no message)
    deep = "[" * 20000 + "]" * 20000
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "a", "prediction": "the cat", "references": ["the cat"]}\n'
                    '{"id": "b", "prediction": "a dog", "references": ["a dog"], "junk": '
                    + deep + "}\n", encoding="utf-8")
    out = tmp_path / "out"
    done = _cli("score", str(path), "--output", str(out), "--engine", "local",
                "--bootstrap", "0")
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr[-500:]
    for fragment in ("p.jsonl", "line 2", "nested", "deep"):
        assert fragment in lines[0], lines[0]
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["p.jsonl"]


def test_nesting_inside_strings_and_escaped_quotes_is_not_nesting(tmp_path):
    # brackets in texts ("[[[[...") are data, as are escaped quotes before them
    text = 'say \\"[[[' + "[" * 300 + '\\" and {{{' + "{" * 300
    rows = [{"id": "a", "prediction": json.loads(f'"{text}"'), "references": ["a b"]},
            {"id": "b", "prediction": "a b", "references": ["a b"], "meta": [[["ok"]]]}]
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    out = tmp_path / "out"
    assert "[" * 300 in Path(path).read_text(encoding="utf-8")
    assert overlap_score(path, "--output", str(out)).exit_code == 0
    scores = pq.read_table(out / "examples").sort_by("id")["rouge1_fmeasure"].to_pylist()
    assert scores == [0.0, 1.0]


def test_a_deeply_nested_csv_references_cell_is_refused_naming_the_cell(tmp_path):
    deep = "[" * 100000 + "]" * 100000
    path = write_csv(tmp_path / "p.csv", ["id", "prediction", "references"],
                     [["a", "x", '["x"]'], ["b", "y", deep]])
    out = tmp_path / "out"
    assert_refused(overlap_score(path, "--output", str(out)), out, "p.csv", "'references'",
                   "'b'", "data row 2", "not a JSON array of strings")


def test_a_csv_with_a_3_mb_cell_is_scored_as_in_json_lines(tmp_path):
    big = " ".join(f"w{i % 5000}" for i in range(560_000))  # about 3.3 MB
    assert len(big) > 3_000_000
    ref = "w1 w2 w3 zz"
    rows = [["a", big, json.dumps([ref])], ["b", "w1 w2", json.dumps([ref])]]
    for name, path in (("csv", write_csv(tmp_path / "p.csv", ["id", "prediction",
                                                               "references"], rows)),
                       ("jsonl", write_jsonl(tmp_path / "p.jsonl", [
                           {"id": i, "prediction": p, "references": json.loads(r)}
                           for i, p, r in rows]))):
        out = tmp_path / f"out-{name}"
        result = overlap_score(path, "--output", str(out), "--metrics", "rouge1")
        assert result.exit_code == 0, (name, result.output)
        table = pq.read_table(out / "examples").sort_by("id")
        want = reference_rouge.statistics("w1 w2", ref, "rouge1")
        assert table["rouge1_matches"].to_pylist()[1] == want[0]
        assert table["rouge1_prediction_units"].to_pylist()[0] == 100_000  # --max-tokens


def test_a_duplicated_csv_header_names_the_column_twice(tmp_path):
    path = write_csv(tmp_path / "p.csv", ["id", "prediction", "id", "references"],
                     [["a", "x", "b", '["x"]']])
    out = tmp_path / "out"
    line = assert_refused(overlap_score(path, "--output", str(out)), out, "p.csv",
                          "'id'", "twice", "columns 1 and 3")
    assert "has no column" not in line and "did you mean" not in line


def test_a_duplicated_jsonl_or_parquet_column_is_named_too(tmp_path):
    import pyarrow as pa

    out = tmp_path / "out"
    table = pa.Table.from_arrays([pa.array(["a"]), pa.array(["x"]), pa.array(["y"]),
                                  pa.array([["x"]])],
                                 names=["id", "prediction", "prediction", "references"])
    pq.write_table(table, tmp_path / "p.parquet")
    assert_refused(overlap_score(str(tmp_path / "p.parquet"), "--output", str(out)), out,
                   "p.parquet", "'prediction'", "twice", "columns 2 and 3")


def test_the_nesting_scan_equals_the_decoded_depth_whatever_its_segments():
    # outside truth: the depth of the structure Python's json module decodes; texts full of
    # brackets, quotes and backslashes; segments as small as one byte carry their state
    import random

    from pipeline.io.read import json_nesting_depth

    rng = random.Random(25)

    def value(level: int):
        r = rng.random()
        if level > 6 or r < 0.3:
            return "".join(rng.choice('[]{}"\\ab') for _ in range(rng.randint(0, 6)))
        if r < 0.65:
            return [value(level + 1) for _ in range(rng.randint(0, 3))]
        return {str(i): value(level + 1) for i in range(rng.randint(0, 3))}

    def depth(v) -> int:
        items = v if isinstance(v, list) else list(v.values()) if isinstance(v, dict) else None
        return 0 if items is None else 1 + max(map(depth, items), default=0)

    for _ in range(150):
        v = value(0)
        line = json.dumps(v).encode()
        for segment in (1, 3, 1 << 20):
            assert json_nesting_depth(line, segment_bytes=segment) == depth(v), (line, segment)
