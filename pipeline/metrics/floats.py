"""Transcendental functions of float64 arrays that give the same bits on every CPU.

numpy's ``exp``, ``log`` and ``power`` ufuncs choose their loop by the CPU they run on
(``numpy.lib.introspect.opt_func_info``: float64 ``power`` has a loop for x86-64-v4, i.e.
AVX-512, besides the baseline; ``exp`` and ``log`` have v3 and v4 loops), and those loops
may differ from the C library in the last bit. A score computed with them would then differ
from machine to machine, and so would the bytes of the examples files (issue 25, item 27:
ROUGE-1.5.5's ``-w`` runs on an AVX-512 machine). The functions here call the C library's
``pow`` and ``exp`` element by element (through :mod:`math`), as the references do:
ROUGE-1.5.5's Perl ``**`` and sacrebleu's ``math.exp``. They cost about 0.1 microsecond per
element; the families call them on per-example or per-scope arrays only.
"""

from __future__ import annotations

import math

import numpy as np


def power(values: np.ndarray, exponent: float) -> np.ndarray:
    """``values ** exponent`` element by element with the C library's ``pow``.

    Args:
        values: float64 array of any shape, each value >= 0 (or NaN, which stays NaN).
        exponent: a finite float.

    Returns:
        A new float64 array of the same shape; the C library's result for each element,
        whatever the CPU (numpy's ``**`` may take a vector loop on AVX-512).

    Raises:
        ValueError: a negative value with a non-integer exponent (no real result).
        OverflowError: a result beyond float64's range.

    """
    array = np.asarray(values, dtype=np.float64)
    flat = [math.pow(v, exponent) for v in array.ravel().tolist()]
    return np.array(flat, dtype=np.float64).reshape(array.shape)


def exp(values: np.ndarray) -> np.ndarray:
    """``e ** values`` element by element with the C library's ``exp`` (as sacrebleu).

    Args:
        values: float64 array of any shape; values above about 709.78 overflow.

    Returns:
        A new float64 array of the same shape, each element ``math.exp`` of the input's.

    Raises:
        OverflowError: a result beyond float64's range.

    """
    array = np.asarray(values, dtype=np.float64)
    flat = [math.exp(v) for v in array.ravel().tolist()]
    return np.array(flat, dtype=np.float64).reshape(array.shape)


__all__ = ["exp", "power"]
