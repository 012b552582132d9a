"""Agreement of metrics with human judgments: coefficients, levels, intervals, tests.

Pure functions over plain matrices ``X[system, input]`` (NaN for missing), in the manner
of nlpstats and mt-metrics-eval: :mod:`~pipeline.agree.coefficients` (one pair of
vectors), :mod:`~pipeline.agree.columns` (every column of a matrix at once),
:mod:`~pipeline.agree.levels` (system, input, global), :mod:`~pipeline.agree.resampling`
(bootstrap intervals, permutation tests, clusters; resampling kept apart from the
statistic and seeded per computation), :mod:`~pipeline.agree.raters` (Krippendorff's
alpha, each rater against the others), :mod:`~pipeline.agree.preferences` (pairwise
preferences) and :mod:`~pipeline.agree.analysis` (a joined table of scores and
judgments -> the rows of ``agreement.parquet``). No file, terminal or cluster here: the
command reads and writes through :func:`pipeline.api.agree`.
"""
