"""A small open-addressing table of n-grams (all orders at once) for one example at a time.

An entry is an n-gram by position: (start in the batch's token-id array, order), so n-grams
are compared id by id and any vocabulary size is exact; the hash only places them. BLEU and
chrF build it from an example's reference(s) and probe it with the prediction, so the table
stays small (in cache) whatever the batch size.
"""

from __future__ import annotations

import numpy as np

from pipeline.compiled import lazy_njit

_BASIS = np.uint64(1469598103934665603)
_PRIME = np.uint64(1099511628211)


@lazy_njit(cache=True, nogil=True)
def extend_hash(h, token):
    """The hash of an n-gram extended by one token (FNV-1a step over token ids)."""
    return (h ^ np.uint64(token)) * _PRIME


@lazy_njit(cache=True, nogil=True)
def start_hash():
    """The hash of the empty n-gram."""
    return _BASIS


@lazy_njit(cache=True, nogil=True)
def probe(ids, p, order, h, slot_pos, slot_order, mask):
    """The slot of the n-gram ``ids[p:p+order+1]``, or the empty slot where it would go.

    Args:
        ids: int32 token ids of the batch.
        p: start of the n-gram in ``ids``.
        order: n-gram order minus one (0 for unigrams).
        h: its hash (:func:`extend_hash` from :func:`start_hash` over its tokens).
        slot_pos: int64 (C,), C a power of two: start of the n-gram in a slot, -1 if empty.
        slot_order: int32 (C,): order minus one of the n-gram in a slot.
        mask: C - 1.

    Returns:
        A slot index s: ``slot_pos[s] == -1`` when the n-gram is not in the table.

    """
    s = np.int64((h ^ (h >> np.uint64(29))) & np.uint64(mask))
    while True:
        q = slot_pos[s]
        if q == -1:
            return s
        if slot_order[s] == order:
            same = True
            for k in range(order + 1):
                if ids[q + k] != ids[p + k]:
                    same = False
                    break
            if same:
                return s
        s = (s + 1) & mask


@lazy_njit(cache=True, nogil=True)
def table_mask(n_entries):
    """Mask (size - 1) of the smallest power-of-two table at most half full with n_entries."""
    size = 16
    while size < 2 * n_entries:
        size *= 2
    return size - 1


def ngram_count(length: int, max_order: int) -> int:
    """Number of n-grams of orders 1..max_order in a text of ``length`` tokens."""
    return sum(max(length - n, 0) for n in range(max_order))


__all__ = ["extend_hash", "ngram_count", "probe", "start_hash", "table_mask"]
