"""Simulate 60 nights of a nightly suite on real texts and measure the alarm (issue 17).

The suite: REALSumm summaries (bundled, ``pipeline/data/realsumm``) of ``--groups`` systems
x ``--docs`` documents, grouped by system, scored once with the package's exact ROUGE
(``pipeline.score_texts``). The run-to-run variation of a sampled model: every night each
prediction is, with probability ``--redraw``, replaced by one of three noisy variants of
itself (``--drop`` of its words deleted at random, each variant scored once). Planted events:

- ``missing``: on night 20, 20% of one group's examples are absent;
- ``drift``: from night 30 on, every night another 3% of the examples (of every group but the
  step's) is cut to half its words (a slow drift overall);
- ``step``: from night 50 on, one group's predictions are cut to half their words (a step
  that persists).

Each night is written as a complete run (``ROOT/run_date=/run_id=``: examples, aggregate,
manifest, ``_SUCCESS``; the aggregate's means are the per-example means, as ``overlap score``
writes them) and compared with the night before through the Python API
(:func:`pipeline.compare.compare_runs`) with ``--history ROOT``. The same comparison also
gives today's alarm without history: interval excludes 0 and |delta| > 0.01 (static band,
previous night, no adjustment, no drift), so both are judged on the same resamples.

Reported, per rule: nights with any false alarm among the null nights (nights before the
drift's onset, except the missing night), the
night each planted event is first alarmed (and by which kind), and the alarms of the last
night side by side.

Usage::

    python scripts/simulate_nightly.py [--seeds 5] [--multipliers 3,4,5,6] [--drift ewma]

Public tools only (numpy, pandas, pyarrow, the package); output on stdout. Takes about a
minute per seed on one core.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pipeline import score_texts  # noqa: E402
from pipeline.signature import build_signature  # noqa: E402

METRICS = ("rouge1", "rougeL")
MEASURES = tuple(f"{m}.fmeasure" for m in METRICS)
STATIC_BAND = 0.01


@dataclass
class Suite:
    """The scored texts of a simulated suite.

    Attributes:
        frame: one row per example: ``id``, ``system``, and per metric ``{m}_fmeasure`` of the
            base prediction.
        variants: (V, n, M) scores of the noisy variants.
        cut: (n, M) scores of the half-cut predictions.

    """

    frame: pd.DataFrame
    variants: np.ndarray
    cut: np.ndarray
    systems: list[str] = field(default_factory=list)


def _score(predictions: list[str], references: list[str]) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        scored = score_texts(predictions, references, metrics=list(METRICS))
    return np.stack([scored[f"{m}_fmeasure"].to_numpy(np.float64) for m in METRICS], axis=1)


def _drop(text: str, rng: np.random.Generator, fraction: float) -> str:
    words = text.split()
    keep = rng.random(len(words)) >= fraction
    if not keep.any():
        keep[0] = True
    return " ".join(w for w, k in zip(words, keep, strict=True) if k)


def _half(text: str) -> str:
    words = text.split()
    return " ".join(words[:max(1, len(words) // 2)])


def build_suite(*, groups: int, docs: int, drop: float, seed: int = 0) -> Suite:
    """Score a suite of ``groups`` REALSumm systems x ``docs`` documents and its variants."""
    data = REPO / "pipeline" / "data" / "realsumm"
    preds = pq.read_table(data / "predictions").to_pandas()
    refs = pq.read_table(data / "references.parquet").to_pandas()
    frame = preds.merge(refs, on="id", validate="one_to_one")
    frame["doc"] = frame["id"].str.rsplit("-", n=1).str[0]
    systems = sorted(frame["system"].unique())[:groups]
    frame = frame[frame["system"].isin(systems)].sort_values("id", ignore_index=True)
    frame = frame.groupby("system", group_keys=False).head(docs).reset_index(drop=True)
    rng = np.random.default_rng(seed)
    base = _score(frame["prediction"].tolist(), frame["reference"].tolist())
    variants = np.stack([_score([_drop(t, rng, drop) for t in frame["prediction"]],
                                frame["reference"].tolist()) for _ in range(3)])
    cut = _score([_half(t) for t in frame["prediction"]], frame["reference"].tolist())
    out = frame[["id", "system"]].copy()
    for k, m in enumerate(METRICS):
        out[f"{m}_fmeasure"] = base[:, k]
    return Suite(out, variants, cut, systems)


def _signature() -> str:
    return str(build_signature(metrics=METRICS, tokenizer="rouge-score", stemmer="none",
                               case_sensitive=False, multi_reference="max", n_references=1,
                               n_bootstrap=0, confidence=0.95, seed=12345))


def write_night(root: Path, date: str, run_id: str, frame: pd.DataFrame) -> Path:
    """Write one night's scores as a complete run under ``root`` and return its directory."""
    run = root / f"run_date={date}" / f"run_id={run_id}"
    (run / "examples").mkdir(parents=True)
    sig = _signature()
    table = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(table.replace_schema_metadata({"overlap.signature": sig}),
                   run / "examples" / "part-0000.parquet")
    rows = []
    for scope, part in [("all", frame), *(("group", p) for _, p in frame.groupby("system"))]:
        for m in METRICS:
            rows.append({"scope": scope,
                         "system": None if scope == "all" else part["system"].iloc[0],
                         "metric": m, "measure": "fmeasure", "statistic": "mean",
                         "threshold": None, "mean": float(part[f"{m}_fmeasure"].mean()),
                         "ci_low": None, "ci_high": None, "n_examples": len(part)})
    schema = pa.schema([("scope", pa.string()), ("system", pa.string()),
                        ("metric", pa.string()), ("measure", pa.string()),
                        ("statistic", pa.string()), ("threshold", pa.float64()),
                        ("mean", pa.float64()), ("ci_low", pa.float64()),
                        ("ci_high", pa.float64()), ("n_examples", pa.int64())])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), run / "aggregate.parquet")
    manifest = {"run_id": run_id, "signature": sig, "started_at": f"{date}T02:00:00+00:00",
                "config": {"id_column": "id", "group_by": ["system"], "metrics": list(METRICS),
                           "tokenizer": "rouge-score", "stemmer": "none"}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "_SUCCESS").write_text("")
    return run


