"""sacrerouge's published SummEval table (../shared/data/human/README.md): single
reference, mean expert relevance, r / rho / tau at the system and summary level, equal to 2
decimals from the published ROUGE values, and two cells at 6 decimals (scipy's)."""

from __future__ import annotations

import pytest

from pipeline import api

# measure -> level -> (pearson, spearman, kendall), as the README copies the table
PUBLISHED = {
    "rouge1_precision": {"system": (.29, .15, .03), "input": (.13, .12, .09)},
    "rouge1_recall": {"system": (.55, .56, .42), "input": (.31, .28, .23)},
    "rouge1_f1": {"system": (.61, .62, .50), "input": (.28, .26, .20)},
    "rouge2_precision": {"system": (.49, .41, .25), "input": (.15, .13, .09)},
    "rouge2_recall": {"system": (.65, .78, .57), "input": (.26, .23, .18)},
    "rouge2_f1": {"system": (.64, .60, .43), "input": (.23, .19, .14)},
}
COEFFICIENTS = ("pearson", "spearman", "kendall")


@pytest.fixture(scope="module")
def table(human_dir):
    result = api.agree(str(human_dir / "summeval_sacrerouge_rouge.parquet"),
                       judgments=str(human_dir / "summeval_ratings.parquet"),
                       humans=["expert_relevance"], measures=list(PUBLISHED),
                       levels=("system", "input"), coefficients=COEFFICIENTS,
                       n_resamples=0, n_permutations=0)
    return {(r["measure"], r["level"], r["coefficient"]): r
            for r in result.document["rows"] if r["kind"] == "metric"}


def test_the_36_published_cells_to_2_decimals(table):
    for measure, levels in PUBLISHED.items():
        for level, values in levels.items():
            for name, expected in zip(COEFFICIENTS, values, strict=True):
                got = table[(measure, level, name)]["value"]
                assert abs(got - expected) <= 0.005 + 1e-9, (measure, level, name, got)


@pytest.mark.parametrize("key, expected", [
    (("rouge2_recall", "system", "pearson"), 0.653531),
    (("rouge2_recall", "system", "spearman"), 0.779412),
    (("rouge2_recall", "system", "kendall"), 0.566667),
    (("rouge1_f1", "input", "pearson"), 0.278828),
    (("rouge1_f1", "input", "spearman"), 0.256108),
    (("rouge1_f1", "input", "kendall"), 0.196659),
])
def test_two_cells_at_6_decimals(table, key, expected):
    assert table[key]["value"] == pytest.approx(expected, abs=5e-7)


def test_counts(table):
    row = table[("rouge1_f1", "system", "kendall")]
    assert (row["n_systems"], row["n_inputs"]) == (16, 100)


def test_krippendorff_alpha_equals_the_krippendorff_package(human_dir):
    import krippendorff
    import numpy as np
    import pyarrow.parquet as pq

    from pipeline.agree.raters import krippendorff_alpha

    ratings = pq.read_table(human_dir / "summeval_ratings.parquet").to_pandas()
    for column in ("expert_relevance", "turker_coherence"):
        data = np.array(ratings[column].tolist(), dtype=float).T  # raters x units
        for kind in ("interval", "ordinal"):
            expected = krippendorff.alpha(reliability_data=data, level_of_measurement=kind)
            assert krippendorff_alpha(data, kind) == pytest.approx(expected, abs=1e-12)
