"""BLEU's breakdown (n-gram precisions, brevity penalty, ratio, lengths) against sacrebleu.

The breakdown is derived from summed statistics by the BLEU family module and written as
``bleu_*`` columns of ``aggregate.parquet`` on the corpus rows; every value here is
checked against sacrebleu 2.x ``BLEU.corpus_score``'s ``BLEUScore`` fields.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.aggregate import aggregate, aggregate_parts, metric_aggregates
from pipeline.metrics.bleu import BREAKDOWN, bleu_breakdown, bleu_statistics
from pipeline.scoring import Scorer
from tests.support.mt_data import bundled_realsumm, reference_streams, shared_examples

sacrebleu = pytest.importorskip("sacrebleu")
from sacrebleu.metrics import BLEU  # noqa: E402

SMOOTHS = ("exp", "floor", "add-k", "none")
FIELDS = [name for name, _ in BREAKDOWN]


def sacre_fields(preds, refs, **kw) -> dict[str, float]:
    s = BLEU(**kw).corpus_score(preds, reference_streams(refs))
    out = {f"precision_{n + 1}": p for n, p in enumerate(s.precisions)}
    out.update(bp=s.bp, ratio=s.ratio, sys_len=s.sys_len, ref_len=s.ref_len, score=s.score)
    return out


def ours(preds, refs, *, smooth="exp", **kw) -> dict[str, float]:
    summed = bleu_statistics(preds, refs, **kw).sum(axis=0, dtype=np.float64)[None, :]
    return {k: v[0].item() for k, v in bleu_breakdown(summed, smooth=smooth).items()}


def assert_fields(got: dict, want: dict) -> None:
    for name in FIELDS:
        if name in ("sys_len", "ref_len"):
            assert got[name] == want[name] and isinstance(got[name], int), name
        else:
            assert got[name] == pytest.approx(want[name], rel=1e-12, abs=1e-12), name


def test_bundled_realsumm_breakdown_is_sacrebleus():
    preds, refs = bundled_realsumm()
    want = sacre_fields(preds, refs)
    assert_fields(ours(preds, refs), want)
    assert want["bp"] < 1 or want["ratio"] >= 1  # a real, non-trivial case


@pytest.mark.parametrize("smooth", SMOOTHS)
def test_each_smoothing_on_short_texts(smooth):
    # Few tokens: orders 3 and 4 have no match (or no n-gram), where smoothing shows.
    preds = ["the cat", "a dog sat", "birds", "the cat sat on it"]
    refs = [["the cat sat"], ["a dog sat down"], ["birds sing"], ["the cat sat on the mat"]]
    want = sacre_fields(preds, refs, smooth_method=smooth)
    assert_fields(ours(preds, refs, smooth=smooth), want)


def test_nothing_matches_and_no_reference_tokens():
    assert_fields(ours(["x y z"], [["a b c"]]), sacre_fields(["x y z"], [["a b c"]]))
    got = ours(["x y z"], [[""]])
    assert (got["ratio"], got["bp"], got["ref_len"]) == (0.0, 1.0, 0)  # sacrebleu: ratio 0


def test_shared_data_sample_breakdown_is_sacrebleus(shared_dir):
    for preds, refs in shared_examples(shared_dir).values():
        assert_fields(ours(preds[::10], refs[::10]), sacre_fields(preds[::10], refs[::10]))


@pytest.mark.slow
def test_shared_data_breakdown_is_sacrebleus(shared_dir):  # 26 s at load 7
    for preds, refs in shared_examples(shared_dir).values():
        assert_fields(ours(preds, refs), sacre_fields(preds, refs))
        for smooth in SMOOTHS:  # every smoothing on a sample (sacrebleu takes its time)
            want = sacre_fields(preds[::10], refs[::10], smooth_method=smooth)
            assert_fields(ours(preds[::10], refs[::10], smooth=smooth), want)


def _scored(preds, refs, metrics=("bleu", "rouge1")) -> pa.Table:
    table = Scorer(metrics=metrics).score_batch(preds, refs).table
    groups = [f"g{i % 3}" for i in range(table.num_rows)]
    return table.append_column("id", pa.array([f"x{i}" for i in range(table.num_rows)])) \
        .append_column("system", pa.array(groups))


def test_aggregate_columns_on_corpus_rows_all_and_groups():
    preds, refs = bundled_realsumm(300)
    table = _scored(preds, refs)
    agg = aggregate(table, metrics=["bleu", "rouge1"], group_by=["system"], n_bootstrap=0,
                    id_column="id")
    names = [f"bleu_{f}" for f in FIELDS]
    assert agg.column_names[-len(names):] == names
    assert [agg.schema.field(n).type for n in names] == [pa.float64()] * 6 + [pa.int64()] * 2
    for r in agg.to_pylist():
        if r["metric"] == "bleu" and r["statistic"] == "corpus":
            if r["scope"] == "all":
                idx = range(len(preds))
            else:
                idx = [i for i in range(len(preds)) if f"g{i % 3}" == r["system"]]
            want = sacre_fields([preds[i] for i in idx], [refs[i] for i in idx])
            assert r["mean"] == pytest.approx(want["score"], rel=1e-12)
            assert_fields({f: r[f"bleu_{f}"] for f in FIELDS}, want)
        else:
            assert all(r[n] is None for n in names), r


def test_no_breakdown_column_without_bleu():
    preds, refs = bundled_realsumm(20)
    agg = aggregate(_scored(preds, refs, metrics=("rouge1", "chrf")),
                    metrics=["rouge1", "chrf"], n_bootstrap=0)
    assert agg.column_names == ["scope", "metric", "measure", "statistic", "threshold", "mean",
                                "ci_low", "ci_high", "n_examples"]


def test_aggregate_of_files_gives_the_same_breakdown(tmp_path):
    preds, refs = bundled_realsumm(200)
    table = _scored(preds, refs)
    uris = []
    for k, (a, b) in enumerate([(0, 70), (70, 71), (71, 200)]):
        pq.write_table(table.slice(a, b - a), tmp_path / f"part-{k}.parquet")
        uris.append(str(tmp_path / f"part-{k}.parquet"))
    common = {"metrics": ["bleu", "rouge1"], "group_by": ["system"], "n_bootstrap": 40,
              "id_column": "id"}
    assert aggregate_parts(uris, **common).equals(aggregate(table, **common))


def test_metric_aggregates_reads_the_breakdown_and_prints_it_as_sacrebleu():
    preds, refs = bundled_realsumm(100)
    agg = aggregate(_scored(preds, refs), metrics=["bleu"], n_bootstrap=0)
    [(name, result)] = metric_aggregates(agg, ["bleu"]).items()
    want = BLEU().corpus_score(preds, reference_streams(refs))
    assert name == "bleu" and result.statistic == "corpus"
    assert result.score.value == pytest.approx(want.score, rel=1e-12)
    assert f"BLEU = {want.score:.2f} {result.breakdown_text}" == str(want)
    assert result.breakdown["sys_len"] == want.sys_len
    assert math.isclose(result.means["score"].value,
                        math.fsum(BLEU(effective_order=True).sentence_score(p, r).score
                                  for p, r in zip(preds, refs, strict=True)) / len(preds),
                        rel_tol=1e-12)


def test_a_group_column_named_like_a_breakdown_column_is_refused(tmp_path):
    from pipeline import api
    from pipeline.config import ScoreConfig
    from pipeline.errors import ConfigError

    pq.write_table(pa.table({"id": ["a"], "prediction": ["x y"], "references": [["x y"]],
                             "bleu_bp": ["g"]}), tmp_path / "p.parquet")
    with pytest.raises(ConfigError, match="'bleu_bp'"):
        api.score(str(tmp_path / "p.parquet"), output=str(tmp_path / "out"),
                  config=ScoreConfig(metrics=("bleu",), group_by=("bleu_bp",),
                                     engine="local"))
    assert not (tmp_path / "out").exists()