@dataclass(frozen=True)
class Plan:
    """When the planted events happen (night numbers, 0-based) and how big they are."""

    nights: int = 60
    redraw: float = 0.3
    missing_night: int = 20
    drift_night: int = 30
    drift_rate: float = 0.03
    step_night: int = 50

    def null_nights(self) -> list[int]:
        """Nights that should not alarm: 1.. before the drift, except the missing night."""
        return [t for t in range(1, self.drift_night) if t != self.missing_night]


def night_frame(suite: Suite, plan: Plan, t: int, rng: np.random.Generator) -> pd.DataFrame:
    """Night ``t``'s per-example scores: re-drawn noise and the events planted by then."""
    frame = suite.frame.copy()
    n = len(frame)
    cols = [f"{m}_fmeasure" for m in METRICS]
    values = frame[cols].to_numpy(np.float64).copy()
    redraw = rng.random(n) < plan.redraw
    which = rng.integers(0, suite.variants.shape[0], n)
    values[redraw] = suite.variants[which[redraw], np.flatnonzero(redraw)]
    if t >= plan.step_night:
        hit = (frame["system"] == suite.systems[0]).to_numpy()
        values[hit] = suite.cut[hit]
    if t >= plan.drift_night:
        # every group but the step's: the same examples degrade first
        others = np.flatnonzero((frame["system"] != suite.systems[0]).to_numpy())
        share = min(1.0, plan.drift_rate * (t - plan.drift_night + 1))
        order = np.random.default_rng(7).permutation(others)
        hit = order[:int(round(share * others.size))]
        values[hit] = np.minimum(values[hit], suite.cut[hit])
    frame[cols] = values
    if t == plan.missing_night:
        group = (frame["system"] == suite.systems[-1]).to_numpy()
        gone = np.flatnonzero(group)[: int(group.sum() * 0.2)]
        frame = frame.drop(index=gone).reset_index(drop=True)
    return frame


def simulate(*, suite: Suite, plan: Plan, root: Path, seed: int, n_bootstrap: int = 1000,
             window: int = 14, multiplier: float | None = None, drift: str | None = None,
             ) -> dict:
    """Run the nights and return per-night alarms of both rules (see the module docstring)."""
    from pipeline.compare import BAND_MULTIPLIER, DRIFT_METHOD, compare_runs

    rng = np.random.default_rng(seed)
    nights: list[dict] = []
    previous: Path | None = None
    for t in range(plan.nights):
        date = (pd.Timestamp("2026-01-01") + pd.Timedelta(days=t)).strftime("%Y-%m-%d")
        run = write_night(root, date, f"n{t:02d}", night_frame(suite, plan, t, rng))
        if previous is None:
            previous = run
            continue
        result = compare_runs(str(previous), str(run), history=str(root),
                              history_window=window, n_bootstrap=n_bootstrap, top=0,
                              band_multiplier=multiplier or BAND_MULTIPLIER,
                              drift_method=drift or DRIFT_METHOD)
        rows = result.comparison.rows
        today = (((rows["ci_low"] > 0) | (rows["ci_high"] < 0))
                 & (rows["delta"].abs() > STATIC_BAND)) | rows["missing"]
        nights.append({
            "night": t,
            "alarms": [(a["kind"], a["group"], f"{a['metric']}.{a['measure']}")
                       for a in result.alarms],
            "today": sorted({("missing" if m else "change", g)
                             for g, m in zip(rows.loc[today, "group"],
                                             rows.loc[today, "missing"], strict=True)}),
            "bands": result.bands,
        })
        previous = run
    return {"nights": nights, "plan": plan, "step_group": f"system={suite.systems[0]}",
            "missing_group": f"system={suite.systems[-1]}"}


