"""The metric registry drives the schema, the CLI, the signature and the thresholds."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import ConfigError
from pipeline.metrics import registry
from pipeline.scoring import Scorer, ScoringSettings, Threshold


@pytest.mark.parametrize("family", registry.FAMILIES, ids=lambda f: f.name)
def test_every_family_serves_its_names_and_declares_its_columns(family):
    for name in family.names:
        assert family.serves(name)
        assert registry.family_of(name) is family
        spec = registry.spec(name, {})
        assert spec.name == name and spec.family == family.name
        assert spec.primary in spec.measures
        assert {t for _, t in spec.statistics} <= {"int64", "float64"}
    keys = [o.key for o in family.options]
    assert len(set(keys)) == len(keys)


def test_a_family_claims_names_by_pattern():
    assert registry.family_of("rouge7").name == "rouge"
    for bad in ("rouge0", "rouge10", "rougel", "ROUGE1"):
        with pytest.raises(ConfigError, match="unknown metric"):
            registry.family_of(bad)
    with pytest.raises(ConfigError, match="did you mean 'rougeLsum'"):
        registry.spec("rougeLSum", {})


def test_the_output_schema_is_generated_from_the_specs():
    scorer = Scorer(metrics=("rougeL", "rouge3"))
    want = ["n_references"]
    for spec in registry.specs(("rougeL", "rouge3"), {}):
        want += [*spec.measure_columns, *spec.statistic_columns, f"{spec.name}_reference_index"]
    assert scorer.output_schema().names == want
    table = scorer.score_batch(["a b c"], [["a b d"]]).table
    assert table.column_names == want


def test_settings_reject_unknown_keys_with_a_hint_and_read_options_as_attributes():
    with pytest.raises(ConfigError, match="did you mean 'stemmer'"):
        ScoringSettings.from_values(stemer="porter")
    settings = ScoringSettings.from_values(stemmer="porter", metrics="rouge1,rougeL")
    assert settings.stemmer == "porter" and settings.metrics == ("rouge1", "rougeL")
    assert settings == ScoringSettings(metrics=("rouge1", "rougeL"),
                                       options=(("stemmer", "porter"),))
    assert Scorer(settings).settings is settings


def test_thresholds_take_their_range_from_the_spec():
    assert Threshold.parse("rougeL.fmeasure=0.5") == Threshold("rougeL", "fmeasure", 0.5)
    with pytest.raises(ConfigError, match=r"must be in \[0, 1\]"):
        Threshold.parse("rouge1.recall=1.5")
    with pytest.raises(ConfigError, match="unknown measure 'f1' of rougeL.*fmeasure"):
        Threshold.parse("rougeL.f1=0.5")
    with pytest.raises(ConfigError, match="not METRIC.MEASURE=VALUE"):
        Threshold.parse("rougeL=0.5")


def test_cli_help_lists_the_registry_names_and_every_family_option():
    out = CliRunner().invoke(main, ["score", "--help"], terminal_width=200).output
    assert "rouge1..rouge9, rougeL, rougeLsum" in out
    for option in registry.options():
        assert option.flag in out


def test_the_signature_command_writes_only_the_families_used():
    out = CliRunner().invoke(main, ["signature", "--metrics", "rouge2"]).output
    assert out.startswith("metrics:rouge2|tok:rouge-score|stem:none|case:lc|ref:max|nrefs:1|")


def test_the_summary_shows_each_primary_measure_and_corpus_rows_where_present():
    import pyarrow as pa

    from pipeline.cli.score import format_summary
    from pipeline.config import ScoreConfig

    config = ScoreConfig(metrics="rougeL,bleu,token_f1", engine="local",
                         threshold=["bleu.score=30"]).to_dict()
    rows = [("rougeL", "fmeasure", "mean", None, 0.25), ("rougeL", "recall", "mean", None, 0.5),
            ("bleu", "score", "mean", None, 20.0), ("bleu", "score", "corpus", None, 31.5),
            ("token_f1", "fmeasure", "mean", None, 0.75),
            ("bleu", "score", "pass_rate", 30.0, 0.5)]
    aggregate = pa.table({
        "scope": ["all"] * len(rows), "metric": [r[0] for r in rows],
        "measure": [r[1] for r in rows], "statistic": [r[2] for r in rows],
        "threshold": [r[3] for r in rows], "mean": [r[4] for r in rows],
        "ci_low": [None] * len(rows), "ci_high": [None] * len(rows),
        "n_examples": [4] * len(rows)})
    manifest = {"config": config, "counts": {"examples_scored": 4}, "signature": "s",
                "engine": {"engine": "local"}, "seconds": {"total": 1.0},
                "outputs": {"examples": []}, "output": "out"}
    lines = format_summary(manifest, aggregate).splitlines()
    header = next(line for line in lines if line.lstrip().startswith("n "))
    assert header.split() == ["n", "rougeL", "bleu", "(corpus)", "token_f1", "pass",
                              "bleu.score>=30"]
    assert lines[lines.index(header) + 1].split() == ["(all)", "4", "0.2500", "31.5000",
                                                      "0.7500", "0.5000"]


def test_settings_survive_pickling_for_the_workers():
    import pickle

    from pipeline.config import ScoreConfig

    settings = ScoringSettings.from_values(metrics="rouge1,bleu", bleu_tokenize="intl",
                                           threshold=["bleu.score=30"])
    again = pickle.loads(pickle.dumps(settings))
    assert again == settings and hash(again) == hash(settings)
    assert again.bleu_tokenize == "intl"
    config = ScoreConfig(stemmer="porter", runtime_env={"pip": ["x"]})
    assert pickle.loads(pickle.dumps(config)) == config


def test_arrow_and_python_batches_score_alike_across_families():
    import pyarrow as pa

    preds = ["the cat sat", None, "a b c", "x"]
    refs = [["the cat sat on the mat", "a cat"], [], ["a b d"], None]
    scorer = Scorer(metrics=("rouge1", "rougeLsum", "bleu", "chrf", "token_f1"))
    from_lists = scorer.score_batch(preds, refs).table
    from_arrow = scorer.score_batch(
        pa.array(preds, pa.large_string()),
        pa.array(refs, pa.large_list(pa.large_string()))).table
    assert from_arrow.equals(from_lists)
    assert from_lists.column("n_references").to_pylist() == [2, 0, 1, 0]
    assert from_lists.column("rouge1_reference_index").to_pylist()[1] == -1
