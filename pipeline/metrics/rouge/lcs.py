"""Longest common subsequence kernels: ROUGE-L length and rougeLsum's union-LCS marks.

Definitions: Lin (2004), section 3 (ROUGE-L, summary-level union LCS); code: rouge-score 0.1.2
``rouge_scorer._lcs_table``, ``_backtrack_norec`` and ``_summary_level_lcs``.

The union LCS depends on *which* of several equally long LCSs the backtrack picks, so
:func:`lcs_mark` follows rouge-score's rule exactly: from the bottom-right cell, take the
diagonal when the tokens match, else step left when ``t[i][j-1] > t[i-1][j]``, else up.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

# Tables up to this many cells are built whole (16 MiB of int32); larger ones are
# checkpointed, keeping about 2 * sqrt(rows) rows instead of all of them.
FULL_TABLE_MAX_CELLS = 1 << 22


@njit(cache=True, nogil=True)
def lcs_length(tokens, a_start, a_len, b_start, b_len, row):
    """Length of the LCS of two token slices in O(b_len) memory.

    Args:
        tokens: int32 token ids, shape (T,).
        a_start: start of the first sequence (the reference in rouge-score's table).
        a_len: its length.
        b_start: start of the second sequence (the prediction).
        b_len: its length.
        row: int32 scratch, shape >= b_len + 1.

    Returns:
        LCS length in tokens, 0 <= length <= min(a_len, b_len).

    """
    if a_len == 0 or b_len == 0:
        return 0
    for j in range(b_len + 1):
        row[j] = 0
    for i in range(a_len):
        ai = tokens[a_start + i]
        diag = 0
        for j in range(1, b_len + 1):
            up = row[j]
            if ai == tokens[b_start + j - 1]:
                val = diag + 1
            else:
                left = row[j - 1]
                val = up if up >= left else left
            diag = up
            row[j] = val
    return row[b_len]


@njit(cache=True, nogil=True)
def _lcs_row(tokens, ai, b_start, b_len, src, prev, dst, cur):
    """One row of rouge-score's ``_lcs_table``: ``dst[cur:]`` from ``src[prev:]`` for token ai."""
    dst[cur] = 0
    for j in range(1, b_len + 1):
        if ai == tokens[b_start + j - 1]:
            dst[cur + j] = src[prev + j - 1] + 1
        else:
            up = src[prev + j]
            left = dst[cur + j - 1]
            dst[cur + j] = up if up >= left else left


@njit(cache=True, nogil=True)
def _fill_rows(tokens, a_start, b_start, b_len, tab, first, last):
    """Fill rows first+1..last of a row-major (rows, b_len + 1) table from row ``first``."""
    w = b_len + 1
    for i in range(first + 1, last + 1):
        _lcs_row(tokens, tokens[a_start + i - 1], b_start, b_len, tab, (i - 1) * w, tab, i * w)


@njit(cache=True, nogil=True)
def _backtrack(tokens, a_start, b_start, b_len, tab, row0, i, j, stop_row, mark):
    """Walk rouge-score's backtrack in a table whose row ``r`` holds LCS row ``row0 + r``.

    Returns the cell ``(i, j)`` where the walk left the rows above ``stop_row`` (or hit 0).
    """
    w = b_len + 1
    while i > stop_row and j > 0:
        if tokens[a_start + i - 1] == tokens[b_start + j - 1]:
            mark[i - 1] = True
            i -= 1
            j -= 1
        elif tab[(i - row0) * w + j - 1] > tab[(i - 1 - row0) * w + j]:
            j -= 1
        else:
            i -= 1
    return i, j


@njit(cache=True, nogil=True)
def lcs_mark(tokens, a_start, a_len, b_start, b_len, mark, tab):
    """Mark the positions of ``a`` on rouge-score's backtracked LCS of ``a`` and ``b``.

    Args:
        tokens: int32 token ids, shape (T,).
        a_start: start of the reference sentence (rows).
        a_len: its length.
        b_start: start of the prediction sentence (columns).
        b_len: its length.
        mark: bool, shape >= a_len; ``mark[i]`` is set True for each reference position
            ``i`` on the LCS (others are left as they are, so marks accumulate into a union).
        tab: int32 scratch of at least ``FULL_TABLE_MAX_CELLS`` cells.

    Memory: the whole (a_len + 1) x (b_len + 1) table when it fits in ``tab``; otherwise
    ~2 * sqrt(a_len) rows of checkpoints and one block, with every row computed twice.

    """
    if a_len == 0 or b_len == 0:
        return
    w = b_len + 1
    if (a_len + 1) * w <= tab.shape[0]:
        for j in range(w):
            tab[j] = 0
        _fill_rows(tokens, a_start, b_start, b_len, tab, 0, a_len)
        _backtrack(tokens, a_start, b_start, b_len, tab, 0, a_len, b_len, 0, mark)
        return
    k = int(np.sqrt(a_len)) + 1
    ckpt = np.zeros((a_len // k + 1) * w, dtype=np.int32)
    two = np.zeros(2 * w, dtype=np.int32)
    for i in range(1, a_len + 1):
        # row i into the half of `two` that row i - 1 does not occupy
        cur = (i & 1) * w
        _lcs_row(tokens, tokens[a_start + i - 1], b_start, b_len, two, w - cur, two, cur)
        if i % k == 0:
            ckpt[(i // k) * w:(i // k + 1) * w] = two[cur:cur + w]
    block = np.empty((k + 1) * w, dtype=np.int32)
    i = a_len
    j = b_len
    while i > 0 and j > 0:
        s = ((i - 1) // k) * k
        block[0:w] = ckpt[(s // k) * w:(s // k + 1) * w]
        _fill_rows(tokens, a_start + s, b_start, b_len, block, 0, i - s)
        i, j = _backtrack(tokens, a_start, b_start, b_len, block, s, i, j, s, mark)


# ---------------------------------------------------------------------------------------
# Bit-parallel versions (Allison & Dix 1986; Hyyro 2004, "Bit-parallel LCS-length
# computation revisited"): one machine word holds 64 columns of an LCS row. Row i is kept
# as V_i with a 0 bit at column j exactly when t[i][j + 1] = t[i][j] + 1, so
# t[i][j] = j - popcount(V_i & low_j). The recurrence is V' = (V + (V & M)) | (V & ~M), M
# being the match mask of the row's token in the column sequence.
# ---------------------------------------------------------------------------------------

# Scratch limit for bit tables and match masks, in 64-bit words (32 MiB); above it the
# int32 kernels above are used (slower, O(columns) or O(sqrt(rows) * columns) memory).
BIT_WORDS_MAX = 1 << 22

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, nogil=True)
def popcount64(x):
    """Number of set bits of a uint64 (SWAR; LLVM lowers it to popcnt where available)."""
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))


@njit(cache=True, nogil=True)
def build_masks(tokens, start, length, loc, masks):
    """Match masks of a column sequence: bit j of ``masks[loc[t]]`` is set where token t is.

    Args:
        tokens: int32 token ids.
        start: start of the column sequence in ``tokens``.
        length: its length.
        loc: int32 scratch indexed by token id, all -1 on entry; on return ``loc[t]`` is the
            mask row of each token of the slice (undo with :func:`clear_masks`).
        masks: uint64 scratch, shape (>= distinct tokens, >= ceil(length / 64)).

    Returns:
        The number of distinct tokens (mask rows used).

    """
    n_words = (length + 63) >> 6
    n_local = 0
    for j in range(length):
        t = tokens[start + j]
        k = loc[t]
        if k < 0:
            k = n_local
            loc[t] = k
            n_local += 1
            for w in range(n_words):
                masks[k, w] = 0
        masks[k, j >> 6] |= np.uint64(1) << np.uint64(j & 63)
    return n_local


@njit(cache=True, nogil=True)
def clear_masks(tokens, start, length, loc):
    """Reset ``loc`` after :func:`build_masks` (touches only the slice's tokens)."""
    for j in range(length):
        loc[tokens[start + j]] = -1


@njit(cache=True, nogil=True)
def _advance(v_in, v_out, masks, k, n_words):
    """One LCS row: v_out = (v_in + (v_in & M)) | (v_in & ~M), multi-word with carry."""
    if k < 0:
        for w in range(n_words):
            v_out[w] = v_in[w]
        return
    carry = np.uint64(0)
    for w in range(n_words):
        v = v_in[w]
        m = masks[k, w]
        u = v & m
        s1 = v + u
        c1 = np.uint64(1) if s1 < v else np.uint64(0)
        s = s1 + carry
        c2 = np.uint64(1) if s < s1 else np.uint64(0)
        carry = c1 | c2
        v_out[w] = s | (v & ~m)


@njit(cache=True, nogil=True)
def _zeros_below(v, j):
    """Zero bits of the multi-word row ``v`` in columns 0..j-1: the LCS table value t[.][j]."""
    ones = 0
    full = j >> 6
    for w in range(full):
        ones += popcount64(v[w])
    rem = j & 63
    if rem:
        ones += popcount64(v[full] & ((np.uint64(1) << np.uint64(rem)) - np.uint64(1)))
    return j - ones


@njit(cache=True, nogil=True)
def lcs_length_bits(tokens, a_start, a_len, b_len, loc, masks, v):
    """LCS length of a row sequence against a column sequence whose masks are built.

    Args:
        tokens: int32 token ids.
        a_start: start of the row sequence (rouge-score's reference).
        a_len: its length.
        b_len: length of the column sequence (the prediction) given to :func:`build_masks`.
        loc: token -> mask row, as filled by :func:`build_masks` for the column sequence.
        masks: match masks, as filled by :func:`build_masks`.
        v: uint64 scratch, shape >= ceil(b_len / 64).

    Returns:
        LCS length, 0 <= length <= min(a_len, b_len).

    """
    if a_len == 0 or b_len == 0:
        return 0
    n_words = (b_len + 63) >> 6
    if n_words == 1:
        x = _ONES
        for i in range(a_len):
            k = loc[tokens[a_start + i]]
            if k >= 0:
                m = masks[k, 0]
                x = (x + (x & m)) | (x & ~m)
        v[0] = x
        return _zeros_below(v, b_len)
    for w in range(n_words):
        v[w] = _ONES
    for i in range(a_len):
        _advance(v, v, masks, loc[tokens[a_start + i]], n_words)
    return _zeros_below(v, b_len)


@njit(cache=True, nogil=True)
def lcs_mark_bits(tokens, a_start, a_len, b_start, b_len, loc, masks, rows, mark):
    """:func:`lcs_mark` with bit rows: mark rouge-score's backtracked LCS positions of ``a``.

    Args:
        tokens: int32 token ids.
        a_start: start of the reference sentence (rows).
        a_len: its length.
        b_start: start of the prediction sentence (columns), whose masks are built.
        b_len: its length.
        loc: token -> mask row, as filled by :func:`build_masks` for the prediction sentence.
        masks: match masks, as filled by :func:`build_masks`.
        rows: uint64 scratch, shape >= (a_len + 1) * ceil(b_len / 64).
        mark: bool, indexed like ``a`` (``mark[i]`` for reference position i); set True on
            the LCS, left unchanged elsewhere.

    """
    if a_len == 0 or b_len == 0:
        return
    n_words = (b_len + 63) >> 6
    for w in range(n_words):
        rows[w] = _ONES
    for i in range(a_len):
        _advance(rows[i * n_words:(i + 1) * n_words], rows[(i + 1) * n_words:(i + 2) * n_words],
                 masks, loc[tokens[a_start + i]], n_words)
    i = a_len
    j = b_len
    while i > 0 and j > 0:
        if tokens[a_start + i - 1] == tokens[b_start + j - 1]:
            mark[i - 1] = True
            i -= 1
            j -= 1
        elif (_zeros_below(rows[i * n_words:(i + 1) * n_words], j - 1)
              > _zeros_below(rows[(i - 1) * n_words:i * n_words], j)):
            j -= 1
        else:
            i -= 1


@njit(cache=True, nogil=True)
def lcs_mark_bits1(tokens, a_start, a_len, b_start, b_len, loc, masks, rows, mark):
    """:func:`lcs_mark_bits` for a column sequence of at most 64 tokens (one word a row).

    Same arguments; ``rows`` needs ``a_len + 1`` words.
    """
    if a_len == 0 or b_len == 0:
        return
    v = _ONES
    rows[0] = v
    for i in range(a_len):
        k = loc[tokens[a_start + i]]
        if k >= 0:
            m = masks[k, 0]
            v = (v + (v & m)) | (v & ~m)
        rows[i + 1] = v
    columns = _ONES >> np.uint64(64 - b_len)
    cur = b_len - popcount64(v & columns)  # t[a_len][b_len]
    # rouge-score's walk from the bottom-right cell, one row per step: in row i at column j
    # it goes left while the tokens differ and t[i][j-1] > t[i-1][j], i.e. the row does not
    # rise at j (bit j - 1 set) and the row above is one lower at j. That difference, 0 or
    # 1, is the parity of the bits where rows i - 1 and i differ below j (so they alternate),
    # hence every column the walk goes left through is known at once, and the column where
    # it stops (a match, taken diagonally, or a step up) is the highest bit of a word. A
    # token missing from the column sequence leaves the row as it was: a step up.
    i = a_len
    j = b_len
    while i > 0 and j > 0 and cur > 0:
        k = loc[tokens[a_start + i - 1]]
        if k >= 0:
            v = rows[i]
            m = masks[k, 0]
            stop = (m | ~(v & _prefix_parity(v ^ rows[i - 1]))) & (_ONES >> np.uint64(64 - j))
            if stop == 0:
                return
            b = _high_bit(stop)
            j = b
            if (m >> np.uint64(b)) & np.uint64(1):
                mark[i - 1] = True
                cur -= 1
            else:
                j += 1
        i -= 1


@njit(cache=True, nogil=True)
def _lane_add(x, y, tops):
    """Add x and y separately in each lane of bits; ``tops`` has each lane's top bit set.

    Carries never cross from one lane into the next (SWAR addition).
    """
    low = ~tops
    return ((x & low) + (y & low)) ^ ((x ^ y) & tops)


@njit(cache=True, nogil=True)
def _prefix_parity(x):
    """Bit k of the result is the parity of bits 0..k of x."""
    x ^= x << np.uint64(1)
    x ^= x << np.uint64(2)
    x ^= x << np.uint64(4)
    x ^= x << np.uint64(8)
    x ^= x << np.uint64(16)
    x ^= x << np.uint64(32)
    return x


@njit(cache=True, nogil=True)
def _high_bit(x):
    """Index of the highest set bit of a non-zero uint64."""
    return 63 - np.int64(leading_zeros(x))


@njit(cache=True, nogil=True)
def union_lcs_marks_lanes(tokens, a_start, a_len, line_offsets, first_line, last_line, p_start,
                          loc, masks, rows, mark):
    """Union of rouge-score's backtracked LCSs of one reference line with every prediction line.

    All prediction lines are processed at once: the whole prediction (at most 64 tokens)
    sits in one word, each line in its own lane of bits, and lane-wise addition keeps the
    lines' LCS rows apart (Hyyro's recurrence per lane). Then each lane is walked back with
    rouge-score's tie rule, as :func:`lcs_mark_bits1` does.

    Args:
        tokens: int32 token ids.
        a_start: start of the reference line.
        a_len: its length.
        line_offsets: int64 token offsets of lines.
        first_line: the prediction's first line index.
        last_line: one past its last line index.
        p_start: start of the prediction (bit 0 of the word).
        loc: token -> mask row, from :func:`build_masks` over the whole prediction.
        masks: match masks over the whole prediction (one word each).
        rows: uint64 scratch, shape >= a_len + 1.
        mark: bool, indexed like the reference line; set True on every LCS position.
    """
    one = np.uint64(1)
    tops = np.uint64(0)
    for pl in range(first_line, last_line):
        if line_offsets[pl + 1] > line_offsets[pl]:
            tops |= one << np.uint64(line_offsets[pl + 1] - 1 - p_start)
    v = _ONES
    rows[0] = v
    for i in range(a_len):
        k = loc[tokens[a_start + i]]
        if k >= 0:
            m = masks[k, 0]
            v = _lane_add(v, v & m, tops) | (v & ~m)
        rows[i + 1] = v
    for pl in range(first_line, last_line):
        b_start = line_offsets[pl]
        b_len = line_offsets[pl + 1] - b_start
        if b_len == 0:
            continue
        lo = np.uint64(b_start - p_start)  # the lane's first bit
        below_lane = (one << lo) - one
        lane = ((one << np.uint64(b_len)) - one) << lo if b_len < 64 else _ONES
        cur = b_len - popcount64(v & lane)
        i = a_len
        j = b_len
        while i > 0 and j > 0 and cur > 0:
            if tokens[a_start + i - 1] == tokens[b_start + j - 1]:
                mark[i - 1] = True
                i -= 1
                j -= 1
                cur -= 1
            elif (rows[i] >> (lo + np.uint64(j - 1))) & one == 0:
                i -= 1
            else:
                top = lo + np.uint64(j)
                upto = (one << top) - one if top < np.uint64(64) else _ONES
                up = j - popcount64(rows[i - 1] & upto & ~below_lane)
                if up < cur:
                    j -= 1
                else:
                    i -= 1


# ---------------------------------------------------------------------------------------
# Two-word versions: texts of 65 to 128 tokens, the commonest length of summaries, with the
# row held as (lo, hi) in registers and the carry written out.
# ---------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _step2(lo, hi, m_lo, m_hi, tops_lo, tops_hi):
    """One row of the lane-wise recurrence on a two-word row (no lanes: tops = 0)."""
    u_lo = lo & m_lo
    u_hi = hi & m_hi
    a_lo = lo & ~tops_lo
    a_hi = hi & ~tops_hi
    b_lo = u_lo & ~tops_lo
    b_hi = u_hi & ~tops_hi
    s_lo = a_lo + b_lo
    carry = np.uint64(1) if s_lo < a_lo else np.uint64(0)
    s_hi = a_hi + b_hi + carry
    s_lo ^= (lo ^ u_lo) & tops_lo
    s_hi ^= (hi ^ u_hi) & tops_hi
    return s_lo | (lo & ~m_lo), s_hi | (hi & ~m_hi)


@njit(cache=True, nogil=True)
def _ones_in2(lo, hi, start, stop):
    """Set bits of the two-word value (lo, hi) in bit positions start..stop-1."""
    one = np.uint64(1)
    n = 0
    if start < 64:
        top = min(stop, 64)
        w = lo >> np.uint64(start)
        if top - start < 64:
            w &= (one << np.uint64(top - start)) - one
        n += popcount64(w)
    if stop > 64:
        first = max(start, 64) - 64
        w = hi >> np.uint64(first)
        if stop - 64 - first < 64:
            w &= (one << np.uint64(stop - 64 - first)) - one
        n += popcount64(w)
    return n


@njit(cache=True, nogil=True)
def _bit2(lo, hi, pos):
    if pos < 64:
        return (lo >> np.uint64(pos)) & np.uint64(1)
    return (hi >> np.uint64(pos - 64)) & np.uint64(1)


@njit(cache=True, nogil=True)
def lcs_length_bits2(tokens, a_start, a_len, b_len, loc, masks):
    """:func:`lcs_length_bits` for a column sequence of 65 to 128 tokens (two words a row).

    Args:
        tokens: int32 token ids.
        a_start: start of the row sequence (rouge-score's reference).
        a_len: its length.
        b_len: length of the column sequence, 64 < b_len <= 128.
        loc: token -> mask row, from :func:`build_masks` over the column sequence.
        masks: match masks, shape (>= distinct tokens, >= 2).

    Returns:
        LCS length.
    """
    lo = _ONES
    hi = _ONES
    zero = np.uint64(0)
    for i in range(a_len):
        k = loc[tokens[a_start + i]]
        if k >= 0:
            lo, hi = _step2(lo, hi, masks[k, 0], masks[k, 1], zero, zero)
    return b_len - _ones_in2(lo, hi, 0, b_len)


@njit(cache=True, nogil=True)
def lcs_length_unigrams(tokens, a_start, a_len, b_len, loc, masks, n_local, used, bigrams,
                        bi_cnt, bi_keys):
    """:func:`lcs_length_bits2` (or one word), unigram and bigram matches in one pass.

    The matches are rouge1's and rouge2's, sum over n-grams of min(count in a, count in b).
    A row token present in the columns takes a unigram match while it has been seen no more
    often than its mask has bits (its count in the columns); a row bigram (s, t) of tokens
    present in the columns takes a bigram match while it has been seen no more often than
    the columns hold it, the bits of ``mask_s & (mask_t >> 1)``. The bigram's counter is
    indexed by its two mask rows (``128 * row_s + row_t``), so no hash table is needed.

    Args:
        tokens: int32 token ids.
        a_start: start of the row sequence (rouge-score's reference).
        a_len: its length.
        b_len: length of the column sequence, 0 < b_len <= 128.
        loc: token -> mask row, from :func:`build_masks` over the column sequence.
        masks: match masks, as filled by :func:`build_masks` (two words each when
            b_len > 64).
        n_local: the mask rows used (what :func:`build_masks` returned).
        used: int32 scratch, shape >= n_local, all 0 on entry and on return.
        bigrams: whether to count bigram matches (else 0 is returned for them).
        bi_cnt: int32 scratch, shape >= 128 * 128, all 0 on entry and on return.
        bi_keys: int64 scratch, shape >= a_len.

    Returns:
        ``(LCS length, unigram matches, bigram matches)``.
    """
    lo = _ONES
    hi = _ONES
    zero = np.uint64(0)
    one = np.uint64(1)
    two = b_len > 64
    matches = 0
    matches2 = 0
    n_keys = 0
    prev = -1
    p_lo = zero
    p_hi = zero
    for i in range(a_len):
        k = loc[tokens[a_start + i]]
        if k >= 0:
            m_lo = masks[k, 0]
            m_hi = masks[k, 1] if two else zero
            lo, hi = _step2(lo, hi, m_lo, m_hi, zero, zero)
            c = used[k] + 1
            used[k] = c
            if c <= popcount64(m_lo) + popcount64(m_hi):
                matches += 1
            if bigrams and prev >= 0:
                key = (prev << 7) | k
                c2 = bi_cnt[key] + 1
                bi_cnt[key] = c2
                if c2 == 1:
                    bi_keys[n_keys] = key
                    n_keys += 1
                if c2 <= popcount64(p_lo & ((m_lo >> one) | (m_hi << np.uint64(63)))) \
                        + popcount64(p_hi & (m_hi >> one)):
                    matches2 += 1
            prev = np.int64(k)
            p_lo = m_lo
            p_hi = m_hi
        else:
            prev = -1
    for k in range(n_local):
        used[k] = 0
    for q in range(n_keys):
        bi_cnt[bi_keys[q]] = 0
    return b_len - _ones_in2(lo, hi, 0, b_len), matches, matches2


@njit(cache=True, nogil=True)
def lcs_lanes_unigrams(tokens, line_offsets, ref_lines, pred_lines, b_len, loc, masks, n_local,
                       used, bigrams, bi_cnt, bi_keys, rows, mark):
    """:func:`lcs_length_unigrams` and rougeLsum's lanes in one pass over the reference.

    Each reference token's mask row and masks are read once for both: rougeL's row over the
    whole prediction and the lanes' row of :func:`union_lcs_marks_lanes2` (the prediction's
    lines in lanes of bits, started afresh at each reference line), after which each
    reference line's lanes are walked back as there. The rows are the same as the two
    kernels compute one after the other, so the values and marks are too.

    The unigram and bigram counting is written out here as in :func:`lcs_length_unigrams`:
    one shared function (numba's ``inline="always"`` or a plain call) made score_pairs with
    the four ROUGE metrics about 4% slower (2.57 against 2.47 microseconds a short pair,
    ``scripts/bench_kernel.py --stages``).

    Args:
        tokens: int32 token ids.
        line_offsets: int64 token offsets of lines.
        ref_lines: ``(first, last)``, the reference's line range (last excluded).
        pred_lines: ``(first, last)``, the prediction's line range.
        b_len: the prediction's length, 0 < b_len <= 128.
        loc: token -> mask row, from :func:`build_masks` over the whole prediction.
        masks: match masks over the whole prediction (two words each when b_len > 64).
        n_local: the mask rows used (what :func:`build_masks` returned).
        used: int32 scratch, shape >= n_local, all 0 on entry and on return.
        bigrams: whether to count bigram matches (else 0 is returned for them).
        bi_cnt: int32 scratch, shape >= 128 * 128, all 0 on entry and on return.
        bi_keys: int64 scratch, shape >= the reference's length.
        rows: uint64 scratch, shape >= 2 * (longest reference line + 1).
        mark: bool, shape >= the reference's length, all False on entry; on return True at
            each reference position on rouge-score's union LCS (before clipping).

    Returns:
        ``(LCS length, unigram matches, bigram matches)``, as :func:`lcs_length_unigrams`.
    """
    one = np.uint64(1)
    zero = np.uint64(0)
    p_start = line_offsets[pred_lines[0]]
    r_start = line_offsets[ref_lines[0]]
    tops_lo = zero
    tops_hi = zero
    for pl in range(pred_lines[0], pred_lines[1]):
        if line_offsets[pl + 1] > line_offsets[pl]:
            top = line_offsets[pl + 1] - 1 - p_start
            if top < 64:
                tops_lo |= one << np.uint64(top)
            else:
                tops_hi |= one << np.uint64(top - 64)
    lo = _ONES
    hi = _ONES
    two = b_len > 64
    matches = 0
    matches2 = 0
    n_keys = 0
    prev = -1
    p_lo = zero
    p_hi = zero
    rows[0] = _ONES
    rows[1] = _ONES
    for rl in range(ref_lines[0], ref_lines[1]):
        a_start = line_offsets[rl]
        a_len = line_offsets[rl + 1] - a_start
        if a_len == 0:
            continue
        l_lo = _ONES
        l_hi = _ONES
        for i in range(a_len):
            k = loc[tokens[a_start + i]]
            if k >= 0:
                m_lo = masks[k, 0]
                m_hi = masks[k, 1] if two else zero
                lo, hi = _step2(lo, hi, m_lo, m_hi, zero, zero)
                l_lo, l_hi = _step2(l_lo, l_hi, m_lo, m_hi, tops_lo, tops_hi)
                c = used[k] + 1
                used[k] = c
                if c <= popcount64(m_lo) + popcount64(m_hi):
                    matches += 1
                if bigrams and prev >= 0:
                    key = (prev << 7) | k
                    c2 = bi_cnt[key] + 1
                    bi_cnt[key] = c2
                    if c2 == 1:
                        bi_keys[n_keys] = key
                        n_keys += 1
                    if c2 <= popcount64(p_lo & ((m_lo >> one) | (m_hi << np.uint64(63)))) \
                            + popcount64(p_hi & (m_hi >> one)):
                        matches2 += 1
                prev = np.int64(k)
                p_lo = m_lo
                p_hi = m_hi
            else:
                prev = -1
            rows[2 * i + 2] = l_lo
            rows[2 * i + 3] = l_hi
        off = a_start - r_start
        _walk_lanes2(tokens, a_start, a_len, line_offsets, pred_lines[0], pred_lines[1],
                     p_start, rows, l_lo, l_hi, mark[off:off + a_len])
    for k in range(n_local):
        used[k] = 0
    for q in range(n_keys):
        bi_cnt[bi_keys[q]] = 0
    return b_len - _ones_in2(lo, hi, 0, b_len), matches, matches2


@njit(cache=True, nogil=True)
def union_lcs_marks_lanes2(tokens, a_start, a_len, line_offsets, first_line, last_line,
                           p_start, loc, masks, rows, mark):
    """:func:`union_lcs_marks_lanes` for a prediction of 65 to 128 tokens (two words a row).

    Args:
        tokens: int32 token ids.
        a_start: start of the reference line.
        a_len: its length.
        line_offsets: int64 token offsets of lines.
        first_line: the prediction's first line index.
        last_line: one past its last line index.
        p_start: start of the prediction (bit 0 of the row).
        loc: token -> mask row, from :func:`build_masks` over the whole prediction.
        masks: match masks over the whole prediction, two words each.
        rows: uint64 scratch, shape >= 2 * (a_len + 1).
        mark: bool, indexed like the reference line; set True on every LCS position.
    """
    one = np.uint64(1)
    tops_lo = np.uint64(0)
    tops_hi = np.uint64(0)
    for pl in range(first_line, last_line):
        if line_offsets[pl + 1] > line_offsets[pl]:
            top = line_offsets[pl + 1] - 1 - p_start
            if top < 64:
                tops_lo |= one << np.uint64(top)
            else:
                tops_hi |= one << np.uint64(top - 64)
    lo = _ONES
    hi = _ONES
    rows[0] = lo
    rows[1] = hi
    for i in range(a_len):
        k = loc[tokens[a_start + i]]
        if k >= 0:
            lo, hi = _step2(lo, hi, masks[k, 0], masks[k, 1], tops_lo, tops_hi)
        rows[2 * i + 2] = lo
        rows[2 * i + 3] = hi
    for pl in range(first_line, last_line):
        b_start = line_offsets[pl]
        b_len = line_offsets[pl + 1] - b_start
        if b_len == 0:
            continue
        first = b_start - p_start
        cur = b_len - _ones_in2(lo, hi, first, first + b_len)
        i = a_len
        j = b_len
        while i > 0 and j > 0 and cur > 0:
            if tokens[a_start + i - 1] == tokens[b_start + j - 1]:
                mark[i - 1] = True
                i -= 1
                j -= 1
                cur -= 1
            elif _bit2(rows[2 * i], rows[2 * i + 1], first + j - 1) == 0:
                i -= 1
            else:
                up = j - _ones_in2(rows[2 * i - 2], rows[2 * i - 1], first, first + j)
                if up < cur:
                    j -= 1
                else:
                    i -= 1


@njit(cache=True, nogil=True)
def _walk_lanes2(tokens, a_start, a_len, line_offsets, first_line, last_line, p_start, rows,
                 lo, hi, mark):
    """rouge-score's walk back in each prediction line's lane of two-word bit rows.

    ``rows[2 * i], rows[2 * i + 1]`` is the lanes' row after ``i`` reference tokens
    (:func:`union_lcs_marks_lanes2`'s forward pass), ``(lo, hi)`` the last of them; the
    marks go into ``mark``. The same walk as :func:`union_lcs_marks_lanes2`'s, which keeps
    its own copy inline (rougeLsum alone takes 2.35-2.40 microseconds a pair so, 2.40-2.45
    calling this, in the x86-64-v3 build).
    """
    for pl in range(first_line, last_line):
        b_start = line_offsets[pl]
        b_len = line_offsets[pl + 1] - b_start
        if b_len == 0:
            continue
        first = b_start - p_start
        cur = b_len - _ones_in2(lo, hi, first, first + b_len)
        i = a_len
        j = b_len
        while i > 0 and j > 0 and cur > 0:
            if tokens[a_start + i - 1] == tokens[b_start + j - 1]:
                mark[i - 1] = True
                i -= 1
                j -= 1
                cur -= 1
            elif _bit2(rows[2 * i], rows[2 * i + 1], first + j - 1) == 0:
                i -= 1
            else:
                up = j - _ones_in2(rows[2 * i - 2], rows[2 * i - 1], first, first + j)
                if up < cur:
                    j -= 1
                else:
                    i -= 1


@njit(cache=True, nogil=True)
def lcs_mark_bits_ckpt(tokens, a_start, a_len, b_start, b_len, loc, masks, mark):
    """:func:`lcs_mark_bits` in O(sqrt(a_len) * b_len / 64) words instead of the whole table.

    Keeps every k-th bit row (k ~ sqrt(a_len)) in one forward pass, then walks back block by
    block, recomputing the k rows of each block from its checkpoint: every row is computed
    twice, the same walk as with the whole table. For a 10,000 x 10,000 pair: ~250 KiB
    instead of 12.5 MiB of rows.

    Args:
        tokens: int32 token ids.
        a_start: start of the reference sentence (rows).
        a_len: its length.
        b_start: start of the prediction sentence (columns), whose masks are built.
        b_len: its length.
        loc: token -> mask row, as filled by :func:`build_masks` for the prediction sentence.
        masks: match masks, as filled by :func:`build_masks`.
        mark: bool, indexed like ``a``; set True on the LCS.
    """
    if a_len == 0 or b_len == 0:
        return
    n_words = (b_len + 63) >> 6
    k = int(np.sqrt(a_len)) + 1
    ckpt = np.empty((a_len // k + 1) * n_words, dtype=np.uint64)
    v = np.empty(n_words, dtype=np.uint64)
    for w in range(n_words):
        v[w] = _ONES
        ckpt[w] = _ONES
    for i in range(1, a_len + 1):
        _advance(v, v, masks, loc[tokens[a_start + i - 1]], n_words)
        if i % k == 0:
            ckpt[(i // k) * n_words:(i // k + 1) * n_words] = v
    block = np.empty((k + 1) * n_words, dtype=np.uint64)
    i = a_len
    j = b_len
    while i > 0 and j > 0:
        s = ((i - 1) // k) * k
        block[0:n_words] = ckpt[(s // k) * n_words:(s // k + 1) * n_words]
        for r in range(1, i - s + 1):
            _advance(block[(r - 1) * n_words:r * n_words], block[r * n_words:(r + 1) * n_words],
                     masks, loc[tokens[a_start + s + r - 1]], n_words)
        while i > s and j > 0:
            if tokens[a_start + i - 1] == tokens[b_start + j - 1]:
                mark[i - 1] = True
                i -= 1
                j -= 1
            elif (_zeros_below(block[(i - s) * n_words:(i - s + 1) * n_words], j - 1)
                  > _zeros_below(block[(i - s - 1) * n_words:(i - s) * n_words], j)):
                j -= 1
            else:
                i -= 1


# ---------------------------------------------------------------------------------------
# Long sequences: bit rows with masks in linear memory. Whole match masks take
# (distinct tokens) x ceil(length / 64) words, quadratic in the length for natural text
# (about 4 M words for 50,000 tokens). Here only a token that occurs at least once a word
# on average (>= ceil(length / 64) times; at most 64 such tokens) keeps a whole mask; the
# positions of every other token are listed and set into a scratch word row for the rows
# that need it, which costs no more than the row update itself.
# ---------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def build_long_masks(tokens, start, length, loc):
    """Masks of a long column sequence in O(length) words.

    Args:
        tokens: int32 token ids.
        start: start of the column sequence in ``tokens``.
        length: its length (> 0).
        loc: int32 scratch indexed by token id, all -1 on entry; on return ``loc[t]`` is
            the local index of each token of the slice (undo with :func:`clear_masks`).

    Returns:
        ``long_masks = (dense_of, dense, offsets, positions)``: ``dense_of[k]`` is the row
        of local token ``k`` in ``dense`` (uint64, shape (<= 65, ceil(length / 64))), or -1
        when its column positions are ``positions[offsets[k]:offsets[k + 1]]`` (int64).

    """
    n_words = (length + 63) >> 6
    local = np.empty(length, dtype=np.int64)
    counts = np.zeros(length, dtype=np.int64)
    n_local = 0
    for j in range(length):
        t = tokens[start + j]
        k = loc[t]
        if k < 0:
            k = n_local
            loc[t] = k
            n_local += 1
        counts[k] += 1
        local[j] = k
    dense_of = np.full(n_local, -1, dtype=np.int64)
    n_dense = 0
    offsets = np.zeros(n_local + 1, dtype=np.int64)
    for k in range(n_local):
        if counts[k] >= n_words:
            dense_of[k] = n_dense
            n_dense += 1
            offsets[k + 1] = offsets[k]
        else:
            offsets[k + 1] = offsets[k] + counts[k]
    dense = np.zeros((max(n_dense, 1), n_words), dtype=np.uint64)
    positions = np.empty(offsets[n_local], dtype=np.int64)
    fill = offsets[:n_local].copy()
    for j in range(length):
        k = local[j]
        d = dense_of[k]
        if d >= 0:
            dense[d, j >> 6] |= np.uint64(1) << np.uint64(j & 63)
        else:
            positions[fill[k]] = j
            fill[k] += 1
    return dense_of, dense, offsets, positions


@njit(cache=True, nogil=True)
def _advance_long(v_in, v_out, t, loc, long_masks, scratch, n_words):
    """One LCS row for row token ``t`` with masks from :func:`build_long_masks`."""
    dense_of, dense, offsets, positions = long_masks
    k = loc[t]
    if k < 0:
        _advance(v_in, v_out, dense, -1, n_words)
        return
    d = dense_of[k]
    if d >= 0:
        _advance(v_in, v_out, dense, d, n_words)
        return
    one = np.uint64(1)
    for q in range(offsets[k], offsets[k + 1]):
        j = positions[q]
        scratch[0, j >> 6] |= one << np.uint64(j & 63)
    _advance(v_in, v_out, scratch, 0, n_words)
    for q in range(offsets[k], offsets[k + 1]):
        scratch[0, positions[q] >> 6] = 0


@njit(cache=True, nogil=True)
def lcs_length_long(tokens, a_start, a_len, b_len, loc, long_masks):
    """LCS length of a row sequence against a long column sequence, in O(b_len) memory.

    Args:
        tokens: int32 token ids.
        a_start: start of the row sequence (rouge-score's reference).
        a_len: its length.
        b_len: length of the column sequence (the prediction).
        loc: token -> local index, as filled by :func:`build_long_masks` for the columns.
        long_masks: the masks :func:`build_long_masks` returned for them.

    Returns:
        LCS length, 0 <= length <= min(a_len, b_len); time O(a_len * b_len / 64).

    """
    if a_len == 0 or b_len == 0:
        return 0
    n_words = (b_len + 63) >> 6
    scratch = np.zeros((1, n_words), dtype=np.uint64)
    v = np.empty(n_words, dtype=np.uint64)
    for w in range(n_words):
        v[w] = _ONES
    for i in range(a_len):
        t = tokens[a_start + i]
        if loc[t] >= 0:  # a token absent from b leaves the row as it is
            _advance_long(v, v, t, loc, long_masks, scratch, n_words)
    return _zeros_below(v, b_len)


@njit(cache=True, nogil=True)
def _value(block, prefix, r, j, n_words):
    """LCS table value t[row r][j] from a bit row and its per-word zero counts."""
    w = j >> 6
    rem = j & 63
    zeros = prefix[r * (n_words + 1) + w]
    if rem:
        x = block[r * n_words + w] & ((np.uint64(1) << np.uint64(rem)) - np.uint64(1))
        zeros += rem - popcount64(x)
    return zeros


@njit(cache=True, nogil=True)
def _long_walk(tokens, a_start, a_len, b_start, b_len, loc, long_masks, out):
    """Rouge-score's LCS backtrack over checkpointed bit rows; the matches into ``out``.

    Forward pass: one bit row per reference position, a checkpoint every ``k = sqrt(a_len)``
    rows; backward walk: each block of ``k`` rows recomputed from its checkpoint with the
    zero count of every row before each word, so a step reads a table value in O(1). The tie
    rule is rouge-score 0.1.2 ``_backtrack_norec``'s.

    Returns:
        n, the LCS length; ``out[:n]`` holds ``(a position, b position)`` of each match, from
        the last match to the first. ``out`` has at least ``min(a_len, b_len)`` rows.

    """
    n_words = (b_len + 63) >> 6
    scratch = np.zeros((1, n_words), dtype=np.uint64)
    k = int(np.sqrt(a_len)) + 1
    ckpt = np.empty((a_len // k + 1) * n_words, dtype=np.uint64)
    v = np.empty(n_words, dtype=np.uint64)
    for w in range(n_words):
        v[w] = _ONES
        ckpt[w] = _ONES
    for i in range(1, a_len + 1):
        t = tokens[a_start + i - 1]
        if loc[t] >= 0:
            _advance_long(v, v, t, loc, long_masks, scratch, n_words)
        if i % k == 0:
            ckpt[(i // k) * n_words:(i // k + 1) * n_words] = v
    block = np.empty((k + 1) * n_words, dtype=np.uint64)
    prefix = np.empty((k + 1) * (n_words + 1), dtype=np.int64)
    n = 0
    i = a_len
    j = b_len
    while i > 0 and j > 0:
        s = ((i - 1) // k) * k
        block[0:n_words] = ckpt[(s // k) * n_words:(s // k + 1) * n_words]
        for r in range(1, i - s + 1):
            _advance_long(block[(r - 1) * n_words:r * n_words],
                          block[r * n_words:(r + 1) * n_words], tokens[a_start + s + r - 1],
                          loc, long_masks, scratch, n_words)
        for r in range(i - s + 1):
            base = r * (n_words + 1)
            prefix[base] = 0
            for w in range(n_words):
                prefix[base + w + 1] = prefix[base + w] + 64 - popcount64(
                    block[r * n_words + w])
        while i > s and j > 0:
            if tokens[a_start + i - 1] == tokens[b_start + j - 1]:
                out[n, 0] = i - 1
                out[n, 1] = j - 1
                n += 1
                i -= 1
                j -= 1
            elif (_value(block, prefix, i - s, j - 1, n_words)
                  > _value(block, prefix, i - s - 1, j, n_words)):
                j -= 1
            else:
                i -= 1
    return n


@njit(cache=True, nogil=True)
def lcs_mark_long(tokens, a_start, a_len, b_start, b_len, loc, long_masks, mark):
    """:func:`lcs_mark_bits_ckpt` for long sequences, in O(sqrt(a_len) * b_len / 64) words.

    The masks come from :func:`build_long_masks` (linear memory); the walk is
    :func:`_long_walk`'s (the one :func:`lcs_alignment` shows).

    Args:
        tokens: int32 token ids.
        a_start: start of the reference sentence (rows).
        a_len: its length.
        b_start: start of the prediction sentence (columns).
        b_len: its length.
        loc: token -> local index, as filled by :func:`build_long_masks` for the columns.
        long_masks: the masks :func:`build_long_masks` returned for them.
        mark: bool, indexed like ``a``; set True on rouge-score's backtracked LCS.

    """
    if a_len == 0 or b_len == 0:
        return
    out = np.empty((min(a_len, b_len), 2), dtype=np.int64)
    n = _long_walk(tokens, a_start, a_len, b_start, b_len, loc, long_masks, out)
    for q in range(n):
        mark[out[q, 0]] = True


@njit(cache=True, nogil=True)
def lcs_alignment(tokens, a_start, a_len, b_start, b_len, vocab_size):
    """Rouge-score's backtracked LCS of ``a`` and ``b`` as position pairs, in linear memory.

    The walk of :func:`lcs_mark_long` (the same bit rows, checkpoints and tie rule:
    rouge-score 0.1.2 ``_backtrack_norec`` on ``_lcs_table(a, b)``, ``a`` the rows), with
    both positions of each match kept: what ``overlap explain`` shows for rougeL.

    Args:
        tokens: int32 token ids, values in ``[0, vocab_size)``.
        a_start: start of the row sequence (rouge-score's reference).
        a_len: its length, >= 0.
        b_start: start of the column sequence (the prediction).
        b_len: its length, >= 0.
        vocab_size: number of distinct token ids, >= 1.

    Returns:
        int64, shape (L, 2): ``(a position, b position)`` of each match, increasing in
        both, L the LCS length. Time O(a_len * b_len / 64) word operations (each row is
        computed twice); memory O(sqrt(a_len) * b_len / 64 + a_len + b_len + vocab_size)
        words (about 12 MiB for two 100,000-token texts).

    """
    n_max = min(a_len, b_len)
    out = np.empty((n_max, 2), dtype=np.int64)
    if n_max == 0:
        return out
    loc = np.full(vocab_size, -1, dtype=np.int32)
    long_masks = build_long_masks(tokens, b_start, b_len, loc)
    n = _long_walk(tokens, a_start, a_len, b_start, b_len, loc, long_masks, out)
    pairs = np.empty((n, 2), dtype=np.int64)
    for q in range(n):
        pairs[q, 0] = out[n - 1 - q, 0]
        pairs[q, 1] = out[n - 1 - q, 1]
    return pairs


@njit(cache=True, nogil=True)
def union_lcs_alignment(tokens, n_ref, ref_bounds, pred_bounds, vocab_size):
    """For rougeLsum's union LCS: per reference position, the prediction position it pairs with.

    For each reference sentence and each prediction sentence in order, rouge-score's
    backtracked LCS of the two (``_union_lcs`` calls ``lcs_ind`` per prediction sentence);
    a reference position on any of them is in the union, paired with the prediction
    position of the first prediction sentence whose LCS takes it.

    Args:
        tokens: int32 token ids: the reference's ``n_ref`` tokens, then the prediction's;
            values in ``[0, vocab_size)``.
        n_ref: number of reference tokens.
        ref_bounds: int64, shape (S, 2): ``[start, end)`` of each reference sentence, in
            reference positions.
        pred_bounds: int64, shape (Q, 2): the same for the prediction's sentences, in
            prediction positions.
        vocab_size: number of distinct token ids, >= 1.

    Returns:
        int64, shape (n_ref,): the paired prediction position, -1 off the union. Time
        O(sum over sentence pairs of their cells), like the scorer's; memory
        ``FULL_TABLE_MAX_CELLS`` int32 cells, and pairs larger than that as
        :func:`lcs_alignment`.

    """
    first = np.full(n_ref, -1, dtype=np.int64)
    tab = np.empty(FULL_TABLE_MAX_CELLS, dtype=np.int32)
    for s in range(ref_bounds.shape[0]):
        a_start = ref_bounds[s, 0]
        a_len = ref_bounds[s, 1] - a_start
        if a_len <= 0:
            continue
        for q in range(pred_bounds.shape[0]):
            b_start = n_ref + pred_bounds[q, 0]
            b_len = pred_bounds[q, 1] - pred_bounds[q, 0]
            if b_len <= 0:
                continue
            w = b_len + 1
            if (a_len + 1) * w > tab.shape[0]:
                pairs = lcs_alignment(tokens, a_start, a_len, b_start, b_len, vocab_size)
                for k in range(pairs.shape[0]):
                    r = a_start + pairs[k, 0]
                    if first[r] < 0:
                        first[r] = b_start - n_ref + pairs[k, 1]
                continue
            for j in range(w):
                tab[j] = 0
            _fill_rows(tokens, a_start, b_start, b_len, tab, 0, a_len)
            i = a_len
            j = b_len
            while i > 0 and j > 0:
                if tokens[a_start + i - 1] == tokens[b_start + j - 1]:
                    if first[a_start + i - 1] < 0:
                        first[a_start + i - 1] = b_start - n_ref + j - 1
                    i -= 1
                    j -= 1
                elif tab[i * w + j - 1] > tab[(i - 1) * w + j]:
                    j -= 1
                else:
                    i -= 1
    return first