def summarize(sim: dict) -> dict:
    """False-alarm nights among null nights, and the night each event is first alarmed."""
    plan: Plan = sim["plan"]
    by_night = {n["night"]: n for n in sim["nights"]}
    null = [t for t in plan.null_nights() if t in by_night]

    def first(rule: str, start: int, match) -> str | None:
        for t in range(start, plan.nights):
            hits = [a for a in by_night.get(t, {}).get(rule, []) if match(a)]
            if hits:
                return f"{t} ({'+'.join(sorted({a[0] for a in hits}))})"
        return None

    out = {}
    for rule in ("alarms", "today"):
        false = [t for t in null if by_night[t][rule]]
        if rule == "alarms":
            missing = first(rule, plan.missing_night,
                            lambda a: a[0] == "missing" and a[1] == sim["missing_group"])
            step = first(rule, plan.step_night, lambda a: a[1] == sim["step_group"])
            drift = first(rule, plan.drift_night, lambda a: a[1] == "all")
        else:
            missing = first(rule, plan.missing_night,
                            lambda a: a == ("missing", sim["missing_group"]))
            step = first(rule, plan.step_night, lambda a: a[1] == sim["step_group"])
            drift = first(rule, plan.drift_night, lambda a: a[1] == "all")
        out[rule] = {"null_nights": len(null), "false_alarm_nights": false,
                     "missing_first": missing, "step_first": step, "drift_first": drift}
    return out


def main() -> None:
    """Run the simulation for the seeds and settings asked and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--groups", type=int, default=6)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--drop", type=float, default=0.3)
    parser.add_argument("--redraw", type=float, default=0.5)
    parser.add_argument("--n-bootstrap", type=int, default=1000)
    parser.add_argument("--multipliers", default="")
    parser.add_argument("--drift", default="")
    args = parser.parse_args()
    started = time.perf_counter()
    suite = build_suite(groups=args.groups, docs=args.docs, drop=args.drop)
    plan = Plan(redraw=args.redraw)
    multipliers = [float(x) for x in args.multipliers.split(",") if x] or [None]
    methods = [x for x in args.drift.split(",") if x] or [None]
    print(f"suite: {len(suite.frame)} REALSumm examples, {args.groups} groups (systems), "
          f"measures {', '.join(MEASURES)}; {plan.nights} nights, redraw {plan.redraw:.0%} "
          f"from variants with {args.drop:.0%} of words dropped; missing night "
          f"{plan.missing_night}, drift from night {plan.drift_night} ({plan.drift_rate:.0%} more "
          f"of all examples cut each night), step night {plan.step_night} "
          f"({suite.systems[0]} cut to half)")
    for mult in multipliers:
        for method in methods:
            totals = {"alarms": [0, 0], "today": [0, 0]}
            firsts: dict[str, dict[str, list]] = {"alarms": {}, "today": {}}
            for seed in range(args.seeds):
                with tempfile.TemporaryDirectory() as tmp:
                    sim = simulate(suite=suite, plan=plan, root=Path(tmp), seed=seed,
                                   n_bootstrap=args.n_bootstrap, multiplier=mult,
                                   drift=method)
                summary = summarize(sim)
                by_night = {n["night"]: n for n in sim["nights"]}
                for t in summary["alarms"]["false_alarm_nights"]:
                    print(f"  seed {seed} night {t} false alarm: {by_night[t]['alarms']}")
                for rule, s in summary.items():
                    totals[rule][0] += len(s["false_alarm_nights"])
                    totals[rule][1] += s["null_nights"]
                    for k in ("missing_first", "step_first", "drift_first"):
                        firsts[rule].setdefault(k, []).append(s[k])
                last = sim["nights"][-1]
            label = (f"multiplier {mult if mult is not None else 'default'}, drift "
                     f"{method or 'default'}")
            print(f"\n{label}:")
            for rule, name in (("alarms", "with history (learned band, holm, drift)"),
                               ("today", "today's compare (static 0.01, previous night)")):
                fa, nn = totals[rule]
                print(f"  {name}: false-alarm nights {fa} of {nn} null nights "
                      f"({fa / max(nn, 1):.1%}); first alarmed: missing "
                      f"{firsts[rule]['missing_first']} (planted {plan.missing_night}), step "
                      f"{firsts[rule]['step_first']} (planted {plan.step_night}), drift "
                      f"{firsts[rule]['drift_first']} (onset {plan.drift_night})")
            print(f"  last night ({last['night']}), with history: "
                  f"{last['alarms'] or 'no alarm'}")
            print(f"  last night ({last['night']}), today's compare: "
                  f"{last['today'] or 'no alarm'}")
            print(f"  bands: {'; '.join(last['bands'])}")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
