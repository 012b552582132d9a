"""ROUGE-1.5.5 without Perl: the Perl script's own figures on the shared data, its flags, and
properties of the skip-bigram and weighted-LCS kernels against brute force."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline import compiled
from pipeline.errors import ConfigError
from pipeline.metrics.rouge155.family import (
    FAMILY,
    Rouge155Options,
    f_alpha,
    parse_rouge155_flags,
    score_rouge155,
)
from pipeline.metrics.rouge155.skipgram import skip_bigram_count
from pipeline.metrics.rouge155.wlcs import wlcs_mark
from pipeline.tokenizers.rouge155 import (
    TextOptions,
    exceptions,
    limit_lines,
    perl_porter,
    porter_rouge155,
    spl_lines,
    stopwords,
    tokenize_rouge155,
)

DATASETS = ["realsumm", "summeval_multiref11", "sl2003_rouge_sample_multiref4",
            "multiling2011_sacrerouge"]
SETS = ["S1", "S2", "S3", "S4", "S5", "S6", "S7"]
# the script's output names -> ours
PERL_NAMES = {"ROUGE-L": "rougeLsum", "ROUGE-W-1.2": "rougeWsum", "ROUGE-S4": "rougeS4",
              "ROUGE-SU4": "rougeSU4", "ROUGE-S*": "rougeS", "ROUGE-SU*": "rougeSU"}
TOLERANCE = 5e-5  # the script prints 5 decimals (and computes F from the rounded P and R)


def _our_name(perl: str) -> str:
    return PERL_NAMES.get(perl) or f"rouge{perl.removeprefix('ROUGE-')}"


@pytest.fixture(scope="module")
def shared_data(shared_dir):
    cache: dict[str, tuple] = {}

    def load(dataset):
        if dataset not in cache:
            path = shared_dir / "data" / dataset
            cache[dataset] = (pq.read_table(path / "examples.parquet").to_pandas(),
                              pq.read_table(path / "expected_rouge155_options.parquet")
                              .to_pandas())
        return cache[dataset]
    return load


def _score(examples, metrics, options):
    return score_rouge155(examples["prediction"].tolist(),
                          [list(r) for r in examples["references"]], metrics, options)


@pytest.mark.parametrize("option_set", SETS)
@pytest.mark.parametrize("dataset", DATASETS)
def test_perl_option_sets(shared_data, dataset, option_set):
    """Every recall, precision and F of the Perl script's per-example output, within 5e-5."""
    examples, expected = shared_data(dataset)
    expected = expected[expected["set"] == option_set]
    metrics, options, _ = parse_rouge155_flags(expected["flags"].iloc[0])
    assert sorted(metrics) == sorted({_our_name(m) for m in expected["metric"]})
    options.pop("tokenizer")
    ours = _score(examples, metrics, Rouge155Options(**options))
    position = dict(zip(examples["id"], range(len(examples)), strict=True))
    n_values = 0
    for perl_name, rows in expected.groupby("metric"):
        at = np.array([position[i] for i in rows["id"]])
        for measure in ("recall", "precision", "fmeasure"):
            got = ours[f"{_our_name(perl_name)}_{measure}"][at]
            diff = np.abs(got - rows[measure].to_numpy())
            bad = np.flatnonzero(diff > TOLERANCE)
            assert bad.size == 0, (f"{perl_name} {measure}: {bad.size} differ, first "
                                   f"{rows['id'].iloc[bad[0]]}: {got[bad[0]]} != "
                                   f"{rows[measure].iloc[bad[0]]}")
            n_values += len(rows)
    assert n_values == 3 * len(expected)


