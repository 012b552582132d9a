"""Outputs are byte-for-byte those of the code before issue 18's refactor (the "done when").

``tests/data/pre_move/`` holds what the code before the move wrote (commit of this file),
for every family and its options: ``aggregate.parquet``, the manifest (which records the
SHA-256 and size of every per-example Parquet file, so those are compared byte for byte
without being stored) and two comparisons (``compare.json`` and ``compare.parquet``).
Inputs: the bundled REALSumm data with ``configs/default.yaml``, and small deterministic
subsets of the shared data
(``/work/shared/data``; see its README) stored in ``tests/data/pre_move/inputs/``. Each test
scores one case again and compares every file byte for byte; in the JSON documents only the
run's times, paths, engine description and timings are left out (they describe the run, not
its scores); the additions issue 18 names (BLEU's breakdown columns in ``aggregate.parquet``)
are allowed: every pre-move column, value and metadata item must stay as it was; and
``compare.parquet``, whose rows and metadata name the runs' directories, is compared as rows,
schema and metadata with those paths replaced.

Issue 25 changed the comparisons deliberately (docs/compare.md): rows gained ``p_tail``, and
``bands`` reads ``band: static 0.0100 (history: 0 nights; 7 needed to learn)``; the two stored
comparisons were regenerated then, their scores unchanged. BLEU's resampled corpus sums are
scaled to the scope's size since (docs/outputs.md#the-interval): in the four runs with BLEU
only the ``ci_low``/``ci_high`` of BLEU's corpus rows were replaced (``bleu_chrf_single``,
add-k smoothing over groups of 8-9 examples: up to 17%; elsewhere in the last bit), with the
manifests' aggregate hash, and the comparisons' BLEU ``ci_high`` and ``mde`` (last bit).

Regenerate (only for a deliberate, documented output change)::

    python -m tests.house.test_outputs_unchanged
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "pre_move"
INPUTS = GOLDEN / "inputs"
SHARED = Path("/work/shared/data")
BUNDLED = ROOT / "pipeline" / "data" / "realsumm"
RUN_ID = "pre-move"
# One worker, default partitioning: a small load on a shared machine (outputs do not depend
# on the worker count).
RUN = {"engine": "local", "num_cpus": 1}

# name -> (predictions, references or None, settings); inputs are names in INPUTS unless
# absolute.
CASES: dict[str, tuple[str, str | None, dict[str, Any]]] = {
    "bundled_default": (str(BUNDLED / "predictions"), str(BUNDLED / "references.parquet"),
                        {"config_file": "configs/default.yaml"}),
    "rouge_porter_groups": ("realsumm.parquet", None, {
        "metrics": ["rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum"], "stemmer": "porter",
        "group_by": ["system"], "threshold": ["rougeL.fmeasure=0.3"], "keep_text": True}),
    "rouge_unicode_punct_case": ("realsumm.parquet", None, {
        "metrics": ["rouge1", "rougeLsum"], "tokenizer": "unicode", "case_sensitive": True,
        "sentence_split": "punctuation", "max_tokens": 60, "bootstrap": 200}),
    "rouge_multiref_max_mt": ("summeval.parquet", None, {
        "metrics": ["rouge1", "rouge2", "rougeL", "rougeLsum", "bleu", "chrf", "chrfpp"],
        "multi_reference": "max"}),
    "rouge_multiref_mean": ("summeval.parquet", None, {
        "metrics": ["rouge1", "rouge2", "rougeL"], "multi_reference": "mean"}),
    "rouge_multiref_pooled": ("summeval.parquet", None, {
        "metrics": ["rouge1", "rouge2", "rougeL"], "multi_reference": "pooled"}),
    "rouge_multiref_best_recall": ("summeval.parquet", None, {
        "metrics": ["rouge1", "rouge2", "rougeL"], "multi_reference": "best-recall"}),
    "bleu_options": ("summeval.parquet", None, {
        "metrics": ["bleu"], "bleu_tokenize": "intl", "bleu_smooth": "floor",
        "bleu_smooth_value": 0.2, "bleu_lowercase": True,
        "threshold": ["bleu.score=10"]}),
    "bleu_chrf_single": ("realsumm.parquet", None, {
        "metrics": ["bleu", "chrf", "chrfpp"], "bleu_smooth": "add-k", "group_by": ["system"]}),
    "squad": ("squad.parquet", None, {
        "metrics": ["token_f1", "exact_match"], "threshold": ["token_f1.fmeasure=0.5"]}),
    "rouge155_s1": ("sl2003.parquet", None, {"rouge155": "-n 4 -w 1.2 -2 4 -U -f A"}),
    "rouge155_s3": ("sl2003.parquet", None, {"rouge155": "-n 2 -2 -1 -U -s -f A"}),
    "rouge155_s4": ("sl2003.parquet", None, {"rouge155": "-n 2 -l 30 -m -f A"}),
    "rouge155_s5": ("sl2003.parquet", None, {"rouge155": "-n 2 -b 100 -f A"}),
    "rouge155_s6": ("sl2003.parquet", None, {"rouge155": "-n 2 -w 1.2 -2 4 -U -m -f B"}),
    "rouge155_s7": ("sl2003.parquet", None, {"rouge155": "-n 2 -p 0.2 -f A"}),
    "compare_base": ("system_a.parquet", None, {
        "metrics": ["rouge1", "rougeL", "bleu", "chrf", "token_f1", "exact_match"]}),
    "compare_cand": ("system_b.parquet", None, {
        "metrics": ["rouge1", "rougeL", "bleu", "chrf", "token_f1", "exact_match"]}),
}
# name -> (baseline case, candidate case, options of pipeline.api.compare)
COMPARISONS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "compare_default": ("compare_base", "compare_cand", {}),
    "compare_all_measures": ("compare_base", "compare_cand", {
        "measures": ["rouge1.precision", "rouge1.recall", "rougeL.fmeasure", "bleu.score",
                     "chrf.score", "token_f1.fmeasure", "exact_match.score"],
        "n_bootstrap": 500}),
}
# Manifest keys describing the run, not its scores (and each examples file's "where": the
# host and process that wrote it).
_RUN_KEYS = ("started_at", "finished_at", "output", "engine", "seconds", "task_seconds")


def _inputs() -> None:
    """Small deterministic subsets of the shared data (only when regenerating)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    INPUTS.mkdir(parents=True, exist_ok=True)

    def take(folder: str, n: int, columns: list[str]) -> pa.Table:
        table = pq.read_table(SHARED / folder / "examples.parquet", columns=columns)
        table = table.take(pc.sort_indices(table, [("id", "ascending")]))
        return table.slice(0, n)

    base = ["id", "system", "prediction", "references"]
    pq.write_table(take("realsumm", 120, base), INPUTS / "realsumm.parquet")
    pq.write_table(take("summeval_multiref11", 40, base), INPUTS / "summeval.parquet")
    pq.write_table(take("squad2_dev_sample", 200, base), INPUTS / "squad.parquet")
    pq.write_table(take("sl2003_rouge_sample_multiref4", 64, base), INPUTS / "sl2003.parquet")
    # Two systems on the same 40 documents, keyed by document (the id without the system):
    # a baseline and a candidate.
    realsumm = pq.read_table(SHARED / "realsumm" / "examples.parquet", columns=base)
    for name, system in (("system_a", "bart_out"), ("system_b", "bottom_up_out")):
        rows = realsumm.filter(pc.equal(realsumm.column("system"), system))
        docs = [i[:-len(system) - 1] for i in rows.column("id").to_pylist()]
        rows = rows.set_column(0, "id", pa.array(docs))
        rows = rows.take(pc.sort_indices(rows, [("id", "ascending")])).slice(0, 40)
        pq.write_table(rows, INPUTS / f"{name}.parquet")


