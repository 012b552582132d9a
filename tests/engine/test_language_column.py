"""``--language column:COL`` through the engine, in every input layout.

Each row is scored in its own language wherever the engine scores it: inline references
(a unit scored where it lies, also split over several files and row groups) and separate
references files (``list`` and ``rows`` layouts, joined by id). The values are the
``multilingual-rouge==0.0.1`` figures of ``../shared/data/multilingual`` (with the language
stemmer), float for float. Skips when ../shared is absent.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main

pytest.importorskip("jieba")
MEASURES = ("precision", "recall", "fmeasure")
METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")
# a segmenter (jieba, pythainlp), Snowball and TurkishStemmer stemmers, the fallback
LANGUAGES = ("chinese", "thai", "russian", "turkish", "croatian")


@pytest.fixture(scope="module")
def data(shared_dir):
    folder = shared_dir / "data" / "multilingual"
    if not folder.is_dir():
        pytest.skip("../shared/data/multilingual is absent")
    rows = pq.read_table(folder / "examples.parquet",
                         columns=["id", "lang", "prediction", "references"]).to_pylist()
    # interleaved, so every file, row group and partition holds several languages
    by_lang = [[r for r in rows if r["lang"] == lang][:4] for lang in LANGUAGES]
    sample = [group[k] for k in range(4) for group in by_lang]
    expected = {(r["id"], r["metric"]): tuple(r[m] for m in MEASURES)
                for r in pq.read_table(folder / "expected_multilingual_rouge.parquet")
                .to_pylist() if r["stemmer"] == "language"}
    return sample, expected


def _inputs(tmp_path, sample, layout: str) -> list[str]:
    def cols(rows, *names):
        return pa.table({n: [r[n] for r in rows] for n in names})

    if layout == "inline":
        path = tmp_path / "inline.parquet"
        pq.write_table(cols(sample, "id", "lang", "prediction", "references"), path)
        return [str(path)]
    if layout == "inline-units":  # two files of several row groups: several units
        folder = tmp_path / "inline"
        folder.mkdir()
        for k in range(2):
            pq.write_table(cols(sample[k::2], "id", "lang", "prediction", "references"),
                           folder / f"part-{k}.parquet", row_group_size=3)
        return [str(folder)]
    preds = tmp_path / "predictions.parquet"
    pq.write_table(cols(sample, "id", "lang", "prediction"), preds)
    refs = tmp_path / "references.parquet"
    if layout == "list":  # in another order than the predictions
        pq.write_table(cols(sample[::-1], "id", "references"), refs)
    else:  # rows: one reference a row
        pq.write_table(pa.table({"id": [r["id"] for r in sample for _ in r["references"]],
                                 "reference": [t for r in sample for t in r["references"]]}),
                       refs)
    return [str(preds), "--references", str(refs)]


@pytest.mark.parametrize("layout", ["inline", "inline-units", "list", "rows"])
def test_each_row_is_scored_in_its_language_in_every_layout(tmp_path, data, layout):
    sample, expected = data
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["score", *_inputs(tmp_path, sample, layout),
                                       "--output", str(out), "--metrics", ",".join(METRICS),
                                       "--language", "column:lang", "--stemmer", "language",
                                       "--group-by", "lang", "--bootstrap", "0"])
    assert result.exit_code == 0, result.output
    examples = pads.dataset(out / "examples").to_table().to_pylist()
    assert sorted(e["id"] for e in examples) == sorted(r["id"] for r in sample)
    language = {r["id"]: r["lang"] for r in sample}
    bad = [(e["id"], m) for e in examples for m in METRICS
           if tuple(e[f"{m}_{x}"] for x in MEASURES) != expected[(e["id"], m)]]
    assert bad == []
    assert all(e["lang"] == language[e["id"]] for e in examples)  # carried, groupable
    groups = pq.read_table(out / "aggregate.parquet").column("lang").to_pylist()
    assert set(LANGUAGES) <= set(groups)
