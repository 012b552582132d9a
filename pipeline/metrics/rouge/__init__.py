"""ROUGE as google-research rouge-score 0.1.2 computes it.

The family (:mod:`.family`), its pair kernel (:mod:`.pairs`), the LCS kernels (:mod:`.lcs`)
and n-gram matching (:mod:`.ngram`).
"""
