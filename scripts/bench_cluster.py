"""Benchmark: what jobs on a Ray cluster pay for the shipped package (first job, next job).

    .venv/bin/python -m scripts.bench_cluster [--rows 5000] [--jobs 2] [--jit]

Starts a real two-node Ray cluster on this machine (``tests/support/ray_cluster.py``: ``ray start``
on 127.0.0.2 and 127.0.0.3, one CPU each, token authentication, its own temp dir; stopped
by the PIDs started here, never ``ray stop``), then runs ``overlap score --address`` on
``--rows`` resampled real examples (``scripts/bench_pipeline.py``'s inputs, 4 partitions)
``--jobs`` times in a row, each a new driver process. The package is shipped with each job
(``ship_code``: Ray's ``py_modules``); the nodes have never seen it before the first job.

Per job it prints the wall seconds of the command, the manifest's stage seconds (engine_start
is the connection and the package upload), and whether anything compiled: numba's cache files
(``*.nbi``, one per function compiled) written anywhere under the cluster's temp dir, where
the nodes unpack the package and numba would cache what it compiles. ``--jit`` then runs
the same jobs again with ``OVERLAP_JIT=1`` in the workers (``runtime_env`` ``env_vars``: the
kernels fall back to numba's JIT, as on nodes whose platform differs from the driver's), to
show what compiling on the workers costs.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.bench_pipeline import make_inputs  # noqa: E402
from tests.support.ray_cluster import LoopbackCluster  # noqa: E402

OVERLAP = Path(sys.executable).with_name("overlap")


def compiled_files(root: Path) -> int:
    """numba cache index files under ``root`` (one per compiled function and signature)."""
    return sum(1 for _ in root.rglob("*.nbi"))


def run_job(cluster: LoopbackCluster, data: Path, out: Path, settings: Path) -> dict:
    """One ``overlap score --address`` job; wall seconds and the manifest's figures."""
    cmd = [str(OVERLAP), "score", str(data), "--output", str(out), "--overwrite",
           "--address", cluster.address, "--config", str(settings)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=cluster.env())
    wall = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"job failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    nodes = sorted({e["where"]["node_ip"] for e in manifest["outputs"]["examples"]
                    if e.get("where")})
    return {"wall_s": wall, "seconds": manifest["seconds"],
            "task_seconds": manifest["task_seconds"], "nodes": nodes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=5_000)
    parser.add_argument("--jobs", type=int, default=2, help="jobs in a row (default 2)")
    parser.add_argument("--jit", action="store_true",
                        help="then the same jobs with the kernels on numba's JIT")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(),
                                                          "overlap-bench"))
    args = parser.parse_args()
    work = Path(args.workdir)
    data = make_inputs(work, args.rows)["inline"]
    out = work / "out-cluster"
    variants = [("shipped, compiled at install", {})]
    if args.jit:
        variants.append(("shipped, OVERLAP_JIT=1 on the workers",
                         {"runtime_env": {"env_vars": {"OVERLAP_JIT": "1"}}}))
    load = [os.getloadavg()[0]]
    # Ray's workers start in the nodes' working directory and put it first on sys.path: from
    # a checkout they would import its `pipeline` instead of the shipped one.
    os.chdir(tempfile.mkdtemp(prefix="overlap-bench-cwd-"))
    cluster = LoopbackCluster(node_ips=("127.0.0.2", "127.0.0.3"), cpus_per_node=1)
    rows = []
    try:
        t = time.perf_counter()
        cluster.start()
        print(f"cluster of 2 nodes started in {time.perf_counter() - t:.1f} s "
              f"({cluster.address}, temp dir {cluster.temp_dir})", file=sys.stderr)
        for name, extra in variants:
            settings = work / "cluster-settings.json"  # JSON is YAML
            settings.write_text(json.dumps({"partition_rows": -(-args.rows // 4), **extra}))
            for job in range(1, args.jobs + 1):
                before = compiled_files(Path(cluster.temp_dir))
                r = run_job(cluster, data, out, settings)
                r.update(variant=name, job=job,
                         compiled=compiled_files(Path(cluster.temp_dir)) - before)
                rows.append(r)
                load.append(os.getloadavg()[0])
                print(f"{name}, job {job}: {r['wall_s']:.1f} s", file=sys.stderr)
    finally:
        leftovers = cluster.stop()
        if leftovers:
            print(f"killed leftover cluster processes: {leftovers}", file=sys.stderr)
    print(f"\nmachine: {os.cpu_count()} CPUs; 1-minute load average {min(load):.1f}-"
          f"{max(load):.1f}; {args.rows:,} rows, 4 partitions, 2 nodes of 1 CPU")
    print("\n| kernels | job | wall s | engine_start | read_check | score | aggregate | "
          "task s (check + score) | numba cache files written |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        s, ts = r["seconds"], r["task_seconds"]
        print(f"| {r['variant']} | {r['job']} | {r['wall_s']:.1f} | "
              f"{s.get('engine_start', 0):.1f} | {s.get('read_check', 0):.1f} | "
              f"{s.get('score', 0):.1f} | {s.get('aggregate', 0):.1f} | "
              f"{ts.get('check', 0) + ts.get('score', 0):.1f} | {r['compiled']} |")
    print("\nnodes that wrote examples: " + ", ".join(sorted({n for r in rows
                                                              for n in r['nodes']})))


if __name__ == "__main__":
    main()
