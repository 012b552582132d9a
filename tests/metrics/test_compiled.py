"""The kernels load without compiling: ahead-of-time module, normalized argument types."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from pipeline import compiled
from pipeline.metrics.rouge.family import ROUGE_L, ROUGE_LSUM
from pipeline.tokenizers.rouge_score import _CLASS_LOWER


def _tokens(text: bytes):
    buf = np.frombuffer(text, dtype=np.uint8)  # read-only, as Arrow and Ray's store give
    nul = np.flatnonzero(buf == 0)
    offsets = np.concatenate([[0], nul + 1, [len(buf)]])
    return buf, offsets


def test_metric_codes_match_the_kernel():
    from pipeline.metrics.rouge import pairs as batch

    assert (ROUGE_L, ROUGE_LSUM) == (batch.ROUGE_L, batch.ROUGE_LSUM)


def test_the_extension_is_built_from_these_sources():
    # pip install compiles it (setup.py); a stale or missing one falls back to numba's JIT.
    assert compiled.compiled_ahead(), "run `pip install -e .` again to rebuild pipeline._kernels"


def test_argument_types_are_normalized():
    tokenize = compiled.kernel("tokenize_bytes")
    buf, offsets = _tokens(b"The cat sat.\non the mat\0a cat, a mat")
    assert not buf.flags.writeable
    ids, lines, texts, _, vocab, lowers_to_ascii = tokenize(buf, offsets.astype(np.int32),
                                                            _CLASS_LOWER)
    assert lowers_to_ascii == 0
    ids64, *_ = tokenize(buf.copy(), offsets.astype(np.int64), _CLASS_LOWER.copy())
    assert ids.tolist() == ids64.tolist() == [0, 1, 2, 3, 0, 4, 5, 1, 5, 4]
    score = compiled.kernel("score_pairs")
    codes = np.array([1, 2, ROUGE_L, ROUGE_LSUM], dtype=np.int32)
    a = score(ids, lines, texts, np.array([0], np.int32), np.array([1], np.int32), codes,
              np.int32(len(vocab) - 1))
    ids.flags.writeable = False
    b = score(ids, lines.astype(np.int32), texts, [0], [1], codes.astype(np.int64),
              len(vocab) - 1)
    assert a.tolist() == b.tolist()
    # by hand: rouge1 matches "cat" and "mat"; 6 prediction and 4 reference tokens
    assert a[0, 0].tolist() == [2, 6, 4]


@pytest.mark.slow  # the JIT build compiles every kernel it runs in a fresh tree: 40-50 CPU-s
def test_scores_from_both_builds_agree():
    # the JIT fallback (OVERLAP_JIT=1) and the compiled module give the same floats
    code = ("import json, sys; from pipeline.scoring import Scorer; "
            "t = Scorer().score_batch(['the cat sat on the mat', 'A b. C d'], "
            "[['a cat sat on a mat'], ['c d\\na b']]).table; "
            "u = Scorer(metrics=('rouge2', 'rougeWsum', 'rougeSU4', 'rougeLsum'), "
            "tokenizer='rouge155', stemmer='porter-rouge155', multi_reference='pooled')"
            ".score_batch(['the cats sat.\\nOn the mat', 'A b. C d'], "
            "[['a cat sat on a mat', 'cats sat'], ['c d\\na b']]).table; "
            "print(json.dumps([t.to_pydict(), u.to_pydict()]))")
    out = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env=env).stdout
           for env in ({}, {"OVERLAP_JIT": "1"})]
    assert json.loads(out[0]) == json.loads(out[1])


@pytest.mark.slow
def test_score_command_does_not_import_what_it_does_not_use(tmp_path):
    code = (
        "import sys; from pipeline.cli import main\n"
        "try:\n"
        "    main(['score', sys.argv[1], '--references', sys.argv[2], '--output', sys.argv[3],"
        " '--engine', 'local'])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('ray', 'matplotlib', 'numba', 'llvmlite', 'polars') or m == 'pipeline.compare')))\n")
    from pathlib import Path

    data = Path(compiled.__file__).parent / "data" / "realsumm"
    run = subprocess.run([sys.executable, "-c", code, str(data / "predictions"),
                          str(data / "references.parquet"), str(tmp_path / "run")],
                         capture_output=True, text=True, check=True)
    loaded = run.stdout.strip().splitlines()[-1].split()
    unused = {"ray", "matplotlib", "polars", "pipeline.compare"}
    if compiled.compiled_ahead():  # the bootstrap's kernels included
        unused |= {"numba", "llvmlite"}
    assert not unused & {
        m.split(".")[0] if m != "pipeline.compare" else m for m in loaded}, loaded


def test_scoring_and_partitioning_do_not_import_numba():
    # nor the metric families (BLEU, chrF, token F1, ROUGE-1.5.5): their kernels are compiled too
    if not compiled.compiled_ahead():
        pytest.skip("pipeline._kernels not built: the kernels compile with numba")
    code = ("import sys, pyarrow as pa; from pipeline.scoring import Scorer; "
            "from pipeline.io.partition import partition_of; import pipeline.engine.tasks; "
            "Scorer().score_batch(['a b'], [['a c']]); partition_of(pa.array(['x', 'y']), 3); "
            "Scorer(metrics=('bleu', 'chrf', 'token_f1')).score_batch(['a b'], [['a c']]); "
            "partition_of(pa.array([1, 2]), 3); "
            "Scorer(metrics=('rouge1', 'rougeWsum', 'rougeSU4', 'rougeLsum'), "
            "tokenizer='rouge155').score_batch(['a b.\\nc'], [['a c']]); "
            "print('numba' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert run.stdout.strip() == "False"


def _bootstrap_builds():
    # every build of the bootstrap's sums kernel here: the ahead-of-time modules (generic, and
    # x86-64-v3 where this CPU runs it) and numba's JIT build
    import importlib

    from pipeline import resampling

    out = {"jit": resampling.weighted_sums}
    for name, module in (("generic", "pipeline._kernels"), ("v3", "pipeline._kernels_v3")):
        try:
            ext = importlib.import_module(module)
        except ImportError:
            continue
        if name == "v3" and not compiled.V3_CPU_FLAGS <= compiled.cpu_flags():
            continue
        out[name] = ext.weighted_sums
    return out


@pytest.mark.slow  # numba compiles the JIT build of the kernel in a fresh tree: about 6 CPU-s
def test_the_bootstrap_kernel_gives_the_same_sums_from_every_build():
    from pipeline import stats

    rng = np.random.default_rng(2)
    grid = stats.to_grid(rng.random((3001, 7)), max_weight=8)
    keys = stats.stream_keys(rng.integers(0, 2**63, 3001, dtype=np.uint64), seed=5,
                             weights="poisson")
    out = {}
    for name, fn in _bootstrap_builds().items():
        acc, tot = np.zeros((7, 40)), np.zeros(40)
        fn(grid, keys, 0, 10, stats.THRESHOLDS["poisson"], 0, acc, tot)
        out[name] = (acc, tot)
    assert len(out) >= 2, out.keys()
    first = out["jit"]
    for acc, tot in out.values():
        assert np.array_equal(acc, first[0]) and np.array_equal(tot, first[1])


def _both_builds() -> list:
    # the generic and the x86-64-v3 ahead-of-time modules, or skip
    import importlib

    if not compiled.V3_CPU_FLAGS <= compiled.cpu_flags():
        pytest.skip("this CPU does not run x86-64-v3 code")
    try:
        return [importlib.import_module(m) for m in (compiled.EXTENSION, compiled.WIDE_EXTENSION)]
    except ImportError:
        pytest.skip("the ahead-of-time modules are not built")


def test_the_other_wide_kernels_equal_the_generic_ones():
    # the grid's rounding, the column maxima and the stream keys, from both modules
    mods = _both_builds()
    rng = np.random.default_rng(8)
    values = rng.standard_normal((5003, 5)) * 10.0 ** rng.integers(-300, 300, (5003, 5))
    scales = 2.0 ** rng.integers(-40, 40, 5).astype(np.float64)
    hashes = rng.integers(0, 2**64 - 1, 5003, dtype=np.uint64)
    got = []
    for m in mods:
        top, grid, keys = np.zeros(5), np.empty((5, 5003)), np.empty(5003, np.uint64)
        m.column_max_abs(values, top)
        m.round_transposed(values, scales, grid)
        m.stream_keys(hashes, np.array([12345], np.uint64), keys)
        got.append((top, grid, keys))
    for a, b in zip(*got, strict=True):
        assert np.array_equal(a, b)


def test_the_bootstrap_uses_the_wide_build_where_the_cpu_has_it():
    builds = compiled.builds()
    if not compiled.compiled_ahead():
        pytest.skip("pipeline._kernels not built: the kernels compile with numba")
    assert builds["hash_bytes"] == "generic"
    wide = compiled.V3_CPU_FLAGS <= compiled.cpu_flags()
    for name in ("weighted_sums", "score_pairs", "tokenize_bytes", "tokenize_two"):
        assert builds[name] == ("x86-64-v3" if wide else "generic"), name


def _rouge_texts(n: int) -> list[bytes]:
    # real summaries (the bundled REALSumm set) cut at random and re-joined with newlines,
    # so that lengths run from empty to several hundred tokens over 1 to 12 lines
    from pathlib import Path

    import pyarrow.parquet as pq

    data = Path(compiled.__file__).parent / "data" / "realsumm"
    words = " ".join(pq.read_table(data / "references.parquet").column("reference")
                     .to_pylist()).split()
    rng = np.random.default_rng(11)
    out = []
    for _ in range(n):
        lines = []
        for _ in range(int(rng.integers(1, 13))):
            start = int(rng.integers(0, len(words)))
            lines.append(" ".join(words[start:start + int(rng.geometric(1 / 25))]))
        out.append("\n".join(lines).encode())
    return out


def test_the_rouge_kernels_give_the_same_statistics_from_both_builds():
    # the tokenizers and the pair kernel of the generic and the x86-64-v3 modules, and
    # tokenize_two against tokenize_bytes over the two buffers concatenated
    mods = _both_builds()
    texts = _rouge_texts(1200)
    half = len(texts) // 2
    buf, offsets = _tokens(b"\0".join(texts))
    buf_a, offsets_a = _tokens(b"\0".join(texts[:half]))
    buf_b, offsets_b = _tokens(b"\0".join(texts[half:]))
    offsets_b = offsets_b.astype(np.int64)
    codes = np.array([1, 2, 3, 4, ROUGE_L, ROUGE_LSUM], dtype=np.int64)
    pair_pred = np.repeat(np.arange(half, dtype=np.int64), 2)[:half]
    pair_ref = np.arange(half, 2 * half, dtype=np.int64)
    got = []
    for m in mods:
        whole = m.tokenize_bytes(buf, offsets.astype(np.int64), _CLASS_LOWER)
        two = m.tokenize_two(buf_a, offsets_a.astype(np.int64), buf_b, offsets_b,
                             _CLASS_LOWER)
        for a, b in zip(whole, two, strict=True):
            assert np.array_equal(a, b)
        ids, lines, text_lines, _, vocab, _ = whole
        stats = m.score_pairs(ids, lines, text_lines, pair_pred, pair_ref, codes,
                              len(vocab) - 1)
        got.append((*whole[:5], stats))
    assert got[0][5][:, :, 0].any()
    for a, b in zip(*got, strict=True):
        assert np.array_equal(a, b)


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\nbugs\t\t: spectre_v1\n")
    assert compiled.cpu_flags(str(info)) == {"fpu", "sse2", "avx2", "fma"}
    assert compiled.cpu_flags(str(tmp_path / "missing")) == frozenset()


def _python_ran_mid_call(fn, *, min_call_s: float = 0.3, give_up_s: float = 8.0) -> str:
    """Call the bootstrap kernel ``fn`` in a thread while this one reads its output.

    The kernel adds each block of 1,024 rows into ``tot`` as it goes: a read strictly between
    0 (before the call) and the final value (after it) was made while the kernel was in the
    middle of its work, which a kernel holding the GIL makes impossible whatever the
    scheduling. How soon a read lands mid-call does depend on the load (CI runs at load 2-8
    on 2 cores), so calls of at least ``min_call_s`` are repeated, twice as long each time,
    until one is seen or ``give_up_s`` of kernel time has passed.

    Returns:
        "" when a read landed mid-call, else what was tried (for the failure message).

    """
    import threading
    import time

    from pipeline import stats

    rng = np.random.default_rng(3)
    n = 200_000
    grid = stats.to_grid(rng.random((n, 4)), max_weight=8)
    keys = stats.stream_keys(np.arange(n, dtype=np.uint64), seed=1, weights="poisson")
    words, spent, tried = 16, 0.0, []
    while spent < give_up_s:
        acc, tot = np.zeros((4, 4 * words)), np.zeros(4 * words)
        span = {}

        def work(acc=acc, tot=tot, words=words, span=span):
            span["start"] = time.perf_counter()
            fn(grid, keys, 0, words, stats.THRESHOLDS["poisson"], 0, acc, tot)
            span["stop"] = time.perf_counter()

        thread = threading.Thread(target=work)
        reads = []
        thread.start()
        while thread.is_alive():
            reads.append(float(tot[0]))
            time.sleep(0.001)
        thread.join()
        final, took = float(tot[0]), span["stop"] - span["start"]
        assert final > 0
        if any(0 < r < final for r in reads):
            return ""
        spent += took
        tried.append(f"{took:.2f} s ({len(reads)} reads)")
        words *= 2 if took >= min_call_s else 4
    return "calls of " + ", ".join(tried)


@pytest.mark.parametrize("build", ["generic", "v3"])
def test_the_compiled_bootstrap_releases_the_gil(build):
    # This thread runs Python while the kernel is half-way through its work (see
    # _python_ran_mid_call); a kernel holding the GIL blocks it until the kernel returns.
    fn = _bootstrap_builds().get(build)
    if fn is None:
        pytest.skip(f"no {build} ahead-of-time build here")
    tried = _python_ran_mid_call(fn)
    assert not tried, f"no Python ran mid-call in {tried}: the kernel holds the GIL"


@pytest.mark.slow  # numba compiles the kernel (about 6 CPU-s); the check then gives up in 2 s
def test_the_gil_check_fails_for_a_kernel_holding_the_gil():
    # the same kernel compiled by numba's JIT without nogil: the check above must fail for it
    from numba import njit

    from pipeline import resampling

    holding = njit(nogil=False)(resampling.weighted_sums.py_func)
    assert _python_ran_mid_call(holding, give_up_s=2.0).startswith("calls of ")
    released = njit(nogil=True)(resampling.weighted_sums.py_func)
    assert _python_ran_mid_call(released) == ""


def test_a_large_bootstrap_compiles_nothing(tmp_path):
    # 4 measures x 250,000 examples x 1,000 resamples in one call: 10**9 weighted values, the
    # size from which the bootstrap used to switch to numba's JIT build (its cache empty here:
    # a compile would write to it and import numba).
    if not compiled.compiled_ahead():
        pytest.skip("pipeline._kernels not built: the kernels compile with numba")
    code = ("import sys, numpy as np; from pipeline import stats; "
            "rng = np.random.default_rng(0); "
            "reps = stats.bootstrap(rng.random((250_000, 4)), "
            "np.arange(250_000, dtype=np.uint64), [stats.Estimate((q,)) for q in range(4)], "
            "n_bootstrap=1000, seed=1, threads=1); "
            "assert reps.shape == (1000, 4) and np.isfinite(reps).all(); "
            "print('numba' in sys.modules, 'llvmlite' in sys.modules)")
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    import os

    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "NUMBA_CACHE_DIR": str(cache)})
    assert run.stdout.split() == ["False", "False"], run.stdout + run.stderr
    assert not list(cache.iterdir())


@pytest.mark.slow
def test_a_million_row_score_in_a_fresh_process_compiles_nothing(tmp_path):
    # The default metrics and bootstrap (1,000) on 1,000,000 short rows in partitions of
    # 250,000 (as configs/nightly.yaml's 200,000: each file's share of the bootstrap is then
    # 3 * 10**9 weighted values, which used to switch to numba's JIT build), in a new process
    # with an empty numba cache: neither the driver imports numba nor a worker writes to it.
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    if not compiled.compiled_ahead():
        pytest.skip("pipeline._kernels not built: the kernels compile with numba")
    n = 1_000_000
    words = np.array(["the", "cat", "sat", "on", "a", "mat", "dog", "ran"])
    rng = np.random.default_rng(7)
    pick = rng.integers(0, len(words), (n, 4))
    preds = pa.array([" ".join(w) for w in words[pick[:, :3]]])
    refs = pa.array([" ".join(w) for w in words[pick[:, 1:]]])
    references = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), refs)
    src = tmp_path / "in"
    src.mkdir()
    table = pa.table({"id": pa.array(np.arange(n)), "prediction": preds,
                      "references": references})
    for s in range(4):
        pq.write_table(table.slice(s * n // 4, n // 4), src / f"part-{s}.parquet")
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    config = tmp_path / "big-partitions.yaml"
    config.write_text("partition_rows: 250000\n")
    code = ("import sys; from pipeline.cli import main\n"
            "try:\n"
            "    main(['score', sys.argv[1], '--output', sys.argv[2], '--config', sys.argv[3]])\n"
            "except SystemExit as e:\n"
            "    assert not e.code, e.code\n"
            "print('numba' in sys.modules, 'llvmlite' in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", code, str(src), str(tmp_path / "run"),
                          str(config)],
                         capture_output=True, text=True,
                         env={**os.environ, "NUMBA_CACHE_DIR": str(cache)})
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1].split() == ["False", "False"], run.stdout
    assert not list(cache.iterdir())
    assert len(list((tmp_path / "run" / "examples").glob("*.parquet"))) == 4
    aggregate = pq.read_table(tmp_path / "run" / "aggregate.parquet")
    assert aggregate.num_rows > 0


def test_the_kernel_sources_import_with_the_build_requirements_only():
    # setup.py compiles the kernels in pip's build environment, which holds only the
    # [build-system] requirements: a kernel module that imports anything else at its top
    # (regex, pandas...) leaves the kernels uncompiled, silently (numba's JIT at run time).
    from pathlib import Path

    from tests.house.test_dependencies import tomllib

    root = Path(__file__).resolve().parents[2]
    build = tomllib.loads((root / "pyproject.toml").read_text())["build-system"]["requires"]
    allowed = {r.split(">")[0].split("=")[0].split("<")[0].strip().lower() for r in build}
    code = f"""
import importlib.abc, sys
ALLOWED = {sorted(allowed)!r}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in sys.stdlib_module_names or top == "pipeline" or top.lower() in ALLOWED \\
                or top in ("llvmlite", "_distutils_hack"):
            return None
        raise ImportError(f"{{name}} is not a build requirement")
sys.meta_path.insert(0, Block())
from pipeline import compiled
for module in compiled.SOURCES:
    importlib.import_module(module)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=root, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
