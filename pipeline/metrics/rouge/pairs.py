"""The batch kernel: sufficient statistics for every (prediction, reference) pair at once.

Metric codes in ``orders``: ``n`` in 1..9 is rouge{n}; :data:`ROUGE_L` is rougeL (one LCS
over the whole texts); :data:`ROUGE_LSUM` is rougeLsum (union LCS per reference line,
clipped by token counts, rouge-score 0.1.2 ``_summary_level_lcs``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pipeline.metrics.rouge.lcs import (
    BIT_WORDS_MAX,
    build_long_masks,
    build_masks,
    clear_masks,
    lcs_lanes_unigrams,
    lcs_length_bits,
    lcs_length_bits2,
    lcs_length_long,
    lcs_length_unigrams,
    lcs_mark_bits,
    lcs_mark_bits1,
    lcs_mark_bits_ckpt,
    lcs_mark_long,
    union_lcs_marks_lanes,
    union_lcs_marks_lanes2,
)
from pipeline.metrics.rouge.ngram import bigram_matches, ngram_matches, unigram_matches

ROUGE_L = 0
ROUGE_LSUM = -1
# Bit rows of one reference line x prediction line kept whole (2 MiB); past it the rows
# are checkpointed (lcs_mark_bits_ckpt).
ROW_WORDS_MAX = 1 << 18


@njit(cache=True, nogil=True)
def _text_span(line_offsets, text_line_offsets, text):
    start = line_offsets[text_line_offsets[text]]
    return start, line_offsets[text_line_offsets[text + 1]] - start


@njit(cache=True, nogil=True)
def _one_line(line_offsets, text_line_offsets, text):
    """True when exactly one line of the text has tokens."""
    first = text_line_offsets[text]
    last = text_line_offsets[text + 1]
    if last - first == 1:  # no newline: the common case of a one-line text
        return line_offsets[first + 1] > line_offsets[first]
    n = 0
    for line in range(first, last):
        if line_offsets[line + 1] > line_offsets[line]:
            n += 1
            if n > 1:
                return False
    return n == 1



@njit(cache=True, nogil=True)
def _summary_level_hits(tokens, line_offsets, text_line_offsets, pred, ref, cnt_pred, mark,
                        loc, lmasks, rows, built, pmasks):
    """rouge-score ``_summary_level_lcs`` hits: union LCS per reference line, clipped.

    ``built``: ``loc`` and ``pmasks`` hold the whole prediction's masks already (rougeL's,
    of at most two words), which the lanes then use as they are; they are left built, and
    the second value returned says whether they still are (False once they are cleared).
    """
    p_start, p_len = _text_span(line_offsets, text_line_offsets, pred)
    r_start, r_len = _text_span(line_offsets, text_line_offsets, ref)
    if p_len == 0 or r_len == 0:
        return 0, built
    for q in range(r_len):
        mark[q] = False
    n_words = (p_len + 63) >> 6  # <= 2 when built (its caller builds at most 128 tokens)
    if built or (n_words <= 2 and lmasks.shape[1] >= n_words
                 and lmasks.shape[0] >= min(p_len, loc.shape[0])):
        # the whole prediction in one or two words, a lane of bits per line
        wmasks = pmasks if built else lmasks
        if not built:
            build_masks(tokens, p_start, p_len, loc, lmasks)
        for rl in range(text_line_offsets[ref], text_line_offsets[ref + 1]):
            a_start = line_offsets[rl]
            a_len = line_offsets[rl + 1] - a_start
            if a_len == 0:
                continue
            if n_words * (a_len + 1) > rows.shape[0]:
                break
            off = a_start - r_start
            if n_words == 1:
                union_lcs_marks_lanes(tokens, a_start, a_len, line_offsets,
                                      text_line_offsets[pred], text_line_offsets[pred + 1],
                                      p_start, loc, wmasks, rows, mark[off:off + a_len])
            else:
                union_lcs_marks_lanes2(tokens, a_start, a_len, line_offsets,
                                       text_line_offsets[pred], text_line_offsets[pred + 1],
                                       p_start, loc, wmasks, rows, mark[off:off + a_len])
        else:
            if not built:
                clear_masks(tokens, p_start, p_len, loc)
            return _clipped_hits(tokens, p_start, p_len, r_start, r_len, cnt_pred, mark), built
        # a reference line too long for `rows`: start over line by line below
        clear_masks(tokens, p_start, p_len, loc)
        built = False
        for q in range(r_len):
            mark[q] = False
    if _one_line(line_offsets, text_line_offsets, pred) \
            and _one_line(line_offsets, text_line_offsets, ref) and p_len > lmasks.shape[1] * 64:
        # One line with tokens each, too long for the whole masks: the union is one LCS,
        # whose marks are never clipped (each token is on it at most as often as on either
        # side), so the hits are the LCS length.
        long_masks = build_long_masks(tokens, p_start, p_len, loc)
        hits = lcs_length_long(tokens, r_start, r_len, p_len, loc, long_masks)
        clear_masks(tokens, p_start, p_len, loc)
        return hits, False
    # The union over prediction lines does not depend on their order, so each prediction
    # line's masks are built once and used against every reference line.
    for pl in range(text_line_offsets[pred], text_line_offsets[pred + 1]):
        b_start = line_offsets[pl]
        b_len = line_offsets[pl + 1] - b_start
        if b_len == 0:
            continue
        n_words = (b_len + 63) >> 6
        if min(b_len, loc.shape[0]) > lmasks.shape[0] or n_words > lmasks.shape[1]:
            _mark_long_line(tokens, line_offsets, text_line_offsets, ref, r_start, b_start,
                            b_len, loc, mark)
            continue
        build_masks(tokens, b_start, b_len, loc, lmasks)
        for rl in range(text_line_offsets[ref], text_line_offsets[ref + 1]):
            a_start = line_offsets[rl]
            a_len = line_offsets[rl + 1] - a_start
            if a_len == 0:
                continue
            off = a_start - r_start
            if n_words == 1 and a_len < rows.shape[0]:
                lcs_mark_bits1(tokens, a_start, a_len, b_start, b_len, loc, lmasks, rows,
                               mark[off:off + a_len])
            elif (a_len + 1) * n_words <= rows.shape[0]:
                lcs_mark_bits(tokens, a_start, a_len, b_start, b_len, loc, lmasks, rows,
                              mark[off:off + a_len])
            else:
                lcs_mark_bits_ckpt(tokens, a_start, a_len, b_start, b_len, loc, lmasks,
                                   mark[off:off + a_len])
        clear_masks(tokens, b_start, b_len, loc)
    return _clipped_hits(tokens, p_start, p_len, r_start, r_len, cnt_pred, mark), False


@njit(cache=True, nogil=True)
def _mark_long_line(tokens, line_offsets, text_line_offsets, ref, r_start, b_start, b_len, loc,
                    mark):
    """Mark the LCS of one long prediction line with every reference line (linear memory)."""
    long_masks = build_long_masks(tokens, b_start, b_len, loc)
    for rl in range(text_line_offsets[ref], text_line_offsets[ref + 1]):
        a_start = line_offsets[rl]
        a_len = line_offsets[rl + 1] - a_start
        if a_len:
            off = a_start - r_start
            lcs_mark_long(tokens, a_start, a_len, b_start, b_len, loc, long_masks,
                          mark[off:off + a_len])
    clear_masks(tokens, b_start, b_len, loc)


@njit(cache=True, nogil=True)
def _clipped_hits(tokens, p_start, p_len, r_start, r_len, cnt_pred, mark):
    """Count marked reference tokens in order, each only while both sides have it left.

    rouge-score also counts the reference's tokens down, but each reference position is
    marked at most once, so a token's marks never outnumber its reference count: only the
    prediction's count can run out.
    """
    for q in range(p_start, p_start + p_len):
        cnt_pred[tokens[q]] += 1
    hits = 0
    for q in range(r_len):
        if mark[q]:
            t = tokens[r_start + q]
            if cnt_pred[t] > 0:
                hits += 1
                cnt_pred[t] -= 1
    for q in range(p_start, p_start + p_len):
        cnt_pred[tokens[q]] = 0
    return hits


@njit(cache=True, nogil=True)
def _bit_scratch(max_rows, max_cols):
    """A (rows, words) uint64 array for whole masks of sequences up to max_cols long.

    ``max_rows`` bounds the distinct tokens of such a sequence (its length, or the
    vocabulary size when smaller). When that would pass ``BIT_WORDS_MAX`` words, the
    columns are cut to what fits (at least 1 word); longer sequences take the linear-memory
    kernels (:func:`~pipeline.metrics.rouge.lcs.lcs_length_long`, ``lcs_mark_long``).
    """
    n_words = max((max_cols + 63) >> 6, 1)
    while min(max_rows, n_words * 64) * n_words > BIT_WORDS_MAX:
        n_words //= 2
    return np.zeros((max(min(max_rows, n_words * 64), 1), n_words), dtype=np.uint64)


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

    Memory: scratch proportional to the longest text, plus bit tables of at most
    ``BIT_WORDS_MAX`` words; texts whose whole masks would pass it take the linear-memory
    bit kernels. Time: O(n * m / 64) per LCS of n and m tokens.

    """
    n_pairs = pair_pred.shape[0]
    n_metrics = orders.shape[0]
    out = np.zeros((n_pairs, n_metrics, 3), dtype=np.int64)
    max_len = 1
    max_line = 1
    for t in range(text_line_offsets.shape[0] - 1):
        s, ln = _text_span(line_offsets, text_line_offsets, t)
        max_len = max(max_len, ln)
    for line in range(line_offsets.shape[0] - 1):
        max_line = max(max_line, line_offsets[line + 1] - line_offsets[line])
    need_l = False
    need_lsum = False
    cap = 1
    for k in range(n_metrics):
        need_l = need_l or orders[k] == ROUGE_L
        need_lsum = need_lsum or orders[k] == ROUGE_LSUM
        if orders[k] >= 2:
            while cap < 2 * max_len:
                cap *= 2
    slot_pos = np.full(cap, -1, dtype=np.int64)
    slot_cnt = np.zeros(cap, dtype=np.int32)
    used = np.zeros(max_len, dtype=np.int64)
    cnt_pred = np.zeros(vocab_size, dtype=np.int32)
    cnt_ref = np.zeros(vocab_size, dtype=np.int32)  # rouge1's reference counts
    loc = np.full(vocab_size, -1, dtype=np.int32)
    masks = _bit_scratch(min(max_len, vocab_size) if need_l else 0, max_len)
    v = np.zeros(masks.shape[1], dtype=np.uint64)
    if need_lsum:
        lane_cols = max(max_line, min(max_len, 128))  # whole predictions of <= 128 tokens
        lmasks = _bit_scratch(min(lane_cols, vocab_size), lane_cols)
        n_line_words = (max_line + 63) >> 6
        # whole bit tables up to ROW_WORDS_MAX words; longer lines are checkpointed
        rows = np.zeros(min((max_line + 1) * max(n_line_words, 2), ROW_WORDS_MAX),
                        dtype=np.uint64)
        mark = np.zeros(max_len, dtype=np.bool_)
    else:
        lmasks = np.zeros((1, 1), dtype=np.uint64)
        rows = np.zeros(1, dtype=np.uint64)
        mark = np.zeros(1, dtype=np.bool_)
    masked = -1  # the prediction whose whole-text masks are in `masks`
    masked_start = 0
    masked_len = 0
    masked_rows = 0
    # rouge1, rouge2 or rougeLsum asked with rougeL: for a prediction of at most 128 tokens,
    # rouge1's and rouge2's matches come from rougeL's pass over the reference
    # (lcs_length_unigrams), and so do rougeLsum's lanes (lcs_lanes_unigrams)
    need_1 = False
    need_2 = False
    for k in range(n_metrics):
        need_1 = need_1 or orders[k] == 1
        need_2 = need_2 or orders[k] == 2
    fuse = (need_1 or need_2 or need_lsum) and need_l
    # rougeLsum's lanes in the same pass too (lcs_lanes_unigrams) when every line fits `rows`
    lanes = need_lsum and 2 * (max_line + 1) <= rows.shape[0]
    seen = np.zeros(masks.shape[0] if fuse else 1, dtype=np.int32)  # lcs_length_unigrams'
    bi_cnt = np.zeros(128 * 128 if fuse and need_2 else 1, dtype=np.int32)
    bi_keys = np.zeros(max_len if fuse and need_2 else 1, dtype=np.int64)
    for p in range(n_pairs):
        pred = pair_pred[p]
        ref = pair_ref[p]
        p_start, p_len = _text_span(line_offsets, text_line_offsets, pred)
        r_start, r_len = _text_span(line_offsets, text_line_offsets, ref)
        lcs_len = -1  # the pair's LCS length once rougeL has computed it
        lsum_hits = -1  # rougeLsum's hits when taken in rougeL's pass
        fused = fuse and 0 < p_len <= 128 and min(p_len, vocab_size) <= masks.shape[0] \
            and (p_len + 63) >> 6 <= masks.shape[1]
        if fused:
            if masked != pred:
                if masked >= 0:
                    clear_masks(tokens, masked_start, masked_len, loc)
                masked_rows = build_masks(tokens, p_start, p_len, loc, masks)
                masked, masked_start, masked_len = pred, p_start, p_len
            if lanes and not (_one_line(line_offsets, text_line_offsets, pred)
                              and _one_line(line_offsets, text_line_offsets, ref)):
                for q in range(r_len):
                    mark[q] = False
                fused_l, fused_1, fused_2 = lcs_lanes_unigrams(
                    tokens, line_offsets, (text_line_offsets[ref], text_line_offsets[ref + 1]),
                    (text_line_offsets[pred], text_line_offsets[pred + 1]), p_len, loc, masks,
                    masked_rows, seen, need_2, bi_cnt, bi_keys, rows, mark)
                lsum_hits = _clipped_hits(tokens, p_start, p_len, r_start, r_len, cnt_pred,
                                          mark)
            else:
                fused_l, fused_1, fused_2 = lcs_length_unigrams(
                    tokens, r_start, r_len, p_len, loc, masks, masked_rows, seen, need_2,
                    bi_cnt, bi_keys)
        for k in range(n_metrics):
            code = orders[k]
            if code == 1 and fused:
                out[p, k, 0] = fused_1
            elif code == 1:
                out[p, k, 0] = unigram_matches(tokens, p_start, p_len, r_start, r_len, cnt_ref)
            elif code == 2 and fused:
                out[p, k, 0] = fused_2
            elif code == 2:
                out[p, k, 0] = bigram_matches(tokens, p_start, p_len, r_start, r_len, slot_pos,
                                              slot_cnt, used)
            elif code >= 3:
                out[p, k, 0] = ngram_matches(tokens, p_start, p_len, r_start, r_len, code,
                                             slot_pos, slot_cnt, used)
            elif code == ROUGE_L and fused:
                out[p, k, 0] = fused_l
            elif code == ROUGE_L:
                n_words = (p_len + 63) >> 6
                if min(p_len, vocab_size) <= masks.shape[0] and n_words <= masks.shape[1]:
                    if masked != pred:
                        if masked >= 0:
                            clear_masks(tokens, masked_start, masked_len, loc)
                        masked_rows = build_masks(tokens, p_start, p_len, loc, masks)
                        masked, masked_start, masked_len = pred, p_start, p_len
                    if n_words == 2:
                        out[p, k, 0] = lcs_length_bits2(tokens, r_start, r_len, p_len, loc,
                                                        masks)
                    else:
                        out[p, k, 0] = lcs_length_bits(tokens, r_start, r_len, p_len, loc,
                                                       masks, v)
                else:
                    if masked >= 0:  # the long kernel keeps its own masks in `loc`
                        clear_masks(tokens, masked_start, masked_len, loc)
                        masked = -1
                    # rouge-score's table has reference rows and prediction columns.
                    long_masks = build_long_masks(tokens, p_start, p_len, loc)
                    out[p, k, 0] = lcs_length_long(tokens, r_start, r_len, p_len, loc,
                                                   long_masks)
                    clear_masks(tokens, p_start, p_len, loc)
            elif lsum_hits >= 0:
                out[p, k, 0] = lsum_hits
            elif lcs_len >= 0 and _one_line(line_offsets, text_line_offsets, pred) \
                    and _one_line(line_offsets, text_line_offsets, ref):
                # one line each: the union LCS is the LCS, never clipped (see
                # _summary_level_hits), which rougeL has just computed
                out[p, k, 0] = lcs_len
            else:
                # rougeL's whole-prediction masks of one or two words serve rougeLsum's lanes
                # as they are; others are cleared, rougeLsum builds its own in `loc`
                if masked >= 0 and (masked != pred or masked_len > 128):
                    clear_masks(tokens, masked_start, masked_len, loc)
                    masked = -1
                out[p, k, 0], built = _summary_level_hits(
                    tokens, line_offsets, text_line_offsets, pred, ref, cnt_pred, mark, loc,
                    lmasks, rows, masked == pred, masks)
                if not built:
                    masked = -1
            if code == ROUGE_L:
                lcs_len = out[p, k, 0]
            if code >= 1:
                out[p, k, 1] = max(p_len - code + 1, 0)
                out[p, k, 2] = max(r_len - code + 1, 0)
            else:
                out[p, k, 1] = p_len
                out[p, k, 2] = r_len
    return out
