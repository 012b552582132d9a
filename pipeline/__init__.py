"""overlap-pipeline: exact ROUGE scoring at scale.

Library use::

    from pipeline import score_texts
    score_texts(["the cat sat"], [["the cat sat on the mat"]], stemmer="porter")
"""

from pipeline.api import score_texts
from pipeline.scoring import DEFAULT_METRICS, METRICS, ScoredBatch, Scorer

__version__ = "0.1.0"

__all__ = ["DEFAULT_METRICS", "METRICS", "ScoredBatch", "Scorer", "__version__", "score_texts"]
