"""Clipped n-gram matches between two token-id sequences (ROUGE-N sufficient statistics).

Definition: Lin (2004), "ROUGE: A Package for Automatic Evaluation of Summaries", section 2;
code: rouge-score 0.1.2 ``rouge_scorer._score_ngrams`` (matches = sum over n-grams of
min(count in reference, count in prediction)).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _ngram_hash(tokens, start, n):
    h = np.uint64(1469598103934665603)
    for k in range(n):
        h = (h ^ np.uint64(tokens[start + k])) * np.uint64(1099511628211)
    return h ^ (h >> np.uint64(29))


@njit(cache=True, nogil=True)
def _same_ngram(tokens, a, b, n):
    for k in range(n):
        if tokens[a + k] != tokens[b + k]:
            return False
    return True


@njit(cache=True, nogil=True)
def ngram_matches(tokens, pred_start, pred_len, ref_start, ref_len, n, slot_pos, slot_cnt, used):
    """Count clipped n-gram matches between a prediction and a reference.

    Exact: n-grams are compared token by token, the hash only places them in the table.

    Args:
        tokens: int32 token ids of the whole batch, shape (T,).
        pred_start: start of the prediction in ``tokens``.
        pred_len: its length.
        ref_start: start of the reference in ``tokens``.
        ref_len: its length.
        n: n-gram order, >= 1.
        slot_pos: int64 scratch hash table, shape (C,), C a power of two >= 2 * ref n-grams,
            all entries -1 on entry and on return.
        slot_cnt: int32 scratch, shape (C,).
        used: int64 scratch, shape >= ref n-grams.

    Returns:
        Clipped matches, 0 <= matches <= min(prediction n-grams, reference n-grams).

    """
    n_ref = ref_len - n + 1
    n_pred = pred_len - n + 1
    if n_ref <= 0 or n_pred <= 0:
        return 0
    mask = np.uint64(slot_pos.shape[0] - 1)
    n_used = 0
    for p in range(ref_start, ref_start + n_ref):
        s = np.int64(_ngram_hash(tokens, p, n) & mask)
        while True:
            q = slot_pos[s]
            if q == -1:
                slot_pos[s] = p
                slot_cnt[s] = 1
                used[n_used] = s
                n_used += 1
                break
            if _same_ngram(tokens, q, p, n):
                slot_cnt[s] += 1
                break
            s = (s + 1) & np.int64(mask)
    matches = 0
    for p in range(pred_start, pred_start + n_pred):
        s = np.int64(_ngram_hash(tokens, p, n) & mask)
        while True:
            q = slot_pos[s]
            if q == -1:
                break
            if _same_ngram(tokens, q, p, n):
                if slot_cnt[s] > 0:
                    slot_cnt[s] -= 1
                    matches += 1
                break
            s = (s + 1) & np.int64(mask)
    for k in range(n_used):
        slot_pos[used[k]] = -1
    return matches


@njit(cache=True, nogil=True)
def bigram_matches(tokens, pred_start, pred_len, ref_start, ref_len, slot_key, slot_cnt, used):
    """:func:`ngram_matches` for n = 2, with each bigram packed into one exact 64-bit key.

    Args:
        tokens: int32 token ids of the whole batch, shape (T,), values < 2**31.
        pred_start: start of the prediction in ``tokens``.
        pred_len: its length.
        ref_start: start of the reference in ``tokens``.
        ref_len: its length.
        slot_key: int64 scratch hash table, shape (C,), C a power of two >= 2 * ref bigrams,
            all entries -1 on entry and on return.
        slot_cnt: int32 scratch, shape (C,).
        used: int64 scratch, shape >= ref bigrams.

    Returns:
        Clipped bigram matches.

    """
    n_ref = ref_len - 1
    n_pred = pred_len - 1
    if n_ref <= 0 or n_pred <= 0:
        return 0
    mask = slot_key.shape[0] - 1
    n_used = 0
    for p in range(ref_start, ref_start + n_ref):
        key = (np.int64(tokens[p]) << 32) | np.int64(tokens[p + 1])
        s = np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask
        while True:
            q = slot_key[s]
            if q == -1:
                slot_key[s] = key
                slot_cnt[s] = 1
                used[n_used] = s
                n_used += 1
                break
            if q == key:
                slot_cnt[s] += 1
                break
            s = (s + 1) & mask
    matches = 0
    for p in range(pred_start, pred_start + n_pred):
        key = (np.int64(tokens[p]) << 32) | np.int64(tokens[p + 1])
        s = np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask
        while True:
            q = slot_key[s]
            if q == -1:
                break
            if q == key:
                if slot_cnt[s] > 0:
                    slot_cnt[s] -= 1
                    matches += 1
                break
            s = (s + 1) & mask
    for k in range(n_used):
        slot_key[used[k]] = -1
    return matches