def _normal_manifest(document: dict[str, Any], added: set[str] = frozenset()
                     ) -> dict[str, Any]:
    out = {k: v for k, v in document.items() if k not in _RUN_KEYS}
    inputs = dict(out["inputs"])
    for side in ("predictions", "references"):
        if inputs.get(side):
            inputs[side] = {"uri": Path(inputs[side]["uri"]).name,
                            "files": [{**f, "path": Path(f["path"]).name}
                                      for f in inputs[side]["files"]]}
    out["inputs"] = inputs
    outputs = dict(out["outputs"])
    outputs["examples"] = [{k: v for k, v in e.items() if k != "where"}  # host, pid
                           for e in outputs["examples"]]
    if added:  # the aggregate gained columns: compared by content instead
        outputs["aggregate"] = {k: v for k, v in outputs["aggregate"].items()
                                if k not in ("sha256", "size_bytes")}
    out["outputs"] = outputs
    return out


def _normal_compare(document: Any, paths: tuple[str, ...]) -> Any:
    """``compare.json`` with the run directories' paths replaced by their names (wherever
    the stored outputs were generated)."""
    text = json.dumps(document, sort_keys=False)
    for path in paths:
        name = Path(path).name
        text = re.sub(r'"[^"]*/' + re.escape(name) + r'/?"', json.dumps(name), text)
    return json.loads(text)


def _score(name: str, out: Path) -> Path:
    from pipeline import api
    from pipeline.config import load_config_file, resolve_config

    predictions, references, settings = CASES[name]
    settings = dict(settings)
    file = settings.pop("config_file", None)
    layers = [load_config_file(str(ROOT / file))] if file else []
    config = resolve_config(*layers, {**settings, **RUN})
    path = predictions if Path(predictions).is_absolute() else str(INPUTS / predictions)
    run = out / name
    api.score(path, output=str(run), references=references, config=config, run_id=RUN_ID)
    return run


