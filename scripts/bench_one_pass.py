"""One pass against three: ROUGE + BLEU + chrF in one `overlap score` run, or one run each.

On the bundled REALSumm data (2,500 examples), in-process engine, no bootstrap. Measures, in
turn (so load hits both alike), the wall time of
- one run with --metrics rouge1,rouge2,rougeL,rougeLsum,bleu,chrf, and
- three runs (the ROUGE metrics, bleu, chrf), summed;
and the same for the scorer alone (Scorer.score_batch on the joined texts in memory).
Prints medians, the spread (min-max) and the load average; checks the one-pass columns equal
the separate runs' columns.

    python scripts/bench_one_pass.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.api import score
from pipeline.config import ScoreConfig
from pipeline.scoring import Scorer

DATA = Path(__file__).resolve().parents[1] / "pipeline" / "data" / "realsumm"
ROUGE = ("rouge1", "rouge2", "rougeL", "rougeLsum")
GROUPS = (ROUGE, ("bleu",), ("chrf",))


def _run(metrics: tuple[str, ...], out: str) -> float:
    t = time.perf_counter()
    score(str(DATA / "predictions"), references=str(DATA / "references.parquet"), output=out,
          config=ScoreConfig(metrics=metrics, engine="local", bootstrap=0), overwrite=True,
          run_id="bench")
    return time.perf_counter() - t


def _texts() -> tuple[pa.Array, pa.Array]:
    preds = pq.read_table(DATA / "predictions")
    refs = pq.read_table(DATA / "references.parquet")
    by_id = dict(zip(refs.column("id").to_pylist(), refs.column("reference").to_pylist(),
                     strict=True))
    lists = pa.array([[by_id[i]] for i in preds.column("id").to_pylist()],
                     pa.large_list(pa.large_string()))
    return preds.column("prediction").combine_chunks(), lists


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s ({min(values):.3f}-{max(values):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    preds, refs = _texts()
    together = Scorer(metrics=ROUGE + ("bleu", "chrf"))
    apart = [Scorer(metrics=g) for g in GROUPS]
    one_table = together.score_batch(preds, refs).table
    for s in apart:  # warm up (compile) and check the columns agree
        table = s.score_batch(preds, refs).table
        for name in table.column_names:
            assert table.column(name).equals(one_table.column(name)), name
    core_one, core_three, run_one, run_three = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        _run(ROUGE + ("bleu", "chrf"), os.path.join(tmp, "warm"))
        for _ in range(args.repeats):
            t = time.perf_counter()
            together.score_batch(preds, refs)
            core_one.append(time.perf_counter() - t)
            t = time.perf_counter()
            for s in apart:
                s.score_batch(preds, refs)
            core_three.append(time.perf_counter() - t)
            run_one.append(_run(ROUGE + ("bleu", "chrf"), os.path.join(tmp, "one")))
            run_three.append(sum(_run(g, os.path.join(tmp, f"g{k}"))
                                 for k, g in enumerate(GROUPS)))
    print(f"REALSumm, {len(preds):,} examples, {args.repeats} repeats, load average "
          f"{os.getloadavg()[0]:.1f}")
    print("| what | one pass | three passes | three / one |")
    print("|---|---:|---:|---:|")
    for what, one, three in (("scorer (in memory)", core_one, core_three),
                             ("overlap score run", run_one, run_three)):
        ratio = statistics.median(three) / statistics.median(one)
        print(f"| {what} | {_spread(one)} | {_spread(three)} | {ratio:.2f}x |")
    print("columns of the one pass equal the separate runs': yes")


if __name__ == "__main__":
    main()
