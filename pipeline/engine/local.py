"""The in-process engine: the same task functions, without Ray.

Intermediate tables stay in this process's memory. With more than one process allowed
(``processes``, default every CPU this process may use), the work is spread over the
machine's cores without ever copying a table between processes:

- tasks marked :func:`~pipeline.engine.base.small_result` (the score tasks: they write their
  examples file and return counts) run in worker processes forked when the stage starts,
  which see every table computed so far through the fork's shared pages (copy on write) and
  send back only their small results;
- every other task (read and split, join and check: Arrow code that releases the GIL) runs
  in threads of this process, so its large result stays here.

A forked worker that dies (killed, out of memory) fails the run with an
:class:`~pipeline.errors.ExecutionError`; the partitions written so far have their
completion markers, so running the same command again resumes. Ctrl-C and SIGTERM stop the
workers (they ignore SIGINT themselves and are terminated by this process), and on Linux the
kernel kills them when this process dies, even by SIGKILL. No fork happens
where Ray is initialized in this process (its threads make a fork unsafe), nor where the
platform has no ``fork``: the stage then runs in this process.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for
from multiprocessing.process import BaseProcess
from typing import Any, cast

from pipeline.errors import ExecutionError
from pipeline.machine import usable_cpus

# Seconds a forked worker has to exit after SIGTERM before it is killed.
STOP_GRACE_S = 2.0


class _Deferred:
    """A submitted call, computed the first time its value is needed (once, thread-safe)."""

    __slots__ = ("args", "done", "fn", "lock", "value")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn, self.args, self.done, self.value = fn, args, False, None
        self.lock = threading.Lock()

    def get(self) -> Any:
        if not self.done:
            with self.lock:
                if not self.done:
                    self.value = self.fn(*[_resolve(a) for a in self.args])
                    self.done = True
                    self.args = ()
        return self.value

    def settle(self, value: Any) -> None:
        """Record a value computed elsewhere (in a forked worker)."""
        self.value, self.done, self.args = value, True, ()


class _Item:
    """The ``i``-th return value of a deferred call with several returns."""

    __slots__ = ("i", "parent")

    def __init__(self, parent: _Deferred, i: int) -> None:
        self.parent, self.i = parent, i

    def get(self) -> Any:
        return self.parent.get()[self.i]


def _resolve(arg: Any) -> Any:
    return arg.get() if isinstance(arg, (_Deferred, _Item)) else arg


def _call_of(handle: Any) -> _Deferred:
    return handle.parent if isinstance(handle, _Item) else handle


def can_fork() -> bool:
    """Whether forked workers are safe here: ``fork`` exists and Ray is not initialized."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    ray = sys.modules.get("ray")  # never imported just to ask
    return ray is None or not ray.is_initialized()


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when its parent dies (Linux), even by SIGKILL.

    A worker must not outlive its run: it would go on writing into the staging directory and
    hold the output's lock (an inherited ``flock``) against the rerun.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _work(conn: Any, counter: Any, calls: Sequence[_Deferred], parent: int) -> None:
    """A forked worker: take the next call until none is left, send ``(i, ok, value)``."""
    _die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us on Ctrl-C
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        with counter.get_lock():
            i = counter.value
            counter.value += 1
        if i >= len(calls):
            break
        try:
            conn.send((i, True, calls[i].get()))
        except BaseException as e:  # noqa: BLE001 - sent to the parent, which raises it
            try:
                conn.send((i, False, e))
            except Exception:  # noqa: BLE001 - the error itself does not pickle
                conn.send((i, False, ExecutionError(f"{type(e).__name__}: {e}")))
            break
    conn.close()


