"""Summary-level LCS and weighted LCS as ROUGE-1.5.5 computes them (its ROUGE-L and ROUGE-W).

Definitions: Lin (2004), "ROUGE: A Package for Automatic Evaluation of Summaries", sections
3.2 (summary-level union LCS) and 3.3 (WLCS, a run of k consecutive matches weighing
f(k) = k ** weight); code: ``ROUGE-1.5.5.pl`` ``lcs``/``wlcs``, ``lcs_inner``/``wlcs_inner``
and ``markLCS``. For each reference sentence the script marks the union of the positions on
its backtracked LCS (or WLCS) with every prediction sentence, then walks the marked positions
in order, counting one only while both texts still have that token in their unigram counts
(which it then decrements, so no token is used twice across sentences). The pieces that decide
its figures, kept exactly:

* the tables: a match always takes the diagonal (WLCS adds ``(c + f(k + 1)) - f(k)`` in that
  order, k the run so far); otherwise up when ``c[i-1][j] >= c[i][j-1]``, else left; the
  backtrack follows those moves (the same walk as rouge-score's for the plain LCS);
* ROUGE-W's hits: runs of consecutive marked reference positions weigh f(run); a marked
  position that fails the unigram check neither counts nor ends the run, and a run still
  open at the end of a sentence after such a position is dropped;
* the unigram counts come from the script's other reading of the texts (which differs under
  ``-b``, see :mod:`pipeline.tokenizers.rouge155`), passed here as separate ``clip`` spans.

Memory: tables up to :data:`FULL_TABLE_MAX_CELLS` cells are built whole; larger ones keep
every k-th row (k ~ sqrt(rows)) and recompute one block at a time while walking back, so a
10,000 x 10,000 pair needs ~2 * sqrt(10,000) rows instead of 10,000.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pipeline.metrics.rouge.lcs import (
    BIT_WORDS_MAX,
    build_masks,
    clear_masks,
    lcs_mark,
    lcs_mark_bits,
    lcs_mark_bits1,
    lcs_mark_bits_ckpt,
)

# Bit rows of one reference sentence x prediction sentence kept whole (2 MiB); past it the
# rows are checkpointed (lcs_mark_bits_ckpt).
ROW_WORDS_MAX = 1 << 18

# Whole (c, l) tables up to this many cells (12 MiB of float64 + int32); past it, checkpoints.
FULL_TABLE_MAX_CELLS = 1 << 20


@njit(cache=True, nogil=True)
def _wlcs_row(tokens, ai, b_start, n_cols, pw, c_src, l_src, prev, c_dst, l_dst, cur):
    """Row ``cur`` of the WLCS tables from row ``prev`` for reference token ``ai``.

    Only columns 0..n_cols are computed (each needs only columns up to itself). The left
    and diagonal cells are carried in registers.
    """
    c_dst[cur] = 0.0
    l_dst[cur] = 0
    left = 0.0
    diag_c = c_src[prev]
    diag_l = l_src[prev]
    for j in range(1, n_cols + 1):
        up_c = c_src[prev + j]
        up_l = l_src[prev + j]
        if ai == tokens[b_start + j - 1]:
            val = diag_c + pw[diag_l + 1] - pw[diag_l]
            run = diag_l + 1
        else:
            val = up_c if up_c >= left else left
            run = 0
        c_dst[cur + j] = val
        l_dst[cur + j] = run
        left = val
        diag_c = up_c
        diag_l = up_l


@njit(cache=True, nogil=True)
def _wlcs_rows2(tokens, a0, a1, b_start, n_cols, pw, c, ll, src, d1, d2):
    """Rows ``d1`` and ``d2`` (tokens a0, a1) from row ``src``, interleaved column by column.

    The same cells as two :func:`_wlcs_row` calls; the two rows' dependency chains run side
    by side, which nearly doubles the speed of the row loop.
    """
    c[d1] = 0.0
    ll[d1] = 0
    c[d2] = 0.0
    ll[d2] = 0
    left1 = 0.0
    diag1_c = c[src]
    diag1_l = ll[src]
    left2 = 0.0
    diag2_c = 0.0
    diag2_l = 0
    for j in range(1, n_cols + 1):
        bj = tokens[b_start + j - 1]
        up_c = c[src + j]
        up_l = ll[src + j]
        if a0 == bj:
            v1 = diag1_c + pw[diag1_l + 1] - pw[diag1_l]
            r1 = diag1_l + 1
        else:
            v1 = up_c if up_c >= left1 else left1
            r1 = 0
        c[d1 + j] = v1
        ll[d1 + j] = r1
        left1 = v1
        diag1_c = up_c
        diag1_l = up_l
        if a1 == bj:
            v2 = diag2_c + pw[diag2_l + 1] - pw[diag2_l]
            r2 = diag2_l + 1
        else:
            v2 = v1 if v1 >= left2 else left2
            r2 = 0
        c[d2 + j] = v2
        ll[d2 + j] = r2
        left2 = v2
        diag2_c = v1
        diag2_l = r1


@njit(cache=True, nogil=True)
def _fill(tokens, a_start, first, last, b_start, n_cols, pw, c, ll, w, row0):
    """DP rows first+1..last into a table whose row ``r`` holds DP row ``row0 + r``."""
    i = first + 1
    while i + 1 <= last:
        _wlcs_rows2(tokens, tokens[a_start + i - 1], tokens[a_start + i], b_start, n_cols, pw,
                    c, ll, (i - 1 - row0) * w, (i - row0) * w, (i + 1 - row0) * w)
        i += 2
    if i <= last:
        _wlcs_row(tokens, tokens[a_start + i - 1], b_start, n_cols, pw, c, ll,
                  (i - 1 - row0) * w, c, ll, (i - row0) * w)


@njit(cache=True, nogil=True)
def _walk(tokens, a_start, b_start, c, w, row0, i, j, stop_row, mark):
    """The script's backtrack in a table whose row ``r`` holds DP row ``row0 + r``."""
    while i > stop_row and j > 0:
        if tokens[a_start + i - 1] == tokens[b_start + j - 1]:
            mark[i - 1] = True
            i -= 1
            j -= 1
        elif c[(i - 1 - row0) * w + j] >= c[(i - row0) * w + j - 1]:
            i -= 1
        else:
            j -= 1
    return i, j


