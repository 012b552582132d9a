"""The pairing of two runs by sorted ids equals pandas' outer merge, row for row and type for type.

Without group columns, compare pairs the runs by sorting both sides' ids together
(``pairing._id_order_join``) instead of ``DataFrame.merge(how="outer", sort=True)``; the oracle
here is that merge itself, on the same frames.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.compare import pairing
from pipeline.errors import InputError

TEXT_IDS = st.lists(st.text(max_size=4), unique=True, max_size=25)
INT_IDS = st.lists(st.integers(-2**63, 2**63 - 1), unique=True, max_size=25)


def _frame(ids, side: str, seed: int, *, with_int: bool) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"id": ids, f"{side}:rouge1_fmeasure": rng.random(len(ids))})
    if with_int:  # an integer statistics column (BLEU's counts are int64)
        frame[f"{side}:bleu_matches_1"] = rng.integers(0, 9, len(ids))
    return frame


def _merged(b: pd.DataFrame, c: pd.DataFrame) -> tuple[pd.DataFrame, ...]:
    merged = b.merge(c, on=["id"], how="outer", indicator=True, sort=True)
    side = merged.pop("_merge")
    return (merged[side == "both"].reset_index(drop=True),
            merged.loc[side == "left_only", ["id"]].reset_index(drop=True),
            merged.loc[side == "right_only", ["id"]].reset_index(drop=True))


def _check(ids_b, ids_c, data, make) -> None:
    with_int = data.draw(st.booleans())
    b = _frame(make(ids_b), "baseline", 1, with_int=with_int)
    c = _frame(make(ids_c), "candidate", 2, with_int=with_int)
    positions = pairing._id_order_join(b["id"], c["id"])
    assert positions is not None
    for ours, theirs in zip(pairing._take_joined(b, c, ["id"], positions), _merged(b, c),
                            strict=True):
        pd.testing.assert_frame_equal(ours, theirs, check_dtype=True)


@settings(max_examples=80, deadline=None)
@given(ids_b=TEXT_IDS, ids_c=TEXT_IDS, shared=st.lists(st.text(max_size=4), max_size=10),
       data=st.data())
def test_string_ids_pair_as_the_merge_does(ids_b, ids_c, shared, data):
    """Any Unicode ids (ordered by code point as the merge orders them), some shared."""
    ids_b = list(dict.fromkeys(ids_b + shared))
    ids_c = list(dict.fromkeys(shared + ids_c))
    cut = data.draw(st.integers(0, 3))

    def make(ids):  # as read from several files: an Arrow column of several chunks
        chunks = pa.chunked_array([ids[:cut], ids[cut:]], pa.large_string())
        return pa.table({"id": chunks}).to_pandas()["id"]

    _check(ids_b, ids_c, data, make)


@settings(max_examples=50, deadline=None)
@given(ids_b=INT_IDS, ids_c=INT_IDS, shared=st.lists(st.integers(-5, 5), max_size=6),
       data=st.data())
def test_integer_ids_pair_as_the_merge_does(ids_b, ids_c, shared, data):
    ids_b = list(dict.fromkeys(ids_b + shared))
    ids_c = list(dict.fromkeys(shared + ids_c))
    _check(ids_b, ids_c, data, lambda ids: np.array(ids, dtype=np.int64))


def test_hand_made_pairing():
    """b, a, c against c, d, a: pairs a and c in id order, b only in the baseline, d only in
    the candidate (rows by position in each run)."""
    b_pos, c_pos, b_only, c_only = pairing._id_order_join(
        pd.Series(["b", "a", "c"], dtype="str"), pd.Series(["c", "d", "a"], dtype="str"))
    assert b_pos.tolist() == [1, 2] and c_pos.tolist() == [2, 0]
    assert b_only.tolist() == [0] and c_only.tolist() == [1]


@pytest.mark.parametrize("b_ids, c_ids", [
    (pd.Series(["a", "b"], dtype="str"), pd.Series([1, 2])),        # types differ
    (pd.Series(["a", "a"], dtype="str"), pd.Series(["a"], dtype="str")),  # a repeat
    (pd.Series(["a", None], dtype="str"), pd.Series(["a"], dtype="str")),  # a null
    (pd.Series(["a"], dtype=object), pd.Series(["a"], dtype=object)),  # Python objects
])
def test_other_ids_are_left_to_the_merge(b_ids, c_ids):
    assert pairing._id_order_join(b_ids, c_ids) is None


def test_a_repeated_id_is_still_named():
    """The sorted pairing declines a run that repeats an id; the check then names it."""
    frame = pd.DataFrame({"id": pd.array(["x", "y", "x"], dtype="str"),
                          "rouge1_fmeasure": [0.1, 0.2, 0.3]})
    other = frame.iloc[:2].reset_index(drop=True)
    with pytest.raises(InputError, match="same key.*id x"):
        pairing.compare_examples(frame, other, measures=["rouge1.fmeasure"])
