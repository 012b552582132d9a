"""The compiled kernels, loaded without compiling: built ahead of time at install.

The kernels are numba functions (:mod:`pipeline.metrics.rouge.pairs`,
:mod:`pipeline.tokenizers.rouge_score_bytes`, :mod:`pipeline.io.hashing`, the bootstrap's
:mod:`pipeline.resampling`). ``pip install`` (or ``python -m build``: a wheel holding them,
see docs/packaging.md) compiles them once, with the explicit signatures in :data:`KERNELS`,
into the extension module ``pipeline._kernels`` (numba's ahead-of-time compiler, see
``setup.py``), for the generic CPU of the architecture so that it runs on every node. On
x86-64 the bootstrap's kernels and ROUGE's tokenizer and pair kernels (:data:`WIDE_KERNELS`)
are compiled a second time, for the x86-64-v3 level (AVX2, FMA, BMI2: Intel Haswell 2013 and
later, AMD Zen) into ``pipeline._kernels_v3``, which is used where the CPU has those features
(the bootstrap twice as fast with 256-bit vectors; the LCS kernels count bits with ``popcnt``
and ``lzcnt`` instead of bit tricks); results are equal bit for bit (the sums are exact, see
:mod:`pipeline.stats`; the ROUGE kernels count integers). Every
exported kernel releases the GIL while it runs (as numba's ``nogil=True``), so threads
overlap. Loading a module takes about a millisecond and imports neither numba nor LLVM, where
numba's own on-disk cache costs an import of numba (0.3-1 s) and a first dispatch (about 1 s)
in every new process, and compiles again for each new argument type.

:func:`kernel` returns a kernel whose arguments are normalized to the declared types first
(dtype, C order; read-only arrays are accepted as they are), so a kernel never sees a new
type: neither the compiled module, which would misread it, nor the just-in-time fallback,
which would compile again. The fallback (numba's JIT with its cache beside the sources) is
used when the extension is missing or was built from other kernel sources: the extension
records a digest of the sources it was compiled from and is used only when it matches.
:func:`builds` says which build serves each kernel.
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
# The bootstrap's and ROUGE's kernels compiled again for x86-64-v3 (see the module docstring).
WIDE_EXTENSION = "pipeline._kernels_v3"
WIDE_TARGET = "x86-64-v3"
WIDE_KERNELS = ("weighted_sums", "round_transposed", "column_max_abs", "stream_keys",
                "score_pairs", "tokenize_bytes", "tokenize_two")
# /proc/cpuinfo flags of the x86-64-v3 level (x86-64 psABI: v2's cx16, lahf_lm, popcnt, pni
# (SSE3), ssse3, sse4_1, sse4_2; v3's avx, avx2, bmi1, bmi2, f16c, fma, abm (LZCNT), movbe,
# xsave): all needed for the wide module. Linux lists avx/avx2 only when the OS enables them.
V3_CPU_FLAGS = frozenset({"cx16", "lahf_lm", "popcnt", "pni", "ssse3", "sse4_1", "sse4_2",
                          "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe",
                          "xsave"})


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
    Kernel("tokenize_two", "pipeline.tokenizers.rouge_score_bytes", "tokenize_two",
           "Tuple((int32[::1], int64[::1], int64[::1], uint8[::1], int64[::1], int64))"
           "(uint8[::1], int64[::1], uint8[::1], int64[::1], uint8[::1])",
           ("uint8", "int64", "uint8", "int64", "uint8")),
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


def cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str]:
    """This machine's CPU feature flags as Linux lists them (empty elsewhere or unreadable)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def _load(name: str) -> Any:
    """The ahead-of-time module ``name`` when built from these sources, else None."""
    try:
        module = importlib.import_module(name)
        if int(module.source_digest()) != source_digest():
            return None
    except (ImportError, OSError, AttributeError):
        return None
    return module


@functools.cache
def _extension() -> Any:
    """The generic ahead-of-time module when built from these sources, else None."""
    if os.environ.get("OVERLAP_JIT"):  # tests and benchmarks of the fallback
        return None
    return _load(EXTENSION)


