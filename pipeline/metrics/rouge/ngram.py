"""Clipped n-gram matches between two token-id sequences (ROUGE-N sufficient statistics).

Definition: Lin (2004), "ROUGE: A Package for Automatic Evaluation of Summaries", section 2;
code: rouge-score 0.1.2 ``rouge_scorer._score_ngrams`` (matches = sum over n-grams of
min(count in reference, count in prediction)).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pipeline.metrics import hashing

# The shared hash-table kernels (pipeline.metrics.hashing), compiled as plain numba functions
# like their callers here and in pipeline.metrics.rouge155.skipgram.
_probe = njit(cache=True, nogil=True)(hashing.probe.py_func)
probe_key = njit(cache=True, nogil=True)(hashing.probe_key.py_func)
count_at = njit(cache=True, nogil=True)(hashing.count_at.py_func)
take_at = njit(cache=True, nogil=True)(hashing.take_at.py_func)
clear = njit(cache=True, nogil=True)(hashing.clear.py_func)


@njit(cache=True, nogil=True)
def unigram_matches(tokens, p_start, p_len, r_start, r_len, cnt):
    """Clipped unigram matches of two token spans by direct counting.

    Args:
        tokens: int32 token ids of the batch.
        p_start: start of the prediction in ``tokens``.
        p_len: its length.
        r_start: start of the reference.
        r_len: its length.
        cnt: int32 or int64 scratch indexed by token id, all 0 on entry and on return.

    Returns:
        Matches, 0 <= matches <= min(p_len, r_len).

    """
    for q in range(r_start, r_start + r_len):
        cnt[tokens[q]] += 1
    matches = 0
    for q in range(p_start, p_start + p_len):
        t = tokens[q]
        if cnt[t] > 0:
            cnt[t] -= 1
            matches += 1
    for q in range(r_start, r_start + r_len):
        cnt[tokens[q]] = 0
    return matches


@njit(cache=True, nogil=True)
def _ngram_hash(tokens, start, n):
    # FNV-1a over token ids (hashing.start_hash and extend_hash)
    h = np.uint64(1469598103934665603)
    for k in range(n):
        h = (h ^ np.uint64(tokens[start + k])) * np.uint64(1099511628211)
    return h


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
    mask = slot_pos.shape[0] - 1
    n_used = 0
    for p in range(ref_start, ref_start + n_ref):
        s = _probe(tokens, p, n - 1, _ngram_hash(tokens, p, n), slot_pos, None, mask)
        n_used = count_at(slot_pos, slot_cnt, used, n_used, s, p)
    matches = 0
    for p in range(pred_start, pred_start + n_pred):
        s = _probe(tokens, p, n - 1, _ngram_hash(tokens, p, n), slot_pos, None, mask)
        matches += take_at(slot_pos, slot_cnt, s)
    clear(slot_pos, used, n_used)
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
        s = probe_key(slot_key, key, _bigram_slot(key, mask), mask)
        n_used = count_at(slot_key, slot_cnt, used, n_used, s, key)
    matches = 0
    for p in range(pred_start, pred_start + n_pred):
        key = (np.int64(tokens[p]) << 32) | np.int64(tokens[p + 1])
        matches += take_at(slot_key, slot_cnt, probe_key(slot_key, key, _bigram_slot(key, mask),
                                                         mask))
    clear(slot_key, used, n_used)
    return matches


@njit(cache=True, nogil=True)
def _bigram_slot(key, mask):
    return np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask
