"""Benchmark: the peak memory of `overlap compare` when the runs' inputs hold large row groups.

    .venv/bin/python scripts/bench_compare_texts.py                 # 4M against 4M rows
    .venv/bin/python scripts/bench_compare_texts.py --rows 10000000 --runs 1

The case of issue 24: two runs scored without `--keep-text` from 8 input files of N / 8 rows
each, written with pyarrow's default row groups (one row group per file up to 1M rows), so
the top examples' texts are looked up in the inputs. Scoring 2 x 4M rows takes too long on
this shared machine, so the runs are made as scripts/bench_compare.py's `--replicate` makes
them: a 25,000-row baseline and its candidate (one prediction in ten cut to its first half)
are scored, then copied N / 25,000 times under new ids into runs of 50,000-row partitions with
their manifests; the inputs are the same copies' texts written as 8 large files, and the
manifests name them (with their sizes).

Two variants, each its own process, --runs times in turn (A B A B ...) after one untimed
warm-up of each: `lookup: row groups` (this package: only the row groups holding the wanted
ids are read, their texts in batches) and `lookup: whole dataset` (the same command with the
lookup before issue 24: one pyarrow dataset scan of the id and text columns filtered by id,
which decodes the text of every row group). Figures: median wall time and the process
tree's peak PSS (scripts/bench_pipeline.py's sampler), with their ranges; the 1-minute load
average is printed (the machine is shared: figures are upper bounds).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import bench_compare as bc  # noqa: E402
import bench_pipeline as bench  # noqa: E402

SMALL = 25_000
N_FILES = 8
# The lookup before issue 24, for the comparison: a dataset scan filtered by id.
BEFORE = r"""
import sys
import pipeline.io.runs as runs
from pipeline.io.read import input_dataset
runs._texts_from_parquet = lambda fs, paths, **kw: runs._texts_from(
    input_dataset(fs, list(paths), what="predictions"), **kw)
from pipeline.cli import main
main(sys.argv[1:])
"""


def big_inputs(small_inputs: Path, out: Path, copies: int) -> list[Path]:
    """The small run's predictions copied ``copies`` times (ids ``{id}-rNN``), in 8 files."""
    files = [out / f"part-{i:04d}.parquet" for i in range(N_FILES)]
    if (out / "_READY").exists():
        return files
    out.mkdir(parents=True, exist_ok=True)
    table = pa.concat_tables(pq.read_table(f, columns=["id", "prediction"])
                             for f in sorted(small_inputs.glob("*.parquet")))
    per_file = -(-copies // N_FILES)
    for i, path in enumerate(files):
        pieces = []
        for j in range(i * per_file, min(copies, (i + 1) * per_file)):
            ids = pc.binary_join_element_wise(table.column("id"), pa.scalar(f"-r{j:02d}"),
                                              pa.scalar(""))
            pieces.append(table.set_column(0, "id", ids))
        pq.write_table(pa.concat_tables(pieces), path)  # default row groups (1M rows)
    (out / "_READY").write_text("ok\n")
    return files


def name_inputs(run: Path, files: list[Path]) -> None:
    """Make the run's manifest name ``files`` as its prediction inputs."""
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["inputs"] = {"predictions": {"files": [
        {"path": str(f), "size_bytes": f.stat().st_size} for f in files]}}
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--workdir", default=os.path.join("/tmp", "overlap-bench-texts"))
    args = parser.parse_args()
    work = Path(args.workdir)
    copies = max(1, args.rows // SMALL)
    overlap = str(Path(sys.executable).parent / "overlap")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    small = bench.make_inputs(work, SMALL)["inline"]
    cand_in = bc.candidate_inputs(small, work / f"in-{SMALL}" / "candidate", seed=1)
    runs = {}
    for side, inputs in (("baseline", small), ("candidate", cand_in)):
        src = bc.scored(overlap, inputs, work / f"{side}-{SMALL}", env)
        dst = bc.replicated(src, work / f"{side}-{args.rows}", copies)
        name_inputs(dst, big_inputs(inputs, work / f"{side}-inputs-{args.rows}", copies))
        runs[side] = dst
    variants = {
        "lookup: row groups": [sys.executable, "-m", "pipeline.cli"],
        "lookup: whole dataset": [sys.executable, "-c", BEFORE],
    }
    results: dict[str, list[dict[str, float]]] = {k: [] for k in variants}
    loads = [os.getloadavg()[0]]
    for attempt in range(args.runs + 1):
        for name, cmd in variants.items():
            out = work / "cmp"
            full = [*cmd, "compare", str(runs["baseline"]), str(runs["candidate"]),
                    "--output", str(out), "--format", "alarms"]
            r = bc.run_allowing_alarm(full, env)
            if attempt > 0:
                results[name].append(r)
            doc = json.loads((out / "compare.json").read_text())
            shown = sum(t.get("baseline_prediction") is not None for t in doc["top"])
            print(f"{name} run {attempt}: {r['seconds']:.1f} s, tree PSS {r['tree_mb']:.0f} MB"
                  f" (texts found for {shown} of {len(doc['top'])} top examples)",
                  file=sys.stderr, flush=True)
    loads.append(os.getloadavg()[0])
    print(f"\n{args.rows:,} vs {args.rows:,} examples, inputs in {N_FILES} files of "
          f"{args.rows // N_FILES:,} rows (default row groups); load {loads[0]:.1f} -> "
          f"{loads[1]:.1f}; {args.runs} runs each after a warm-up")
    for name, rs in results.items():
        secs = [r["seconds"] for r in rs]
        pss = [r["tree_mb"] for r in rs]
        print(f"{name:24s} wall {statistics.median(secs):6.1f} s ({min(secs):.1f}-"
              f"{max(secs):.1f})   tree PSS {statistics.median(pss):6.0f} MB "
              f"({min(pss):.0f}-{max(pss):.0f})")
    a, b = (statistics.median(r["tree_mb"] for r in results[k]) for k in variants)
    print(f"peak PSS ratio (row groups / whole dataset): {a / b:.2f}")


if __name__ == "__main__":
    main()
