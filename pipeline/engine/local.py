"""The in-process engine: the same task functions, run one after the other, without Ray.

For small inputs and tests: intermediate tables stay in this process's memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any


class _Deferred:
    """A submitted call, computed the first time its value is needed."""

    __slots__ = ("args", "done", "fn", "value")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn, self.args, self.done, self.value = fn, args, False, None

    def get(self) -> Any:
        if not self.done:
            self.value = self.fn(*[_resolve(a) for a in self.args])
            self.done = True
            self.args = ()
        return self.value


class _Item:
    """The ``i``-th return value of a deferred call with several returns."""

    __slots__ = ("i", "parent")

    def __init__(self, parent: _Deferred, i: int) -> None:
        self.parent, self.i = parent, i

    def get(self) -> Any:
        return self.parent.get()[self.i]


def _resolve(arg: Any) -> Any:
    return arg.get() if isinstance(arg, (_Deferred, _Item)) else arg


class LocalRunner:
    """Runs tasks in this process, lazily, in the order their results are asked for."""

    name = "local"

    def submit(self, fn: Callable[..., Any], *args: Any, num_returns: int = 1) -> Any:
        """See :meth:`pipeline.engine.base.Runner.submit`."""
        call = _Deferred(fn, args)
        return call if num_returns == 1 else [_Item(call, i) for i in range(num_returns)]

    def put(self, value: Any) -> Any:
        """Return the value itself: everything is in this process already."""
        return value

    def as_completed(self, handles: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Compute the handles in order, yielding each result."""
        for i, h in enumerate(handles):
            yield i, _resolve(h)

    def cancel(self, handles: Sequence[Any]) -> None:
        """Nothing runs in the background: nothing to cancel."""

    def describe(self) -> dict[str, Any]:
        """``{"engine": "local", "num_cpus": 1}``: one process, one task at a time."""
        return {"engine": "local", "num_cpus": 1, "pid": os.getpid()}

    def close(self) -> None:
        """Nothing to release."""
