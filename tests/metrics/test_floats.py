"""Scores are the same bits on every CPU (issue 25, item 27).

numpy's float64 ``power``, ``exp`` and ``log`` ufuncs pick a loop by the CPU they run on
(``numpy.lib.introspect.opt_func_info`` lists an x86-64-v4 loop, i.e. AVX-512, beside the
baseline), which may differ from the C library in the last bit: ROUGE-1.5.5's ``-w`` scores
written on an AVX-512 machine differed from the stored outputs
(``tests/house/test_outputs_unchanged.py``, ``rouge155_s1`` and ``rouge155_s6``). The
families compute such functions with the C library's, as the references do (the Perl
script's ``**``, sacrebleu's ``math.exp``): checked here against :mod:`math` bit for bit, and
in the source, where no metric or tokenizer may call numpy's.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipeline.metrics import floats

ROOT = Path(__file__).resolve().parents[2]
SL2003 = ROOT / "tests" / "data" / "pre_move" / "inputs" / "sl2003.parquet"
# numpy functions whose float64 loops depend on the CPU (see the module docstring)
DISPATCHED = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "power",
              "float_power", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2",
              "sinh", "cosh", "tanh", "cbrt", "hypot"}


def test_power_and_exp_are_the_c_librarys_bit_for_bit():
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.random(5000), rng.random(5000) * 1e6, [0.0, 1.0, np.nan]])
    for exponent in (1.2, 1 / 1.2, 5.0, 0.2):
        got = floats.power(values.reshape(-1, 1), exponent).ravel()
        want = [math.pow(v, exponent) for v in values.tolist()]
        assert np.array_equal(got, np.array(want), equal_nan=True)
    arguments = -rng.random(5000) * 30
    assert floats.exp(arguments).tolist() == [math.exp(v) for v in arguments.tolist()]
    assert floats.power(np.zeros((0,)), 1.2).shape == (0,)


@pytest.mark.parametrize("flags", ["-n 2 -w 1.2 -2 4 -U -m -f B", "-n 4 -w 1.2 -2 4 -U -f A",
                                   "-n 2 -w 3.5 -f A"])
def test_rouge_w_measures_are_the_c_librarys_pow_of_the_statistics(flags):
    """ROUGE-1.5.5's W recall is (hit / weighted reference units) ** (1 / weight) in C's pow
    (the Perl script's ``**``), and its units (sum of f(sentence length)) ** weight."""
    from pipeline import api

    table = pq.read_table(SL2003)
    predictions = table.column("prediction").to_pylist()
    references = table.column("references").to_pylist()
    rows = api.score_texts(predictions, references, rouge155=flags)
    weight = float(flags.split("-w ")[1].split()[0])
    rows = rows.to_dict("records")
    assert all(r["rougeWsum_reference_units"] > 0 and r["rougeWsum_prediction_units"] > 0
               for r in rows)
    for measure, units in (("recall", "reference_units"), ("precision", "prediction_units")):
        got = [r[f"rougeWsum_{measure}"] for r in rows]
        want = [math.pow(r["rougeWsum_matches"] / r[f"rougeWsum_{units}"], 1 / weight)
                for r in rows]
        assert got == want, measure


def _dispatched_calls(path: Path) -> list[str]:
    """``np.exp(...)``-like calls and ``x ** y`` on a value that may be an array."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (isinstance(node, ast.Attribute) and node.attr in DISPATCHED
                and isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy")):
            out.append(f"{path.name}:{node.lineno} np.{node.attr}")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            scalar = isinstance(node.left, ast.Constant) or (
                isinstance(node.left, ast.Call) and isinstance(node.left.func, ast.Name)
                and node.left.func.id in ("float", "int"))
            integer_power = isinstance(node.right, ast.Constant) and isinstance(
                node.right.value, int)
            if not scalar and not integer_power:
                out.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return out


def test_no_metric_or_tokenizer_calls_a_cpu_dependent_numpy_function():
    core = [p for d in ("metrics", "tokenizers") for p in (ROOT / "pipeline" / d).rglob("*.py")]
    assert len(core) > 10
    found = [c for p in core for c in _dispatched_calls(p)]
    assert not found, found
