"""Fuzzing the CLI with arbitrary Arrow schemas and config documents (issue 12).

Whatever the input, ``overlap score`` ends with exit 0, or exit 2 and one line on stderr:
never a traceback, never another code, and after a refusal nothing is left behind (no
output, no staging directory, no lock).
"""

from __future__ import annotations

import datetime
import itertools
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.cli import main
from pipeline.config import CONFIG_KEYS

_COUNTER = itertools.count()
N_ROWS = 3

# Arrow types with a way to make N_ROWS values of each (None for a null).
_TYPES: dict[str, tuple[pa.DataType, list]] = {
    "string": (pa.string(), ["a b", "the cat", None]),
    "large_string": (pa.large_string(), ["x", "a b", "c"]),
    "int8": (pa.int8(), [1, 2, 3]),
    "int64": (pa.int64(), [-(2**63), 0, 2**63 - 1]),
    "uint64": (pa.uint64(), [1, 2**63 + 1, 2**64 - 1]),
    "uint64-small": (pa.uint64(), [1, 2, 3]),
    "float64": (pa.float64(), [0.5, float("nan"), None]),
    "bool": (pa.bool_(), [True, False, None]),
    "binary": (pa.binary(), [b"a", b"\xff\xfe", b""]),
    "date32": (pa.date32(), [datetime.date(2020, 1, 1)] * 3),
    "timestamp": (pa.timestamp("ms"), [datetime.datetime(2020, 1, 1)] * 3),
    "list<string>": (pa.list_(pa.string()), [["a b"], ["c", None], []]),
    "large_list<large_string>": (pa.large_list(pa.large_string()), [["a"], ["b"], ["c"]]),
    "list<int64>": (pa.list_(pa.int64()), [[1], [2], None]),
    "struct": (pa.struct([("x", pa.string())]), [{"x": "a"}, {"x": None}, None]),
    "map": (pa.map_(pa.string(), pa.int64()), [[("k", 1)], [], None]),
    "dictionary": (pa.dictionary(pa.int32(), pa.string()), ["a", "b", "a"]),
    "null": (pa.null(), [None, None, None]),
    "decimal": (pa.decimal128(5, 2), [None, None, None]),
}
type_name = st.sampled_from(sorted(_TYPES))


def _column(name: str) -> pa.Array:
    t, values = _TYPES[name]
    if pa.types.is_dictionary(t):
        return pa.array(values, pa.string()).dictionary_encode()
    return pa.array(values, t)


def _assert_clean(result, tmp: Path, out: Path) -> None:
    assert result.exit_code in (0, 2), (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
        assert not out.exists()
    leftovers = [p.name for p in tmp.iterdir() if p.name.startswith(f".{out.name}.")]
    assert leftovers == [], leftovers


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(id_type=type_name, prediction_type=type_name, references_type=type_name,
       extra_type=type_name, use=st.sampled_from(["--group-by", "--keep-columns", None]))
def test_any_arrow_schema_is_scored_or_refused_in_one_line(tmp_path, id_type, prediction_type,
                                                          references_type, extra_type, use):
    tmp = tmp_path / f"case{next(_COUNTER)}"
    tmp.mkdir()
    ids = _column(id_type)
    if id_type in ("string", "large_string"):  # distinct, non-null ids
        ids = pa.array(["e0", "e1", "e2"], ids.type)
    table = pa.table({"id": ids, "prediction": _column(prediction_type),
                      "references": _column(references_type), "extra": _column(extra_type)})
    pq.write_table(table, tmp / "p.parquet")
    out = tmp / "out"
    args = ["score", str(tmp / "p.parquet"), "--output", str(out), "--engine", "local",
            "--bootstrap", "0", "--on-empty-references", "skip"]
    if use:
        args += [use, "extra"]
    _assert_clean(CliRunner().invoke(main, args), tmp, out)


yaml_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                        st.floats(allow_nan=True), st.text(max_size=20))
yaml_value = st.recursive(yaml_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8)
config_doc = st.dictionaries(st.one_of(st.sampled_from(CONFIG_KEYS), st.text(max_size=10)),
                             yaml_value, max_size=4)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(doc=st.one_of(config_doc, yaml_value))
def test_any_config_document_is_used_or_refused_in_one_line(tmp_path, doc):
    tmp = tmp_path / f"case{next(_COUNTER)}"
    tmp.mkdir()
    pq.write_table(pa.table({"id": ["a", "b"], "prediction": ["the cat", "a dog"],
                             "references": [["the cat sat"], ["a dog"]]}), tmp / "p.parquet")
    cfg = tmp / "c.yaml"
    cfg.write_text(yaml.safe_dump(doc, allow_unicode=True))
    out = tmp / "out"
    for args in (["signature", "--config", str(cfg)],
                 ["score", str(tmp / "p.parquet"), "--output", str(out), "--config", str(cfg),
                  "--engine", "local", "--bootstrap", "0"]):
        _assert_clean(CliRunner().invoke(main, args), tmp, out)
