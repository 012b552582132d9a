"""The reproducibility signature written on every result, and the rules for comparing two.

Example::

    metrics:rouge1+rouge2+rougeL+rougeLsum|tok:rouge-score|stem:none|case:lc|ref:max|nrefs:1|bs:1000-poisson|ci:0.95|seed:12345|maxtok:100000|version:0.1.0

Fields, in order: ``metrics`` (``+``-joined), then the signature fields of each metric
family of the run, in order of its first metric (only the families the run uses; each
family's ``signature_fields`` says which, e.g. ROUGE's tokenizer, stemmer, case and
multi-reference rule), then ``nrefs`` (references per example, or ``var`` when it varies),
``bs`` (bootstrap resamples and method, e.g. ``1000-poisson``, see :mod:`pipeline.stats`;
0 = off), ``ci`` (confidence level), ``seed`` (bootstrap seed), then the fields a family
declares as trailing (``trailing_signature_fields``: ROUGE's ``split`` and ``maxtok``, where
they have been since the first version), and ``version`` last. Reference: Post (2018), "A
Call for Clarity in Reporting BLEU Scores" (sacrebleu signatures).

Comparing: two runs' scores are comparable when their :func:`score_fields` agree: every
field except those describing the run or its inputs (:data:`NON_SCORE_FIELDS`), so a field a
new family or setting adds is checked without changing this module. A comparison of some
measures needs only the fields of their metrics' families to agree
(:func:`compared_differences`): a metric added to the candidate is a note, a changed stemmer
for a compared ROUGE measure is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The field that decides scores in every signature (checked first); the families' fields
# follow, in the order the signatures write them.
SCORE_FIELDS = ("metrics",)
# Fields that describe the run or its inputs, not how a score is computed: a difference is
# reported as a note, never refused.
NON_SCORE_FIELDS = ("nrefs", "bs", "ci", "seed", "version")


@dataclass(frozen=True)
class Signature:
    """An ordered set of ``key:value`` settings.

    Attributes:
        fields: the settings in signature order; values are strings without ``|``.

    """

    fields: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def __str__(self) -> str:
        return "|".join(f"{k}:{v}" for k, v in self.fields)

    def as_dict(self) -> dict[str, str]:
        """The fields as a dict (signature order)."""
        return dict(self.fields)

    @classmethod
    def parse(cls, text: str) -> Signature:
        """Parse a signature string written by :meth:`__str__`.

        Raises:
            ValueError: a part without ``:``.

        """
        parts = []
        for part in text.strip().split("|"):
            key, sep, value = part.partition(":")
            if not sep:
                raise ValueError(f"not a signature field: {part!r} in {text!r}")
            parts.append((key, value))
        return cls(tuple(parts))

    def differences(self, other: Signature, *, keys: tuple[str, ...] = SCORE_FIELDS
                    ) -> list[str]:
        """Names of ``keys`` whose values differ between two signatures, in ``keys`` order."""
        a, b = self.as_dict(), other.as_dict()
        return [k for k in keys if a.get(k) != b.get(k)]


def build_signature(
    *,
    metrics: tuple[str, ...],
    n_references: int | str,
    n_bootstrap: int,
    confidence: float,
    seed: int | None,
    **options: Any,
) -> Signature:
    """Build the signature of a scoring configuration.

    Args:
        metrics: metric names, in the order requested.
        n_references: references per example, or ``"var"`` when it varies.
        n_bootstrap: bootstrap resamples (0 when off).
        confidence: confidence level in (0, 1).
        seed: bootstrap seed (None is written ``none``).
        options: the flat scoring options (``tokenizer``, ``stemmer``, ``max_tokens``,
            ``bleu_tokenize``...); missing family options take their defaults, and without
            ``max_tokens`` no text is cut (no ``maxtok`` field).

    Raises:
        ConfigError: an unknown metric.

    """
    from pipeline import __version__
    from pipeline.metrics import registry

    family = registry.signature_fields(metrics, options)
    late = [(k, family.pop(k)) for k in registry.trailing_signature_fields() if k in family]
    parts: list[tuple[str, str]] = [("metrics", "+".join(metrics)), *family.items(),
                                    ("nrefs", str(n_references)),
                                    ("bs", f"{n_bootstrap}-poisson" if n_bootstrap else "0"),
                                    ("ci", f"{confidence:g}"),
                                    ("seed", "none" if seed is None else str(seed)),
                                    *late, ("version", __version__)]
    return Signature(tuple(parts))


def score_fields(baseline: Signature, candidate: Signature) -> tuple[str, ...]:
    """Return the signature fields that decide how scores are computed, for two signatures.

    :data:`SCORE_FIELDS` (``metrics``), then every further field either signature has (the
    baseline's first, in signature order) that is not in :data:`NON_SCORE_FIELDS`: the
    families' fields, e.g. ROUGE's ``tok`` or BLEU's ``bleu-tok``.
    """
    extra = [k for sig in (baseline, candidate) for k, _ in sig.fields
             if k not in SCORE_FIELDS and k not in NON_SCORE_FIELDS]
    return SCORE_FIELDS + tuple(dict.fromkeys(extra))


def score_differences(baseline: Signature, candidate: Signature) -> list[str]:
    """The :func:`score_fields` whose values differ (empty: the scores are comparable)."""
    return baseline.differences(candidate, keys=score_fields(baseline, candidate))


def _family_fields(metrics: tuple[str, ...], options: tuple[dict[str, Any], ...]
                   ) -> set[str] | None:
    from pipeline.errors import ConfigError
    from pipeline.metrics import registry

    keys: set[str] = set()
    try:
        for opts in options or ({},):
            for metric in metrics:  # one at a time: families of different runs may disagree
                keys.update(registry.signature_fields((metric,), opts))
    except ConfigError:
        return None
    return keys


def compared_differences(baseline: Signature, candidate: Signature, *,
                         metrics: tuple[str, ...], options: tuple[dict[str, Any], ...] = ()
                         ) -> tuple[list[str], list[str]]:
    """Split the differing score fields of two runs by whether the compared metrics use them.

    A differing field is only noted when it is ``metrics`` (the candidate scored a metric
    more or less) or a field that only the families of metrics *not* compared write (e.g.
    ``bleu-tok`` when only ROUGE measures are compared); every other differing score field
    (the compared families' fields, and any field no family claims) refuses.

    Args:
        baseline: the baseline's signature.
        candidate: the candidate's signature.
        metrics: the metrics whose measures are compared.
        options: the runs' scoring options (manifest configs), for the families' fields.

    Returns:
        ``(refused, noted)``, each in :func:`score_fields` order.

    """
    differing = score_differences(baseline, candidate)
    listed = [m for sig in (baseline, candidate)
              for m in sig.as_dict().get("metrics", "").split("+") if m]
    others = tuple(dict.fromkeys(m for m in listed if m not in metrics))
    mine = _family_fields(tuple(metrics), options)
    theirs = _family_fields(others, options) if others else set()
    if mine is None or theirs is None:
        return differing, []
    aside = {"metrics"} | (theirs - mine)
    return [k for k in differing if k not in aside], [k for k in differing if k in aside]


__all__ = ["NON_SCORE_FIELDS", "SCORE_FIELDS", "Signature", "build_signature",
           "compared_differences", "score_differences", "score_fields"]
