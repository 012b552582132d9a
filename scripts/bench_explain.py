"""``overlap explain`` cost: wall seconds and peak RSS growth for one long pair of texts.

Each case runs in a fresh process (so the peak RSS is its own), ``--repeats`` times in turn;
prints the median and the range of each, with the load average. Cases: two one-line texts
of N tokens (rouge1, rouge2, rougeL, rougeLsum), and two texts of N one-word lines
(rougeLsum, where every reference line meets every prediction line), the latter beside the
scorer's time for the same pair. Random words from a 2,000-word vocabulary (one-word lines:
50 words), seed 0.

    .venv/bin/python scripts/bench_explain.py [--tokens 10000 100000] [--lines 2000 20000]
        [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, random, resource, sys, time
from pipeline import Scorer, explain
from pipeline.compiled import kernel
kind, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(0)
if kind == "tokens":
    words = [f"w{i}" for i in range(2000)]
    pred, ref = (" ".join(rng.choice(words) for _ in range(n)) for _ in range(2))
    metrics = ("rouge1", "rouge2", "rougeL", "rougeLsum")
else:
    words = [f"w{i}" for i in range(50)]
    pred, ref = ("\n".join(rng.choice(words) for _ in range(n)) for _ in range(2))
    metrics = ("rougeLsum",)
for name in ("lcs_alignment", "union_lcs_alignment"):
    kernel(name)
explain("a b", ["a"], metrics=metrics)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
explain(pred, [ref], metrics=metrics)
wall = time.perf_counter() - t
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
score_s = None
if kind == "lines":
    t = time.perf_counter()
    Scorer(metrics=metrics).score_batch([pred], [[ref]])
    score_s = time.perf_counter() - t
print(json.dumps({"wall_s": wall, "rss_mb": grown, "score_s": score_s}))
"""


def _run(kind: str, n: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, str(n)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.splitlines()[-1])


def main() -> None:
    """Run the cases and print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--lines", type=int, nargs="*", default=[2_000, 20_000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cases = [("tokens", n) for n in args.tokens] + [("lines", n) for n in args.lines]
    results: dict[tuple[str, int], list[dict[str, float]]] = {c: [] for c in cases}
    for _ in range(args.repeats):  # cases in turn, so load changes hit all alike
        for case in cases:
            results[case].append(_run(*case))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
          f"{args.repeats} runs each")
    for (kind, n), runs in results.items():
        line = [f"{n:>7} {'tokens, one line' if kind == 'tokens' else 'one-word lines'}"]
        for key, unit in (("wall_s", "s"), ("rss_mb", "MB"), ("score_s", "s scoring")):
            values = [r[key] for r in runs if r[key] is not None]
            if values:
                line.append(f"{statistics.median(values):.2f} {unit} "
                            f"({min(values):.2f}-{max(values):.2f})")
        print("  ".join(line))


if __name__ == "__main__":
    main()
