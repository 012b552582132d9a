"""Which signature fields two compared runs must share (the rest are only noted)."""

from __future__ import annotations

from pipeline.errors import SignatureMismatchError
from pipeline.signature import SCORE_FIELDS, Signature

# Signature fields that describe the run or its inputs, not how a score is computed: a
# difference is reported as a note, never refused.
NON_SCORE_FIELDS = ("nrefs", "bs", "ci", "seed", "version")


def score_fields(baseline: Signature, candidate: Signature) -> tuple[str, ...]:
    """Return the signature fields that decide how scores are computed, for two signatures.

    :data:`pipeline.signature.SCORE_FIELDS` (metrics, tokenizer, stemmer, case,
    multi-reference rule), then any further field either signature has that is not in
    :data:`NON_SCORE_FIELDS` (a setting added later, e.g. a sentence-split rule, is thereby
    checked without changing this code).
    """
    extra = [k for sig in (baseline, candidate) for k, _ in sig.fields
             if k not in SCORE_FIELDS and k not in NON_SCORE_FIELDS]
    return SCORE_FIELDS + tuple(dict.fromkeys(extra))


def check_signatures(baseline: Signature, candidate: Signature, *,
                     allow_mismatch: bool = False) -> list[str]:
    """Compare the scoring-relevant fields of two run signatures.

    The fields are those of :func:`score_fields`: metrics, tokenizer, stemmer, case,
    multi-reference rule and any later scoring setting.

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
    fields = baseline.differences(candidate, keys=score_fields(baseline, candidate))
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