@pytest.mark.parametrize("stemmer", ["none", "porter-rouge155"])
@pytest.mark.parametrize("dataset", DATASETS)
def test_perl_raw_counts(shared_dir, dataset, stemmer):
    """hit, model and peer counts of ROUGE-1, 2 and L equal the script's, with its -m too."""
    path = shared_dir / "data" / dataset
    examples = pq.read_table(path / "examples.parquet").to_pandas()
    expected = pq.read_table(path / "expected_rouge155.parquet").to_pandas()
    expected = expected[expected["stemmer"] == stemmer]
    position = dict(zip(examples["id"], range(len(examples)), strict=True))
    for mode, rule in (("single", "pooled"), ("A", "pooled"), ("B", "best-recall")):
        rows = expected[expected["multiref_mode"] == mode]
        if rows.empty:
            continue
        ours = _score(examples, ("rouge1", "rouge2", "rougeLsum"),
                      Rouge155Options(stemmer=stemmer, multi_reference=rule))
        for metric in ("rouge1", "rouge2", "rougeLsum"):
            want = rows[rows["metric"] == metric]
            at = np.array([position[i] for i in want["id"]])
            for theirs, mine in (("hit", "matches"), ("model_count", "reference_units"),
                                 ("peer_count", "prediction_units")):
                got = ours[f"{metric}_{mine}"][at]
                assert np.array_equal(got, want[theirs].to_numpy()), (mode, metric, theirs)


# --- text handling -----------------------------------------------------------------------

def test_porter_examples_of_porter_1980():
    cases = {"caresses": "caress", "ponies": "poni", "ties": "ti", "cats": "cat",
             "feed": "feed", "agreed": "agre", "plastered": "plaster", "motoring": "motor",
             "conflated": "conflat", "hopping": "hop", "falling": "fall", "filing": "file",
             "happy": "happi", "relational": "relat", "digitizer": "digit",
             "hopefulness": "hope", "triplicate": "triplic", "goodness": "good",
             "revival": "reviv", "adoption": "adopt", "controll": "control", "roll": "roll"}
    assert {w: perl_porter(w) for w in cases} == cases


def test_step_4_tries_ment_and_ent_in_turn():
    # -ement cannot go (m = 1 before it), then -ment cannot, then -ent can (Lin's change)
    assert perl_porter("agreement") == "agreem"
    assert perl_porter("replacement") == "replac"


def test_exception_list_order_decides_six_forms():
    # from the data README: the database the script used, files read adj, adv, noun, verb
    assert len(exceptions()) == 5930
    assert {w: exceptions()[w] for w in ("best", "better", "offer", "involucra", "is",
                                         "testes")} == {
        "best": "well", "better": "well", "offer": "offer", "involucra": "involucrum",
        "is": "be", "testes": "testes"}
    assert porter_rouge155("geese") == "goose"


def test_tokens_are_ascii_alphanumeric_runs():
    tokens, sentences = tokenize_rouge155("U.S.-based Café's co-op\n\n  It's 2005!",
                                          TextOptions())
    assert tokens == ["u", "s", "based", "caf", "s", "co", "op", "it", "s", "2005"]
    assert sentences == [["u", "s", "based", "caf", "s", "co", "op"], ["it", "s", "2005"]]


def test_stopwords_and_stemming_of_long_tokens_only():
    assert "the" in stopwords() and "able" in stopwords()
    tokens, _ = tokenize_rouge155("The cats were running", TextOptions(remove_stopwords=True,
                                                                       stem=True))
    assert tokens == ["cat", "run"]
    assert tokenize_rouge155("dogs cats", TextOptions(stem=True))[0] == ["dog", "cat"]
    assert tokenize_rouge155("was has", TextOptions(stem=True))[0] == ["was", "has"]


def test_word_limit_counts_perl_split_fields():
    lines = spl_lines("a b c\n  d, e -- f\ng h")
    # the second line starts with spaces: split(/\s+/) gives a leading empty field
    assert limit_lines(lines, max_words=5) == [b"a b c", b" d,"]
    assert limit_lines(lines, max_words=3) == [b"a b c"]
    # a limit met exactly still ends the text at that line (the script's `<` test)
    assert limit_lines(lines, max_words=8) == [b"a b c", b" d, e -- f"]
    assert limit_lines(lines, max_words=9) == [b"a b c", b"  d, e -- f", b"g"]
    assert limit_lines(lines, max_words=11) == lines


