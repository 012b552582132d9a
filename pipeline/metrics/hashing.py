"""Open-addressing hash tables for one example at a time: the metrics' one probe loop.

An n-gram entry is an n-gram by position: (start in the batch's token-id array, order), so
n-grams are compared id by id and any vocabulary size is exact; the hash only places them
(:func:`probe`). BLEU and chrF keep all orders in one table, ROUGE-N one order
(``order_of_slot`` None). A key entry is an exact int64 key, e.g. a bigram or a skip bigram
packed into 64 bits (:func:`probe_key`; ROUGE-2, ROUGE-S/SU). A family builds a table from an
example's reference(s) and probes it with the prediction, so it stays small (in cache)
whatever the batch size. Counts are exact whatever the hash: it only decides where an entry
sits.

The kernels here are compiled lazily (BLEU's and chrF's modules import no numba); a module of
plain ``numba.njit`` kernels compiles the same functions with ``njit(...)(probe.py_func)``.
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
        slot_order: int32 (C,): order minus one of the n-gram in a slot; None when every
            n-gram of the table has this order.
        mask: C - 1.

    Returns:
        A slot index s: ``slot_pos[s] == -1`` when the n-gram is not in the table.

    """
    s = np.int64((h ^ (h >> np.uint64(29))) & np.uint64(mask))
    while True:
        q = slot_pos[s]
        if q == -1:
            return s
        if slot_order is None or slot_order[s] == order:
            same = True
            for k in range(order + 1):
                if ids[q + k] != ids[p + k]:
                    same = False
                    break
            if same:
                return s
        s = (s + 1) & mask


@lazy_njit(cache=True, nogil=True)
def probe_key(slot_key, key, s, mask):
    """The slot of an int64 ``key`` (>= 0), or the empty slot where it would go.

    Args:
        slot_key: int64 (C,), C a power of two: the key in a slot, -1 if empty.
        key: the key.
        s: its home slot, in [0, C) (the caller's hash of the key).
        mask: C - 1.

    Returns:
        A slot index s: ``slot_key[s] == -1`` when the key is not in the table.

    """
    while True:
        q = slot_key[s]
        if q == -1 or q == key:
            return s
        s = (s + 1) & mask


@lazy_njit(cache=True, nogil=True)
def count_at(slots, counts, used, n_used, s, value):
    """Count one more of the entry probed at slot ``s``, adding it there when the slot is empty.

    Args:
        slots: int64 (C,): the table's entries (-1: empty).
        counts: int (C,): occurrences per slot.
        used: int64 scratch: the slots filled so far, in order (for :func:`clear`).
        n_used: how many of ``used`` are set.
        s: the slot :func:`probe` or :func:`probe_key` returned for the entry.
        value: the entry (an n-gram's start, or a key).

    Returns:
        The new ``n_used``.

    """
    if slots[s] == -1:
        slots[s] = value
        counts[s] = 1
        used[n_used] = s
        return n_used + 1
    counts[s] += 1
    return n_used


@lazy_njit(cache=True, nogil=True)
def take_at(slots, counts, s):
    """1 when the entry probed at slot ``s`` has an occurrence left (taking it), else 0.

    A clipped match: each reference occurrence matches at most one prediction occurrence.
    """
    if slots[s] != -1 and counts[s] > 0:
        counts[s] -= 1
        return 1
    return 0


@lazy_njit(cache=True, nogil=True)
def clear(slots, used, n_used):
    """Empty the ``n_used`` slots listed in ``used`` (the table is then all -1 again)."""
    for k in range(n_used):
        slots[used[k]] = -1


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


__all__ = ["clear", "count_at", "extend_hash", "ngram_count", "probe", "probe_key", "start_hash",
           "table_mask", "take_at"]
