"""Library entry points: composition only, no rules of their own."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from pipeline.scoring import DEFAULT_METRICS, Scorer


def score_texts(
    predictions: Sequence[str | None],
    references: Sequence[str | Sequence[str]],
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    tokenizer: str = "rouge-score",
    stemmer: str = "none",
    case_sensitive: bool = False,
    multi_reference: str = "max",
) -> pd.DataFrame:
    """Score predictions against references in memory (for notebooks and small jobs).

    Defaults reproduce google-research rouge-score 0.1.2 (``RougeScorer`` without stemming;
    ``score_multi`` for several references) float for float.

    Args:
        predictions: N prediction texts.
        references: N items, each one reference text or a list of reference texts.
        metrics: rouge1..rouge9, rougeL, rougeLsum.
        tokenizer: ``rouge-score``, ``unicode`` or ``whitespace``.
        stemmer: ``none`` or ``porter``.
        case_sensitive: keep case.
        multi_reference: ``max``, ``mean``, ``pooled`` or ``best-recall``.

    Returns:
        A DataFrame with N rows in input order and the columns of
        :attr:`pipeline.scoring.ScoredBatch.table`.

    Raises:
        ConfigError: unknown metric, tokenizer, stemmer or rule.
        ValueError: predictions and references differ in length.
    """
    scorer = Scorer(metrics=tuple(metrics), tokenizer=tokenizer, stemmer=stemmer,
                    case_sensitive=case_sensitive, multi_reference=multi_reference)
    refs = [[r] if isinstance(r, str) else list(r) for r in references]
    return scorer.score_batch(list(predictions), refs).table.to_pandas()
