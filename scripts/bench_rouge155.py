"""ROUGE-1.5.5 metrics benchmark: rougeWsum and rougeSU4 against our rougeLsum in the same run.

Measures pairs per second on ONE core (the process is pinned to one CPU) for the rouge155
family's rougeWsum (weighted LCS, float tables walked back with the script's rule) and
rougeSU4 (skip bigrams in a hash table), each alone, with the rouge family's rougeLsum
(bit-parallel union LCS, rouge-score's rule) run in turn on the same texts as the yardstick,
and prints the ratios. Then times one pair of 10,000-token single-line texts per metric
(wall and CPU seconds, peak RSS growth).

Texts are resampled from real summaries: ../shared/data when present, else the bundled
REALSumm set (the Perl script itself is not needed).

    .venv/bin/python scripts/bench_rouge155.py [--repeats 5] [--quick]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from pipeline import Scorer
from pipeline.metrics.rouge155.family import Rouge155Options, score_rouge155

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def load_sentences() -> list[str]:
    texts: list[str] = []
    if SHARED.is_dir():
        for f in sorted(SHARED.glob("*/examples.parquet")):
            t = pq.read_table(f, columns=["prediction", "references"]).to_pydict()
            texts += t["prediction"] + [r for refs in t["references"] for r in refs]
    else:
        base = ROOT / "pipeline" / "data" / "realsumm"
        texts += pq.read_table(base / "predictions").column("prediction").to_pylist()
        texts += pq.read_table(base / "references.parquet").column("reference").to_pylist()
    sents = [s.strip() for t in texts for s in t.split("\n")]
    return [s for s in sents if len(s.split()) >= 4]


def make_texts(n: int, n_words: int, seed: int = 0) -> list[str]:
    """n texts of sentences drawn at random, one per line, n_words words or a little more."""
    rng = np.random.default_rng(seed)
    sents = load_sentences()
    out = []
    for _ in range(n):
        lines: list[str] = []
        while sum(len(s.split()) for s in lines) < n_words:
            lines.append(sents[rng.integers(len(sents))])
        out.append("\n".join(lines))
    return out


def in_turn(fns: dict[str, object], repeats: int) -> dict[str, list[float]]:
    """Run every function once per round, rounds repeated, so load drift hits all alike."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()  # type: ignore[operator]
            times[name].append(time.perf_counter() - t0)
    return times


def long_pair(n_tokens: int) -> None:
    rng = np.random.default_rng(1)
    vocab = [f"w{i}" for i in range(2000)]
    a = " ".join(vocab[i] for i in rng.integers(0, 2000, n_tokens))
    b = " ".join(vocab[i] for i in rng.integers(0, 2000, n_tokens))
    options = Rouge155Options()
    for metric in ("rougeWsum", "rougeSU4", "rougeLsum"):
        score_rouge155(["w1 w2"], [["w2 w1"]], (metric,), options)  # compile / load cache
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        walls, cpus = [], []
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            score_rouge155([a], [[b]], (metric,), options)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        grew = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before, 0) / 1024
        wall = statistics.median(walls)
        print(f"{n_tokens:,}-token pair, {metric} (rouge155): wall {wall:.3f} s "
              f"({min(walls):.3f}-{max(walls):.3f}), CPU {statistics.median(cpus):.3f} s, "
              f"peak RSS grew {grew:.0f} MiB")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smaller corpora")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    long_pair(10_000)
    sizes = {"short (~60 words)": (60, 5000), "long (~500 words)": (500, 500)}
    options = Rouge155Options()
    lsum = Scorer(metrics=("rougeLsum",))
    rows = []
    for shape, (words, n) in sizes.items():
        n = n // 5 if args.quick else n
        preds = make_texts(n, words, seed=1)
        refs = [[t] for t in make_texts(n, words, seed=2)]
        lsum.score_batch(preds[:2], refs[:2])
        fns = {
            "rougeWsum": lambda p=preds, r=refs: score_rouge155(p, r, ("rougeWsum",), options),
            "rougeSU4": lambda p=preds, r=refs: score_rouge155(p, r, ("rougeSU4",), options),
            "rougeLsum (rouge family)": lambda p=preds, r=refs: lsum.score_batch(p, r),
        }
        times = in_turn(fns, args.repeats)
        base = n / statistics.median(times["rougeLsum (rouge family)"])
        for name, ts in times.items():
            rate = n / statistics.median(ts)
            rows.append((shape, name, rate, n / max(ts), n / min(ts), rate / base))
    print("\npairs/s on one core, median of runs taken in turn (range), tokenization included")
    print("| texts | metric | pairs/s | range | / rougeLsum |")
    print("|---|---|---:|---:|---:|")
    for shape, name, rate, lo, hi, ratio in rows:
        print(f"| {shape} | {name} | {rate:,.0f} | {lo:,.0f}-{hi:,.0f} | {ratio:.2f}x |")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
