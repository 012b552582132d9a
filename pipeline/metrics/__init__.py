"""Compiled metric kernels on integer token ids (numba). Pure: arrays in, counts out."""

from pipeline.metrics.batch import score_pairs

__all__ = ["score_pairs"]
