"""Arrow arrays and scalars from numpy arrays and Python values, without importing pandas.

pyarrow's constructors from Python or numpy values (``pa.array``, ``pa.scalar``,
``pa.table`` from a dict of lists, compute functions given a Python number or a numpy
array) first ask whether the value is a pandas object, and the first such question imports
pandas (pyarrow's ``_PandasAPIShim``): about 0.1 CPU-second, a sixth of a 5,000-row
``overlap score`` that never uses pandas. These helpers build the same arrays from buffers
(:meth:`pyarrow.Array.from_buffers`) for the values a score run makes (fixed-width numbers
and booleans in numpy arrays; strings, float64, int64 and booleans with nulls in Python
lists) and hand anything else to ``pa.array`` unchanged, so the result is always
``pa.array``'s (``tests/test_arrays.py`` compares them, nulls, NaN and refusals included).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

# numpy dtype (native byte order, as ``dtype.str`` spells it) -> the Arrow type pa.array
# gives it; other dtypes (float16, dates, strings, objects, other byte orders) go to pa.array.
_FIXED_WIDTH = {np.dtype(t).str: a for t, a in (
    (np.int8, pa.int8()), (np.int16, pa.int16()), (np.int32, pa.int32()),
    (np.int64, pa.int64()), (np.uint8, pa.uint8()), (np.uint16, pa.uint16()),
    (np.uint32, pa.uint32()), (np.uint64, pa.uint64()), (np.float32, pa.float32()),
    (np.float64, pa.float64()))}
# Arrow integer type -> its numpy dtype, for lists of Python ints (:func:`from_pylist`).
_INTEGERS = {a: np.dtype(t) for t, a in (
    (np.int8, pa.int8()), (np.int16, pa.int16()), (np.int32, pa.int32()),
    (np.int64, pa.int64()), (np.uint8, pa.uint8()), (np.uint16, pa.uint16()),
    (np.uint32, pa.uint32()), (np.uint64, pa.uint64()))}
_INT32_MAX = 2 ** 31 - 1
# Above this many values pa.array's conversion, 3-10x faster than :func:`from_pylist`'s
# Python loop (1.2M strings: 0.29 against 1.05 s), pays for the pandas import it brings.
MAX_PYLIST = 20_000
# Arrow fixed-width number type -> its numpy dtype, for reading buffers (:func:`to_numpy`).
_NUMPY_OF = {a: np.dtype(s) for s, a in _FIXED_WIDTH.items()}


def from_numpy(values: Any, arrow_type: pa.DataType | None = None) -> pa.Array:
    """``pa.array(values, arrow_type)`` for a numpy array, pandas left unimported.

    Args:
        values: shape (n,); a bool or fixed-width integer or float array of native byte
            order is converted here (numbers without a copy when contiguous, as
            ``pa.array`` does; booleans packed into bits). Anything else, or a type other
            than the dtype's own, goes to ``pa.array`` (which casts, or refuses).
        arrow_type: the wanted type, or None for the dtype's own.

    Returns:
        An Arrow array of length n without nulls (NaN stays a value, as in ``pa.array``).

    Raises:
        pyarrow.ArrowInvalid: as ``pa.array`` (a cast that loses values).

    """
    if isinstance(values, np.ndarray) and values.ndim == 1:
        n = len(values)
        if values.dtype == np.bool_ and (arrow_type is None or arrow_type == pa.bool_()):
            bits = np.packbits(values, bitorder="little")
            return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)])
        own = _FIXED_WIDTH.get(values.dtype.str)
        if own is not None and (arrow_type is None or arrow_type == own):
            data = pa.py_buffer(np.ascontiguousarray(values))
            return pa.Array.from_buffers(own, n, [None, data])
    return pa.array(values, arrow_type)


def from_pylist(values: Sequence[Any], arrow_type: pa.DataType) -> pa.Array:
    """``pa.array(values, arrow_type)`` for a list of Python values, pandas left unimported.

    Converted here: ``string`` and ``large_string`` from ``str``, ``float64`` from
    ``float``, the integer types from ``int`` in their range, ``bool`` from ``bool`` (each
    exactly that Python type), None as null in any of them. Any other type or value goes
    to ``pa.array``, and so does a list of more than :data:`MAX_PYLIST` values, or any list
    once pandas is imported (pa.array is then the faster).

    Args:
        values: n values.
        arrow_type: the array's type.

    Returns:
        An Arrow array of length n (null where a value is None).

    Raises:
        pyarrow.ArrowInvalid, pyarrow.ArrowTypeError: as ``pa.array``.

    """
    n = len(values)
    if n > MAX_PYLIST or _pandas_loaded():
        return pa.array(values, arrow_type)
    present = [v is not None for v in values]
    kinds = {type(v) for v in values if v is not None}
    buffers: list[Any] | None = None  # after the validity bitmap
    if arrow_type in (pa.string(), pa.large_string()) and kinds <= {str}:
        texts = _strings(values, large=arrow_type == pa.large_string())
        buffers = None if texts is None else list(texts)
    elif arrow_type == pa.float64() and kinds <= {float}:
        buffers = [np.array([v if v is not None else 0.0 for v in values], dtype=np.float64)]
    elif arrow_type in _INTEGERS and kinds <= {int}:
        dtype = _INTEGERS[arrow_type]
        low, high = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
        if all(low <= v <= high for v in values if v is not None):
            buffers = [np.array([v if v is not None else 0 for v in values], dtype=dtype)]
    elif arrow_type == pa.bool_() and kinds <= {bool}:
        buffers = [np.packbits(np.array([v is True for v in values], dtype=np.bool_),
                               bitorder="little")]
    if buffers is None:
        return pa.array(values, arrow_type)
    nulls = n - sum(present)
    validity = (None if not nulls else
                pa.py_buffer(np.packbits(np.array(present, dtype=np.bool_),
                                         bitorder="little")))
    return pa.Array.from_buffers(arrow_type, n, [validity, *map(pa.py_buffer, buffers)],
                                 null_count=nulls)


def _pandas_loaded() -> bool:
    return "pandas" in sys.modules


def _strings(values: Sequence[str | None], *, large: bool
             ) -> tuple[np.ndarray, bytes] | None:
    """Offsets (int32, or int64 when ``large``; shape (n + 1,)) and UTF-8 bytes of texts.

    None: left to pyarrow (a lone surrogate, which pyarrow refuses; ``string`` over 2 GiB).
    """
    try:
        encoded = [v.encode("utf-8") if v is not None else b"" for v in values]
    except UnicodeEncodeError:
        return None
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    if large:
        return offsets, b"".join(encoded)
    if offsets[-1] > _INT32_MAX:
        return None
    return offsets.astype(np.int32), b"".join(encoded)


def scalar(value: bool | int | float | str, arrow_type: pa.DataType) -> pa.Scalar:
    """``pa.scalar(value, arrow_type)``, pandas left unimported.

    For a fill value (``pyarrow.compute.fill_null``) or an operand of a compute function,
    where pyarrow would convert a Python value itself; see :func:`from_pylist` for the
    values converted here.
    """
    return from_pylist([value], arrow_type)[0]


def to_numpy(values: pa.Array | pa.ChunkedArray, dtype: Any = None) -> np.ndarray:
    """``np.asarray(values, dtype)``, pandas left unimported for numbers and booleans.

    ``Array.to_numpy`` imports pandas on its first call (pyarrow converts through its
    pandas layer). An array of a fixed-width number type without nulls is read here from
    its buffer instead (a read-only view, as ``to_numpy`` gives), a boolean one unpacked
    from its bits; a chunked array chunk by chunk (one chunk: its view; several: a new array,
    as numpy gives). Anything else (nulls, other types) goes to numpy.

    Args:
        values: n values.
        dtype: the wanted numpy dtype (converted as ``np.asarray`` does), or None for the
            type's own.

    Returns:
        Shape (n,).

    """
    if isinstance(values, pa.ChunkedArray):
        if values.null_count == 0 and _readable(values.type):
            parts = [_view(c) for c in values.chunks]
            whole = (parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else
                     np.empty(0, dtype=_NUMPY_OF.get(values.type, np.bool_)))
            return np.asarray(whole, dtype=dtype)
    elif isinstance(values, pa.Array) and values.null_count == 0 and _readable(values.type):
        return np.asarray(_view(values), dtype=dtype)
    return np.asarray(values, dtype=dtype)


def _readable(arrow_type: pa.DataType) -> bool:
    return arrow_type == pa.bool_() or arrow_type in _NUMPY_OF


def _view(values: pa.Array) -> np.ndarray:
    """The values of an array without nulls whose type :func:`_readable` accepts."""
    n, offset = len(values), values.offset
    data = values.buffers()[1]
    if values.type == pa.bool_():
        if data is None or n == 0:
            return np.zeros(0, dtype=np.bool_)
        bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8), count=offset + n,
                             bitorder="little")
        return bits[offset:].view(np.bool_)
    dtype = _NUMPY_OF[values.type]
    if data is None or n == 0:
        return np.zeros(0, dtype=dtype)
    view = np.frombuffer(data, dtype=dtype, count=n, offset=offset * dtype.itemsize)
    view.flags.writeable = False  # Arrow's data, read-only as to_numpy's view is
    return view
