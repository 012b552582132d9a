from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import tokenize as rs_tokenize

from pipeline.errors import ConfigError, ExecutionError, InputError, OutputExistsError
from pipeline.tokenizers.rouge_score import get_tokenizer, porter_stem, tokenize_batch


@pytest.mark.parametrize(("name", "options", "text", "tokens"), [
    ("rouge-score", {}, "It's 3.5% of the U.S. budget", ["it", "s", "3", "5", "of", "the",
                                                          "u", "s", "budget"]),
    ("rouge-score", {}, "İstanbul \u212aelvin café", ["i", "stanbul", "kelvin", "caf"]),
    ("rouge-score", {"case_sensitive": True}, "The Cat's", ["The", "Cat", "s"]),
    ("unicode", {}, "Straße ΟΔΟΣ", ["strasse", "οδοσ"]),
    ("unicode", {}, "नमस्ते दुनिया", ["नमस्ते", "दुनिया"]),  # vowel signs stay in the word
    ("unicode", {}, "我们 go!", ["我", "们", "go"]),
    ("unicode", {}, "ｆｕｌｌ　ｗｉｄｔｈ", ["full", "width"]),  # NFKC
    ("unicode", {"case_sensitive": True}, "Der Hund", ["Der", "Hund"]),
    ("whitespace", {}, "The cat, sat.\nOK", ["the", "cat,", "sat.", "ok"]),
])
def test_tokenizer_rules(name, options, text, tokens):
    assert get_tokenizer(name, **options).tokenize(text) == tokens


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_rouge_score_tokenizer_is_rouge_scores_on_any_unicode(text):
    batch = tokenize_batch([text, "pad"], tokenizer=get_tokenizer("rouge-score"))
    ours = list(batch.tokens[:batch.text_token_counts()[0]])
    theirs = rs_tokenize.tokenize(text, None)
    # same token sequence up to renaming: equal positions have equal ids exactly when
    # the strings are equal
    assert len(ours) == len(theirs)
    assert all((ours[i] == ours[j]) == (theirs[i] == theirs[j])
               for i in range(len(ours)) for j in range(len(ours)))


def test_batch_ids_are_shared_between_texts_and_lines_are_kept():
    batch = tokenize_batch(["a b\nc", None, "c a"], tokenizer=get_tokenizer("rouge-score"))
    assert batch.text_token_counts().tolist() == [3, 0, 2]
    assert batch.tokens[0] == batch.tokens[4] and batch.tokens[2] == batch.tokens[3]
    assert batch.vocab_size == 3
    assert (batch.text_line_offsets.tolist(), batch.line_offsets.tolist()) == \
        ([0, 2, 3, 4], [0, 2, 3, 3, 5])


def test_stemming_only_above_three_characters_and_memoized():
    assert porter_stem("days") == "day"
    assert porter_stem("his") == "his"
    batch = tokenize_batch(["binds bind running runs"], tokenizer=get_tokenizer("rouge-score"),
                           stemmer="porter")
    assert batch.tokens[0] == batch.tokens[1] and batch.tokens[2] == batch.tokens[3]


def test_a_text_with_nul_characters_is_tokenized_like_rouge_score():
    batch = tokenize_batch(["a\x00b", "c"], tokenizer=get_tokenizer("rouge-score"))
    assert batch.text_token_counts().tolist() == [2, 1]


@pytest.mark.parametrize("cls", [ConfigError, InputError, OutputExistsError, ExecutionError])
def test_errors_survive_pickling_with_exit_code_and_hint(cls):
    err = pickle.loads(pickle.dumps(cls("bad thing in f.parquet", hint="did you mean x?")))
    assert type(err) is cls and str(err) == "bad thing in f.parquet (did you mean x?)"
    assert err.exit_code == cls.exit_code and err.hint == "did you mean x?"


