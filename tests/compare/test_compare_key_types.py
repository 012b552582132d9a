"""Id or group columns of different types in the two runs (issue 25, item 22).

compare (and report, which compares) ended with pandas' "If you wish to proceed you should
use pd.concat" advice; now one line names each key column and its type in both runs, before
anything is paired, on every engine and from Python.
"""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline import api
from pipeline.compare import compare_examples
from pipeline.config import ScoreConfig
from pipeline.errors import InputError
from tests.support.hostile_runs import invoke, one_line_error

TEXTS = ["the cat sat on the mat", "a dog ran in the park", "birds fly south", "it rains"]
REFS = [["the cat is on the mat"], ["the dog ran"], ["birds fly"], ["it will rain"]]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three runs of four examples grouped by ``grp``: integer ids and groups (``ints``),
    string ids (``str_ids``), string groups (``str_groups``)."""
    root = tmp_path_factory.mktemp("key-types")
    out = {}
    for name, ids, groups in (("ints", [1, 2, 3, 4], [1, 1, 2, 2]),
                              ("str_ids", ["1", "2", "3", "4"], [1, 1, 2, 2]),
                              ("str_groups", [1, 2, 3, 4], ["1", "1", "2", "2"])):
        path = root / f"{name}.parquet"
        pd.DataFrame({"id": ids, "grp": groups, "prediction": TEXTS,
                      "references": REFS}).to_parquet(path)
        api.score(str(path), output=str(root / name), run_id=name,
                  config=ScoreConfig(engine="local", metrics=("rouge1",), bootstrap=10,
                                     group_by=("grp",)))
        out[name] = root / name
    return out


@pytest.mark.parametrize("engine", ["local", "auto"])
@pytest.mark.parametrize("other,named", [
    ("str_ids", "id is int64 in the baseline and string in the candidate"),
    ("str_groups", "grp is int64 in the baseline and string in the candidate")])
def test_key_columns_of_other_types_are_named(runs, tmp_path, engine, other, named):
    result = invoke("compare", runs["ints"], runs[other], "--engine", engine,
                    "--output", tmp_path / "cmp")
    assert result.exit_code == 2
    line = one_line_error(result)
    assert named in line, line
    assert "pd.concat" not in line
    assert not (tmp_path / "cmp").exists()


def test_report_names_them_too(runs, tmp_path):
    result = invoke("report", runs["str_ids"], "--baseline", runs["ints"],
                    "--output", tmp_path / "r.html")
    assert result.exit_code == 2
    assert "id is int64 in the baseline and string in the candidate" in one_line_error(result)


def test_from_python_frames(runs):
    base = pd.DataFrame({"id": [1, 2], "g": ["a", "b"], "m_x": [0.1, 0.2]})
    cand = pd.DataFrame({"id": ["1", "2"], "g": ["a", "b"], "m_x": [0.1, 0.3]})
    with pytest.raises(InputError, match="id is int64 in the baseline and string in the "
                                         "candidate"):
        compare_examples(base, cand, measures=["m.x"], group_columns=("g",))
    # integers and floats pair by value, as before
    same = compare_examples(base, cand.assign(id=[1.0, 2.0]), measures=["m.x"],
                            group_columns=("g",))
    assert same.n_paired == 2
