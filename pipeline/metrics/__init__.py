"""Compiled metric kernels on integer token ids (numba). Pure: arrays in, counts out.

Callers load the kernels through :func:`pipeline.compiled.kernel` (compiled ahead of time,
no numba import at run time); importing the modules here imports numba.
"""
