"""Metric families, their registry and their kernels.

One protocol (:mod:`.base`), the registry dispatching metric names to families
(:mod:`.registry`), one module per family (:mod:`.rouge`...), and pure kernels on token ids
(``ngram``, ``lcs``, ``batch``: numba, arrays in, counts out).
"""