@njit(cache=True, nogil=True)
def wlcs_mark(tokens, a_start, a_len, b_start, b_len, pw, mark):
    """Mark the reference positions on the script's backtracked WLCS of ``a`` and ``b``.

    Args:
        tokens: int32 token ids.
        a_start: start of the reference sentence (the table's rows).
        a_len: its length.
        b_start: start of the prediction sentence (columns).
        b_len: its length.
        pw: float64, ``pw[k] = k ** weight`` for k in 0..max(a_len, b_len) + 1.
        mark: bool, shape >= a_len; set True on the WLCS (left as is elsewhere, so marks
            accumulate into a union over prediction sentences).

    """
    if a_len == 0 or b_len == 0:
        return
    w = b_len + 1
    if (a_len + 1) * w <= FULL_TABLE_MAX_CELLS:
        c = np.zeros((a_len + 1) * w, dtype=np.float64)
        ll = np.zeros((a_len + 1) * w, dtype=np.int32)
        _fill(tokens, a_start, 0, a_len, b_start, b_len, pw, c, ll, w, 0)
        _walk(tokens, a_start, b_start, c, w, 0, a_len, b_len, 0, mark)
        return
    k = int(np.sqrt(a_len)) + 1
    n_ckpt = a_len // k + 1
    ckpt_c = np.zeros(n_ckpt * w, dtype=np.float64)
    ckpt_l = np.zeros(n_ckpt * w, dtype=np.int32)
    # forward pass over a ring of three rows, keeping every k-th row
    ring_c = np.zeros(3 * w, dtype=np.float64)
    ring_l = np.zeros(3 * w, dtype=np.int32)
    slot = 0  # the ring row holding DP row i - 1
    i = 1
    while i <= a_len:
        s1 = (slot + 1) % 3
        if i + 1 <= a_len:
            s2 = (slot + 2) % 3
            _wlcs_rows2(tokens, tokens[a_start + i - 1], tokens[a_start + i], b_start, b_len,
                        pw, ring_c, ring_l, slot * w, s1 * w, s2 * w)
            done = 2
        else:
            s2 = s1
            _wlcs_row(tokens, tokens[a_start + i - 1], b_start, b_len, pw, ring_c, ring_l,
                      slot * w, ring_c, ring_l, s1 * w)
            done = 1
        for r, sr in ((i, s1), (i + 1, s2)):
            if r < i + done and r % k == 0:
                ckpt_c[(r // k) * w:(r // k + 1) * w] = ring_c[sr * w:(sr + 1) * w]
                ckpt_l[(r // k) * w:(r // k + 1) * w] = ring_l[sr * w:(sr + 1) * w]
        slot = s2
        i += done
    block_c = np.empty((k + 1) * w, dtype=np.float64)
    block_l = np.empty((k + 1) * w, dtype=np.int32)
    i = a_len
    j = b_len
    while i > 0 and j > 0:
        s = ((i - 1) // k) * k
        block_c[0:j + 1] = ckpt_c[(s // k) * w:(s // k) * w + j + 1]
        block_l[0:j + 1] = ckpt_l[(s // k) * w:(s // k) * w + j + 1]
        _fill(tokens, a_start, s, i, b_start, j, pw, block_c, block_l, w, s)
        i, j = _walk(tokens, a_start, b_start, block_c, w, s, i, j, s, mark)


@njit(cache=True, nogil=True)
def _span(offsets, k):
    return offsets[k], offsets[k + 1] - offsets[k]


@njit(cache=True, nogil=True)
def summary_lcs_pairs(tokens, line_offsets, text_line_offsets, clip_tokens, clip_offsets,
                      pair_pred, pair_ref, weighted, pw, vocab_size):
    """The script's ROUGE-L (or ROUGE-W) hits and reference base for every pair of a batch.

    Args:
        tokens: int32 token ids of the LCS reading (sentences), shape (T,).
        line_offsets: int64, shape (L + 1,), token range of each sentence.
        text_line_offsets: int64, shape (N + 1,), sentence range of each text.
        clip_tokens: int32 token ids of the n-gram reading, shape (U,): the unigram counts
            that clip the hits.
        clip_offsets: int64, shape (N + 1,), token range of each text in ``clip_tokens``.
        pair_pred: int64, shape (P,), text index of each pair's prediction.
        pair_ref: int64, shape (P,), text index of each pair's reference.
        weighted: ROUGE-W (weighted LCS) instead of ROUGE-L.
        pw: float64, ``pw[k] = k ** weight`` for k up to the longest sentence + 1 (only read
            when ``weighted``).
        vocab_size: number of distinct token ids (of both readings).

    Returns:
        float64, shape (P, 2): ``hit`` (ROUGE-L: clipped union-LCS tokens; ROUGE-W: sum of
        f(run)) and ``base`` (sum over reference sentences of their length, or of f(length)).

    """
    n_pairs = pair_pred.shape[0]
    out = np.zeros((n_pairs, 2), dtype=np.float64)
    max_len = 1
    max_line = 1
    for t in range(text_line_offsets.shape[0] - 1):
        s = line_offsets[text_line_offsets[t]]
        max_len = max(max_len, line_offsets[text_line_offsets[t + 1]] - s)
    for line in range(line_offsets.shape[0] - 1):
        max_line = max(max_line, line_offsets[line + 1] - line_offsets[line])
    mark = np.zeros(max_len, dtype=np.bool_)
    cells = (max_line + 1) * (max_line + 1)
    tab = np.zeros(min(cells, FULL_TABLE_MAX_CELLS), dtype=np.int32)
    cnt_p = np.zeros(vocab_size, dtype=np.int64)
    cnt_r = np.zeros(vocab_size, dtype=np.int64)
    # ROUGE-L: bit-parallel LCS rows (see pipeline.metrics.rouge.lcs), 64 columns a word
    line_words = (max_line + 63) >> 6
    mask_rows = max(min(max_line, vocab_size), 1)
    bits = not weighted and mask_rows * line_words <= BIT_WORDS_MAX
    masks = np.zeros((mask_rows, line_words) if bits else (1, 1), dtype=np.uint64)
    loc = np.full(vocab_size, -1, dtype=np.int32)
    rows = np.zeros(min((max_line + 1) * line_words, ROW_WORDS_MAX) if bits else 1,
                    dtype=np.uint64)
    for p in range(n_pairs):
        pred = pair_pred[p]
        ref = pair_ref[p]
        r_first = text_line_offsets[ref]
        r_start = line_offsets[r_first]
        r_len = line_offsets[text_line_offsets[ref + 1]] - r_start
        for q in range(r_len):
            mark[q] = False
        base = 0.0
        for rl in range(r_first, text_line_offsets[ref + 1]):
            a_len = line_offsets[rl + 1] - line_offsets[rl]
            base += pw[a_len] if weighted else a_len
        # the union over prediction sentences does not depend on their order
        for pl in range(text_line_offsets[pred], text_line_offsets[pred + 1]):
            b_start, b_len = _span(line_offsets, pl)
            if b_len == 0:
                continue
            n_words = (b_len + 63) >> 6
            if bits:
                build_masks(tokens, b_start, b_len, loc, masks)
            for rl in range(r_first, text_line_offsets[ref + 1]):
                a_start, a_len = _span(line_offsets, rl)
                if a_len == 0:
                    continue
                here = mark[a_start - r_start:a_start - r_start + a_len]
                if weighted:
                    wlcs_mark(tokens, a_start, a_len, b_start, b_len, pw, here)
                elif bits and n_words == 1 and a_len < rows.shape[0]:
                    lcs_mark_bits1(tokens, a_start, a_len, b_start, b_len, loc, masks, rows,
                                   here)
                elif bits and (a_len + 1) * n_words <= rows.shape[0]:
                    lcs_mark_bits(tokens, a_start, a_len, b_start, b_len, loc, masks, rows,
                                  here)
                elif bits:
                    lcs_mark_bits_ckpt(tokens, a_start, a_len, b_start, b_len, loc, masks,
                                       here)
                else:
                    lcs_mark(tokens, a_start, a_len, b_start, b_len, here, tab)
            if bits:
                clear_masks(tokens, b_start, b_len, loc)
        cp_start, cp_len = _span(clip_offsets, pred)
        cr_start, cr_len = _span(clip_offsets, ref)
        for q in range(cp_start, cp_start + cp_len):
            cnt_p[clip_tokens[q]] += 1
        for q in range(cr_start, cr_start + cr_len):
            cnt_r[clip_tokens[q]] += 1
        hit = 0.0
        for rl in range(r_first, text_line_offsets[ref + 1]):
            a_start, a_len = _span(line_offsets, rl)
            off = a_start - r_start
            run = 0
            for q in range(a_len):
                t = tokens[a_start + q]
                if mark[off + q] and cnt_p[t] > 0 and cnt_r[t] > 0:
                    cnt_p[t] -= 1
                    cnt_r[t] -= 1
                    if not weighted:
                        hit += 1.0
                        continue
                    run += 1
                    if q + 1 == a_len or not mark[off + q + 1]:
                        hit += pw[run]
                        run = 0
        for q in range(cp_start, cp_start + cp_len):
            cnt_p[clip_tokens[q]] = 0
        for q in range(cr_start, cr_start + cr_len):
            cnt_r[clip_tokens[q]] = 0
        out[p, 0] = hit
        out[p, 1] = base
    return out


__all__ = ["FULL_TABLE_MAX_CELLS", "summary_lcs_pairs", "wlcs_mark"]
