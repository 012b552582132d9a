"""Benchmark: `overlap compare` of two scored runs, on the engine against the in-memory compare.

    .venv/bin/python scripts/bench_compare.py                        # 1M against 1M rows
    .venv/bin/python scripts/bench_compare.py --rows 10000000 --runs 1 --no-memory
    .venv/bin/python scripts/bench_compare.py --ray                  # + --engine ray

Inputs: scripts/bench_pipeline.py's generator (resampled real (prediction, reference) pairs,
8 shards, layout inline) for the baseline; the candidate is the same examples with one
prediction in ten (chosen by a seeded RNG) cut to its first half: a real change (fmeasures
0.002-0.005 lower, intervals well away from 0, inside the default band of 0.01).
Both are scored once with the default config (`overlap score --bootstrap 0`, engine auto) and
kept under --workdir. With --replicate (for 10M rows: scoring 2 x 10M rows takes over an
hour on this loaded 2-core machine), the runs of N rows are the 1M-row runs' examples copied
N / 1M times under new ids (`{id}-rNN`), cut into ceil(N / 50,000) hash partitions and
written with a manifest as `overlap score` writes them (files, rows, sizes, SHA-256,
partitions), so `overlap compare` pairs them file by file as it would real runs of that size.

Variants, each run as its own process, --runs times in turn (A B A B ...), after one
untimed warm-up run of each (file cache, kernels):

- engine: `overlap compare BASE CAND --output DIR --format alarms` (engine auto: in-process on
  every CPU; the runs' partitions pair file by file);
- ray: the same with `--engine ray` (a local Ray instance started and stopped by the command);
- memory: the in-memory comparison (`compare_runs` without an engine: both runs' key and
  score columns in one process, as `overlap compare` ran before issue 16), with the same
  outputs written.

Each figure: the median wall time with the range (min-max) over the runs, the driver's peak
RSS (/usr/bin/time) and the process tree's peak PSS (sum of /proc/PID/smaps_rollup Pss over
the process and its descendants, sampled every 0.2 s; shared pages count once). The machine
is shared: the 1-minute load average before and after each variant is printed with it, and
the figures are upper bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import bench_pipeline as bench  # noqa: E402

MEMORY = r"""
import sys
from pipeline.compare import compare_runs
from pipeline.io.runs import write_comparison
result = compare_runs(sys.argv[1], sys.argv[2])
write_comparison(sys.argv[3], result.to_arrow(), result.to_document())
"""

TARGETS = {1_000_000: ("1M vs 1M: at most 5 s", 5.0, None),
           10_000_000: ("10M vs 10M: at most 60 s and 2 GB peak PSS", 60.0, 2048.0)}


def cut_half(text: str) -> str:
    words = text.split(" ")
    return " ".join(words[:max(1, len(words) // 2)])


def candidate_inputs(base: Path, out: Path, *, seed: int) -> Path:
    """The baseline's shards with one prediction in ten cut to its first half."""
    done = out / "_READY"
    if done.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for shard in sorted(base.glob("*.parquet")):
        table = pq.read_table(shard)
        preds = table.column("prediction").to_pylist()
        for i in np.flatnonzero(rng.random(len(preds)) < 0.1):
            preds[i] = cut_half(preds[i])
        table = table.set_column(table.schema.get_field_index("prediction"), "prediction",
                                 pa.array(preds, table.schema.field("prediction").type))
        pq.write_table(table, out / shard.name)
    done.write_text("ok\n")
    return out


def scored(overlap: str, inputs: Path, out: Path, env: dict[str, str]) -> Path:
    if (out / "_SUCCESS").exists():
        return out
    print(f"scoring {inputs} ...", file=sys.stderr, flush=True)
    bench.run([overlap, "score", str(inputs), "--output", str(out), "--overwrite",
               "--bootstrap", "0"], env=env)
    return out


def replicated(src: Path, dst: Path, copies: int) -> Path:
    """``src``'s examples copied ``copies`` times under new ids, as a run of its own."""
    import hashlib
    import shutil

    import pyarrow.compute as pc

    from pipeline.io.partition import partition_of, split_by_partition

    if (dst / "_SUCCESS").exists():
        return dst
    print(f"replicating {src} x{copies} ...", file=sys.stderr, flush=True)
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "examples").mkdir(parents=True)
    manifest = json.loads((src / "manifest.json").read_text())
    files = sorted((src / "examples").glob("part-*.parquet"))
    metadata = pq.read_schema(files[0]).metadata
    table = pa.concat_tables(pq.read_table(f) for f in files)
    n = table.num_rows * copies
    n_parts = -(-n // 50_000)
    where = table.schema.get_field_index("id")
    pieces: list[list[pa.Table]] = [[] for _ in range(n_parts)]
    for j in range(copies):
        column = table.column("id")
        ids = pc.binary_join_element_wise(column, pa.scalar(f"-r{j:02d}", column.type),
                                          pa.scalar("", column.type))
        copy = table.set_column(where, "id", ids)
        for k, piece in enumerate(split_by_partition(copy, partition_of(ids, n_parts),
                                                     n_parts)):
            pieces[k].append(piece)
    del table
    entries = []
    for k in range(n_parts):
        name = f"part-{k:05d}.parquet"
        part = pa.concat_tables(pieces[k]).replace_schema_metadata(metadata)
        pieces[k] = []
        pq.write_table(part, tmp / "examples" / name)
        data = (tmp / "examples" / name).read_bytes()
        entries.append({"path": f"examples/{name}", "num_rows": part.num_rows,
                        "size_bytes": len(data), "partition": k,
                        "sha256": hashlib.sha256(data).hexdigest()})
    manifest["counts"] = {**manifest.get("counts", {}), "partitions": n_parts,
                          "examples_scored": n}
    manifest["outputs"] = {"examples": entries}
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2))
    (tmp / "_SUCCESS").write_text("")
    tmp.rename(dst)
    return dst


