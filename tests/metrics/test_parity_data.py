"""Golden parity: our default scores equal rouge-score 0.1.2's float for float on real data,
and the ROUGE-1.5.5 multi-reference rules equal the Perl script's figures."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import Scorer
from tests.conftest import BUNDLED, ROOT

DATASETS = ["realsumm", "summeval_multiref11", "sl2003_rouge_sample_multiref4",
            "multiling2011_sacrerouge"]
METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")
pytestmark = pytest.mark.filterwarnings(
    "ignore::pipeline.metrics.rouge.family.SentenceSplitWarning")


def _ours(examples, source="lists", **options):
    """Our scores of a shared examples table, indexed by id.

    ``source``: ``lists`` (Python lists, as a notebook passes them) or ``arrow`` (the Parquet
    columns themselves, chunked as read, which is what the pipeline's score tasks pass).
    """
    scorer = Scorer(metrics=METRICS, **options)
    if source == "arrow":
        table = scorer.score_batch(examples.column("prediction"),
                                   examples.column("references")).table
    else:
        table = scorer.score_batch(examples.column("prediction").to_pylist(),
                                   examples.column("references").to_pylist()).table
    table = table.to_pandas()
    table.index = examples.column("id").to_numpy(zero_copy_only=False)
    return table


def _assert_equal_long(ours, expected, columns):
    """expected: long rows (id, metric, columns...); every value compared with ==."""
    assert len(expected) == len(ours) * len(METRICS)
    for metric in METRICS:
        e = expected[expected.metric == metric].set_index("id").loc[ours.index]
        for theirs, mine in columns.items():
            got = ours[f"{metric}_{mine}"].to_numpy()
            want = e[theirs].to_numpy()
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, (
                f"{metric}_{mine}: {bad.size} differ, first {ours.index[bad[0]]}: "
                f"{got[bad[0]]!r} != {want[bad[0]]!r}")


@pytest.mark.parametrize("source", ["lists", "arrow"])
@pytest.mark.parametrize("stemmer", ["none", "porter"])
@pytest.mark.parametrize("dataset", DATASETS)
def test_rouge_score_parity_on_shared_data(shared_dir, dataset, stemmer, source):
    examples = pq.read_table(shared_dir / "data" / dataset / "examples.parquet")
    expected = pq.read_table(
        shared_dir / "data" / dataset / "expected_rouge_score.parquet").to_pandas()
    ours = _ours(examples, source, stemmer=stemmer)
    _assert_equal_long(ours, expected[expected.stemmer == stemmer],
                       {"precision": "precision", "recall": "recall", "fmeasure": "fmeasure"})


# ROUGE-1.5.5's -f A is our `pooled`, -f B our `best-recall`; with one reference every
# rule must give the Perl script's single-reference figures.
RULE_CASES = [("realsumm", "single", rule) for rule in ("max", "pooled", "best-recall", "mean")]
RULE_CASES += [(d, mode, rule) for d in DATASETS[1:]
               for mode, rule in (("A", "pooled"), ("B", "best-recall"))]


@pytest.mark.parametrize("source", ["lists", "arrow"])
@pytest.mark.parametrize(("dataset", "mode", "rule"), RULE_CASES)
def test_rouge155_multi_reference_rules(shared_dir, dataset, mode, rule, source):
    path = shared_dir / "data" / dataset
    expected = pq.read_table(path / "expected_rouge155.parquet").to_pandas()
    expected = expected[(expected.stemmer == "none") & (expected.multiref_mode == mode)]
    assert not expected.empty
    ours = _ours(pq.read_table(path / "examples.parquet"), source, multi_reference=rule)
    _assert_equal_long(ours, expected, {
        "precision": "precision", "recall": "recall", "fmeasure": "fmeasure",
        "hit": "matches", "model_count": "reference_units", "peer_count": "prediction_units"})


@pytest.mark.parametrize("source", ["lists", "arrow"])
@pytest.mark.parametrize("stemmer", ["none", "porter"])
def test_rouge_score_parity_on_bundled_realsumm(stemmer, source):
    """Runs without ../shared: the bundled REALSumm shards against rouge-score's values."""
    preds = pq.read_table(BUNDLED / "predictions").to_pandas()
    refs = pq.read_table(BUNDLED / "references.parquet").to_pandas()
    grouped = refs.groupby("id", sort=False)["reference"].apply(list)
    examples = preds.assign(references=grouped.loc[preds["id"]].to_list())
    expected = pq.read_table(
        ROOT / "tests" / "data" / "realsumm_expected_rouge_score.parquet").to_pandas()
    ours = _ours(pa.Table.from_pandas(examples, preserve_index=False), source,
                 stemmer=stemmer)
    assert len(ours) == 2500
    _assert_equal_long(ours, expected[expected.stemmer == stemmer],
                       {"precision": "precision", "recall": "recall", "fmeasure": "fmeasure"})


def test_long_multi_line_texts_from_arrow_equal_rouge_score():
    """Texts of 150-500 tokens on many lines, read from Arrow arrays as the pipeline reads
    them: rougeLsum walks bit rows per prediction line (longer than two words), against
    rouge-score 0.1.2 itself."""
    from rouge_score import rouge_scorer

    preds = pq.read_table(BUNDLED / "predictions").column("prediction").to_pylist()
    refs = pq.read_table(BUNDLED / "references.parquet").column("reference").to_pylist()
    rng = np.random.default_rng(8)
    joined = [("\n".join(rng.choice(preds, 4)), "\n".join(rng.choice(refs, 5)))
              for _ in range(12)]
    table = Scorer(metrics=METRICS).score_batch(
        pa.array([p for p, _ in joined]), pa.array([[r] for _, r in joined])).table
    theirs = rouge_scorer.RougeScorer(list(METRICS), use_stemmer=False)
    for i, (p, r) in enumerate(joined):
        assert len(p.split()) > 150
        want = theirs.score(r, p)
        for m in METRICS:
            for x in ("precision", "recall", "fmeasure"):
                assert table.column(f"{m}_{x}")[i].as_py() == getattr(want[m], x), (i, m, x)
