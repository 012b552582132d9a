"""The small interface every engine implements: submit a function, collect results.

Handles returned by :meth:`Runner.submit` may be passed as arguments to later submissions;
the engine resolves them to values before the function runs (Ray does so with object
references, the local engine by computing them on demand). The order of work (split, check,
score) lives once, in :mod:`pipeline.engine.run`, not in each engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol


class Runner(Protocol):
    """Runs task functions somewhere.

    Attributes:
        name: ``local`` or ``ray``.

    """

    name: str

    def submit(self, fn: Callable[..., Any], *args: Any, num_returns: int = 1) -> Any:
        """Schedule ``fn(*args)``.

        Returns a handle, or a list of ``num_returns`` handles when ``num_returns > 1``
        (``fn`` then returns a sequence of that length).
        """
        ...

    def put(self, value: Any) -> Any:
        """Store a large value once; the handle can be passed to many submissions."""
        ...

    def as_completed(self, handles: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Yield ``(position in handles, result)`` as the work finishes.

        Raises:
            PipelineError: the task's own error (e.g. InputError), unchanged.
            ExecutionError: the infrastructure failed (lost worker after retries, ...).

        """
        ...

    def cancel(self, handles: Sequence[Any]) -> None:
        """Stop work that is no longer needed (best effort)."""
        ...

    def describe(self) -> dict[str, Any]:
        """Where the work runs, for the manifest (engine, address, CPUs)."""
        ...

    def store_stats(self) -> dict[str, Any]:
        """Object store totals for the manifest (``spilled_bytes``...); empty if none."""
        ...

    def close(self) -> None:
        """Release what the runner started (a local Ray instance, its temp dir)."""
        ...


def small_result(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a task function whose result is small (counts, file names), never a table.

    An engine may run such a task in another process and send its result back (the local
    engine forks workers for them); tasks returning tables run where their result is used.
    """
    fn.small_result = True  # type: ignore[attr-defined]
    return fn