def load() -> float:
    return os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, action="append",
                        help="examples per run (repeatable; default 1000000)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each variant")
    parser.add_argument("--workdir", default=os.path.join("/tmp", "overlap-bench"),
                        help="inputs and runs are kept here between invocations")
    parser.add_argument("--ray", action="store_true", help="also time --engine ray")
    parser.add_argument("--no-memory", action="store_true",
                        help="skip the in-memory compare (slow and large at 10M rows)")
    parser.add_argument("--no-warm-up", action="store_true")
    parser.add_argument("--replicate", action="store_true",
                        help="runs above 1M rows: the 1M runs' examples copied (see above)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    overlap = str(Path(sys.executable).with_name("overlap"))
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    results = []
    for n in args.rows or [1_000_000]:
        if args.replicate and n > 1_000_000:
            one = 1_000_000
            paths = bench.make_inputs(work, one)
            cand_in = candidate_inputs(paths["inline"], work / f"in-{one}" / "inline-cut",
                                       seed=one)
            base = replicated(scored(overlap, paths["inline"], work / f"runs-{one}" / "base",
                                     env), work / f"runs-{n}" / "base", n // one)
            cand = replicated(scored(overlap, cand_in, work / f"runs-{one}" / "cand", env),
                              work / f"runs-{n}" / "cand", n // one)
        else:
            paths = bench.make_inputs(work, n)
            cand_in = candidate_inputs(paths["inline"], work / f"in-{n}" / "inline-cut",
                                       seed=n)
            base = scored(overlap, paths["inline"], work / f"runs-{n}" / "base", env)
            cand = scored(overlap, cand_in, work / f"runs-{n}" / "cand", env)
        outs = work / f"runs-{n}" / "compare"
        cmds = {"engine": [overlap, "compare", str(base), str(cand), "--output",
                           str(outs / "engine"), "--format", "alarms"]}
        if args.ray:
            cmds["ray"] = [*cmds["engine"][:-4], "--output", str(outs / "ray"), "--format",
                           "alarms", "--engine", "ray"]
        if not args.no_memory:
            cmds["memory"] = [sys.executable, "-c", MEMORY, str(base), str(cand),
                              str(outs / "memory")]
        if not args.no_warm_up:
            for name, cmd in cmds.items():
                print(f"{n:>11,} rows  {name}: warm-up", file=sys.stderr, flush=True)
                subprocess.run(cmd, env=env, capture_output=True, check=False)
        timed: dict[str, list[dict]] = {k: [] for k in cmds}
        loads: dict[str, list[float]] = {k: [] for k in cmds}
        for i in range(args.runs):
            for name, cmd in cmds.items():
                print(f"{n:>11,} rows  {name}: run {i + 1}/{args.runs}", file=sys.stderr,
                      flush=True)
                before = load()
                r = run_allowing_alarm(cmd, env)
                loads[name] += [before, load()]
                timed[name].append(r)
        row = {"rows": n}
        for name, rs in timed.items():
            sec = [r["seconds"] for r in rs]
            row[name] = {"seconds": statistics.median(sec), "range": (min(sec), max(sec)),
                         "runs": len(rs), "driver_mb": statistics.median(r["driver_mb"]
                                                                          for r in rs),
                         "tree_mb": max(r["tree_mb"] for r in rs),
                         "load": (min(loads[name]), max(loads[name]))}
        if "memory" in row:
            same = (json.loads((outs / "engine" / "compare.json").read_text())
                    == json.loads((outs / "memory" / "compare.json").read_text()))
            row["same_compare_json"] = same
        results.append(row)
        print_row(row)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


def run_allowing_alarm(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    """bench_pipeline.run, where exit code 1 (the comparison alarmed) is a success."""
    wrapped = [sys.executable, "-c",
               "import subprocess, sys; r = subprocess.run(sys.argv[1:]).returncode; "
               "sys.exit(0 if r in (0, 1) else r)", *cmd]
    return bench.run(wrapped, env=env)


def print_row(row: dict) -> None:
    n = row["rows"]
    from pipeline.compiled import builds

    used = sorted(set(builds().values()))  # "jit": a stale build, numba compiling in every part
    print(f"\n{n:,} vs {n:,} examples (cores: {os.cpu_count()}; kernel builds: "
          f"{', '.join(used)})")
    print("| variant | median s | range s | runs | driver peak RSS MB | tree peak PSS MB "
          "| load (1 min) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name in ("engine", "ray", "memory"):
        if name in row:
            r = row[name]
            print(f"| {name} | {r['seconds']:.2f} | {r['range'][0]:.2f}-{r['range'][1]:.2f} | "
                  f"{r['runs']} | {r['driver_mb']:.0f} | {r['tree_mb']:.0f} | "
                  f"{r['load'][0]:.1f}-{r['load'][1]:.1f} |")
    if "memory" in row:
        print(f"engine / memory: {row['engine']['seconds'] / row['memory']['seconds']:.2f}x "
              f"the time; compare.json equal: {row['same_compare_json']}")
    target = TARGETS.get(n)
    if target:
        text, seconds, pss = target
        ok = row["engine"]["seconds"] <= seconds and (pss is None
                                                        or row["engine"]["tree_mb"] <= pss)
        print(f"target ({text}): {'met' if ok else 'NOT met'}")
    sys.stdout.flush()
    time.sleep(0)


if __name__ == "__main__":
    main()
