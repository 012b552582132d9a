"""Compiled tokenization of byte buffers into integer ids (rouge-score's rule).

Every byte is read through a class table: separators map to a space, line breaks to
``\\n``, a NUL may end a text, and token bytes map to themselves (or lowercase), so a token
is a maximal run of bytes whose class is above 32. Class 31 marks the lead byte of a
character whose lowercase holds an ASCII letter (U+0130, U+212A: see
:data:`pipeline.tokenizers.rouge_score._LOWER_TO_ASCII`); the kernel reports whether it met
one, since
the table alone cannot lowercase them.
Ids are assigned in order of first occurrence through an open-addressing table that compares
token bytes exactly (the hash only places them).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

_SPACE = 32
_NUL = 0
_NEWLINE = 10
_LEAD = 31  # lead byte of U+0130 (C4 B0) or U+212A (E2 84 AA), a separator otherwise


_MIX = np.uint64(0xFF51AFD7ED558CCD)
_LONG = np.uint64(1 << 63)
_EMPTY = -1  # id word of an empty slot (all bits set)


@njit(cache=True, nogil=True)
def _empty_slots(cap):
    """A table of ``cap`` slots, each (key, id) side by side in one uint64 array."""
    slots = np.zeros(2 * cap, dtype=np.uint64)
    for h in range(cap):
        slots[2 * h + 1] = np.uint64(0xFFFFFFFFFFFFFFFF)
    return slots


@njit(cache=True, nogil=True)
def _lowers_to_ascii(buf, q, end):
    """True when the UTF-8 character at ``buf[q]`` is U+0130 or U+212A."""
    if buf[q] == 0xC4:
        return q + 1 < end and buf[q + 1] == 0xB0
    return q + 2 < end and buf[q + 1] == 0x84 and buf[q + 2] == 0xAA


@njit(cache=True, nogil=True)
def _tokenize_into(buf, text_offsets, first_text, table, state, slots, arena, vocab_offsets,
                   ids, line_offsets, text_line_offsets):
    """Tokenize from ``state`` on; return 0 when done, else the room it needs.

    1 asks for bigger tables, 2 for a bigger ``line_offsets``, 3 for a bigger ``ids``.
    ``state``: int64 [text, byte position (-1: text not started), line, tokens, ids, 1 when a
    character that lowercases to ASCII was met]. The tables are never reallocated in here, so
    the loop keeps them in registers. Text ``t`` of ``buf`` is text ``first_text + t`` of
    the batch (``text_line_offsets``).

    A token of at most 8 bytes is its own key (its bytes packed little-endian; token bytes are
    ASCII, so the key's top bit is clear); a longer token's key is a hash with the top bit
    set, confirmed byte by byte against the arena.
    """
    n_texts = text_offsets.shape[0] - 1
    n_buf = buf.shape[0]
    t, q, line, n_tok, n_ids = state[0], state[1], state[2], state[3], state[4]
    cap = slots.shape[0] >> 1
    mask = cap - 1
    while t < n_texts:
        end = text_offsets[t + 1]
        if q < 0:
            if line + 1 >= line_offsets.shape[0]:
                state[0], state[1], state[2], state[3], state[4] = t, q, line, n_tok, n_ids
                return 2
            text_line_offsets[first_text + t] = line
            line_offsets[line] = n_tok
            line += 1
            q = text_offsets[t]
        while q < end:
            c = table[buf[q]]
            if c <= _SPACE:  # space, NUL, newline or lead byte: the only classes <= 32
                if c == _NEWLINE:
                    if line + 1 >= line_offsets.shape[0]:
                        state[0], state[1], state[2], state[3], state[4] = \
                            t, q, line, n_tok, n_ids
                        return 2
                    line_offsets[line] = n_tok
                    line += 1
                elif c == _LEAD and _lowers_to_ascii(buf, q, end):
                    state[5] = 1
                q += 1
                continue
            s = q
            if n_tok >= ids.shape[0]:
                state[0], state[1], state[2], state[3], state[4] = t, s, line, n_tok, n_ids
                return 3
            if s + 8 <= n_buf:
                # 8 bytes classified at once, branch-free: bit i of `token` set when byte
                # s + i is a token byte; the token ends at the first clear bit or at the
                # text's end (bit `limit`), so no branch depends on where a token ends.
                word = np.uint64(0)
                token = np.uint64(0)
                for i in range(8):
                    c = table[buf[s + i]]
                    word |= np.uint64(c) << np.uint64(8 * i)
                    token |= np.uint64(c > _SPACE) << np.uint64(i)
                limit = min(end - s, 8)
                stops = ~token | (np.uint64(1) << np.uint64(limit))
                length = np.int64(trailing_zeros(stops))
                q = s + length
                if length < 8:
                    key = word & ((np.uint64(1) << np.uint64(8 * length)) - np.uint64(1))
                else:
                    key = word
                    while q < end and table[buf[q]] > _SPACE:
                        q += 1
                    length = q - s
            else:  # the buffer's last 7 bytes: one byte at a time
                key = np.uint64(0)
                while q < end and table[buf[q]] > _SPACE:
                    key |= np.uint64(table[buf[q]]) << (np.uint64(8 * (q - s)) & np.uint64(63))
                    q += 1
                length = q - s
            if length > 8:
                key = np.uint64(5381)  # djb2 over every byte, the key of a long token
                for z in range(s, q):
                    key = (key << np.uint64(5)) + key + np.uint64(table[buf[z]])
                key |= _LONG
            full = key ^ (key >> np.uint64(33))
            full *= _MIX
            full ^= full >> np.uint64(33)
            h = np.int64(full & np.uint64(mask))
            while True:
                k = np.int64(slots[2 * h + 1])
                if k == _EMPTY:
                    a = vocab_offsets[n_ids]
                    if (2 * (n_ids + 1) > cap or n_ids + 2 > vocab_offsets.shape[0]
                            or a + length > arena.shape[0]):
                        state[0], state[1], state[2], state[3], state[4] = \
                            t, s, line, n_tok, n_ids
                        return 1
                    k = n_ids
                    for z in range(length):
                        arena[a + z] = table[buf[s + z]]
                    vocab_offsets[k + 1] = a + length
                    slots[2 * h] = key
                    slots[2 * h + 1] = np.uint64(k)
                    n_ids += 1
                    break
                if slots[2 * h] == key:
                    if length <= 8:
                        break
                    a = vocab_offsets[k]
                    if vocab_offsets[k + 1] - a == length:
                        same = True
                        for z in range(length):
                            if table[buf[s + z]] != arena[a + z]:
                                same = False
                                break
                        if same:
                            break
                h = (h + 1) & mask
            ids[n_tok] = k
            n_tok += 1
        t += 1
        q = -1
    line_offsets[line] = n_tok
    text_line_offsets[first_text + n_texts] = line
    state[0], state[1], state[2], state[3], state[4] = t, q, line, n_tok, n_ids
    return 0


@njit(cache=True, nogil=True)
def _grow(slots, arena, vocab_offsets, n_ids):
    old_cap = slots.shape[0] >> 1
    cap = old_cap * 2 if 2 * (n_ids + 1) > old_cap else old_cap
    mask = cap - 1
    new = _empty_slots(cap)
    for o in range(old_cap):
        if np.int64(slots[2 * o + 1]) != _EMPTY:
            key = slots[2 * o]
            full = key ^ (key >> np.uint64(33))
            full *= _MIX
            full ^= full >> np.uint64(33)
            h = np.int64(full & np.uint64(mask))
            while np.int64(new[2 * h + 1]) != _EMPTY:
                h = (h + 1) & mask
            new[2 * h] = key
            new[2 * h + 1] = slots[2 * o + 1]
    new_arena = np.empty(arena.shape[0] * 2, dtype=np.uint8)
    new_arena[:arena.shape[0]] = arena
    new_off = np.zeros(vocab_offsets.shape[0] * 2, dtype=np.int64)
    new_off[:vocab_offsets.shape[0]] = vocab_offsets
    return new, new_arena, new_off


@njit(cache=True, nogil=True)
def _grow_lines(line_offsets):
    new = np.empty(2 * line_offsets.shape[0], dtype=np.int64)
    new[:line_offsets.shape[0]] = line_offsets
    return new


@njit(cache=True, nogil=True)
def _grow_ids(ids):
    new = np.empty(2 * ids.shape[0], dtype=np.int32)
    new[:ids.shape[0]] = ids
    return new


@njit(cache=True, nogil=True)
def _tokenize_all(buf, text_offsets, first_text, table, state, slots, arena, vocab_offsets,
                  ids, line_offsets, text_line_offsets):
    """:func:`_tokenize_into` until one buffer's texts are done, growing what fills up.

    Returns the arrays it may have replaced: ``(slots, arena, vocab_offsets, ids,
    line_offsets)``.
    """
    while True:
        more = _tokenize_into(buf, text_offsets, first_text, table, state, slots, arena,
                              vocab_offsets, ids, line_offsets, text_line_offsets)
        if more == 0:
            return slots, arena, vocab_offsets, ids, line_offsets
        if more == 1:
            slots, arena, vocab_offsets = _grow(slots, arena, vocab_offsets, state[4])
        elif more == 2:
            line_offsets = _grow_lines(line_offsets)
        else:
            ids = _grow_ids(ids)


@njit(cache=True, nogil=True)
def tokenize_bytes(buf, text_offsets, table):
    """Split texts into lines and tokens and give each distinct token an id.

    Args:
        buf: uint8, shape (B,), the texts concatenated (UTF-8).
        text_offsets: int64, shape (N + 1,), text i is
            ``buf[text_offsets[i]:text_offsets[i+1]]``.
        table: uint8, shape (256,), each byte's class: 32 separator, 0 text end (NUL),
            10 line end, anything above 32 a token byte, mapped (e.g. lowercased).

    Returns:
        ``(ids, line_offsets, text_line_offsets, arena, vocab_offsets, lowers_to_ascii)``:
        int32 token ids (T,), int64 token offsets of each line (L + 1,), int64 line offsets
        of each text (N + 1,), the distinct tokens' bytes in order of first occurrence (id k
        is ``arena[vocab_offsets[k]:vocab_offsets[k + 1]]``), and 1 when a byte of class 31
        began U+0130 or U+212A (the table cannot lowercase them: tokenize such texts from
        their lowercased strings instead), else 0. A text has one line more than it has
        newlines.

    """
    return _tokenize_buffers(buf, text_offsets, np.zeros(1, dtype=np.uint8),
                             np.zeros(1, dtype=np.int64), table)


@njit(cache=True, nogil=True)
def tokenize_two(buf_a, text_offsets_a, buf_b, text_offsets_b, table):
    """:func:`tokenize_bytes` of two batches of texts as one, each read where it lies.

    The texts of ``buf_a`` (e.g. an Arrow array's data buffer, with its offsets) are texts
    0..N_a-1, those of ``buf_b`` texts N_a..N_a+N_b-1, ids shared: the same result as
    :func:`tokenize_bytes` over the two concatenated, without copying them together.

    Args:
        buf_a: uint8, shape (A,), the first texts' bytes (UTF-8).
        text_offsets_a: int64, shape (N_a + 1,), their offsets into ``buf_a``.
        buf_b: uint8, shape (B,), the second texts' bytes.
        text_offsets_b: int64, shape (N_b + 1,), their offsets into ``buf_b``.
        table: uint8, shape (256,), the byte classes (see :func:`tokenize_bytes`).

    Returns:
        As :func:`tokenize_bytes`, over the N_a + N_b texts.

    """
    return _tokenize_buffers(buf_a, text_offsets_a, buf_b, text_offsets_b, table)


@njit(cache=True, nogil=True)
def _tokenize_buffers(buf_a, text_offsets_a, buf_b, text_offsets_b, table):
    n_a = text_offsets_a.shape[0] - 1
    n_b = text_offsets_b.shape[0] - 1
    n_texts = n_a + n_b
    n_bytes = (text_offsets_a[n_a] - text_offsets_a[0]) + (text_offsets_b[n_b]
                                                            - text_offsets_b[0])
    # Room for a token every 4 bytes and a line every 32 (English prose has a token about
    # every 6 bytes); a batch with more grows them. A text of L bytes can hold (L + 1) // 2
    # tokens, but an array of that bound would be about three times what is used, too much
    # to hand back as it is, and copying its used part out costs a tenth of the scan; this
    # one is handed back as a view of its used part.
    ids = np.empty(n_texts + n_bytes // 4 + 16, dtype=np.int32)
    line_offsets = np.empty(n_texts + n_bytes // 32 + 2, dtype=np.int64)
    text_line_offsets = np.empty(n_texts + 1, dtype=np.int64)
    slots = _empty_slots(1 << 12)
    arena = np.empty(1 << 14, dtype=np.uint8)
    vocab_offsets = np.zeros(1 << 11, dtype=np.int64)
    state = np.zeros(6, dtype=np.int64)
    state[1] = -1
    slots, arena, vocab_offsets, ids, line_offsets = _tokenize_all(
        buf_a, text_offsets_a, 0, table, state, slots, arena, vocab_offsets, ids,
        line_offsets, text_line_offsets)
    # the second buffer from its first text on, the lines, tokens and ids counted on
    state[0] = 0
    state[1] = -1
    slots, arena, vocab_offsets, ids, line_offsets = _tokenize_all(
        buf_b, text_offsets_b, n_a, table, state, slots, arena, vocab_offsets, ids,
        line_offsets, text_line_offsets)
    n_tok = state[3]
    n_ids = state[4]
    return (ids[:n_tok], line_offsets[:state[2] + 1].copy(), text_line_offsets,
            arena[:vocab_offsets[n_ids]].copy(), vocab_offsets[:n_ids + 1].copy(), state[5])
