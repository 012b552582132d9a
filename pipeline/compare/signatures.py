"""Refusing to compare runs scored differently (the rules live in :mod:`pipeline.signature`)."""

from __future__ import annotations

from typing import Any

from pipeline.errors import SignatureMismatchError
from pipeline.signature import (
    NON_SCORE_FIELDS,
    Signature,
    compared_differences,
    score_differences,
    score_fields,
)


def check_signatures(baseline: Signature, candidate: Signature, *,
                     allow_mismatch: bool = False, metrics: tuple[str, ...] | None = None,
                     options: tuple[dict[str, Any], ...] = ()) -> list[str]:
    """Compare the scoring-relevant fields of two run signatures.

    The rules are :func:`pipeline.signature.score_differences`: metrics, tokenizer, stemmer,
    case, multi-reference rule and any family's or later setting's field; with ``metrics``,
    only the fields of those metrics' families
    (:func:`pipeline.signature.compared_differences`).

    Args:
        baseline: the baseline run's signature.
        candidate: the candidate run's signature.
        allow_mismatch: return the differing fields instead of raising.
        metrics: the compared metrics (None: every score field matters).
        options: the runs' scoring options, for the families' fields.

    Returns:
        The names of the differing fields (empty when the runs are comparable).

    Raises:
        SignatureMismatchError: fields differ and allow_mismatch is False; the message names
            each field with both values.

    """
    if metrics is None:
        fields = score_differences(baseline, candidate)
    else:
        fields, _ = compared_differences(baseline, candidate, metrics=metrics, options=options)
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
