"""The reproducibility signature written on every result, in the style of sacrebleu's.

Example::

    metrics:rouge1+rouge2+rougeL+rougeLsum|tok:rouge-score|stem:none|case:lc|ref:max|nrefs:1|bs:1000|ci:0.95|seed:12345|version:0.1.0

Fields, in order: ``metrics`` (``+``-joined), ``tok`` (tokenizer), ``stem`` (``none`` or
``porter``), ``case`` (``lc`` lowercased, ``mixed`` case-sensitive), ``ref`` (multi-reference
rule), ``nrefs`` (references per example, or ``var`` when it varies), ``bs`` (bootstrap
resamples, 0 = off), ``ci`` (confidence level), ``seed`` (bootstrap seed), then any extra
fields a later setting adds, and ``version`` last. Reference: Post (2018), "A Call for
Clarity in Reporting BLEU Scores" (sacrebleu signatures).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# Fields whose difference makes two runs' scores incomparable (``overlap compare`` refuses).
SCORE_FIELDS = ("metrics", "tok", "stem", "case", "ref")


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
    tokenizer: str,
    stemmer: str,
    case_sensitive: bool,
    multi_reference: str,
    n_references: int | str,
    n_bootstrap: int,
    confidence: float,
    seed: int | None,
    extra: Mapping[str, str] | None = None,
) -> Signature:
    """Build the signature of a scoring configuration.

    Args:
        metrics: metric names, in the order requested.
        tokenizer: tokenizer name.
        stemmer: ``none`` or ``porter``.
        case_sensitive: True for case-sensitive runs (``case:mixed``).
        multi_reference: the multi-reference rule name.
        n_references: references per example, or ``"var"`` when it varies.
        n_bootstrap: bootstrap resamples (0 when off).
        confidence: confidence level in (0, 1).
        seed: bootstrap seed (None is written ``none``).
        extra: further ``key: value`` settings (e.g. ``maxtok``), written before ``version``.

    """
    from pipeline import __version__

    parts: list[tuple[str, str]] = [
        ("metrics", "+".join(metrics)),
        ("tok", tokenizer),
        ("stem", stemmer),
        ("case", "mixed" if case_sensitive else "lc"),
        ("ref", multi_reference),
        ("nrefs", str(n_references)),
        ("bs", str(n_bootstrap)),
        ("ci", f"{confidence:g}"),
        ("seed", "none" if seed is None else str(seed)),
    ]
    parts += [(k, str(v)) for k, v in (extra or {}).items()]
    parts.append(("version", __version__))
    return Signature(tuple(parts))
