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


def test_the_bootstrap_kernel_gives_the_same_sums_from_both_builds():
    # large resamples use numba's JIT build for this CPU (pipeline.stats.JIT_MIN_DRAWS)
    from pipeline import stats

    rng = np.random.default_rng(2)
    grid = stats.to_grid(rng.random((3001, 7)), max_weight=8)
    keys = stats.stream_keys(rng.integers(0, 2**63, 3001, dtype=np.uint64), seed=5,
                             weights="poisson")
    out = []
    for jit in (False, True):
        acc, tot = np.zeros((7, 40)), np.zeros(40)
        compiled.kernel("weighted_sums", jit=jit)(grid, keys, 0, 10,
                                                  stats.THRESHOLDS["poisson"], 0, acc, tot)
        out.append((acc, tot))
    assert np.array_equal(out[0][0], out[1][0]) and np.array_equal(out[0][1], out[1][1])