def test_byte_limit_counts_utf8_bytes_and_the_lcs_reading_does_not_add_up():
    lines = spl_lines("caf\u00e9 au lait\nsecond line here\nthird")
    assert len(lines[0]) == 13  # é is two bytes
    assert limit_lines(lines, max_bytes=20) == [lines[0], b"second "]
    # the script's ROUGE-L reading compares each line alone with the limit
    assert limit_lines(lines, max_bytes=14, lcs=True) == [lines[0], b"second line he"]
    assert limit_lines(lines, max_bytes=4) == [b"caf\xc3"]


# --- flags -----------------------------------------------------------------------------

@pytest.mark.parametrize(("flags", "metrics", "changed"), [
    ("-c 95 -2 -1 -U -r 1000 -n 4 -w 1.2 -a -m",
     ("rouge1", "rouge2", "rouge3", "rouge4", "rougeLsum", "rougeWsum", "rougeS", "rougeSU"),
     {"stemmer": "porter-rouge155"}),
    ("-n 2 -x", ("rouge1", "rouge2"), {}),
    ("-2 4 -u", ("rougeLsum", "rougeSU4"), {}),
    ("-2 4", ("rougeLsum", "rougeS4"), {}),
    ("-2 0 -U -x", ("rougeS0", "rougeSU0"), {}),
    ("-n 1 -s -l 100 -p 0.2 -f B", ("rouge1", "rougeLsum"),
     {"stopwords": "smart", "limit_words": 100, "alpha": 0.2,
      "multi_reference": "best-recall"}),
    ("-n2 -b75 -w 1.5 -fA", ("rouge1", "rouge2", "rougeLsum", "rougeWsum"),
     {"limit_bytes": 75, "wlcs_weight": 1.5}),
    ("-ms -n 1", ("rouge1", "rougeLsum"), {"stemmer": "porter-rouge155", "stopwords": "smart"}),
])
def test_flags_map_to_metrics_and_options(flags, metrics, changed):
    got_metrics, options, _ = parse_rouge155_flags(flags)
    assert got_metrics == metrics
    defaults = {"tokenizer": "rouge155", "stemmer": "none", "stopwords": "none",
                "limit_words": 0, "limit_bytes": 0, "alpha": 0.5, "wlcs_weight": 1.2,
                "multi_reference": "pooled"}
    assert options == {**defaults, **changed}


def test_ignored_flags_each_get_a_note():
    _, _, notes = parse_rouge155_flags("-a -c 95 -r 1000 -d -t 0 -e /x -z SPL -n 1")
    assert sorted(n[:2] for n in notes) == ["-a", "-c", "-d", "-e", "-r", "-t", "-z"]


@pytest.mark.parametrize(("flags", "message"), [
    ("-n 2 -k", "unknown rouge155 flag -k"),
    ("-n", "needs a value"),
    ("-n 2 -l 10 -b 10", "cannot both"),
    ("-f C", "not A or B"),
    ("-p 1.5", "alpha"),
    ("-w 0", "wlcs_weight"),
    ("-x", "no metric"),
    ("-3 HM", "Basic Elements"),
    ("-n 2 config.xml", "not a flag"),
])
def test_bad_flags_are_named(flags, message):
    with pytest.raises(ConfigError, match=message):
        parse_rouge155_flags(flags)


# --- family, F weighting -----------------------------------------------------------------

def test_family_serves_the_new_names_and_signs_its_options():
    assert all(FAMILY.serves(m) for m in ("rougeWsum", "rougeS4", "rougeSU9", "rougeS",
                                          "rougeSU"))
    assert not FAMILY.serves("rouge1") and not FAMILY.serves("rougeW")
    fields = FAMILY.signature_fields({"stemmer": "porter-rouge155", "alpha": 0.2,
                                      "limit_words": 100})
    assert fields == {"tok": "rouge155", "stem": "porter-rouge155", "ref": "pooled",
                      "wlcs": "1.2", "lw": "100", "alpha": "0.2"}
    assert FAMILY.spec("rougeWsum", {}).statistics[0] == ("matches", "float64")


