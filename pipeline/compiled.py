"""The compiled kernels, loaded without compiling: built ahead of time at install.

The kernels are numba functions (:mod:`pipeline.metrics.rouge.pairs`,
:mod:`pipeline.tokenizers.rouge_score_bytes`, :mod:`pipeline.io.hashing`, the bootstrap's
:mod:`pipeline.resampling`). ``pip install``
compiles them once, with the explicit signatures in :data:`KERNELS`, into the extension module
``pipeline._kernels`` (numba's ahead-of-time compiler, see ``setup.py``). Loading that
module takes about a millisecond and imports neither numba nor LLVM, where numba's own
on-disk cache costs an import of numba (0.3-1 s) and a first dispatch (about 1 s) in every
new process, and compiles again for each new argument type.

:func:`kernel` returns a kernel whose arguments are normalized to the declared types first
(dtype, C order; read-only arrays are accepted as they are), so a kernel never sees a new
type: neither the compiled module, which would misread it, nor the just-in-time fallback,
which would compile again. The fallback (numba's JIT with its cache beside the sources) is
used when the extension is missing or was built from other kernel sources: the extension
records a digest of the sources it was compiled from and is used only when it matches.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

EXTENSION = "pipeline._kernels"


@dataclass(frozen=True)
class Kernel:
    """One exported kernel.

    Attributes:
        name: exported name.
        module: the module defining the numba function.
        function: its name there.
        signature: numba signature string (arrays ``[::1]``: C-contiguous).
        arguments: per argument, the numpy dtype name of an array argument (converted to
            it), or ``int`` / ``float`` for a scalar (converted to that Python type).

    """

    name: str
    module: str
    function: str
    signature: str
    arguments: tuple[str | type, ...]


KERNELS = (
    Kernel("score_pairs", "pipeline.metrics.rouge.pairs", "score_pairs",
           "int64[:,:,::1](int32[::1], int64[::1], int64[::1], int64[::1], int64[::1], "
           "int64[::1], int64)",
           ("int32", "int64", "int64", "int64", "int64", "int64", int)),
    Kernel("tokenize_bytes", "pipeline.tokenizers.rouge_score_bytes", "tokenize_bytes",
           "Tuple((int32[::1], int64[::1], int64[::1], uint8[::1], int64[::1], int64))"
           "(uint8[::1], int64[::1], uint8[::1])",
           ("uint8", "int64", "uint8")),
    Kernel("hash_bytes", "pipeline.io.hashing", "hash_bytes",
           "void(int64[::1], uint8[::1], uint64[::1])", ("int64", "uint8", "uint64")),
    Kernel("hash_ints", "pipeline.io.hashing", "hash_ints",
           "void(uint64[::1], uint64[::1])", ("uint64", "uint64")),
    Kernel("stream_keys", "pipeline.resampling", "stream_keys",
           "void(uint64[::1], uint64[::1], uint64[::1])", ("uint64", "uint64", "uint64")),
    Kernel("weighted_sums", "pipeline.resampling", "weighted_sums",
           "void(float64[:,::1], uint64[::1], int64, int64, int64[::1], int64, "
           "float64[:,::1], float64[::1])",
           ("float64", "uint64", int, int, "int64", int, "float64", "float64")),
    Kernel("column_max_abs", "pipeline.resampling", "column_max_abs",
           "void(float64[:,::1], float64[::1])", ("float64", "float64")),
    Kernel("round_transposed", "pipeline.resampling", "round_transposed",
           "void(float64[:,::1], float64[::1], float64[:,::1])",
           ("float64", "float64", "float64")),
    # the metric families' kernels (sacrebleu's tokenizers, BLEU, chrF, SQuAD token F1)
    Kernel("mt_tokenize", "pipeline.tokenizers.sacrebleu", "_tokenize",
           "Tuple((int32[::1], int64[::1], int64, int32[::1], int64[::1]))"
           "(int32[::1], int64[::1], int64, uint8[::1], uint8[::1])",
           ("int32", "int64", int, "uint8", "uint8")),
    Kernel("bleu_rows", "pipeline.metrics.bleu", "_bleu_rows",
           "float64[::1](float64[:,::1], int64, float64, int64)",
           ("float64", int, float, int)),
    Kernel("bleu_statistics", "pipeline.metrics.bleu", "_segment_statistics",
           "int64[:,::1](int32[::1], int64[::1], int64, int64[::1])",
           ("int32", "int64", int, "int64")),
    Kernel("chrf_rows", "pipeline.metrics.chrf", "_f_rows",
           "float64[::1](float64[:,::1], int64)", ("float64", int)),
    Kernel("chrf_statistics", "pipeline.metrics.chrf", "_segment_statistics",
           "Tuple((int64[:,::1], float64[::1], int32[::1]))"
           "(int32[::1], int64[::1], int32[::1], int64[::1], int64, int64, int64[::1], int64)",
           ("int32", "int64", "int32", "int64", int, int, "int64", int)),
    Kernel("squad_score", "pipeline.metrics.squad", "_score",
           "Tuple((int64[:,::1], float64[:,::1], int32[::1], float64[::1], int32[::1]))"
           "(int32[::1], int64[::1], int64, int64[::1], int64)",
           ("int32", "int64", int, "int64", int)),
    # rouge-score's backtracked LCS as position pairs (overlap explain's rougeL and
    # rougeLsum alignments)
    Kernel("lcs_alignment", "pipeline.metrics.rouge.lcs", "lcs_alignment",
           "int64[:,::1](int32[::1], int64, int64, int64, int64, int64)",
           ("int32", int, int, int, int, int)),
    Kernel("union_lcs_alignment", "pipeline.metrics.rouge.lcs", "union_lcs_alignment",
           "int64[::1](int32[::1], int64, int64[:,::1], int64[:,::1], int64)",
           ("int32", int, "int64", "int64", int)),
    # ROUGE-1.5.5's skip-bigram and summary-level LCS/WLCS kernels (its n-grams use score_pairs)
    Kernel("skip_bigram_pairs", "pipeline.metrics.rouge155.skipgram", "skip_bigram_pairs",
           "int64[:,::1](int32[::1], int64[::1], int64[::1], int64[::1], int64, boolean, int64)",
           ("int32", "int64", "int64", "int64", int, bool, int)),
    Kernel("summary_lcs_pairs", "pipeline.metrics.rouge155.wlcs", "summary_lcs_pairs",
           "float64[:,::1](int32[::1], int64[::1], int64[::1], int32[::1], int64[::1], "
           "int64[::1], int64[::1], boolean, float64[::1], int64)",
           ("int32", "int64", "int64", "int32", "int64", "int64", "int64", bool, "float64",
            int)),
)
# Modules whose source the kernels are compiled from (callees included).
SOURCES = ("pipeline.metrics.rouge.pairs", "pipeline.tokenizers.rouge_score_bytes",
           "pipeline.metrics.rouge.lcs", "pipeline.metrics.rouge.ngram", "pipeline.io.hashing",
           "pipeline.resampling", "pipeline.tokenizers.sacrebleu", "pipeline.metrics.bleu",
           "pipeline.metrics.chrf", "pipeline.metrics.squad", "pipeline.metrics.hashing",
           "pipeline.metrics.rouge155.skipgram", "pipeline.metrics.rouge155.wlcs")


def source_digest() -> int:
    """A digest of the kernels' source files and signatures, as a non-negative int64.

    Raises:
        OSError: a source file cannot be read.

    """
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256(repr(KERNELS).encode())
    for module in SOURCES:
        path = os.path.join(here, *module.split(".")) + ".py"
        with open(path, "rb") as fh:
            h.update(fh.read())
    return int.from_bytes(h.digest()[:8], "little") >> 1


def _normalize(kernel: Kernel, fn: Callable[..., Any], *, writable: bool) -> Callable[..., Any]:
    # numba's JIT types a read-only array apart (and would compile for it); the compiled
    # module reads it as it is.
    needs: Any = ("C", "W") if writable else ("C",)
    converts = [d if isinstance(d, type) else functools.partial(
        np.require, dtype=np.dtype(d), requirements=needs) for d in kernel.arguments]

    def call(*args: Any) -> Any:
        return fn(*[convert(a) for a, convert in zip(args, converts, strict=True)])

    call.__name__ = kernel.name
    call.__doc__ = f"{kernel.module}.{kernel.function} ({kernel.signature})"
    return call


@functools.cache
def _extension() -> Any:
    """The ahead-of-time module when built from these sources, else None."""
    if os.environ.get("OVERLAP_JIT"):  # tests and benchmarks of the fallback
        return None
    try:
        module = importlib.import_module(EXTENSION)
        if int(module.source_digest()) != source_digest():
            return None
    except (ImportError, OSError, AttributeError):
        return None
    return module


def compiled_ahead() -> bool:
    """True when the kernels come from the ahead-of-time extension (no numba at run time)."""
    return _extension() is not None


@functools.cache
def kernel(name: str, *, jit: bool = False) -> Callable[..., Any]:
    """Return the kernel ``name`` (see :data:`KERNELS`), its arguments normalized.

    Args:
        name: the kernel's exported name.
        jit: numba's just-in-time build for this machine's CPU even when the ahead-of-time
            module is there. That module is compiled for the generic CPU of the architecture
            (so that it runs on every node); the JIT build may use wider vectors (the
            bootstrap's kernel runs 2.5x faster with AVX2) but costs numba's import and a
            load from its cache (about 0.6 s), or a compile (about 4 s) the first time:
            worth it for long calls only.

    Raises:
        KeyError: no such kernel.

    """
    spec = next(k for k in KERNELS if k.name == name)
    ext = None if jit else _extension()
    if ext is not None:
        return _normalize(spec, getattr(ext, name), writable=False)
    return _normalize(spec, getattr(importlib.import_module(spec.module), spec.function),
                      writable=True)


class _LazyKernel:
    """A numba kernel compiled (or loaded from numba's cache) on first call."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any]) -> None:
        self.py_func, self.options = fn, options
        self.dispatcher: Any = None
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any) -> Any:
        if self.dispatcher is None:
            _materialize()
        return self.dispatcher(*args)


_LAZY: list[_LazyKernel] = []
_LAZY_LOCK = threading.Lock()


def lazy_njit(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(**options)`` deferred to the first call, so importing costs no numba.

    For the metric families' kernels, whose modules are imported whenever the registry is
    (their entry points are in :data:`KERNELS`; the others are their callees). On the first
    call of any such kernel (the JIT fallback), or when :func:`build` compiles the
    extension, numba is imported, every lazy kernel becomes a numba dispatcher, and each
    defining module's globals are pointed at the dispatchers (so kernels calling each other,
    within or across modules, compile as plain numba code).
    """

    def wrap(fn: Callable[..., Any]) -> Any:
        kernel = _LazyKernel(fn, options)
        _LAZY.append(kernel)
        return kernel

    return wrap


def _materialize() -> None:
    from numba import njit

    with _LAZY_LOCK:
        for k in _LAZY:
            if k.dispatcher is None:
                k.dispatcher = njit(**k.options)(k.py_func)
        for module in {k.py_func.__module__ for k in _LAZY}:
            names = vars(sys.modules[module])
            for key, value in list(names.items()):
                if isinstance(value, _LazyKernel):
                    names[key] = value.dispatcher


def build(output_dir: str) -> str:
    """Compile every kernel into ``output_dir`` with numba's ahead-of-time compiler.

    Called by ``setup.py`` at install time; needs numba and a C compiler. Code is generated
    for the generic CPU of the architecture, so the module runs on every node of a cluster.

    Returns:
        The path of the built extension module.

    """
    import warnings

    from numba.core.errors import NumbaPendingDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPendingDeprecationWarning)
        from numba.pycc import CC

        cc = CC(EXTENSION.rsplit(".", 1)[1])
    cc.output_dir = output_dir
    functions = [getattr(importlib.import_module(k.module), k.function) for k in KERNELS]
    _materialize()  # lazy kernels' callees become numba dispatchers
    for k, fn in zip(KERNELS, functions, strict=True):
        cc.export(k.name, k.signature)(fn.py_func)
    digest = source_digest()

    def _digest() -> int:
        return digest

    cc.export("source_digest", "int64()")(_digest)
    cc.compile()
    return os.path.join(output_dir, cc.output_file)
