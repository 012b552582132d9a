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

# Tables up to this many cells are built whole (16 MiB of int32); larger ones are
# checkpointed, keeping about 2 * sqrt(rows) rows instead of all of them.
FULL_TABLE_MAX_CELLS = 1 << 22


@njit(cache=True, nogil=True)
def lcs_length(tokens, a_start, a_len, b_start, b_len, row):
    """Length of the LCS of two token slices in O(b_len) memory.

    Args:
        tokens: int32 token ids, shape (T,).
        a_start, a_len: first sequence (the reference in rouge-score's table).
        b_start, b_len: second sequence (the prediction).
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
def _fill_rows(tokens, a_start, b_start, b_len, tab, first, last):
    """Fill rows first+1..last of a row-major (rows, b_len + 1) table from row ``first``."""
    w = b_len + 1
    for i in range(first + 1, last + 1):
        base = i * w
        prev = base - w
        tab[base] = 0
        ai = tokens[a_start + i - 1]
        for j in range(1, w):
            if ai == tokens[b_start + j - 1]:
                tab[base + j] = tab[prev + j - 1] + 1
            else:
                up = tab[prev + j]
                left = tab[base + j - 1]
                tab[base + j] = up if up >= left else left


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
        a_start, a_len: the reference sentence.
        b_start, b_len: the prediction sentence.
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
        prv = w - cur
        two[cur] = 0
        ai = tokens[a_start + i - 1]
        for j in range(1, w):
            if ai == tokens[b_start + j - 1]:
                two[cur + j] = two[prv + j - 1] + 1
            else:
                up = two[prv + j]
                left = two[cur + j - 1]
                two[cur + j] = up if up >= left else left
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
