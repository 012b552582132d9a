"""Time `overlap compare` and `overlap report` against the number of groups (issue 19).

Two runs of N examples in G groups (per-example ROUGE-like scores drawn at random: the
comparison's cost does not depend on the values), written in the run layout; then
``compare`` (Python API, ``--top 0``) and ``report`` (with the baseline) are timed, each
``--repeat`` times in turn; the median and the spread (min-max) are printed, with the load.

Usage::

    python scripts/bench_compare_groups.py [--groups 5000,50000] [--per-group 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pipeline.signature import build_signature  # noqa: E402


def write_run(path: Path, *, groups: int, per_group: int, seed: int) -> Path:
    """A complete run of ``groups * per_group`` examples with a ``g`` group column."""
    rng = np.random.default_rng(seed)
    n = groups * per_group
    sig = str(build_signature(metrics=("rouge1",), tokenizer="rouge-score", stemmer="none",
                              case_sensitive=False, multi_reference="max", n_references=1,
                              n_bootstrap=0, confidence=0.95, seed=1))
    (path / "examples").mkdir(parents=True)
    g = np.repeat(np.arange(groups), per_group)
    f = rng.uniform(0, 1, n)
    table = pa.table({"id": [f"e{i}" for i in range(n)], "g": [f"g{x:07d}" for x in g],
                      "rouge1_fmeasure": f})
    pq.write_table(table.replace_schema_metadata({"overlap.signature": sig}),
                   path / "examples" / "part-0000.parquet")
    means = np.bincount(g, weights=f) / np.bincount(g)
    agg = {"scope": ["all"] + ["group"] * groups, "g": [None] + [f"g{x:07d}"
                                                                  for x in range(groups)],
           "metric": ["rouge1"] * (groups + 1), "measure": ["fmeasure"] * (groups + 1),
           "statistic": ["mean"] * (groups + 1), "threshold": [None] * (groups + 1),
           "mean": [float(f.mean()), *means.tolist()], "ci_low": [None] * (groups + 1),
           "ci_high": [None] * (groups + 1), "n_examples": [n] + [per_group] * groups}
    pq.write_table(pa.table(agg), path / "aggregate.parquet")
    (path / "manifest.json").write_text(json.dumps({
        "run_id": path.name, "signature": sig,
        "config": {"id_column": "id", "group_by": ["g"], "metrics": ["rouge1"]}}))
    (path / "_SUCCESS").write_text("")
    return path


def main() -> None:
    """Time compare and report for each number of groups asked."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", default="5000,50000")
    parser.add_argument("--per-group", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--n-bootstrap", type=int, default=1000)
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args()
    from pipeline import api

    for groups in [int(x) for x in args.groups.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            base = write_run(Path(tmp) / "b", groups=groups, per_group=args.per_group, seed=1)
            cand = write_run(Path(tmp) / "c", groups=groups, per_group=args.per_group, seed=2)
            timings: dict[str, list[float]] = {"compare": [], "report": []}
            for _ in range(args.repeat):
                start = time.perf_counter()
                api.compare(str(base), str(cand), top=0, n_bootstrap=args.n_bootstrap)
                timings["compare"].append(time.perf_counter() - start)
                if not args.no_report:
                    start = time.perf_counter()
                    api.report(str(cand), output=str(Path(tmp) / "r.html"), baseline=str(base))
                    timings["report"].append(time.perf_counter() - start)
            size = (Path(tmp) / "r.html").stat().st_size if not args.no_report else 0
        for name, values in timings.items():
            if values:
                print(f"{groups} groups x {args.per_group}: {name} median "
                      f"{statistics.median(values):.2f} s (min {min(values):.2f}, max "
                      f"{max(values):.2f}, {len(values)} runs)"
                      + (f"; HTML {size / 1e6:.1f} MB" if name == "report" else "")
                      + f"; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
