"""Scoring-kernel benchmark: overlap-pipeline against rouge-score and rouge-score-rs.

Measures pairs per second on ONE core (the process is pinned to one CPU and rouge-score-rs
gets RAYON_NUM_THREADS=1) for rouge1+rouge2+rougeL+rougeLsum, with and without stemming, on
three corpus shapes, checks that all three implementations return the same floats, and
prints a table with ratios. The per-core peer is rouge-score-rs `RougeScorer.score_batch`
(its fastest path; `score_multi` per example for the multiref shape, which score_batch
cannot take). Ours is timed on Arrow string arrays, as the pipeline reads them from Parquet
(the peer takes Python lists, built outside its timing), and on Python lists ("ours, lists").
Then prints the tokenizer's throughput in MB/s of UTF-8 text, and times a pair of
10,000-token texts and one of 100,000-token texts (rougeL + rougeLsum) and reports their
peak memory.

Corpora are resampled from real summaries of CNN/DailyMail articles: REALSumm and SummEval
from ../shared/data when present (system outputs, pointer-generator among them, and
references), else the bundled REALSumm set.

    .venv/bin/pip install -e '.[bench]'
    .venv/bin/python scripts/bench_kernel.py [--repeats 5] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from functools import partial
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
METRICS = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
# The CNN/DailyMail system outputs and references of ../shared/data (REALSumm, SummEval):
# English news summaries. Its other sets (13 languages, SQuAD answers) are another shape, and
# one text with U+0130 or U+212A sends a whole batch down the tokenizer's string path.
CNN_DM = ("realsumm", "summeval_multiref11")


def load_sentences() -> list[str]:
    """All sentences of predictions and references from the available real data."""
    texts: list[str] = []
    if SHARED.is_dir():
        for f in [SHARED / name / "examples.parquet" for name in CNN_DM]:
            t = pq.read_table(f, columns=["prediction", "references"]).to_pydict()
            texts += t["prediction"]
            texts += [r for refs in t["references"] for r in refs]
    else:
        base = ROOT / "pipeline" / "data" / "realsumm"
        texts += pq.read_table(base / "predictions").column("prediction").to_pylist()
        texts += pq.read_table(base / "references.parquet").column("reference").to_pylist()
    sents = [s.strip() for t in texts for s in t.split("\n")]
    return [s for s in sents if len(s.split()) >= 4]


def make_text(rng: np.random.Generator, sents: list[str], n_words: int) -> str:
    """Sentences drawn at random, one per line, until the text has n_words words."""
    out: list[str] = []
    words = 0
    while words < n_words:
        s = sents[rng.integers(len(sents))]
        out.append(s)
        words += len(s.split())
    return "\n".join(out)


def corpus(shape: str, n: int, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """Predictions and reference lists of a named shape: short, long or multiref."""
    rng = np.random.default_rng(seed)
    sents = load_sentences()
    words = {"short": 60, "long": 500, "multiref": 60}[shape]
    n_refs = 4 if shape == "multiref" else 1
    preds = [make_text(rng, sents, words) for _ in range(n)]
    refs = [[make_text(rng, sents, words) for _ in range(n_refs)] for _ in range(n)]
    return preds, refs


def timed(fn, repeats: int) -> tuple[float, float, float, object]:
    """Run fn repeats times; return (median, min, max) seconds and the last result."""
    times = []
    result = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times), result


def timed_pair(fn_a, fn_b, repeats: int):
    """Run a and b in turn (A B A B ...) so drifting machine load hits both alike.

    Returns ((median, min, max, result) of a, the same of b).
    """
    times_a, times_b = [], []
    res_a = res_b = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res_a = fn_a()
        t1 = time.perf_counter()
        res_b = fn_b()
        t2 = time.perf_counter()
        times_a.append(t1 - t0)
        times_b.append(t2 - t1)
    return ((statistics.median(times_a), min(times_a), max(times_a), res_a),
            (statistics.median(times_b), min(times_b), max(times_b), res_b))


def run_rouge_score(preds, refs, stem):
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(METRICS, use_stemmer=stem)
    if len(refs[0]) == 1:
        return [scorer.score(r[0], p) for p, r in zip(preds, refs, strict=True)]
    return [scorer.score_multi(r, p) for p, r in zip(preds, refs, strict=True)]


def run_rs(preds, refs, stem):
    import rouge_score_rs

    scorer = rouge_score_rs.RougeScorer(METRICS, use_stemmer=stem)
    if len(refs[0]) == 1:
        return scorer.score_batch([r[0] for r in refs], preds)
    return [scorer.score_multi(r, p) for p, r in zip(preds, refs, strict=True)]


def run_ours(preds, refs, stem, batch_size=8192):
    from pipeline import Scorer

    scorer = Scorer(metrics=tuple(METRICS), stemmer="porter" if stem else "none")
    tables = [scorer.score_batch(preds[i:i + batch_size], refs[i:i + batch_size]).table
              for i in range(0, len(preds), batch_size)]
    return tables


def as_arrow(preds, refs):
    import pyarrow as pa

    return (pa.array(preds, pa.large_string()),
            pa.array(refs, pa.large_list(pa.large_string())))


def tokenizer_mb_per_s(preds, refs, repeats: int) -> float:
    """UTF-8 megabytes per second through the rouge-score tokenizer (Arrow input)."""
    import pyarrow as pa

    from pipeline.tokenizers.rouge_score import get_tokenizer, tokenize_batch

    texts = pa.array(preds + [r for rs in refs for r in rs], pa.large_string())
    tok = get_tokenizer("rouge-score")
    med, _, _, _ = timed(partial(tokenize_batch, texts, tokenizer=tok), repeats)
    return texts.buffers()[2].size / med / 1e6


def flatten_peer(results) -> np.ndarray:
    return np.array([[getattr(r[m], x) for m in METRICS
                      for x in ("precision", "recall", "fmeasure")] for r in results])


def flatten_ours(tables, n) -> np.ndarray:
    import pyarrow as pa

    t = pa.concat_tables(tables)
    cols = [t.column(f"{m}_{x}").to_numpy() for m in METRICS
            for x in ("precision", "recall", "fmeasure")]
    return np.stack(cols, axis=1)[:n]


def long_pair(n_tokens: int, *, vocab_size: int = 2000, repeats: int = 1) -> None:
    """Score one pair of n_tokens-token single-line texts (rougeL + rougeLsum)."""
    import resource

    from pipeline import Scorer

    rng = np.random.default_rng(1)
    vocab = [f"w{i}" for i in range(vocab_size)]
    a = " ".join(vocab[i] for i in rng.integers(0, vocab_size, n_tokens))
    b = " ".join(vocab[i] for i in rng.integers(0, vocab_size, n_tokens))
    scorer = Scorer(metrics=("rougeL", "rougeLsum"))
    scorer.score_batch(["w1 w2"], [["w2 w1"]])  # compile outside the timing
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        res = scorer.score_batch([a], [[b]]).table
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    spread = f" (min {min(times):.3f}, max {max(times):.3f}, {repeats} runs)" if repeats > 1 else ""
    print(f"{n_tokens:,}-token pair ({vocab_size:,}-word vocabulary), rougeL + rougeLsum: "
          f"{statistics.median(times):.3f} s{spread}, CPU {statistics.median(cpu):.3f} s, "
          f"peak RSS {after / 1024:.0f} MiB (grew {max(after - before, 0) / 1024:.0f} MiB); "
          f"rougeL F={res.column('rougeL_fmeasure')[0].as_py():.4f}")


def stages(repeats: int, n: int) -> None:
    """Where a short pair's time goes: microseconds per pair per stage, CPU time, one core.

    Stages, each timed alone on the same corpus (short shape, Arrow input) and taken in turn:
    tokenizing (bytes to ids, the id hash table), the stemmer's id remap (porter minus
    none), score_pairs with one metric at a time (rouge1: unigram counts; rouge2: bigram
    hashing and counts; rougeL: the bit-parallel LCS; rougeLsum: the union LCS) and with
    the four together, the whole Scorer.score_batch (the rest: flattening Arrow, combining
    references, building the table), and rouge-score-rs's score_batch per pair.
    """
    import pyarrow as pa

    from pipeline.compiled import kernel
    from pipeline.metrics.rouge.family import _code
    from pipeline.tokenizers.rouge_score import get_tokenizer, tokenize_batch

    preds, refs = corpus("short", n)
    apreds, arefs = as_arrow(preds, refs)
    texts = pa.array(preds + [r[0] for r in refs], pa.large_string())
    tok = get_tokenizer("rouge-score")
    pair_pred = np.arange(n, dtype=np.int64)
    pair_ref = np.arange(n, 2 * n, dtype=np.int64)
    score_pairs = kernel("score_pairs")

    def cpu(fn) -> float:
        c0 = time.process_time()
        fn()
        return time.process_time() - c0

    def scorer_fn(stemmer):
        return partial(run_ours, apreds, arefs, stemmer == "porter", batch_size=n)

    for stemmer in ("none", "porter"):
        batch = tokenize_batch(texts, tokenizer=tok, stemmer=stemmer)
        cases = {"tokenize (bytes to ids)": partial(tokenize_batch, texts, tokenizer=tok,
                                                    stemmer=stemmer)}
        for m in (*METRICS, "all four"):
            codes = np.array([_code(x) for x in (METRICS if m == "all four" else [m])],
                             dtype=np.int64)
            cases[f"score_pairs {m}"] = partial(score_pairs, batch.tokens, batch.line_offsets,
                                                batch.text_line_offsets, pair_pred, pair_ref,
                                                codes, batch.vocab_size)
        cases["Scorer.score_batch (whole)"] = scorer_fn(stemmer)
        cases["rouge-score-rs score_batch"] = partial(run_rs, preds, refs, stemmer == "porter")
        for fn in cases.values():  # warm up
            fn()
        times: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(repeats):
            for k, fn in cases.items():
                times[k].append(cpu(fn) / n * 1e6)
        print(f"\nstemmer {stemmer}: microseconds per pair, CPU time on one core, median "
              f"(min-max) of {repeats}; {n:,} short pairs, {len(batch.tokens) / (2 * n):.0f} "
              "tokens a text")
        for k, ts in times.items():
            print(f"  {k:32} {statistics.median(ts):6.2f} ({min(ts):.2f}-{max(ts):.2f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smaller corpora")
    ap.add_argument("--stages", action="store_true",
                    help="only the per-stage times of a short pair (see stages())")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # e.g. rougeLsum on one-sentence texts
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    if args.stages:
        stages(args.repeats, 4000 if args.quick else 20000)
        return 0
    sizes = {"short": 20000, "long": 2000, "multiref": 5000}
    rs_sizes = {"short": 300, "long": 40, "multiref": 100}  # rouge-score is slow
    if args.quick:
        sizes = {k: v // 5 for k, v in sizes.items()}
    long_pair(10_000)  # first, so that its memory growth is not hidden by earlier peaks
    long_pair(100_000, vocab_size=20_000, repeats=args.repeats)
    run_ours(["warm up"], [["warm up"]], True)  # numba compile / cache load
    rows = []
    for shape in ("short", "long", "multiref"):
        preds, refs = corpus(shape, sizes[shape])
        for stem in (False, True):
            n_rs = rs_sizes[shape]
            t_rs, _, _, res_rs = timed(
                partial(run_rouge_score, preds[:n_rs], refs[:n_rs], stem), 1)
            ref_vals = flatten_peer(res_rs)
            apreds, arefs = as_arrow(preds, refs)
            (t_rsrs, _, _, res_rsrs), (t_ours, lo_ours, hi_ours, res_ours) = timed_pair(
                partial(run_rs, preds, refs, stem), partial(run_ours, apreds, arefs, stem),
                args.repeats)
            t_list, _, _, _ = timed(partial(run_ours, preds, refs, stem), args.repeats)
            ours = flatten_ours(res_ours, len(preds))
            rsrs = flatten_peer(res_rsrs)
            same = bool(np.array_equal(ours, rsrs) and np.array_equal(ours[:n_rs], ref_vals))
            rows.append((shape, "porter" if stem else "none", n_rs / t_rs,
                         len(preds) / t_rsrs, len(preds) / t_ours,
                         (len(preds) / hi_ours, len(preds) / lo_ours), len(preds) / t_list,
                         same))
            print(f"  measured {shape}/{'stem' if stem else 'nostem'}", file=sys.stderr)
    print("\npairs/s on one core (rouge1+rouge2+rougeL+rougeLsum); multiref = examples/s "
          f"with 4 references; median of {args.repeats} runs, rouge-score-rs and ours in turn "
          "(ours: min-max in brackets)")
    print(f"{'shape':9} {'stemmer':7} {'rouge-score':>12} {'rouge-score-rs':>15} "
          f"{'ours':>10} {'(range)':>19} {'ours/rs-rs':>11} {'ours, lists':>12} "
          f"{'ours/rouge-score':>17} {'identical':>9}")
    for shape, stem, a, b, c, (lo, hi), d, same in rows:
        print(f"{shape:9} {stem:7} {a:12,.0f} {b:15,.0f} {c:10,.0f} "
              f"{f'({lo:,.0f}-{hi:,.0f})':>19} {c / b:10.2f}x {d:12,.0f} {c / a:16.0f}x "
              f"{str(same):>9}")
    preds, refs = corpus("short", sizes["short"])
    print(f"\ntokenizer (rouge-score rule, Arrow input, ids assigned): "
          f"{tokenizer_mb_per_s(preds, refs, args.repeats):,.0f} MB/s on one core")
    target = [c / b for _, _, _, b, c, *_ in rows]
    print(f"target: ours at least 4x rouge-score-rs per core in every row: "
          f"measured {min(target):.2f}x-{max(target):.2f}x "
          f"({'met' if min(target) >= 4 else 'NOT met'})")
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
