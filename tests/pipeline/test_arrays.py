"""pipeline.arrays builds what pa.array / pa.scalar build (the outside truth), without pandas."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pipeline import arrays
from pipeline.arrays import from_numpy, from_pylist, scalar, to_numpy


@pytest.fixture(autouse=True)
def _no_pandas_yet(monkeypatch):
    # this process has pandas loaded, which sends from_pylist to pa.array: not what is tested
    monkeypatch.setattr(arrays, "_pandas_loaded", lambda: False)


def _values(array: pa.Array) -> list:
    # floats by repr: NaN equals NaN, -0.0 differs from 0.0
    return [repr(v) if isinstance(v, float) else v for v in array.to_pylist()]


def _same(ours: pa.Array, theirs: pa.Array) -> None:
    ours.validate(full=True)
    assert ours.type == theirs.type
    assert ours.null_count == theirs.null_count
    assert _values(ours) == _values(theirs)
    if not any(isinstance(v, float) and math.isnan(v) for v in theirs.to_pylist()):
        assert ours.equals(theirs)


def _same_outcome(make_ours, make_theirs) -> None:
    """Both give equal arrays, or both raise the same exception type."""
    try:
        theirs = make_theirs()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        with pytest.raises(type(e)):
            make_ours()
        return
    _same(make_ours(), theirs)


NUMPY_CASES = [
    np.array([1.5, -0.0, np.nan, np.inf], dtype=np.float64),
    np.array([1.5, 2.25], dtype=np.float32),
    np.array([0, -7, 2 ** 40], dtype=np.int64),
    np.array([3, -1], dtype=np.int32),
    np.array([1, 255], dtype=np.uint8),
    np.array([2 ** 63 + 5], dtype=np.uint64),
    np.array([True, False, True, True, False, False, True, False, True], dtype=bool),
    np.array([], dtype=np.float64),
    np.array([], dtype=bool),
    np.arange(10, dtype=np.int64)[::3],  # not contiguous
    np.array([True, False, True, False])[1::2],
]


@pytest.mark.parametrize("values", NUMPY_CASES, ids=lambda v: f"{v.dtype}-{len(v)}")
def test_from_numpy_is_pa_array(values):
    _same(from_numpy(values), pa.array(values))


@pytest.mark.parametrize("values, arrow_type", [
    (np.array([1, 2], dtype=np.int64), pa.float64()),  # a cast: pa.array's
    (np.array([1.0, 2.0]), pa.int32()),
    (np.array([1.0, 2.0], dtype=np.float16), None),
    (np.array([1, 2], dtype=">i8"), None),  # other byte order
    (np.array(["a", "b"]), pa.string()),
    (np.array([1.5, 2.5]), pa.float64()),
])
def test_from_numpy_other_types_are_pa_arrays(values, arrow_type):
    _same_outcome(lambda: from_numpy(values, arrow_type), lambda: pa.array(values, arrow_type))


def test_from_numpy_refuses_what_pa_array_refuses():
    with pytest.raises(pa.ArrowInvalid):
        pa.array(np.array([1.5]), pa.int64())
    with pytest.raises(pa.ArrowInvalid):
        from_numpy(np.array([1.5]), pa.int64())


def test_from_numpy_numbers_share_memory_as_pa_array_does():
    values = np.arange(3.0)
    ours, theirs = from_numpy(values), pa.array(values)
    values[0] = 9.0
    assert ours.to_pylist() == theirs.to_pylist() == [9.0, 1.0, 2.0]


PYLIST_CASES = [
    (["rouge1", None, "", "é ∑ 漢字", "a\nb"], pa.string()),
    ([None, None], pa.string()),
    ([], pa.string()),
    ([0.5, None, float("nan"), -0.0, 1e308], pa.float64()),
    ([None], pa.float64()),
    ([0, None, -(2 ** 63), 2 ** 63 - 1], pa.int64()),
    ([True, None, False, True, True, False, False, False, True, None], pa.bool_()),
    # left to pa.array: other types and values
    ([1, 2.5], pa.float64()),
    ([np.float64(0.5)], pa.float64()),
    ([2 ** 53 + 1], pa.float64()),
    (["a", None, "é ∑", ""], pa.large_string()),
    (["x"], pa.binary()),
    ([1, None, -(2 ** 31)], pa.int32()),
    ([255, None], pa.uint8()),
    ([1.5], pa.int64()),
    ([1, None], pa.float32()),
    ([{"a": 1}], pa.struct([("a", pa.int64())])),
]


@pytest.mark.parametrize("values, arrow_type", PYLIST_CASES,
                         ids=[f"{t}-{i}" for i, (_, t) in enumerate(PYLIST_CASES)])
def test_from_pylist_is_pa_array(values, arrow_type):
    _same_outcome(lambda: from_pylist(values, arrow_type), lambda: pa.array(values, arrow_type))


@pytest.mark.parametrize("values, arrow_type", [
    ([2 ** 63], pa.int64()),  # out of range
    ([-1], pa.uint8()),
    ([128], pa.int8()),
    (["\ud800"], pa.string()),  # a lone surrogate
    (["a"], pa.float64()),
    ([1], pa.string()),
])
def test_from_pylist_refuses_what_pa_array_refuses(values, arrow_type):
    with pytest.raises(Exception) as theirs:  # noqa: B017, PT011 - its type is compared
        pa.array(values, arrow_type)
    with pytest.raises(theirs.type):
        from_pylist(values, arrow_type)


@pytest.mark.parametrize("value, arrow_type", [
    (0, pa.int64()), (True, pa.bool_()), (False, pa.bool_()), ("run-1", pa.string()),
    (0.25, pa.float64()), (0, pa.int32())])
def test_scalar_is_pa_scalar(value, arrow_type):
    ours, theirs = scalar(value, arrow_type), pa.scalar(value, arrow_type)
    assert ours.type == theirs.type and ours.equals(theirs) and ours.as_py() == value


def test_large_lists_and_a_loaded_pandas_go_to_pa_array(monkeypatch):
    calls = []
    real = pa.array
    monkeypatch.setattr(arrays.pa, "array",
                        lambda *a, **k: calls.append(len(a[0])) or real(*a, **k))
    from_pylist([0.5] * 10, pa.float64())
    assert calls == []
    _same(from_pylist([0.5] * (arrays.MAX_PYLIST + 1), pa.float64()),
          real([0.5] * (arrays.MAX_PYLIST + 1), pa.float64()))
    assert calls == [arrays.MAX_PYLIST + 1]
    monkeypatch.setattr(arrays, "_pandas_loaded", lambda: True)
    from_pylist(["a"], pa.string())
    assert calls == [arrays.MAX_PYLIST + 1, 1]


def test_scalar_fills_nulls_as_a_python_value_does():
    lengths = pa.array([3, None, 1], pa.int32())
    assert pc.fill_null(lengths, scalar(0, pa.int32())).equals(lengths.fill_null(0))


TO_NUMPY_CASES = [
    pa.array([1.5, float("nan"), -0.0]), pa.array([1, 2, 3], pa.int32()),
    pa.array([1, 2, 3, 4, 5], pa.int64()).slice(2), pa.array([True, False, True] * 5).slice(3),
    pa.array([], pa.float64()), pa.array([], pa.bool_()), pa.array([7], pa.uint16()),
    pa.array([1, None, 3]), pa.array([True, None]), pa.array(["a", "b"]),
    pa.chunked_array([[1, 2], [3]], pa.int64()), pa.chunked_array([], pa.float64()),
    pa.chunked_array([[True], [False, True]]), pa.chunked_array([[1.0, None]]),
    pa.chunked_array([pa.array([1, 2, 3, 4], pa.int32()).slice(1, 2), [9]], pa.int32()),
]


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")
@pytest.mark.parametrize("values", TO_NUMPY_CASES, ids=lambda v: f"{type(v).__name__}-{v.type}")
@pytest.mark.parametrize("dtype", [None, np.int64, np.float64])
def test_to_numpy_is_np_asarray(values, dtype):
    try:
        theirs = np.asarray(values, dtype=dtype)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        with pytest.raises(type(e)):
            to_numpy(values, dtype)
        return
    ours = to_numpy(values, dtype)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    assert np.array_equal(np.signbit(ours), np.signbit(theirs)) if ours.dtype.kind == "f" \
        else True


@pytest.mark.parametrize("values", [pa.chunked_array([[1, 2]], pa.int64()),
                                    pa.chunked_array([[1], [2]], pa.int64()),
                                    pa.array([1, 2], pa.int64())])
def test_to_numpy_is_writable_where_numpys_is(values):
    assert to_numpy(values).flags.writeable == np.asarray(values).flags.writeable


_NO_PANDAS = r"""
import sys
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pipeline.arrays import from_numpy, from_pylist, scalar, to_numpy
from_numpy(np.arange(4.0)); from_numpy(np.array([True, False])); from_numpy(np.arange(3))
from_pylist(["a", None], pa.string()); from_pylist([0.5, None], pa.float64())
from_pylist([1, None], pa.int64()); from_pylist([True, None], pa.bool_())
pc.fill_null(from_numpy(np.arange(2, dtype=np.int32)), scalar(0, pa.int32()))
scalar("x", pa.string())
to_numpy(from_numpy(np.arange(3.0))); to_numpy(from_numpy(np.array([True, False])))
to_numpy(pa.chunked_array([from_numpy(np.arange(2)), from_numpy(np.arange(3))]))
print("pandas" in sys.modules)
"""


def test_the_helpers_leave_pandas_unimported():
    # the reason for the module: checked in a fresh interpreter (this one has pandas loaded)
    out = subprocess.run([sys.executable, "-c", _NO_PANDAS], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"


def test_pa_array_itself_imports_pandas():
    # if pyarrow stops importing pandas, the helpers are no longer needed
    code = "import sys, pyarrow as pa; pa.array([1.0]); print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "True"
