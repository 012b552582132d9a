"""Benchmark: the aggregate's time and memory against the number of groups (issue 19).

    .venv/bin/python scripts/bench_groups.py --groups 20000 --groups 100000

Per-example rows like a ROUGE run's (an integer id, 12 measures in [0, 1], a group column
with ``--groups`` distinct values, ``--rows`` rows), written once under --workdir as 8
examples files. Each case runs in its own process (`python -c`, timed from outside; peak
RSS from the kernel's ``ru_maxrss`` of the child):

- ``files``: ``pipeline.aggregate.aggregate_parts`` over the 8 files, here, one file after
  the other (what ``overlap score`` runs, as tasks, on its engine);
- ``table``: ``pipeline.aggregate.aggregate`` of all rows at once (the library call; before
  the fix, also what ``overlap score`` ran).

Both give the same table (checked). Run it with another checkout's Python
(``--python``) to measure that version's ``table`` case. Peak RSS: GNU time's ``%M``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

MEASURES = [f"{m}_{x}" for m in ("rouge1", "rouge2", "rougeL", "rougeLsum")
            for x in ("precision", "recall", "fmeasure")]
N_FILES = 8

CASE = r"""
import glob, json, sys, time
import pyarrow as pa, pyarrow.parquet as pq
from pipeline import aggregate as agg
kind, folder, out = sys.argv[1], sys.argv[2], sys.argv[3]
files = sorted(glob.glob(folder + "/part-*.parquet"))
kw = dict(metrics=("rouge1", "rouge2", "rougeL", "rougeLsum"), group_by=("g",),
          n_bootstrap=1000, id_column="id")
t = time.perf_counter()
if kind == "files":
    table = agg.aggregate_parts(files, **kw)
else:
    table = agg.aggregate(pa.concat_tables(pq.read_table(f) for f in files), **kw)
seconds = time.perf_counter() - t
pq.write_table(table, out)
print(json.dumps({"seconds": seconds}))
"""


def make_examples(folder: Path, rows: int, groups: int) -> None:
    """Write the examples files once."""
    if (folder / "_done").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    ids = rng.permutation(rows)
    for f in range(N_FILES):
        part = ids[f::N_FILES]
        cols = {"id": pa.array(part, pa.int64()), "g": pa.array(part % groups, pa.int64())}
        for m in MEASURES:
            cols[m] = pa.array(rng.random(len(part)))
        pq.write_table(pa.table(cols), folder / f"part-{f:05d}.parquet")
    (folder / "_done").write_text("")


def run_case(python: str, kind: str, folder: Path, out: Path) -> dict[str, float]:
    """One case in a child process: its seconds inside, wall seconds, peak RSS (GNU time)."""
    with tempfile.NamedTemporaryFile(suffix=".time") as tf:
        t = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", tf.name, python, "-c", CASE,
                               kind, str(folder), str(out)],
                              capture_output=True, text=True, cwd=tempfile.gettempdir())
        wall = time.perf_counter() - t
        if proc.returncode:
            sys.exit(f"{kind} failed: {proc.stderr[-2000:]}")
        peak_kb = int(Path(tf.name).read_text().strip().splitlines()[-1])
    return {"wall_s": wall, "aggregate_s": json.loads(proc.stdout)["seconds"],
            "peak_rss_mb": peak_kb / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, action="append", help="distinct group values")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cases", default="files,table")
    parser.add_argument("--python", default=sys.executable,
                        help="the Python whose `pipeline` is measured")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(),
                                                          "overlap-bench-groups"))
    args = parser.parse_args()
    work = Path(args.workdir)
    print(f"machine: {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}; {args.rows:,} rows, "
          f"1,000 resamples, 12 measures; python {args.python}")
    print("| groups | case | aggregate s | wall s | peak RSS MB |")
    print("|---:|---|---:|---:|---:|")
    for groups in args.groups or [20_000]:
        folder = work / f"rows-{args.rows}-groups-{groups}"
        make_examples(folder, args.rows, groups)
        outs = []
        for kind in args.cases.split(","):
            out = work / f"agg-{groups}-{kind}.parquet"
            r = run_case(args.python, kind, folder, out)
            outs.append(out)
            print(f"| {groups:,} | {kind} | {r['aggregate_s']:.1f} | {r['wall_s']:.1f} | "
                  f"{r['peak_rss_mb']:,.0f} |", flush=True)
        if len(outs) == 2:
            same = pq.read_table(outs[0]).equals(pq.read_table(outs[1]))
            print(f"| {groups:,} | same table | {same} | | |")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
