"""The Ray engine: each task function runs as a Ray task.

Intermediate tables stay in Ray's object store (spilled to disk under its temp dir when
memory runs short).

A local instance is started quietly: no dashboard, no usage stats, logging at ERROR, token
authentication off for this embedded single-machine instance (so no token file is written
to the user's home), its own temp dir under the system temp dir, and the loopback address
127.0.0.2 (Ray rewrites 127.0.0.1 to the host's network address; see RAY_NOTES). A cluster is
reached by address (``--address`` or ``RAY_ADDRESS``), keeping the cluster's own settings
(token authentication included). ``ray`` is imported only here, inside functions.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from pipeline.errors import ExecutionError, PipelineError

LOOPBACK_ADDRESS = "127.0.0.2"
# Environment of a quiet embedded instance (inherited by the processes Ray starts).
_LOCAL_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
# Retries of a task before the run fails: after a lost worker or node (Ray's system
# failures), or a transient error raised by the task itself.
MAX_RETRIES = 3
# Errors a task may raise that are worth retrying: storage writes that failed (the task's
# ExecutionError) and raw I/O errors. Application errors (InputError, ConfigError) and bugs
# fail at once: retrying them gives the same result.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (ExecutionError, OSError)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ExecutionError("the ray engine needs Ray", hint="pip install 'ray[data]' or use "
                             "--engine local") from None
    return ray


class LocalRay:
    """A Ray instance started by this process, and what is needed to stop it cleanly.

    Args:
        num_cpus: CPUs to give the instance; None means every CPU of this machine.

    Raises:
        ExecutionError: Ray could not start.

    """

    def __init__(self, *, num_cpus: int | None = None) -> None:
        ray = _import_ray()
        self._saved_env = {k: os.environ.get(k) for k in _LOCAL_ENV}
        os.environ.update(_LOCAL_ENV)
        self.temp_dir = tempfile.mkdtemp(prefix="overlap-ray-")
        self.num_cpus = num_cpus or os.cpu_count() or 1
        try:
            ray.init(num_cpus=self.num_cpus, include_dashboard=False,
                     logging_level=logging.ERROR, log_to_driver=False,
                     _temp_dir=self.temp_dir, _node_ip_address=LOOPBACK_ADDRESS)
        except Exception as e:  # noqa: BLE001 - any start-up failure is an execution error
            self._cleanup()
            raise ExecutionError(f"could not start a local Ray instance: {e}") from None

    def shutdown(self) -> None:
        """Stop the instance (only the processes it started) and delete its temp dir."""
        ray = _import_ray()
        try:
            ray.shutdown()
        finally:
            self._cleanup()

    def _cleanup(self) -> None:
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        for k, v in self._saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# How long to wait for a cluster address to accept a connection before giving up (Ray's
# own client retries an unreachable GCS for minutes).
CONNECT_TIMEOUT_S = 10.0


def _check_reachable(address: str, *, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Fail fast when a ``host:port`` (or ``ray://host:port``) address accepts no connection.

    Raises:
        ExecutionError: nothing listens there within ``timeout_s`` seconds.
    """
    import socket

    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or address == "auto":
        return  # "auto" and other forms are left to Ray
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as e:
        raise ExecutionError(f"could not connect to the Ray cluster at {address}: {e}",
                             hint="check --address / RAY_ADDRESS and that the head node "
                             "is running") from None