def test_f_alpha_is_van_rijsbergens_weighted_harmonic_mean():
    p, r = np.array([0.5, 0.0, 0.25]), np.array([0.25, 0.0, 1.0])
    assert np.allclose(f_alpha(p, r, 0.2), [1 / (0.2 / 0.5 + 0.8 / 0.25), 0.0,
                                             1 / (0.2 / 0.25 + 0.8 / 1.0)])
    assert np.allclose(f_alpha(p, r, 0.5), [2 * 0.5 * 0.25 / 0.75, 0.0, 0.4])


def test_identical_single_sentences_score_one_except_rouge_w_recall():
    text = "the cat sat on the mat"
    cols = score_rouge155([text], [[text]], ("rouge2", "rougeLsum", "rougeWsum", "rougeSU4"),
                          Rouge155Options())
    for m in ("rouge2", "rougeLsum", "rougeSU4"):
        assert cols[f"{m}_fmeasure"][0] == pytest.approx(1.0)
    # one run of 6 weighs 6 ** 1.2, but the script raises the reference's units to the
    # weight twice: R = (6 ** 1.2 / 6 ** 1.44) ** (1 / 1.2) = 6 ** -0.2; P = 1
    assert cols["rougeWsum_recall"][0] == pytest.approx(6 ** -0.2)
    assert cols["rougeWsum_precision"][0] == pytest.approx(1.0)


# --- kernels against brute force ------------------------------------------------------------

def _brute_skip(tokens, gap, unigrams):
    grams = Counter()
    for i in range(len(tokens) - 1):
        if unigrams:
            grams[(tokens[i],)] += 1
        for j in range(i + 1, len(tokens)):
            if gap < 0 or j - i - 1 <= gap:
                grams[(tokens[i], tokens[j])] += 1
    return grams


small_texts = st.lists(st.integers(0, 4), max_size=12)


@settings(max_examples=150, deadline=None)
@given(small_texts, small_texts, st.integers(-1, 5), st.booleans())
def test_skip_bigram_counts_equal_brute_force(pred, ref, gap, unigrams):
    tokens = np.array(pred + ref, dtype=np.int32)
    offsets = np.array([0, len(pred), len(pred) + len(ref)], dtype=np.int64)
    # the compiled build, as the scorer calls it (the JIT build would compile it first)
    skip_bigram_pairs = compiled.kernel("skip_bigram_pairs")
    got = skip_bigram_pairs(tokens, offsets, np.array([0]), np.array([1]), gap, unigrams, 5)
    p, r = _brute_skip(pred, gap, unigrams), _brute_skip(ref, gap, unigrams)
    assert got[0].tolist() == [sum((p & r).values()), sum(p.values()), sum(r.values())]
    if not unigrams:
        assert skip_bigram_count(len(pred), gap) == sum(p.values())


def _lcs_length(a, b):
    row = [0] * (len(b) + 1)
    for x in a:
        diag = 0
        for j, y in enumerate(b, 1):
            diag, row[j] = row[j], diag + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


tiny_texts = st.lists(st.integers(0, 2), min_size=1, max_size=6)


