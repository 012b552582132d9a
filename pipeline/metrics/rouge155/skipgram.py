"""Skip-bigram kernels: ROUGE-S and ROUGE-SU sufficient statistics as ROUGE-1.5.5 counts them.

Definition: Lin (2004), "ROUGE: A Package for Automatic Evaluation of Summaries", section 5
(skip bigrams: any pair of tokens in sentence order, here with at most ``max_gap`` tokens
between them); code: ``ROUGE-1.5.5.pl`` ``createSkipBigram`` and ``skipBigramScore``. The
script counts skip bigrams over the whole text (across sentence boundaries) and clips matches
per distinct skip bigram: matches = sum over (a, b) of min(count in reference, count in
prediction). ROUGE-SU adds unigrams, but the script's loop stops one token early: the last
token's unigram is never counted, and a one-token text has no unit at all.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# ROUGE-1's clipped unigram matches and the shared hash-table kernels (compiled as plain numba
# functions, see pipeline.metrics.hashing)
from pipeline.metrics.rouge.ngram import clear, count_at, probe_key, take_at, unigram_matches


@njit(cache=True, nogil=True)
def skip_bigram_count(n_tokens, max_gap):
    """Number of skip bigrams of a text: pairs i < j with ``j - i - 1 <= max_gap``.

    Args:
        n_tokens: tokens in the text, >= 0.
        max_gap: most tokens allowed between the two (ROUGE-1.5.5 ``-2``); < 0: no limit.

    Returns:
        The count, ``n (n - 1) / 2`` without a limit.

    """
    if n_tokens < 2:
        return 0
    if max_gap < 0 or max_gap + 1 >= n_tokens - 1:
        return n_tokens * (n_tokens - 1) // 2
    span = max_gap + 1  # pairs per first token, while the text lasts
    full = n_tokens - span  # first tokens with all `span` partners
    return full * span + span * (span - 1) // 2


@njit(cache=True, nogil=True)
def _key_slot(key, mask):
    return np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(34)) & mask


@njit(cache=True, nogil=True)
def skip_bigram_matches_window(tokens, p_start, p_len, r_start, r_len, max_gap, slot_key,
                               slot_cnt, used):
    """Clipped skip-bigram matches with at most ``max_gap`` tokens between, in O(len * gap).

    Each skip bigram is packed into an exact 64-bit key; the reference's are counted in an
    open-addressing hash table, then the prediction's are taken from it while they last.

    Args:
        tokens: int32 token ids of the batch, values < 2**31.
        p_start: start of the prediction in ``tokens``.
        p_len: its length.
        r_start: start of the reference.
        r_len: its length.
        max_gap: most tokens between the two of a skip bigram, >= 0.
        slot_key: int64 scratch, shape (C,), C a power of two >= 2 * reference skip bigrams,
            all -1 on entry and on return.
        slot_cnt: int64 scratch, shape (C,).
        used: int64 scratch, shape >= reference skip bigrams.

    Returns:
        Matches, 0 <= matches <= min(skip bigrams of either text).

    """
    if p_len < 2 or r_len < 2:
        return 0
    mask = slot_key.shape[0] - 1
    n_used = 0
    for i in range(r_start, r_start + r_len - 1):
        hi = np.int64(tokens[i]) << 32
        for j in range(i + 1, min(i + max_gap + 2, r_start + r_len)):
            key = hi | np.int64(tokens[j])
            s = probe_key(slot_key, key, _key_slot(key, mask), mask)
            n_used = count_at(slot_key, slot_cnt, used, n_used, s, key)
    matches = 0
    for i in range(p_start, p_start + p_len - 1):
        hi = np.int64(tokens[i]) << 32
        for j in range(i + 1, min(i + max_gap + 2, p_start + p_len)):
            key = hi | np.int64(tokens[j])
            matches += take_at(slot_key, slot_cnt, probe_key(slot_key, key, _key_slot(key, mask),
                                                             mask))
    clear(slot_key, used, n_used)
    return matches


@njit(cache=True, nogil=True)
def skip_bigram_matches_all(tokens, p_start, p_len, r_start, r_len, flag, cnt_p, cnt_r,
                            common, touched):
    """Clipped skip-bigram matches without a gap limit, in linear memory.

    O(V_common * (p_len + r_len)) time and O(vocabulary) memory: the quadratic list of skip
    bigrams is never built.
    For each first token a found in both texts, one pass over each text counts, for every
    token b, the pairs (a, b) in order (the number of a's before each b), and the matches of
    a are the sum over b of the smaller count.

    Args:
        tokens: int32 token ids of the batch.
        p_start: start of the prediction.
        p_len: its length.
        r_start: start of the reference.
        r_len: its length.
        flag: int8 scratch indexed by token id, all 0 on entry and on return.
        cnt_p: int64 scratch indexed by token id, all 0 on entry and on return.
        cnt_r: int64 scratch indexed by token id, all 0 on entry and on return.
        common: int32 scratch, shape >= p_len.
        touched: int32 scratch, shape >= p_len.

    Returns:
        Matches, 0 <= matches <= min(skip bigrams of either text).

    """
    if p_len < 2 or r_len < 2:
        return 0
    for q in range(r_start, r_start + r_len):
        flag[tokens[q]] = 1
    n_common = 0
    for q in range(p_start, p_start + p_len):
        t = tokens[q]
        if flag[t] == 1:
            flag[t] = 2
            common[n_common] = t
            n_common += 1
    matches = 0
    for c in range(n_common):
        a = common[c]
        seen = 0
        n_touched = 0
        for q in range(p_start, p_start + p_len):
            t = tokens[q]
            if seen > 0:
                if cnt_p[t] == 0:
                    touched[n_touched] = t
                    n_touched += 1
                cnt_p[t] += seen
            if t == a:
                seen += 1
        seen = 0
        for q in range(r_start, r_start + r_len):
            t = tokens[q]
            if seen > 0:
                cnt_r[t] += seen
            if t == a:
                seen += 1
        for k in range(n_touched):
            t = touched[k]
            matches += min(cnt_p[t], cnt_r[t])
            cnt_p[t] = 0
        for q in range(r_start, r_start + r_len):
            cnt_r[tokens[q]] = 0
    for q in range(r_start, r_start + r_len):
        flag[tokens[q]] = 0
    return matches


@njit(cache=True, nogil=True)
def skip_bigram_pairs(tokens, text_offsets, pair_pred, pair_ref, max_gap, unigrams, vocab_size):
    """ROUGE-S / ROUGE-SU statistics of every (prediction, reference) pair of a batch.

    Args:
        tokens: int32 token ids of every text, shape (T,), values in ``[0, vocab_size)``.
        text_offsets: int64, shape (N + 1,), token range of each text.
        pair_pred: int64, shape (P,), text index of each pair's prediction.
        pair_ref: int64, shape (P,), text index of each pair's reference.
        max_gap: most tokens between the two of a skip bigram (``-2``); < 0: no limit.
        unigrams: ROUGE-SU: also count unigrams, those of all tokens but the last
            (ROUGE-1.5.5 ``-u``).
        vocab_size: number of distinct token ids.

    Returns:
        int64, shape (P, 3): matches, prediction units, reference units.

    Memory: O(longest text * (max_gap + 1)) with a gap limit, O(vocab_size) without.

    """
    n_pairs = pair_pred.shape[0]
    out = np.zeros((n_pairs, 3), dtype=np.int64)
    max_len = 1
    for t in range(text_offsets.shape[0] - 1):
        max_len = max(max_len, text_offsets[t + 1] - text_offsets[t])
    cap = 1
    if max_gap >= 0:
        while cap < 2 * skip_bigram_count(max_len, max_gap):
            cap *= 2
    slot_key = np.full(cap, -1, dtype=np.int64)
    slot_cnt = np.zeros(cap, dtype=np.int64)
    used = np.zeros(cap, dtype=np.int64)
    flag = np.zeros(vocab_size, dtype=np.int8)
    cnt_p = np.zeros(vocab_size, dtype=np.int64)
    cnt_r = np.zeros(vocab_size, dtype=np.int64)
    common = np.zeros(max_len, dtype=np.int32)
    touched = np.zeros(max_len, dtype=np.int32)
    for p in range(n_pairs):
        p_start = text_offsets[pair_pred[p]]
        p_len = text_offsets[pair_pred[p] + 1] - p_start
        r_start = text_offsets[pair_ref[p]]
        r_len = text_offsets[pair_ref[p] + 1] - r_start
        if max_gap >= 0:
            hits = skip_bigram_matches_window(tokens, p_start, p_len, r_start, r_len, max_gap,
                                              slot_key, slot_cnt, used)
        else:
            hits = skip_bigram_matches_all(tokens, p_start, p_len, r_start, r_len, flag,
                                           cnt_p, cnt_r, common, touched)
        p_units = skip_bigram_count(p_len, max_gap)
        r_units = skip_bigram_count(r_len, max_gap)
        if unigrams and p_len > 1 and r_len > 1:
            hits += unigram_matches(tokens, p_start, p_len - 1, r_start, r_len - 1, cnt_p)
        if unigrams:
            p_units += max(p_len - 1, 0)
            r_units += max(r_len - 1, 0)
        out[p, 0] = hits
        out[p, 1] = p_units
        out[p, 2] = r_units
    return out


__all__ = ["skip_bigram_count", "skip_bigram_matches_all", "skip_bigram_matches_window",
           "skip_bigram_pairs", "unigram_matches"]