class LocalRunner:
    """Runs tasks in this process (threads) and in forked worker processes.

    Args:
        processes: workers per stage (threads or forked processes), >= 1; None: every CPU
            this process may use. 1 runs every task here, one after the other, lazily, in
            the order results are asked for.

    """

    name = "local"

    def __init__(self, processes: int | None = None) -> None:
        self.processes = max(1, processes or usable_cpus())
        self._workers: list[BaseProcess] = []

    def submit(self, fn: Callable[..., Any], *args: Any, num_returns: int = 1) -> Any:
        """See :meth:`pipeline.engine.base.Runner.submit`."""
        call = _Deferred(fn, args)
        return call if num_returns == 1 else [_Item(call, i) for i in range(num_returns)]

    def put(self, value: Any) -> Any:
        """Return the value itself: everything is in this process already."""
        return value

    def as_completed(self, handles: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Compute the handles, yielding ``(position, result)`` as each finishes.

        Raises:
            PipelineError: a task's own error, unchanged (also from a forked worker).
            ExecutionError: a forked worker died before sending its result.

        """
        calls = [_call_of(h) for h in handles]
        todo = [c for c in dict.fromkeys(calls) if not c.done]
        if self.processes == 1 or len(todo) <= 1:
            for i, h in enumerate(handles):
                yield i, _resolve(h)
            return
        waiting: dict[int, list[int]] = {}
        for i, c in enumerate(calls):
            if c.done:
                yield i, _resolve(handles[i])
            else:
                waiting.setdefault(id(c), []).append(i)
        for _ in self._threaded(_inputs_of(todo)):  # computed here, seen by forked workers
            pass
        if not all(getattr(c.fn, "small_result", False) for c in todo):
            finished = self._threaded(todo)
        elif can_fork():
            finished = self._forked(todo)
        else:  # here, one at a time: their kernels hold the GIL (threads would not overlap
            finished = _in_turn(todo)  # them) and they set warnings filters, which are global
        for c in finished:
            for i in waiting.pop(id(c)):
                yield i, _resolve(handles[i])

    def _threaded(self, calls: Sequence[_Deferred]) -> Iterator[_Deferred]:
        """Compute ``calls`` in threads of this process; yield each as it finishes.

        Raises:
            Exception: the first error of a call, after the running ones have finished.

        """
        if len(calls) <= 1:
            yield from _in_turn(calls)
            return
        pool = ThreadPoolExecutor(max_workers=min(self.processes, len(calls)))
        futures = {pool.submit(c.get): c for c in calls}
        try:
            pending: set[Future[Any]] = set(futures)
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    f.result()
                    yield futures[f]
        finally:
            for f in futures:
                f.cancel()
            pool.shutdown(wait=True)

    def _forked(self, calls: Sequence[_Deferred]) -> Iterator[_Deferred]:
        """Run ``calls`` in forked workers; record each result in its call and yield it.

        Raises:
            Exception: a call's error, as the worker sent it.
            ExecutionError: a worker died before sending all its results.

        """
        ctx = multiprocessing.get_context("fork")
        counter = ctx.Value("q", 0)
        pipes = []
        try:
            for _ in range(min(self.processes, len(calls))):
                recv, send = ctx.Pipe(duplex=False)
                worker = ctx.Process(target=_work, args=(send, counter, calls, os.getpid()),
                                     daemon=True)
                with warnings.catch_warnings():  # Python 3.12+: a fork beside Arrow's threads
                    warnings.simplefilter("ignore", DeprecationWarning)
                    worker.start()
                send.close()
                self._workers.append(worker)
                pipes.append((recv, worker))
            live: dict[Connection, BaseProcess] = dict(pipes)
            while live:
                for conn in cast("list[Connection]", wait_for(list(live))):
                    try:
                        i, ok, value = conn.recv()
                    except EOFError:
                        dead = live.pop(conn)
                        dead.join()
                        if dead.exitcode:
                            raise ExecutionError(
                                f"a scoring process (pid {dead.pid}) died with "
                                f"{_exit_status(dead.exitcode)}; running the same command "
                                "again resumes the run") from None
                        continue
                    if not ok:
                        raise value
                    calls[i].settle(value)
                    yield calls[i]
        finally:
            self.cancel(())
            for conn, _ in pipes:
                conn.close()

    def cancel(self, handles: Sequence[Any]) -> None:
        """Stop this runner's forked workers, if any are running.

        SIGTERM first; a worker still there after :data:`STOP_GRACE_S` (a stopped process
        keeps SIGTERM pending) gets SIGKILL, so a stop never waits on a worker.
        """
        workers, self._workers = self._workers, []
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
            if worker.is_alive():
                worker.kill()
                worker.join()

    def describe(self) -> dict[str, Any]:
        """``{"engine": "local", "num_cpus": processes, "pid": ...}``."""
        return {"engine": "local", "num_cpus": self.processes, "pid": os.getpid()}

    def store_stats(self) -> dict[str, Any]:
        """Nothing: this engine has no object store (see the Runner protocol)."""
        return {}

    def close(self) -> None:
        """Stop forked workers still running (after an error)."""
        self.cancel(())


def _in_turn(calls: Sequence[_Deferred]) -> Iterator[_Deferred]:
    """Compute ``calls`` here, one after the other; yield each as it finishes."""
    for c in calls:
        c.get()
        yield c


def _inputs_of(calls: Sequence[_Deferred]) -> list[_Deferred]:
    """The calls whose results ``calls`` take as arguments, not yet computed."""
    inputs = [_call_of(a) for c in calls for a in c.args if isinstance(a, (_Deferred, _Item))]
    return [c for c in dict.fromkeys(inputs) if not c.done]


def _exit_status(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"