@functools.cache
def _wide_extension() -> Any:
    """The x86-64-v3 module when built from these sources and this CPU has v3, else None."""
    if os.environ.get("OVERLAP_JIT") or os.environ.get("OVERLAP_KERNELS") == "generic":
        return None
    if not V3_CPU_FLAGS <= cpu_flags():
        return None
    return _load(WIDE_EXTENSION)


def compiled_ahead() -> bool:
    """True when the kernels come from the ahead-of-time extension (no numba at run time)."""
    return _extension() is not None


def builds() -> dict[str, str]:
    """Which build serves each kernel: ``x86-64-v3``, ``generic`` (ahead of time) or ``jit``.

    ``OVERLAP_KERNELS=generic`` in the environment leaves the x86-64-v3 module out;
    ``OVERLAP_JIT=1`` both ahead-of-time modules (numba's JIT build, which compiles).
    """
    wide, generic = _wide_extension() is not None, _extension() is not None
    return {k.name: (WIDE_TARGET if wide and k.name in WIDE_KERNELS
                     else "generic" if generic else "jit") for k in KERNELS}


@functools.cache
def kernel(name: str) -> Callable[..., Any]:
    """Return the kernel ``name`` (see :data:`KERNELS`), its arguments normalized.

    From the x86-64-v3 module where it holds the kernel and the CPU has that level, else the
    generic ahead-of-time module, else numba's JIT build (see :func:`builds`). Every build
    gives the same values.

    Args:
        name: the kernel's exported name.

    Raises:
        KeyError: no such kernel.

    """
    spec = next((k for k in KERNELS if k.name == name), None)
    if spec is None:
        raise KeyError(name)
    ext = _wide_extension() if name in WIDE_KERNELS else None
    if ext is None:
        ext = _extension()
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


def build(output_dir: str, *, target: str = "generic") -> str:
    """Compile the kernels into ``output_dir`` with numba's ahead-of-time compiler.

    Called by ``setup.py`` at install time; needs numba and a C compiler. Every exported
    function releases the GIL while it runs (numba's ``nogil``; its ahead-of-time compiler has
    no option for it, so its compile flags are set here).

    Args:
        output_dir: directory to write the module into.
        target: ``generic`` (every kernel as ``pipeline._kernels``, for the architecture's
            generic CPU, so that it runs on every node) or ``x86-64-v3`` (the kernels of
            :data:`WIDE_KERNELS` as ``pipeline._kernels_v3``, for CPUs of that level).

    Returns:
        The path of the built extension module.

    Raises:
        ValueError: an unknown target.

    """
    import warnings

    from numba.core.errors import NumbaPendingDeprecationWarning

    if target not in ("generic", WIDE_TARGET):
        raise ValueError(f"target must be 'generic' or {WIDE_TARGET!r}, got {target!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPendingDeprecationWarning)
        from numba.pycc import CC
        from numba.pycc import compiler as pycc_compiler

        cc = CC((EXTENSION if target == "generic" else WIDE_EXTENSION).rsplit(".", 1)[1])
    if target != "generic":
        cc.target_cpu = target
    cc.output_dir = output_dir
    kernels = [k for k in KERNELS if target == "generic" or k.name in WIDE_KERNELS]
    functions = [getattr(importlib.import_module(k.module), k.function) for k in kernels]
    _materialize()  # lazy kernels' callees become numba dispatchers
    for k, fn in zip(kernels, functions, strict=True):
        cc.export(k.name, k.signature)(fn.py_func)
    digest = source_digest()

    def _digest() -> int:
        return digest

    cc.export("source_digest", "int64()")(_digest)
    # numba's ahead-of-time compiler builds its compile flags from its module's ``Flags``
    # (numba.pycc.compiler._ModuleCompiler._cull_exports, numba 0.59-0.68); with
    # ``release_gil`` set, each exported wrapper releases the GIL around the call, as the JIT
    # dispatcher of a ``nogil=True`` function does (numba.core.callwrapper).
    flags = pycc_compiler.Flags

    class _ReleaseGil(flags):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.release_gil = True

    setattr(pycc_compiler, "Flags", _ReleaseGil)  # noqa: B010 - a module's class
    try:
        cc.compile()
    finally:
        setattr(pycc_compiler, "Flags", flags)  # noqa: B010
    return os.path.join(output_dir, cc.output_file)
