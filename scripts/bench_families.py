"""BLEU, chrF, chrF++ and SQuAD token F1 / exact match: ours against the reference code.

Examples per second on ONE core (the process is pinned to one CPU), each measurement a
median of --repeats runs, ours and the peer taken in turn (A B A B ...) so that drifting
machine load hits both alike. Peers: sacrebleu's per-example loops (``sentence_bleu``, a
reused ``BLEU(effective_order=True).sentence_score``, ``sentence_chrf``,
``CHRF(word_order=2).sentence_score``), its corpus calls (``corpus_bleu``, ``corpus_chrf``),
and the official SQuAD v1.1 loop (``metric_max_over_ground_truths`` of ``f1_score`` and
``exact_match_score``, transcribed in tests/support/squad_official.py). Every row checks that both
sides return the same values (max absolute difference; "identical" means bit-equal).

Texts: the "short" shape (about 60 words, one reference) and "multiref" (60 words, four
references) are resampled from real summaries (../shared/data when present, else the bundled
REALSumm set); SQuAD rows use the 705 SQuAD 2.0 questions of ../shared/data when present
(else short spans of the summaries), repeated to --n examples.

    .venv/bin/pip install -e '.[test]'
    .venv/bin/python scripts/bench_families.py [--repeats 5] [--n 1000]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))
from tests.support.squad_official import official_em, official_f1, official_max  # noqa: E402


def load_sentences() -> list[str]:
    """All sentences of predictions and references from the available real data."""
    texts: list[str] = []
    if SHARED.is_dir():
        for f in sorted(SHARED.glob("*/examples.parquet")):
            if f.parent.name.startswith("squad"):
                continue
            t = pq.read_table(f, columns=["prediction", "references"]).to_pydict()
            texts += t["prediction"] + [r for refs in t["references"] for r in refs]
    else:
        base = ROOT / "pipeline" / "data" / "realsumm"
        texts += pq.read_table(base / "predictions").column("prediction").to_pylist()
        texts += pq.read_table(base / "references.parquet").column("reference").to_pylist()
    sents = [s.strip() for t in texts for s in t.split("\n")]
    return [s for s in sents if len(s.split()) >= 4]


def make_corpus(n: int, n_refs: int, sents: list[str], seed: int = 0):
    """n predictions of about 60 words, each with n_refs references of about 60 words."""
    rng = np.random.default_rng(seed)

    def text() -> str:
        out, words = [], 0
        while words < 60:
            s = sents[rng.integers(len(sents))]
            out.append(s)
            words += len(s.split())
        return " ".join(out)

    preds = [text() for _ in range(n)]
    return preds, [[text() for _ in range(n_refs)] for _ in range(n)]


def squad_corpus(n: int, sents: list[str]):
    """SQuAD answers and reference answers (the shared sample, repeated), else spans."""
    f = SHARED / "squad2_dev_sample" / "examples.parquet"
    if f.exists():
        t = pq.read_table(f, columns=["prediction", "references"]).to_pydict()
        preds, refs = t["prediction"], [list(r) for r in t["references"]]
    else:
        preds = [" ".join(s.split()[:4]) for s in sents[:700]]
        refs = [[" ".join(s.split()[1:5]), " ".join(s.split()[:3])] for s in sents[:700]]
    k = -(-n // len(preds))
    return (preds * k)[:n], (refs * k)[:n]


def streams(refs):
    return [list(s) for s in zip(*refs, strict=True)]


def cases(n: int, sents: list[str]):
    """(shape, what, n, peer function, our function), each returning an array of values."""
    import sacrebleu
    from sacrebleu.metrics import BLEU, CHRF

    from pipeline.metrics import bleu, chrf, squad

    out = []
    for shape, n_refs in (("short", 1), ("multiref", 4)):
        preds, refs = make_corpus(n, n_refs, sents)

        def our_bleu(p=preds, r=refs):
            return bleu.FAMILY.score(p, r, ["bleu"], {}).columns["bleu_score"]

        def our_chrf(metric, p=preds, r=refs):
            return chrf.FAMILY.score(p, r, [metric], {}).columns[f"{metric}_score"]

        def our_corpus_bleu(p=preds, r=refs):
            stats = bleu.bleu_statistics(p, r)
            return bleu.corpus_bleu_score(stats.sum(axis=0, dtype=np.float64)[None, :])

        def our_corpus_chrf(order, p=preds, r=refs):
            stats, _, _ = chrf.chrf_statistics(p, r, word_order=order)
            return chrf.corpus_chrf_score(stats.sum(axis=0, dtype=np.float64)[None, :])

        def sentence_bleu(p=preds, r=refs):
            return np.array([sacrebleu.sentence_bleu(a, b).score
                             for a, b in zip(p, r, strict=True)])

        def bleu_object(p=preds, r=refs):
            metric = BLEU(effective_order=True)
            return np.array([metric.sentence_score(a, b).score for a, b in zip(p, r, strict=True)])

        def sentence_chrf(p=preds, r=refs):
            return np.array([sacrebleu.sentence_chrf(a, b).score
                             for a, b in zip(p, r, strict=True)])

        def chrfpp_object(p=preds, r=refs):
            metric = CHRF(word_order=2)
            return np.array([metric.sentence_score(a, b).score for a, b in zip(p, r, strict=True)])

        out += [
            (shape, "sentence BLEU vs sentence_bleu loop", n, sentence_bleu, our_bleu),
            (shape, "sentence BLEU vs BLEU().sentence_score loop", n, bleu_object, our_bleu),
            (shape, "sentence chrF vs sentence_chrf loop", n, sentence_chrf,
             lambda f=our_chrf: f("chrf")),
            (shape, "sentence chrF++ vs CHRF(word_order=2) loop", n, chrfpp_object,
             lambda f=our_chrf: f("chrfpp")),
            (shape, "corpus BLEU vs corpus_bleu", n,
             lambda p=preds, r=refs: np.array([sacrebleu.corpus_bleu(p, streams(r)).score]),
             our_corpus_bleu),
            (shape, "corpus chrF vs corpus_chrf", n,
             lambda p=preds, r=refs: np.array([sacrebleu.corpus_chrf(p, streams(r)).score]),
             lambda f=our_corpus_chrf: f(0)),
            (shape, "corpus chrF++ vs corpus_chrf(word_order=2)", n,
             lambda p=preds, r=refs: np.array(
                 [sacrebleu.corpus_chrf(p, streams(r), word_order=2).score]),
             lambda f=our_corpus_chrf: f(2)),
        ]
    preds, refs = squad_corpus(n, sents)

    def official(p=preds, r=refs):
        return np.array([[official_max(official_f1, a, b),
                          official_max(official_em, a, b)]
                         for a, b in zip(p, r, strict=True)], dtype=np.float64)

    def ours(p=preds, r=refs):
        cols = squad.FAMILY.score(p, r, ["token_f1", "exact_match"], {}).columns
        return np.stack([cols["token_f1_fmeasure"], cols["exact_match_score"]], axis=1)

    out.append(("squad", "token F1 + exact match vs official loop", n, official, ours))
    return out


def timed_pair(fn_a, fn_b, repeats: int):
    """Run a and b in turn; per side (median, min, max) seconds and the last result."""
    times_a, times_b = [], []
    res_a = res_b = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res_a = fn_a()
        t1 = time.perf_counter()
        res_b = fn_b()
        t2 = time.perf_counter()
        times_a.append(t1 - t0)
        times_b.append(t2 - t1)
    return ((statistics.median(times_a), min(times_a), max(times_a), res_a),
            (statistics.median(times_b), min(times_b), max(times_b), res_b))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--n", type=int, default=1000, help="examples per measurement")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # "forgot to detokenize?"
    sents = load_sentences()
    all_cases = cases(args.n, sents)
    for *_, ours in all_cases:
        ours()  # numba compile / cache load
    rows = []
    for shape, what, n, peer, ours in all_cases:
        (tp, lp, hp, vp), (to, lo, ho, vo) = timed_pair(peer, ours, args.repeats)
        diff = float(np.max(np.abs(np.asarray(vp, float) - np.asarray(vo, float))))
        rows.append((shape, what, n, n / tp, (n / hp, n / lp), n / to, (n / ho, n / lo),
                     diff, bool(np.array_equal(vp, vo))))
        print(f"  measured {shape}: {what}", file=sys.stderr)
    print(f"\nexamples/s on one core, median of {args.repeats} runs taken in turn "
          f"(min-max in brackets); load average {os.getloadavg()[0]:.1f} at the end")
    print(f"{'shape':8} {'measure':44} {'n':>5} {'peer':>9} {'(range)':>17} {'ours':>9} "
          f"{'(range)':>19} {'ratio':>7} {'max |diff|':>10} {'identical':>9}")
    for shape, what, n, p, (plo, phi), o, (olo, ohi), diff, same in rows:
        print(f"{shape:8} {what:44} {n:5} {p:9,.0f} {f'({plo:,.0f}-{phi:,.0f})':>17} "
              f"{o:9,.0f} {f'({olo:,.0f}-{ohi:,.0f})':>19} {o / p:6.1f}x {diff:10.1e} "
              f"{str(same):>9}")
    return 0 if all(r[-2] <= 1e-9 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
