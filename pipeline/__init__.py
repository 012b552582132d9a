"""overlap-pipeline: exact, fast word-overlap metrics (ROUGE, BLEU, chrF, token F1) at scale.

Library use::

    from pipeline import score_corpus, score_texts
    score_texts(["the cat sat"], [["the cat sat on the mat"]], stemmer="porter")  # per example
    score_corpus(["the cat sat"], [["the cat sat on the mat"]], metrics=["rouge1", "bleu"])
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

# Imported on first use, so that `import pipeline.<module>` (the CLI, Ray workers, the
# build) does not pay for the scoring stack.
_LAZY = {"score_texts": "pipeline.api", "score_corpus": "pipeline.api",
         "explain": "pipeline.api", "publish": "pipeline.api",
         "DEFAULT_METRICS": "pipeline.scoring", "METRICS": "pipeline.scoring",
         "ScoredBatch": "pipeline.scoring", "Scorer": "pipeline.scoring"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'pipeline' has no attribute {name!r}")


__all__ = ["DEFAULT_METRICS", "METRICS", "ScoredBatch", "Scorer", "__version__", "explain",
           "publish", "score_corpus", "score_texts"]
