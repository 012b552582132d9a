"""Benchmark ROUGE --language against XL-Sum's multilingual ROUGE (multilingual-rouge 0.0.1).

The workload is ../shared/data/multilingual (3,192 examples, 13 languages) or any Parquet
file with ``lang``, ``prediction`` and ``references`` columns: rouge1, rouge2, rougeL and
XL-Sum's own rougeLsum, with the language stemmer, one language at a time, on ONE core:

- ``ours``: :class:`pipeline.scoring.Scorer` with ``language=<lang>``,
  ``stemmer="language"``, ``xlsum_rougelsum=True`` (the same outputs as the peer; the
  script checks every value is equal), one batch per language, in this process, with the
  token caches emptied before every timed run (segmenters stay loaded);
- ``peer``: ``multilingual_rouge.rouge_scorer.RougeScorer(..., use_stemmer=True, lang=L)``
  ``.score(reference, prediction)`` per example.

Both are built and run once untimed first (segmenter dictionaries, compilation), then timed
in turn ``--runs`` times. Prints the median and spread (min..max) of the wall and CPU
seconds of each, per language and in total, and the ratio of medians. The machine may be
shared: compare CPU seconds and read the spread. Usage::

    python -m scripts.bench_multilingual [--data PATH] [--runs 5] [--languages chinese,thai]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.scoring import Scorer
from pipeline.tokenizers.multilingual import clear_caches
from tests.support.xlsum_oracle import oracle_scorer

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "multilingual" / "examples.parquet"
METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")


def _timed(fn) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--languages", default="")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = pq.read_table(args.data, columns=["lang", "prediction", "references"]).to_pylist()
    languages = sorted({r["lang"] for r in rows})
    if args.languages:
        languages = [x for x in languages if x in args.languages.split(",")]
    by_lang = {lang: [r for r in rows if r["lang"] == lang] for lang in languages}
    tmp = "/tmp/overlap-bench-nltk"
    ours = {lang: Scorer(metrics=METRICS, language=lang, stemmer="language",
                         xlsum_rougelsum=True) for lang in languages}
    peer = {lang: oracle_scorer(list(METRICS), lang=lang, stem=True, tmp=tmp)
            for lang in languages}

    def run_ours(lang: str):
        clear_caches()
        rs = by_lang[lang]
        return ours[lang].score_batch([r["prediction"] for r in rs],
                                      [r["references"] for r in rs]).table.to_pydict()

    def run_peer(lang: str):
        return [peer[lang].score(r["references"][0], r["prediction"]) for r in by_lang[lang]]

    # warm-up (untimed) and the check that both give the same values
    for lang in languages:
        got, want = run_ours(lang), run_peer(lang)
        for i, w in enumerate(want):
            for m in METRICS:
                assert tuple(got[f"{m}_{x}"][i] for x in ("precision", "recall", "fmeasure")) \
                    == tuple(w[m]), (lang, i, m)
    print(f"{len(rows):,} examples, {len(languages)} languages; every value equal; "
          f"{args.runs} timed runs each, in turn; load average before "
          f"{os.getloadavg()[0]:.2f}")
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.runs):
        for lang in languages:
            for name, fn in (("ours", run_ours), ("peer", run_peer)):
                wall, cpu, _ = _timed(lambda fn=fn, lang=lang: fn(lang))
                times.setdefault((name, lang), []).append((wall, cpu))
    totals = {name: [sum(times[(name, lang)][k][j] for lang in languages)
                     for k in range(args.runs) for j in (0, 1)]
              for name in ("ours", "peer")}

    def line(label: str, samples: list[tuple[float, float]] | None, flat=None) -> str:
        walls = [w for w, _ in samples] if samples else flat[0::2]
        cpus = [c for _, c in samples] if samples else flat[1::2]
        return (f"{label:24s} wall {statistics.median(walls):8.3f} s "
                f"[{min(walls):.3f}..{max(walls):.3f}]  cpu {statistics.median(cpus):8.3f} s "
                f"[{min(cpus):.3f}..{max(cpus):.3f}]")

    for lang in languages:
        for name in ("ours", "peer"):
            print(line(f"{lang} {name}", times[(name, lang)]))
        o = statistics.median(c for _, c in times[("ours", lang)])
        p = statistics.median(c for _, c in times[("peer", lang)])
        print(f"{lang:24s} peer/ours cpu {p / o:6.1f}x")
    for name in ("ours", "peer"):
        print(line(f"TOTAL {name}", None, totals[name]))
    ratio_cpu = statistics.median(totals["peer"][1::2]) / statistics.median(totals["ours"][1::2])
    ratio_wall = statistics.median(totals["peer"][0::2]) / statistics.median(totals["ours"][0::2])
    spread = [p / o for p, o in zip(totals["peer"][1::2], totals["ours"][1::2], strict=True)]
    print(f"TOTAL peer/ours: cpu {ratio_cpu:.1f}x (per run {min(spread):.1f}..{max(spread):.1f}x), "
          f"wall {ratio_wall:.1f}x; load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
