"""Compiled tokenization of ASCII byte buffers into integer ids (rouge-score's rule).

Input is the batch's texts translated to bytes in which every separator is a space, line
breaks are ``\\n`` and a NUL may end a text, so a token is a maximal run of other bytes.
Ids are assigned in order of first occurrence through an open-addressing table that compares
token bytes exactly (the hash only places them).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_SPACE = 32
_NUL = 0
_NEWLINE = 10


_MIX = np.uint64(0xFF51AFD7ED558CCD)
_LONG = np.uint64(1 << 63)


@njit(cache=True, nogil=True)
def _tokenize_into(buf, text_offsets, state, slot_id, slot_key, arena, vocab_offsets, ids,
                   line_offsets, text_line_offsets):
    """Tokenize from ``state`` on; return 1 to ask for bigger tables, 0 when done.

    ``state``: int64 [text, byte position (-1: text not started), line, tokens, ids]. The
    tables are never reallocated in here, so the loop keeps them in registers.

    A token of at most 8 bytes is its own key (its bytes packed little-endian; token bytes are
    ASCII, so the key's top bit is clear); a longer token's key is a hash with the top bit
    set, confirmed byte by byte against the arena.
    """
    n_texts = text_offsets.shape[0] - 1
    t, q, line, n_tok, n_ids = state[0], state[1], state[2], state[3], state[4]
    cap = slot_id.shape[0]
    mask = cap - 1
    while t < n_texts:
        end = text_offsets[t + 1]
        if q < 0:
            text_line_offsets[t] = line
            line_offsets[line] = n_tok
            line += 1
            q = text_offsets[t]
        while q < end:
            c = buf[q]
            if c <= _SPACE:  # space, NUL or newline: the only bytes <= 32 here
                if c == _NEWLINE:
                    line_offsets[line] = n_tok
                    line += 1
                q += 1
                continue
            s = q
            key = np.uint64(0)
            shift = np.uint64(0)
            while q < end and buf[q] > _SPACE:
                if shift < np.uint64(64):
                    key |= np.uint64(buf[q]) << shift
                    shift += np.uint64(8)
                q += 1
            length = q - s
            if length > 8:
                key = np.uint64(5381)
                for z in range(s, q):
                    key = (key << np.uint64(5)) + key + np.uint64(buf[z])
                key |= _LONG
            full = key ^ (key >> np.uint64(33))
            full *= _MIX
            full ^= full >> np.uint64(33)
            h = np.int64(full & np.uint64(mask))
            while True:
                k = slot_id[h]
                if k == -1:
                    a = vocab_offsets[n_ids]
                    if (2 * (n_ids + 1) > cap or n_ids + 2 > vocab_offsets.shape[0]
                            or a + length > arena.shape[0]):
                        state[0], state[1], state[2], state[3], state[4] = \
                            t, s, line, n_tok, n_ids
                        return 1
                    k = n_ids
                    for z in range(length):
                        arena[a + z] = buf[s + z]
                    vocab_offsets[k + 1] = a + length
                    slot_id[h] = k
                    slot_key[h] = key
                    n_ids += 1
                    break
                if slot_key[h] == key:
                    if length <= 8:
                        break
                    a = vocab_offsets[k]
                    if vocab_offsets[k + 1] - a == length:
                        same = True
                        for z in range(length):
                            if buf[s + z] != arena[a + z]:
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
    text_line_offsets[n_texts] = line
    state[0], state[1], state[2], state[3], state[4] = t, q, line, n_tok, n_ids
    return 0


@njit(cache=True, nogil=True)
def _grow(slot_id, slot_key, arena, vocab_offsets, n_ids):
    cap = slot_id.shape[0] * 2 if 2 * (n_ids + 1) > slot_id.shape[0] else slot_id.shape[0]
    mask = cap - 1
    new_id = np.full(cap, -1, dtype=np.int32)
    new_key = np.zeros(cap, dtype=np.uint64)
    for o in range(slot_id.shape[0]):
        if slot_id[o] != -1:
            key = slot_key[o]
            full = key ^ (key >> np.uint64(33))
            full *= _MIX
            full ^= full >> np.uint64(33)
            h = np.int64(full & np.uint64(mask))
            while new_id[h] != -1:
                h = (h + 1) & mask
            new_id[h] = slot_id[o]
            new_key[h] = key
    new_arena = np.empty(arena.shape[0] * 2, dtype=np.uint8)
    new_arena[:arena.shape[0]] = arena
    new_off = np.zeros(vocab_offsets.shape[0] * 2, dtype=np.int64)
    new_off[:vocab_offsets.shape[0]] = vocab_offsets
    return new_id, new_key, new_arena, new_off


@njit(cache=True, nogil=True)
def tokenize_bytes(buf, text_offsets):
    """Split texts into lines and tokens and give each distinct token an id.

    Args:
        buf: uint8, shape (B,), the texts concatenated; bytes 32 (space) and 0 (NUL)
            separate tokens, 10 (newline) also ends a line.
        text_offsets: int64, shape (N + 1,), text i is
            ``buf[text_offsets[i]:text_offsets[i+1]]``.

    Returns:
        ``(ids, line_offsets, text_line_offsets, arena, vocab_offsets)``: int32 token ids
        (T,), int64 token offsets of each line (L + 1,), int64 line offsets of each text
        (N + 1,), and the distinct tokens' bytes in order of first occurrence: id k is
        ``arena[vocab_offsets[k]:vocab_offsets[k + 1]]``. A text has one line more than it
        has newlines.

    """
    n_texts = text_offsets.shape[0] - 1
    n_lines = n_texts
    for q in range(buf.shape[0]):
        if buf[q] == _NEWLINE:
            n_lines += 1
    ids = np.empty(buf.shape[0] // 2 + 1, dtype=np.int32)
    line_offsets = np.empty(n_lines + 1, dtype=np.int64)
    text_line_offsets = np.empty(n_texts + 1, dtype=np.int64)
    slot_id = np.full(1 << 12, -1, dtype=np.int32)
    slot_key = np.zeros(1 << 12, dtype=np.uint64)
    arena = np.empty(1 << 14, dtype=np.uint8)
    vocab_offsets = np.zeros(1 << 11, dtype=np.int64)
    state = np.zeros(5, dtype=np.int64)
    state[1] = -1
    while _tokenize_into(buf, text_offsets, state, slot_id, slot_key, arena, vocab_offsets,
                         ids, line_offsets, text_line_offsets):
        slot_id, slot_key, arena, vocab_offsets = _grow(slot_id, slot_key, arena,
                                                        vocab_offsets, state[4])
    n_tok = state[3]
    n_ids = state[4]
    return (ids[:n_tok].copy(), line_offsets, text_line_offsets,
            arena[:vocab_offsets[n_ids]].copy(), vocab_offsets[:n_ids + 1].copy())