def test_arrow_input_is_tokenized_like_python_strings():
    import pyarrow as pa

    from pipeline.metrics.rouge.family import _SEVERAL_SENTENCES, _count_one_line
    from pipeline.tokenizers.rouge_score import get_tokenizer, tokenize_batch

    texts = ["The Cat sat.\nOn the mat", None, "", "  \n ", "naïve café x\u00a0y", "a\0b",
             "\u0130stanbul KELVIN \u212a", "日本語 text", "end. Next one! And? no",
             "x" * 20 + " " + "y" * 9, "Mr. X.\u2003Y", "a .\u0085b"]
    for case_sensitive in (False, True):
        tok = get_tokenizer("rouge-score", case_sensitive=case_sensitive)
        for stemmer in ("none", "porter"):
            for arr in (pa.array(texts), pa.array(texts, pa.large_string()),
                        pa.array(["pad"] + texts).slice(1)):
                a = tokenize_batch(arr, tokenizer=tok, stemmer=stemmer)
                b = tokenize_batch(texts, tokenizer=tok, stemmer=stemmer)
                assert a.tokens.tolist() == b.tokens.tolist()
                assert a.line_offsets.tolist() == b.line_offsets.tolist()
                assert a.text_line_offsets.tolist() == b.text_line_offsets.tolist()
                assert (a.vocab_size, a.n_zero_token_texts) == (b.vocab_size,
                                                                b.n_zero_token_texts)
    expected = sum(1 for t in texts if t and "\n" not in t and _SEVERAL_SENTENCES.search(t))
    arr = pa.array(texts, pa.large_string())
    lines = np.diff(tokenize_batch(arr, tokenizer=get_tokenizer("rouge-score")).text_line_offsets)
    assert _count_one_line(arr) == _count_one_line(arr, lines) == expected == 3
    for cut in (0, 4, len(texts)):  # two chunks (predictions, references), one maybe empty
        chunked = pa.chunked_array([arr[:cut], arr[cut:]])
        assert _count_one_line(chunked) == _count_one_line(chunked, lines) == expected


def test_texts_of_many_short_lines_or_tokens_keep_every_one():
    """Lines and tokens past the byte scan's first guesses (bytes / 32, bytes / 4) are kept.

    Per line, the tokens are rouge-score's of the line (``text.split("\\n")``), whether the
    texts come as Python strings, one Arrow array, or two chunks read from two buffers.
    """
    import pyarrow as pa

    texts = ["\n" * 300, "a b " * 300 + "\nq", "x\n\ny z" * 50, "c d",
             "i j k " * 200 + "\n\nend\n"]
    tok = get_tokenizer("rouge-score")
    expected = [[rs_tokenize.tokenize(line, None) for line in t.split("\n")] for t in texts]
    for arg in (texts, pa.array(texts, pa.large_string()),
                pa.chunked_array([texts[:2], texts[2:]], pa.large_string())):
        batch = tokenize_batch(arg, tokenizer=tok)
        lines = [[batch.line_offsets[line + 1] - batch.line_offsets[line]
                  for line in range(batch.text_line_offsets[t], batch.text_line_offsets[t + 1])]
                 for t in range(len(texts))]
        assert lines == [[len(x) for x in t] for t in expected]
        assert len(batch.tokens) == sum(len(x) for t in expected for x in t)


def test_arrow_texts_without_separators_between_them_keep_every_token():
    """One-letter texts back to back in an Arrow buffer hold one token per byte.

    The Arrow path reads the buffer as it is (no separator between texts), so a batch can
    hold up to one token per byte; a smaller token array was overrun (a segfault, or a lost
    token) by exactly these batches.
    """
    import pyarrow as pa

    from pipeline.scoring import Scorer
    from pipeline.tokenizers.rouge_score import get_tokenizer, tokenize_batch

    texts = ["x", "y", "x", "y", "z"] * 7
    a = tokenize_batch(pa.array(texts), tokenizer=get_tokenizer("rouge-score"))
    assert a.tokens.tolist() == [{"x": 0, "y": 1, "z": 2}[t] for t in texts]
    scorer = Scorer()
    preds, refs = ["x", "y", "a b"], [["x"], ["y"], ["b"]]
    expected = scorer.score_batch(preds, refs).table
    for p, r in ((pa.array(preds), pa.array(refs)),
                 (pa.chunked_array([preds[:1], preds[1:]]),
                  pa.chunked_array([refs[:1], refs[1:]])),
                 (pa.array(["pad", *preds]).slice(1), pa.array([["pad"], *refs]).slice(1))):
        got = scorer.score_batch(p, r).table
        assert got.column("rouge1_fmeasure").to_pylist() == [1.0, 1.0, 2 / 3]
        assert got.equals(expected)


