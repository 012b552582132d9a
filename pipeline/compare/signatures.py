"""Refusing to compare runs scored differently (the rules live in :mod:`pipeline.signature`)."""

from __future__ import annotations

from pipeline.errors import SignatureMismatchError
from pipeline.signature import NON_SCORE_FIELDS, Signature, score_differences, score_fields


def check_signatures(baseline: Signature, candidate: Signature, *,
                     allow_mismatch: bool = False) -> list[str]:
    """Compare the scoring-relevant fields of two run signatures.

    The rules are :func:`pipeline.signature.score_differences`: metrics, tokenizer, stemmer,
    case, multi-reference rule and any family's or later setting's field.

    Args:
        baseline: the baseline run's signature.
        candidate: the candidate run's signature.
        allow_mismatch: return the differing fields instead of raising.

    Returns:
        The names of the differing fields (empty when the runs are comparable).

    Raises:
        SignatureMismatchError: fields differ and allow_mismatch is False; the message names
            each field with both values.

    """
    fields = score_differences(baseline, candidate)
    if fields and not allow_mismatch:
        a, b = baseline.as_dict(), candidate.as_dict()
        detail = "; ".join(f"{k}: {a.get(k, '(absent)')} vs {b.get(k, '(absent)')}"
                           for k in fields)
        raise SignatureMismatchError(
            f"the runs were scored differently ({detail})",
            hint="scores from different settings are not comparable; pass "
                 "--allow-signature-mismatch to compare anyway")
    return fields


__all__ = ["NON_SCORE_FIELDS", "check_signatures", "score_fields"]
