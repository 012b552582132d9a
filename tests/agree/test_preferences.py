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