def package_runtime_env(extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Build a Ray ``runtime_env`` that ships this package to the workers (``py_modules``).

    The bundled data and compiled-kernel caches are left out. ``extra`` (e.g. ``pip``) is
    merged in; its own ``py_modules`` are kept after ours.
    """
    import pipeline

    env = dict(extra or {})
    env["py_modules"] = [os.path.dirname(pipeline.__file__)] + list(env.get("py_modules", []))
    env["excludes"] = ["data/", "__pycache__/", "*.nbi", "*.nbc"] + list(env.get("excludes", []))
    return env


class RayRunner:
    """Runs tasks on Ray: an existing connection, a cluster by address, or a local instance.

    Args:
        address: a cluster address (``host:port`` or ``ray://...``); None starts a local
            instance unless Ray is already initialized in this process (then it is reused and
            left running).
        num_cpus: CPUs of a local instance (None: all).
        runtime_env: Ray runtime_env for a cluster connection (see
            :func:`package_runtime_env`).

    Raises:
        ExecutionError: Ray could not start or the cluster could not be reached.

    """

    name = "ray"

    def __init__(self, *, address: str | None = None, num_cpus: int | None = None,
                 runtime_env: Mapping[str, Any] | None = None) -> None:
        ray = _import_ray()
        self._ray = ray
        self._local: LocalRay | None = None
        self._connected = False
        self._remotes: dict[tuple[Callable[..., Any], int], Any] = {}
        self.address = address
        if ray.is_initialized():
            self.address = "(existing connection)"
        elif address:
            _check_reachable(address)
            try:
                ray.init(address=address, runtime_env=dict(runtime_env or {}) or None,
                         logging_level=logging.ERROR, log_to_driver=False)
            except Exception as e:  # noqa: BLE001 - any connection failure
                raise ExecutionError(f"could not connect to the Ray cluster at {address}: "
                                     f"{e}") from None
            self._connected = True
        else:
            self._local = LocalRay(num_cpus=num_cpus)
            self.address = None

    def _remote(self, fn: Callable[..., Any], num_returns: int) -> Any:
        key = (fn, num_returns)
        if key not in self._remotes:
            # SPREAD: tasks are alike and CPU-bound, so balance them over the nodes rather
            # than packing them where their inputs are.
            self._remotes[key] = self._ray.remote(fn).options(
                num_returns=num_returns, max_retries=MAX_RETRIES,
                retry_exceptions=list(TRANSIENT_ERRORS),
                scheduling_strategy="SPREAD")
        return self._remotes[key]

    def submit(self, fn: Callable[..., Any], *args: Any, num_returns: int = 1) -> Any:
        """See :meth:`pipeline.engine.base.Runner.submit`."""
        refs = self._remote(fn, num_returns).remote(*args)
        return list(refs) if num_returns > 1 else refs

    def put(self, value: Any) -> Any:
        """Put a value in Ray's object store once (workers on a node share it, zero-copy)."""
        return self._ray.put(value)

    def as_completed(self, handles: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Yield ``(position, result)`` as tasks finish (see the Runner protocol)."""
        ray = self._ray
        position = {ref: i for i, ref in enumerate(handles)}
        pending = list(handles)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            more, pending = ray.wait(pending, num_returns=len(pending), timeout=0) \
                if pending else ([], pending)
            for ref in ready + more:
                yield position[ref], self._get(ref)

    def _get(self, ref: Any) -> Any:
        ray = self._ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, PipelineError):
                raise cause from None
            raise ExecutionError(f"a task failed on a Ray worker: {cause!r}") from None
        except ray.exceptions.RayError as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ExecutionError(f"Ray failed: {type(e).__name__}: {first}",
                                 hint=f"after {MAX_RETRIES} retries") from None

    def cancel(self, handles: Sequence[Any]) -> None:
        """Cancel unfinished tasks (best effort)."""
        for ref in handles:
            try:
                self._ray.cancel(ref)
            except Exception:  # noqa: BLE001,S110 - already finished or gone
                pass

    def describe(self) -> dict[str, Any]:
        """Engine, address (None for a local instance) and the cluster's CPUs."""
        try:
            cpus = int(self._ray.cluster_resources().get("CPU", 0))
        except Exception:  # noqa: BLE001 - informational only
            cpus = 0
        return {"engine": "ray", "address": self.address, "num_cpus": cpus,
                "ray_version": getattr(self._ray, "__version__", None)}

    def close(self) -> None:
        """Stop the local instance we started, or disconnect from the cluster we joined."""
        if self._local is not None:
            self._local.shutdown()
            self._local = None
        elif self._connected:
            self._ray.shutdown()
            self._connected = False