@pytest.mark.slow  # wlcs_mark is JIT only: numba compiles it and its helpers first, 4-6 CPU-s
@settings(max_examples=100, deadline=None)
@given(tiny_texts, tiny_texts)
def test_wlcs_marks_a_common_subsequence_of_lin_weight(a, b):
    weight = 1.2
    tokens = np.array(a + b, dtype=np.int32)
    pw = np.array([float(k) ** weight for k in range(len(tokens) + 2)])
    mark = np.zeros(len(a), dtype=np.bool_)
    wlcs_mark(tokens, 0, len(a), len(a), len(b), pw, mark)
    marked = [t for t, m in zip(a, mark, strict=True) if m]
    it = iter(b)
    assert all(t in it for t in marked)  # a subsequence of b as well
    assert len(marked) <= _lcs_length(a, b)
    # one sentence each, so no marked token is clipped: the hit is the sum of f(run) over
    # runs of consecutive marked reference positions (the script's counting)
    offs = np.array([0, len(a), len(a) + len(b)], dtype=np.int64)
    summary_lcs_pairs = compiled.kernel("summary_lcs_pairs")  # the scorer's (compiled) build
    out = summary_lcs_pairs(tokens, offs, np.array([0, 1, 2]), tokens, offs,
                            np.array([1]), np.array([0]), True, pw, 3)
    runs = [len(list(g)) for m, g in itertools.groupby(mark) if m]
    assert out[0, 0] == pytest.approx(sum(r ** weight for r in runs))
    assert len(marked) <= out[0, 0] + 1e-9 and out[0, 0] <= len(marked) ** weight + 1e-9
    assert out[0, 1] == pytest.approx(len(a) ** weight)


@settings(max_examples=100, deadline=None)
@given(tiny_texts, tiny_texts)
def test_compiled_wlcs_hit_is_the_scripts_table_and_backtrack(a, b):
    """The fast tier's twin of the test above, through the compiled build only: one sentence
    each, the hit is the sum of f(run) over the runs of the script's marked positions
    (``_wlcs_marks_python``, below), and the reference's weight f(len(a))."""
    weight = 1.2
    tokens = np.array(a + b, dtype=np.int32)
    pw = np.array([float(k) ** weight for k in range(len(tokens) + 2)])
    offs = np.array([0, len(a), len(a) + len(b)], dtype=np.int64)
    out = compiled.kernel("summary_lcs_pairs")(tokens, offs, np.array([0, 1, 2]), tokens, offs,
                                               np.array([1]), np.array([0]), True, pw, 3)
    marks = _wlcs_marks_python(a, b, weight)
    runs = [len(list(g)) for m, g in itertools.groupby(i in marks for i in range(len(a))) if m]
    assert out[0, 0] == pytest.approx(sum(r ** weight for r in runs))
    assert out[0, 1] == pytest.approx(len(a) ** weight)


def test_bad_options_are_named():
    with pytest.raises(ConfigError, match="stemmer"):
        Rouge155Options(stemmer="porter")
    with pytest.raises(ConfigError, match="porter-rouge155"):
        Rouge155Options.from_mapping({"stemmer": "porter"})
    with pytest.raises(ConfigError, match="limit_words"):
        Rouge155Options(limit_words=-1)


# --- wiring: settings, Scorer, CLI ------------------------------------------------------------

def test_scorer_with_rouge155_flags_equals_the_perl_figures(shared_data):
    from pipeline import Scorer

    examples, expected = shared_data("sl2003_rouge_sample_multiref4")
    expected = expected[expected["set"] == "S6"]
    scorer = Scorer(rouge155=expected["flags"].iloc[0])
    assert scorer.metrics == ("rouge1", "rouge2", "rougeLsum", "rougeWsum", "rougeS4",
                              "rougeSU4")
    table = scorer.score_batch(examples["prediction"].tolist(),
                               [list(r) for r in examples["references"]]).table.to_pandas()
    table.index = examples["id"]
    for perl_name, rows in expected.groupby("metric"):
        got = table.loc[rows["id"], f"{_our_name(perl_name)}_recall"].to_numpy()
        assert np.abs(got - rows["recall"].to_numpy()).max() <= TOLERANCE