def _compare(name: str, runs: Path, out: Path) -> Path:
    from pipeline import api

    base, cand, options = COMPARISONS[name]
    target = out / name
    api.compare(str(runs / base), str(runs / cand), output=str(target), **options)
    return target


def _files(run: Path) -> dict[str, bytes]:
    """Every file of a run or comparison but the per-example files (the manifest has their
    SHA-256 and size)."""
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*"))
            if p.is_file() and p.relative_to(run).parts[0] != "examples"}


def _comparable(name: str, files: dict[str, bytes], paths: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for rel, data in files.items():
        if rel == "manifest.json":
            out[rel] = _normal_manifest(json.loads(data))
        elif rel.endswith(".json"):
            out[rel] = _normal_compare(json.loads(data), paths)
        elif rel == "compare.parquet":  # its rows name the runs' directories
            import io

            import pyarrow.parquet as pq

            table = pq.read_table(io.BytesIO(data))
            metadata = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
            metadata["overlap.compare"] = _normal_compare(
                json.loads(metadata.get("overlap.compare", "null")), paths)
            out[rel] = (table.schema.to_string(show_schema_metadata=False), metadata,
                        _normal_compare(table.to_pylist(), paths))
        else:
            out[rel] = data
    return out


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("outputs")


@pytest.mark.parametrize("name", list(CASES))
def test_run_outputs_unchanged(name: str, fresh: Path) -> None:
    want = _files(GOLDEN / "runs" / name)
    assert want, f"no stored outputs for {name}"
    run = _score(name, fresh)
    got = _files(run)
    assert sorted(got) == sorted(want)
    listed = [e["path"] for e in json.loads(got["manifest.json"])["outputs"]["examples"]]
    assert listed == sorted(str(p.relative_to(run)) for p in (run / "examples").iterdir())
    manifest = json.loads(got["manifest.json"])
    added = _additions(manifest["config"])
    for rel in want:
        if rel == "manifest.json":
            assert _normal_manifest(manifest, added) == \
                _normal_manifest(json.loads(want[rel]), added), f"{name}/{rel}"
        elif rel == "aggregate.parquet" and added:
            _same_aggregate_but_additions(got[rel], want[rel], added)
        else:
            assert got[rel] == want[rel], f"{name}/{rel} differs from the pre-move bytes"


def _additions(config: dict[str, Any]) -> set[str]:
    """The aggregate columns issue 18 adds for a run's metrics (BLEU's breakdown)."""
    from pipeline.metrics import registry

    return {column for spec in registry.specs(config["metrics"], config)
            for column, _ in getattr(spec, "breakdown_fields", ())}


def _same_aggregate_but_additions(got: bytes, want: bytes, added: set[str]) -> None:
    """Every pre-move column, its type and every value (bit for bit) and the metadata kept;
    new columns only among ``added``."""
    import io

    import pyarrow.parquet as pq

    new, old = pq.read_table(io.BytesIO(got)), pq.read_table(io.BytesIO(want))
    assert set(new.column_names) - set(old.column_names) <= added
    assert new.select(old.column_names).equals(old)
    assert new.schema.metadata == old.schema.metadata


@pytest.mark.parametrize("name", list(COMPARISONS))
def test_comparison_outputs_unchanged(name: str, fresh: Path) -> None:
    base, cand, _ = COMPARISONS[name]
    for case in (base, cand):
        if not (fresh / case / "_SUCCESS").exists():
            _score(case, fresh)
    target = _compare(name, fresh, fresh / "compare")
    want = _files(GOLDEN / "compare" / name)
    got = _files(target)
    assert sorted(got) == sorted(want)
    golden_paths = tuple(str(GOLDEN / "runs" / c) for c in (base, cand))
    fresh_paths = tuple(str(fresh / c) for c in (base, cand))
    assert _comparable(name, got, fresh_paths) == _comparable(name, want, golden_paths)


def regenerate() -> None:
    """Score every case and write the outputs under ``tests/data/pre_move`` (see module doc)."""
    _inputs()
    for folder in ("runs", "compare"):
        shutil.rmtree(GOLDEN / folder, ignore_errors=True)
    runs = GOLDEN / "runs"
    runs.mkdir(parents=True)
    for name in CASES:
        _score(name, runs)
        print(f"scored {name}", file=sys.stderr)
    for name in COMPARISONS:
        _compare(name, runs, GOLDEN / "compare")
        print(f"compared {name}", file=sys.stderr)
    for name in CASES:
        shutil.rmtree(runs / name / "examples")


if __name__ == "__main__":
    regenerate()
