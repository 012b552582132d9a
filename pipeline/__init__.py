"""overlap-pipeline: exact ROUGE scoring at scale.

Library use::

    from pipeline import score_texts
    score_texts(["the cat sat"], [["the cat sat on the mat"]], stemmer="porter")
"""

# The submodule pipeline.explain is loaded first, so that the name below stays the function.
from pipeline import explain as _explain_module  # noqa: F401
from pipeline.api import explain, publish, score_texts
from pipeline.scoring import DEFAULT_METRICS, METRICS, ScoredBatch, Scorer

__version__ = "0.1.0"

__all__ = ["DEFAULT_METRICS", "METRICS", "ScoredBatch", "Scorer", "__version__", "explain",
           "publish", "score_texts"]