def test_config_key_and_flags_beside_it(tmp_path):
    from pipeline.config import load_config_file, resolve_config

    path = tmp_path / "c.yaml"
    path.write_text('rouge155: "-n 2 -s -f B"\nbootstrap: 0\n')
    config = resolve_config(load_config_file(str(path)))
    assert config.metrics == ("rouge1", "rouge2", "rougeLsum")
    assert (config.tokenizer, config.stopwords, config.multi_reference) == (
        "rouge155", "smart", "best-recall")
    assert "stop:smart" in str(config.signature(n_references=4))


def test_cli_signature_shows_what_the_flags_map_to():
    from click.testing import CliRunner

    from pipeline.cli import main

    result = CliRunner().invoke(main, ["signature", "--rouge155",
                                       "-c 95 -2 -1 -U -r 1000 -n 4 -w 1.2 -a -m"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "note: -c ignored" in lines[0]
    assert any("-> metrics: rouge1,rouge2,rouge3,rouge4,rougeLsum,rougeWsum,rougeS,rougeSU"
               in line for line in lines)
    assert lines[-1].startswith("metrics:rouge1+rouge2+rouge3+rouge4+rougeLsum+rougeWsum+"
                                "rougeS+rougeSU|tok:rouge155|stem:porter-rouge155|ref:pooled|"
                                "wlcs:1.2|")
    bad = CliRunner().invoke(main, ["signature", "--rouge155", "-n 2 -k"])
    assert bad.exit_code == 2 and "unknown rouge155 flag -k" in bad.output


def test_rouge155_metrics_and_rouge_score_tokens_cannot_share_a_run():
    from pipeline import Scorer

    with pytest.raises(ConfigError, match="disagree on signature field 'tok'") as caught:
        Scorer(metrics=("rouge1", "rougeSU4"))
    assert "rouge1 and rougeSU4 cannot be scored in one run" in str(caught.value)
    assert "add --tokenizer rouge155" in str(caught.value)
    # what the message says to do works (rougeLsum for rougeL)
    Scorer(metrics=("rouge1", "rougeLsum", "rougeSU4"), tokenizer="rouge155")
    with pytest.raises(ConfigError, match="no rougeL"):
        Scorer(metrics=("rougeL",), tokenizer="rouge155")
    with pytest.raises(ConfigError, match="goes with tokenizer rouge155"):
        Scorer(metrics=("rouge1",), stemmer="porter-rouge155")


def _wlcs_marks_python(a, b, weight):
    """The script's WLCS table and backtrack (Lin 2004, section 3.3; ties go up), in Python."""
    m, n = len(a), len(b)
    c = [[0.0] * (n + 1) for _ in range(m + 1)]
    run = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        ci, cu, ri, ru = c[i], c[i - 1], run[i], run[i - 1]
        for j in range(1, n + 1):
            if a[i - 1] == b[j - 1]:
                k = ru[j - 1]
                ci[j] = cu[j - 1] + (k + 1) ** weight - k ** weight
                ri[j] = k + 1
            else:
                ci[j] = cu[j] if cu[j] >= ci[j - 1] else ci[j - 1]
    marks, i, j = set(), m, n
    while i and j:
        if a[i - 1] == b[j - 1]:
            i, j = i - 1, j - 1
            marks.add(i)
        elif c[i - 1][j] >= c[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return marks


@pytest.mark.slow
@pytest.mark.parametrize(("m", "n", "vocab"), [(1100, 1000, 20), (1500, 800, 4)])
def test_checkpointed_wlcs_walks_the_same_path(m, n, vocab):
    """Tables over FULL_TABLE_MAX_CELLS are checkpointed; the walk must not change."""
    rng = np.random.default_rng(m)
    a, b = rng.integers(0, vocab, m).tolist(), rng.integers(0, vocab, n).tolist()
    tokens = np.array(a + b, dtype=np.int32)
    pw = np.array([float(k) ** 1.2 for k in range(max(m, n) + 2)])
    mark = np.zeros(m, dtype=np.bool_)
    wlcs_mark(tokens, 0, m, m, n, pw, mark)
    assert set(np.flatnonzero(mark).tolist()) == _wlcs_marks_python(a, b, 1.2)
