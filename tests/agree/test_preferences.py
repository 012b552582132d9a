"""Pairwise preferences: agreement with the raters' majority, counted by hand."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.agree.preferences import majority, read_counts
from pipeline.cli import main
from pipeline.errors import InputError

SCORES = {"e0": 5.0, "e1": 3.0, "e2": 1.0, "e3": 2.0, "e4": 4.0, "e5": 4.0}
VOTES = [("e0", "e1", "a"), ("e0", "e1", "a"), ("e0", "e1", "b"),
         ("e2", "e3", "b"), ("e2", "e3", "b"), ("e2", "e3", "b"),
         ("e4", "e5", "a"), ("e4", "e5", "tie"),
         ("e0", "e3", "b"), ("e0", "e3", "b"), ("e0", "e3", "a")]


def test_majority_with_ties():
    import numpy as np

    assert majority(np.array([[2, 1, 0], [1, 0, 1], [0, 0, 0], [0, 1, 3]])).tolist() == \
        [0, 2, -1, 2]


def test_agreement_by_hand(tmp_path):
    pd.DataFrame({"id": list(SCORES), "m": list(SCORES.values())}).to_parquet(
        tmp_path / "s.parquet")
    pd.DataFrame({"id": list(SCORES), "system": ["x", "y", "z", "x", "y", "z"],
                  "input": ["1", "1", "1", "2", "2", "2"],
                  "h": [3, 2, 1, 2, 3, 1.0]}).to_parquet(tmp_path / "j.parquet")
    pd.DataFrame(VOTES, columns=["id_a", "id_b", "choice"]).to_csv(tmp_path / "p.csv",
                                                                   index=False)
    r = CliRunner().invoke(main, ["agree", str(tmp_path / "s.parquet"), "--judgments",
                                  str(tmp_path / "j.parquet"), "--preferences",
                                  str(tmp_path / "p.csv"), "--format", "json",
                                  "--n-resamples", "200", "--n-permutations", "0"])
    assert r.exit_code == 0, r.output
    (p,) = json.loads(r.stdout)["preferences"]
    # pairs: a/a (agree), b/b (agree), tie/tie (agree), b/a (disagree)
    assert p["n_pairs"] == 4 and p["agreement"] == pytest.approx(0.75)
    # leave-one-out: only the three votes of the unanimous pair match the others' majority
    assert p["rater_agreement"] == pytest.approx(3 / 11)
    assert (p["majority_a"], p["majority_b"], p["majority_tie"]) == (0.25, 0.5, 0.25)
    assert 0 <= p["low"] <= 0.75 <= p["high"] <= 1 and p["chance"] == 0.5


def test_bad_choice_names_the_pair():
    frame = pd.DataFrame([("e0", "e1", "left")], columns=["id_a", "id_b", "choice"])
    with pytest.raises(InputError, match="'e0', 'e1'"):
        read_counts(frame, name="p.csv")


def _files(tmp_path):
    pd.DataFrame({"id": list(SCORES), "m": list(SCORES.values())}).to_parquet(
        tmp_path / "s.parquet")
    pd.DataFrame({"id": list(SCORES), "system": ["x", "y", "z", "x", "y", "z"],
                  "input": ["1", "1", "1", "2", "2", "2"],
                  "h": [3, 2, 1, 2, 3, 1.0]}).to_parquet(tmp_path / "j.parquet")


def _agree(tmp_path, preferences):
    return CliRunner().invoke(main, ["agree", str(tmp_path / "s.parquet"), "--judgments",
                                     str(tmp_path / "j.parquet"), "--preferences",
                                     str(preferences), "--format", "json",
                                     "--n-resamples", "200", "--n-permutations", "0"])


def test_counts_per_pair_give_what_one_row_per_rater_gives(tmp_path):
    _files(tmp_path)
    votes = pd.DataFrame(VOTES, columns=["id_a", "id_b", "choice"])
    votes.to_csv(tmp_path / "p.csv", index=False)
    counts = (votes.assign(n=1).pivot_table(index=["id_a", "id_b"], columns="choice",
                                             values="n", aggfunc="sum", fill_value=0)
              .reindex(columns=["a", "b", "tie"], fill_value=0)
              .rename(columns={"a": "n_a", "b": "n_b", "tie": "n_tie"}).reset_index())
    counts.to_parquet(tmp_path / "c.parquet")
    (per_rater,) = json.loads(_agree(tmp_path, tmp_path / "p.csv").stdout)["preferences"]
    r = _agree(tmp_path, tmp_path / "c.parquet")
    assert r.exit_code == 0, r.output
    (per_pair,) = json.loads(r.stdout)["preferences"]
    for key in ("n_pairs", "agreement", "rater_agreement", "majority_a", "majority_b",
                "majority_tie"):
        assert per_pair[key] == pytest.approx(per_rater[key]), key
    assert per_pair["agreement"] == pytest.approx(0.75)


@pytest.mark.parametrize("rows, needle", [
    ([("e0", "nope", "a")], "'nope'"),
    ([("e0", "e1", "left")], "'left'"),
])
def test_bad_preferences_are_one_line_and_exit_2(tmp_path, rows, needle):
    _files(tmp_path)
    pd.DataFrame(rows, columns=["id_a", "id_b", "choice"]).to_csv(tmp_path / "p.csv",
                                                                  index=False)
    r = _agree(tmp_path, tmp_path / "p.csv")
    assert r.exit_code == 2 and needle in r.output
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output
