"""One atomic write and one error class for a refused write, whichever command writes.

``io/runs.write_comparison`` had its own temporary-name write and raised ``InputError`` (exit
2) where ``io/write`` raised ``ExecutionError`` (exit 4) for the same failure; both now go
through :func:`pipeline.io.write.write_bytes`.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from pipeline.errors import ExecutionError
from pipeline.io.files import locate
from pipeline.io.runs import write_comparison
from pipeline.io.write import write_bytes, write_text


def test_write_comparison_is_atomic_and_leaves_no_temporary(tmp_path):
    out = tmp_path / "cmp"
    parquet, json_file = write_comparison(str(out), pa.table({"x": [1]}), {"a": 1})
    assert sorted(p.name for p in out.iterdir()) == ["compare.json", "compare.parquet"]
    assert json_file.endswith("compare.json") and parquet.endswith("compare.parquet")
    assert (out / "compare.json").read_text() == '{\n  "a": 1\n}\n'


def test_a_refused_write_is_an_execution_error_everywhere(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ExecutionError, match="cannot write the comparison"):
        write_comparison(str(blocker / "cmp"), pa.table({"x": [1]}), {})
    with pytest.raises(ExecutionError, match="cannot write"):
        write_text("x", locate(str(blocker / "out.txt")))
    with pytest.raises(ExecutionError, match="cannot write"):
        write_bytes(b"x", locate(str(blocker / "out.bin")))
    assert blocker.read_text() == "not a directory"
