"""A small plain-Python ROUGE, written from the definitions, to cross-check the fast kernels.

Follows rouge-score 0.1.2 (rouge_scorer.py, tokenize.py, scoring.py) and ROUGE-1.5.5's
``-f A`` / ``-f B`` multi-reference rules. Slow on purpose: clarity over speed.
"""

from __future__ import annotations

import collections
import re
import unicodedata

from nltk.stem import porter

_STEMMER = porter.PorterStemmer()


def tokenize(text: str, *, stem: bool = False, tokenizer: str = "rouge-score") -> list[str]:
    if tokenizer == "rouge-score":
        text = re.sub(r"[^a-z0-9]+", " ", text.lower())
        tokens = re.split(r"\s+", text)
    elif tokenizer == "whitespace":
        tokens = text.lower().split()
    elif tokenizer == "unicode":
        text = unicodedata.normalize("NFKC", text).casefold()
        tokens, cur = [], ""
        for ch in text:
            cat = unicodedata.category(ch)
            name = unicodedata.name(ch, "")
            if name.startswith(("CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR")):
                tokens += [cur, ch]
                cur = ""
            elif cat[0] in "LMN":
                cur += ch
            else:
                tokens.append(cur)
                cur = ""
        tokens.append(cur)
    else:
        raise ValueError(tokenizer)
    if stem:
        tokens = [_STEMMER.stem(t) if len(t) > 3 else t for t in tokens]
    return [t for t in tokens if t]


def ngrams(tokens: list[str], n: int) -> collections.Counter:
    return collections.Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def lcs_table(ref: list[str], can: list[str]) -> list[list[int]]:
    t = [[0] * (len(can) + 1) for _ in range(len(ref) + 1)]
    for i in range(1, len(ref) + 1):
        for j in range(1, len(can) + 1):
            if ref[i - 1] == can[j - 1]:
                t[i][j] = t[i - 1][j - 1] + 1
            else:
                t[i][j] = max(t[i - 1][j], t[i][j - 1])
    return t


def lcs_indices(ref: list[str], can: list[str]) -> list[int]:
    """rouge-score's _backtrack_norec: reference positions on the chosen LCS."""
    t = lcs_table(ref, can)
    i, j, out = len(ref), len(can), []
    while i > 0 and j > 0:
        if ref[i - 1] == can[j - 1]:
            out.insert(0, i - 1)
            i, j = i - 1, j - 1
        elif t[i][j - 1] > t[i - 1][j]:
            j -= 1
        else:
            i -= 1
    return out


def statistics(prediction: str, reference: str, metric: str, *, stem: bool = False,
               tokenizer: str = "rouge-score") -> tuple[int, int, int]:
    """(matches, prediction units, reference units) of one pair."""
    if metric == "rougeLsum":
        p_lines = [tokenize(s, stem=stem, tokenizer=tokenizer)
                   for s in prediction.split("\n") if s]
        r_lines = [tokenize(s, stem=stem, tokenizer=tokenizer)
                   for s in reference.split("\n") if s]
        n = sum(map(len, p_lines))
        m = sum(map(len, r_lines))
        if not n or not m:
            return 0, n, m
        cnt_p = collections.Counter(t for s in p_lines for t in s)
        cnt_r = collections.Counter(t for s in r_lines for t in s)
        hits = 0
        for r in r_lines:
            union = sorted(set().union(*[lcs_indices(r, c) for c in p_lines]))
            for t in (r[i] for i in union):
                if cnt_p[t] > 0 and cnt_r[t] > 0:
                    hits += 1
                    cnt_p[t] -= 1
                    cnt_r[t] -= 1
        return hits, n, m
    p = tokenize(prediction, stem=stem, tokenizer=tokenizer)
    r = tokenize(reference, stem=stem, tokenizer=tokenizer)
    if metric == "rougeL":
        return (lcs_table(r, p)[-1][-1] if p and r else 0), len(p), len(r)
    n = int(metric[5:])
    pg, rg = ngrams(p, n), ngrams(r, n)
    return sum(min(c, pg[g]) for g, c in rg.items()), sum(pg.values()), sum(rg.values())


def prf(matches: int, pred_units: int, ref_units: int) -> tuple[float, float, float]:
    p = matches / max(pred_units, 1)
    r = matches / max(ref_units, 1)
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return p, r, f


def score(prediction: str, references: list[str], metric: str, *, rule: str = "max",
          stem: bool = False, tokenizer: str = "rouge-score") -> dict:
    """One example's score under a multi-reference rule: dict of precision, recall,
    fmeasure, matches, prediction_units, reference_units, reference_index."""
    stats = [statistics(prediction, r, metric, stem=stem, tokenizer=tokenizer)
             for r in references]
    scores = [prf(*s) for s in stats]
    if rule in ("max", "best-recall"):
        key = 2 if rule == "max" else 1
        best = 0
        for k, s in enumerate(scores):
            if s[key] > scores[best][key]:
                best = k
        m, pu, ru = stats[best]
        p, r, f = scores[best]
        return dict(precision=p, recall=r, fmeasure=f, matches=m, prediction_units=pu,
                    reference_units=ru, reference_index=best)
    m = sum(s[0] for s in stats)
    pu = sum(s[1] for s in stats)
    ru = sum(s[2] for s in stats)
    if rule == "pooled":
        p, r, f = prf(m, pu, ru)
    elif rule == "mean":
        p = sum(s[0] for s in scores) / len(scores)
        r = sum(s[1] for s in scores) / len(scores)
        f = sum(s[2] for s in scores) / len(scores)
    else:
        raise ValueError(rule)
    return dict(precision=p, recall=r, fmeasure=f, matches=m, prediction_units=pu,
                reference_units=ru, reference_index=-1)
