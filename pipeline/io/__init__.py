"""Input and output of a run.

Locating and reading Parquet shards, hash partitioning by id, the input layouts and output
schema, and atomic writing of a run's directory.
"""
