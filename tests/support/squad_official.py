"""The official SQuAD v1.1 evaluation (evaluate-v1.1.py), transcribed: the outside truth.

Used by tests/metrics/test_squad.py and scripts/bench_families.py (the peer loop it times).
"""

import re
import string
from collections import Counter


# A direct transcription of evaluate-v1.1.py (normalize_answer, f1_score,
# exact_match_score, metric_max_over_ground_truths).
def official_normalize(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def official_f1(prediction, ground_truth):
    prediction_tokens = official_normalize(prediction).split()
    ground_truth_tokens = official_normalize(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def official_em(prediction, ground_truth):
    return official_normalize(prediction) == official_normalize(ground_truth)


def official_max(metric_fn, prediction, ground_truths):
    return max(metric_fn(prediction, gt) for gt in ground_truths)
