"""The batch kernel: sufficient statistics for every (prediction, reference) pair at once.

Metric codes in ``orders``: ``n`` in 1..9 is rouge{n}; :data:`ROUGE_L` is rougeL (one LCS
over the whole texts); :data:`ROUGE_LSUM` is rougeLsum (union LCS per reference line,
clipped by token counts, rouge-score 0.1.2 ``_summary_level_lcs``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pipeline.metrics.lcs import FULL_TABLE_MAX_CELLS, lcs_length, lcs_mark
from pipeline.metrics.ngram import ngram_matches

ROUGE_L = 0
ROUGE_LSUM = -1


@njit(cache=True, nogil=True)
def _text_span(line_offsets, text_line_offsets, text):
    start = line_offsets[text_line_offsets[text]]
    return start, line_offsets[text_line_offsets[text + 1]] - start


@njit(cache=True, nogil=True)
def _summary_level_hits(tokens, line_offsets, text_line_offsets, pred, ref,
                        cnt_pred, cnt_ref, mark, tab):
    p_start, p_len = _text_span(line_offsets, text_line_offsets, pred)
    r_start, r_len = _text_span(line_offsets, text_line_offsets, ref)
    if p_len == 0 or r_len == 0:
        return 0
    for q in range(p_start, p_start + p_len):
        cnt_pred[tokens[q]] += 1
    for q in range(r_start, r_start + r_len):
        cnt_ref[tokens[q]] += 1
    hits = 0
    for rl in range(text_line_offsets[ref], text_line_offsets[ref + 1]):
        a_start = line_offsets[rl]
        a_len = line_offsets[rl + 1] - a_start
        if a_len == 0:
            continue
        for i in range(a_len):
            mark[i] = False
        for pl in range(text_line_offsets[pred], text_line_offsets[pred + 1]):
            b_start = line_offsets[pl]
            b_len = line_offsets[pl + 1] - b_start
            lcs_mark(tokens, a_start, a_len, b_start, b_len, mark, tab)
        for i in range(a_len):
            if mark[i]:
                t = tokens[a_start + i]
                if cnt_pred[t] > 0 and cnt_ref[t] > 0:
                    hits += 1
                    cnt_pred[t] -= 1
                    cnt_ref[t] -= 1
    for q in range(p_start, p_start + p_len):
        cnt_pred[tokens[q]] = 0
    for q in range(r_start, r_start + r_len):
        cnt_ref[tokens[q]] = 0
    return hits


@njit(cache=True, nogil=True)
def score_pairs(tokens, line_offsets, text_line_offsets, pair_pred, pair_ref, orders,
                vocab_size):
    """Sufficient statistics of every metric for every (prediction, reference) pair.

    Args:
        tokens: int32 token ids, shape (T,), values in ``[0, vocab_size)``.
        line_offsets: int64, shape (L + 1,), token range of each line.
        text_line_offsets: int64, shape (N + 1,), line range of each text.
        pair_pred: int64, shape (P,), text index of each pair's prediction.
        pair_ref: int64, shape (P,), text index of each pair's reference.
        orders: int64, shape (K,), metric codes (see module docstring).
        vocab_size: number of distinct token ids.

    Returns:
        int64 array, shape (P, K, 3): matches, prediction units, reference units, with
        0 <= matches <= min(units). Units are n-grams for rougeN and tokens for rougeL/Lsum.
    """
    n_pairs = pair_pred.shape[0]
    n_metrics = orders.shape[0]
    out = np.zeros((n_pairs, n_metrics, 3), dtype=np.int64)
    max_len = 1
    max_line = 1
    n_texts = text_line_offsets.shape[0] - 1
    for t in range(n_texts):
        s, ln = _text_span(line_offsets, text_line_offsets, t)
        if ln > max_len:
            max_len = ln
    for line in range(line_offsets.shape[0] - 1):
        ln = line_offsets[line + 1] - line_offsets[line]
        if ln > max_line:
            max_line = ln
    cap = 1
    while cap < 2 * max_len:
        cap *= 2
    slot_pos = np.full(cap, -1, dtype=np.int64)
    slot_cnt = np.zeros(cap, dtype=np.int32)
    used = np.zeros(max_len, dtype=np.int64)
    row = np.zeros(max_len + 1, dtype=np.int32)
    need_lsum = False
    for k in range(n_metrics):
        if orders[k] == ROUGE_LSUM:
            need_lsum = True
    if need_lsum:
        cnt_pred = np.zeros(vocab_size, dtype=np.int32)
        cnt_ref = np.zeros(vocab_size, dtype=np.int32)
        mark = np.zeros(max_line, dtype=np.bool_)
        tab = np.zeros(min(FULL_TABLE_MAX_CELLS, (max_line + 1) * (max_line + 1)),
                       dtype=np.int32)
    else:
        cnt_pred = np.zeros(1, dtype=np.int32)
        cnt_ref = np.zeros(1, dtype=np.int32)
        mark = np.zeros(1, dtype=np.bool_)
        tab = np.zeros(1, dtype=np.int32)
    for p in range(n_pairs):
        pred = pair_pred[p]
        ref = pair_ref[p]
        p_start, p_len = _text_span(line_offsets, text_line_offsets, pred)
        r_start, r_len = _text_span(line_offsets, text_line_offsets, ref)
        for k in range(n_metrics):
            code = orders[k]
            if code >= 1:
                out[p, k, 0] = ngram_matches(tokens, p_start, p_len, r_start, r_len, code,
                                             slot_pos, slot_cnt, used)
                out[p, k, 1] = max(p_len - code + 1, 0)
                out[p, k, 2] = max(r_len - code + 1, 0)
            else:
                if code == ROUGE_L:
                    # rouge-score's table has reference rows and prediction columns.
                    out[p, k, 0] = lcs_length(tokens, r_start, r_len, p_start, p_len, row)
                else:
                    out[p, k, 0] = _summary_level_hits(
                        tokens, line_offsets, text_line_offsets, pred, ref,
                        cnt_pred, cnt_ref, mark, tab)
                out[p, k, 1] = p_len
                out[p, k, 2] = r_len
    return out
