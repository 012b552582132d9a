"""Settings: defaults, the YAML files, flags over file, and every refusal naming its key."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from pipeline.config import (
    CONFIG_KEYS,
    ScoreConfig,
    Threshold,
    load_config_file,
    resolve_config,
)
from pipeline.errors import ConfigError
from pipeline.signature import Signature

ROOT = Path(__file__).resolve().parents[2]


def test_default_yaml_documents_every_setting_with_its_default():
    text = (ROOT / "configs" / "default.yaml").read_text()
    keys = re.findall(r"^([a-z_0-9]+):", text, flags=re.M)
    assert sorted(keys) == sorted(CONFIG_KEYS)
    # Every key has a comment right above it.
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^[a-z_0-9]+:", line):
            assert lines[i - 1].startswith("#"), f"{line!r} has no comment"
    assert resolve_config(load_config_file(str(ROOT / "configs" / "default.yaml"))) \
        == ScoreConfig()


def test_nightly_yaml_is_valid_and_a_cluster_example():
    cfg = resolve_config(load_config_file(str(ROOT / "configs" / "nightly.yaml")))
    assert cfg.engine == "ray"
    assert cfg.group_by == ("model", "task")
    assert cfg.thresholds == (Threshold("rougeL", "fmeasure", 0.3),)


def test_flags_override_the_file_and_none_means_not_given(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("stemmer: porter\nseed: 7\nmetrics: rouge1,rougeL\n")
    cfg = resolve_config(load_config_file(str(f)), {"seed": 9, "stemmer": None})
    assert (cfg.stemmer, cfg.seed, cfg.metrics) == ("porter", 9, ("rouge1", "rougeL"))


@pytest.mark.parametrize("yaml_text, message", [
    ("boostrap: 10\n", r"unknown setting 'boostrap' \(did you mean 'bootstrap'\?\)"),
    ("case-sensitive: true\n", r"did you mean 'case_sensitive'"),
    ("bootstrap: ten\n", r"bootstrap: expected an integer"),
    ("bootstrap: -1\n", r"bootstrap: expected a count >= 0"),
    ("confidence: 1.5\n", r"confidence: expected a level in \(0, 1\)"),
    ("case_sensitive: yes please\n", r"case_sensitive: expected true or false"),
    ("metrics: [rouge1, rogueL]\n", r"unknown metric 'rogueL'.*did you mean 'rougeL'"),
    ("tokenizer: spacy\n", r"tokenizer: unknown value 'spacy'"),
    ("multi_reference: best\n", r"multi_reference: unknown value 'best'"),
    ("multi_reference: pool\n", r"did you mean 'pooled'"),
    ("engine: spark\n", r"engine: unknown value 'spark'"),
    ("threshold: [bleu.score=30]\n", r"metric 'bleu' is not among the run's"),
    ("threshold: [bleu.score=101]\n", r"must be in \[0, 100\]"),
    ("threshold: [blue.score=30]\n", r"unknown metric 'blue'.*did you mean 'bleu'"),
    ("bleu_smooth: expo\n", r"bleu_smooth: unknown value 'expo'.*did you mean 'exp'"),
    ("bleu_smooth_value: -1\n", r"bleu_smooth_value: expected a value >= 0"),
    ("threshold: [rougeL.fmeasure=-0.1]\n", r"must be in \[0, 1\]"),
    ("max_tokens: 0\n", r"max_tokens must be a whole number >= 1"),
    ("num_cpus: 0\n", r"num_cpus: expected 1 to 4,096 \(CPUs of this machine\), got 0"),
    ("num_cpus: 99999999999999999999\n", r"num_cpus: expected 1 to 4,096"),
    ("threshold: [rougeL.f1=0.5]\n", r"unknown measure 'f1'"),
    ("threshold: [rougeL.fmeasure=2]\n", r"must be in \[0, 1\]"),
    ("threshold: [rouge3.fmeasure=0.2]\n", r"metric 'rouge3' is not among the run's"),
    ("threshold: [rougeL.fmeasure=0.2, rougeL.fmeasure=0.3]\n", r"has two thresholds"),
    ("group_by: [system, system]\n", r"group_by: a column is listed twice"),
    ("- just\n- a list\n", r"expected a mapping of settings"),
    ("metrics: [rouge1\n", r"invalid YAML"),
    ("seed: 1\nbootstrap: 10\nseed: 2\n",
     r"line 3: invalid YAML \(setting 'seed' is given twice\)"),
])
def test_bad_config_is_refused_naming_the_key(tmp_path, yaml_text, message):
    f = tmp_path / "bad.yaml"
    f.write_text(yaml_text)
    with pytest.raises(ConfigError, match=message) as err:
        resolve_config(load_config_file(str(f)))
    assert err.value.exit_code == 2


def test_missing_config_file():
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config_file("/nonexistent/config.yaml")


def test_yaml_is_loaded_safely(tmp_path):
    f = tmp_path / "evil.yaml"
    f.write_text("seed: !!python/object/apply:os.system ['echo owned']\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_config_file(str(f))


def test_thresholds_from_a_mapping_or_strings():
    a = resolve_config({"threshold": {"rougeL.fmeasure": 0.5}})
    b = resolve_config({"threshold": ["rougeL.fmeasure=0.5"]})
    assert a.thresholds == b.thresholds == (Threshold("rougeL", "fmeasure", 0.5),)
    assert a.thresholds[0].column == "passed_rougeL_fmeasure"
    assert str(a.thresholds[0]) == "rougeL.fmeasure=0.5"


def test_signature_fields_and_round_trip():
    cfg = ScoreConfig(metrics=("rouge1", "rougeL"), stemmer="porter", seed=3, bootstrap=200)
    sig = cfg.signature(n_references="var")
    assert str(sig).startswith("metrics:rouge1+rougeL|tok:rouge-score|stem:porter|case:lc|"
                               "ref:max|nrefs:var|bs:200-poisson|ci:0.95|seed:3|maxtok:100000|version:")
    assert Signature.parse(str(sig)) == sig


def test_to_dict_round_trips_through_resolve_config():
    cfg = ScoreConfig(group_by=("system",), thresholds=(Threshold("rouge1", "recall", 0.25),),
                      keep_text=True, partition_rows=10)
    assert resolve_config(cfg.to_dict()) == cfg


def test_address_falls_back_to_ray_address(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert ScoreConfig().resolved_address() == "10.0.0.1:6379"
    assert ScoreConfig(address="head:1").resolved_address() == "head:1"
    monkeypatch.delenv("RAY_ADDRESS")
    assert ScoreConfig().resolved_address() is None


def _refused(tmp_path, content: bytes) -> str:
    from click.testing import CliRunner

    from pipeline.cli import main

    cfg = tmp_path / "c.yaml"
    cfg.write_bytes(content)
    result = CliRunner().invoke(main, ["signature", "--config", str(cfg)])
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result.stderr
    assert "Traceback" not in result.output
    return result.stderr


def test_yaml_aliases_are_refused_before_they_expand(tmp_path):
    # "billion laughs": 9 levels of 9 aliases would be 9**9 strings once expanded
    lines = ['a0: &a0 ["lol"]'] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]"
                                   for i in range(1, 10)]
    doc = "runtime_env:\n" + "\n".join("  " + line for line in lines) + "\n"
    err = _refused(tmp_path, doc.encode())
    assert "line 3" in err and "alias *a0" in err


def test_a_config_file_over_the_size_limit_is_refused(tmp_path):
    from pipeline.config import MAX_CONFIG_BYTES

    err = _refused(tmp_path, b"# " + b"x" * MAX_CONFIG_BYTES + b"\nseed: 1\n")
    assert "larger than 1,048,576 bytes" in err


def test_a_config_file_that_is_not_utf8_is_one_line(tmp_path):
    err = _refused(tmp_path, "seed: 1\ntokenizer: caf\u00e9\n".encode("latin-1"))
    assert "is not UTF-8 text (byte 22: " in err


def test_auto_engine_choice(monkeypatch):
    from types import SimpleNamespace

    from pipeline.engine.run import choose_engine

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not initialized here
    small = SimpleNamespace(prediction_rows=2_000_000)
    large = SimpleNamespace(prediction_rows=10_000_000_000)
    assert choose_engine(ScoreConfig(), small) == (
        "local", "auto: one machine: in-process (2,000,000 prediction rows)")
    # no size sends a run to a local Ray: in-process memory does not grow with rows
    assert choose_engine(ScoreConfig(), large) == (
        "local", "auto: one machine: in-process (10,000,000,000 prediction rows)")
    assert choose_engine(ScoreConfig(address="10.0.0.1:6379"), small) == (
        "ray", "auto: a Ray cluster address is set")
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert choose_engine(ScoreConfig(), small)[0] == "ray"
    assert choose_engine(ScoreConfig(engine="local"), large) == ("local", "--engine local")
