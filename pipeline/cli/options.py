"""Option declarations shared by several ``overlap`` commands.

One spelling per concept across commands (``--metrics`` in ``score``, ``compare``, ``report``
and ``explain``); an older spelling stays accepted as a hidden alias so that existing
scripts keep working, and ``--help`` shows only the current one.
"""

from __future__ import annotations

from typing import Any

import click


class AliasedOption(click.Option):
    """A ``click.Option`` whose ``hidden_aliases`` parse as usual but stay out of ``--help``.

    Example: ``click.option("--metrics", "--metric", "metrics", cls=AliasedOption,
    hidden_aliases=("--metric",))`` accepts both spellings into one parameter ``metrics``
    and lists ``--metrics`` alone.
    """

    def __init__(self, *args: Any, hidden_aliases: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hidden_aliases = tuple(hidden_aliases)
        unknown = [a for a in self.hidden_aliases if a not in self.opts]
        if unknown:
            raise ValueError(f"hidden aliases {unknown} are not names of {self.opts}")

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        """The help line, listing the option's names but its hidden aliases."""
        shown = [o for o in self.opts if o not in self.hidden_aliases]
        saved = self.opts
        self.opts = shown
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = saved


def measures_option(*, what: str) -> Any:
    """``--metrics METRIC.MEASURE`` (repeatable or comma-separated; ``--metric`` an alias).

    Args:
        what: the option's help text, after which the alias is mentioned.

    Returns:
        The click decorator; the parameter is ``metrics``, a tuple of the strings given.

    """
    return click.option("--metrics", "--metric", "metrics", cls=AliasedOption,
                        hidden_aliases=("--metric",), multiple=True,
                        metavar="METRIC.MEASURE[,...]",
                        help=f"{what} (--metric, the former name, still works).")


def split_values(values: tuple[str, ...]) -> list[str]:
    """Values of a repeatable, comma-separated option, stripped, empty ones dropped."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]