@pytest.mark.slow
def test_the_re2_space_class_is_pythons():
    import re

    import pyarrow as pa
    import pyarrow.compute as pc

    from pipeline.metrics.rouge.family import _SPACE_CLASS

    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    python = [bool(re.fullmatch(r"\s", c)) for c in chars]
    re2 = pc.match_substring_regex(pa.array(chars), f"^[{_SPACE_CLASS}]$").to_pylist()
    assert re2 == python
    # the whitespace tokenizer splits exactly where str.split() does
    words = get_tokenizer("whitespace", case_sensitive=True).split_lines(
        pa.array([f"a{c}b" for c in chars], pa.large_string())).to_pylist()
    assert [[t for t in w if t] for w in words] == [f"a{c}b".split() for c in chars]


def _followed_by(text: str, after: bytes):
    """A one-string Arrow array whose data buffer is followed in memory by ``after``."""
    import pyarrow as pa

    data = text.encode()
    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int64).tobytes())
    buffer = pa.py_buffer(data + after).slice(0, len(data))
    return pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, buffer])


@pytest.mark.parametrize("text", ["dogs  ", "dogs ", "a b  c\t", "  ", "caf\u00e9\u3000",
                                  "x\x1f", "  lead", "no space"])
def test_whitespace_tokens_do_not_depend_on_the_bytes_after_a_text(text):
    # pyarrow's utf8_split_whitespace (26.0.1) read the byte after a string ending in white
    # space and, when it was not ASCII, kept " " as a token (or "dogs " for "dogs "). After
    # a batch's last line that byte is outside the data: rouge1 matches and units of the
    # whitespace tokenizer changed from run to run (a flaky test_properties failure).
    tokenizer = get_tokenizer("whitespace", case_sensitive=True)
    for after in (b"\x00", b"A", b" ", b"\x80", b"\xc3", b"\xf0", b"\xff"):
        lines = tokenizer.split_lines(_followed_by(text, after * 16)).to_pylist()
        assert [t for t in lines[0] if t] == text.split(), after


@pytest.mark.parametrize("length", range(1, 19))
def test_byte_scan_tokens_are_rouge_scores_whatever_bytes_follow_a_text(length):
    # The compiled scan classifies 8 bytes at a time and reads past a token's (and a text's)
    # end: tokens of 1-18 bytes at every position of a text, followed in the buffer by
    # token bytes, spaces, newlines or nothing, decoded from the kernel's vocabulary, next
    # to the bytes either side of the token classes' ranges (@ [ ` { / : DEL, non-ASCII).
    # The case-keeping table's tokens are rouge-score's rule without lowercasing: runs of
    # [A-Za-z0-9].
    import re

    from pipeline.compiled import kernel
    from pipeline.tokenizers.rouge_score import _CLASS_LOWER, _CLASS_MIXED

    tokenize = kernel("tokenize_bytes")
    word = "abcdefghijklmnopqrstuvwxyz"[:length]
    for text in (word, f"x {word}", f"{word} Y", f"{word}.{word.upper()}\n\n{word}",
                 f"{word}\u0130{word}", f"ab{word}  {word[::-1]}\x00q",
                 f"@{word.upper()}[`{word}{{9/0:", f"Z\u00e9{word}\u00c9{word.upper()}\x7f1"):
        for after in (b"", b"q" * 16, b"Q" * 16, b" " * 16, b"\n" * 16):
            data = text.encode()
            buf = np.frombuffer(data + after, dtype=np.uint8)
            for table, expected in (
                    (_CLASS_LOWER, rs_tokenize.tokenize(text.replace("\u0130", " "), None)),
                    (_CLASS_MIXED, re.findall("[A-Za-z0-9]+", text))):
                ids, _, _, arena, vocab_offsets, _ = tokenize(
                    buf, np.array([0, len(data)], dtype=np.int64), table)
                vocab = [bytes(arena[a:b]).decode()
                         for a, b in itertools.pairwise(vocab_offsets)]
                assert [vocab[i] for i in ids] == expected, (text, after, table is _CLASS_LOWER)
