"""The Ray engine: each task function runs as a Ray task.

Intermediate tables stay in Ray's object store (spilled to disk under its temp dir when
memory runs short: a local instance's store is capped at LOCAL_OBJECT_STORE_BYTES).

A local instance is started quietly (no dashboard, no usage stats, logging at ERROR) and
closed to the network: every Ray process listens on 127.0.0.1 only, and token
authentication is on with a fresh random token kept in the instance's own temp dir (never
in the user's home), so other users of the machine cannot submit work to it either. See
:class:`LocalRay`. A cluster is reached by address (``--address`` or ``RAY_ADDRESS``),
keeping the cluster's own settings (token authentication included). ``ray`` is imported
only here, inside functions.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from pipeline.errors import ExecutionError, MissingExtraError, PipelineError
from pipeline.machine import descendants, usable_cpus

# Ray binds its servers to 127.0.0.1 only when that is the node's address, and rewrites
# 127.0.0.1 to the host's network address unless clusters are off
# (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, Ray's default on macOS and Windows), a setting Ray
# reads once, when it is first imported. When Ray was imported before (a notebook), the
# instance falls back to another loopback address, where Ray listens on every interface:
# the token then keeps strangers out.
LOOPBACK_ADDRESS = "127.0.0.1"
FALLBACK_ADDRESS = "127.0.0.2"
_CLUSTERS_VAR = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
AUTH_TOKEN_FILE = "auth_token"
# Object store of a local instance, bytes (Ray's default is 30% of the RAM): the run holds
# every partition's joined text in it between the check and the score stage (about 1 GB per
# million CNN/DM-length rows); beyond this, Ray spills objects to files under its temp dir
# and reads them back, so the whole process tree stays within a few GB at any input size.
LOCAL_OBJECT_STORE_BYTES = 2 << 30

# Seconds a reused session's unfinished tasks are waited for after a failed stage (see
# RayRunner.cancel).
CANCEL_WAIT_S = 60.0

# Retries of a task before the run fails: after a lost worker or node (Ray's system
# failures), or a transient error raised by the task itself.
MAX_RETRIES = 3
# Errors a task may raise that are worth retrying: storage writes that failed (the task's
# ExecutionError) and raw I/O errors. Application errors (InputError, ConfigError) and bugs
# fail at once: retrying them gives the same result.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (ExecutionError, OSError)


_RAY_HINT = "pip install 'overlap-pipeline[ray]' or use --engine local"


def require_ray() -> None:
    """Fail at once, before anything is staged, when Ray is not installed.

    Looks the package up without importing it (importing Ray starts nothing, but takes
    seconds); :func:`_import_ray` says the same when the import itself fails.

    Raises:
        MissingExtraError: Ray is not installed (exit 2: a retry cannot fix it).

    """
    import importlib.util

    if sys.modules.get("ray") is not None:
        return
    try:
        found = importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingExtraError("the ray engine needs Ray", hint=_RAY_HINT)


def _verbose() -> bool:
    """Whether Ray's own messages are wanted: ``overlap --verbose`` (env OVERLAP_VERBOSE)."""
    return os.environ.get("OVERLAP_VERBOSE", "").strip().lower() not in (
        "", "0", "false", "no", "off")


def _import_ray(*, local: bool = False) -> Any:
    """Import ray; ``local``: first tell Ray (if not imported yet) to keep to loopback.

    The setting is read once, at import, and is taken out of the environment again at
    once, so that no process started later (``ray start``, a user's subprocess) inherits it.
    """
    saved = os.environ.get(_CLUSTERS_VAR)
    if local and "ray" not in sys.modules:
        os.environ[_CLUSTERS_VAR] = "0"
    try:
        import ray
    except ImportError:
        raise MissingExtraError("the ray engine needs Ray", hint=_RAY_HINT) from None
    finally:
        if saved is None:
            os.environ.pop(_CLUSTERS_VAR, None)
        else:
            os.environ[_CLUSTERS_VAR] = saved
    return ray


def _loopback_only() -> bool:
    """True when this process's Ray keeps a local node on 127.0.0.1 (see LOOPBACK_ADDRESS)."""
    from ray._private import ray_constants

    return not getattr(ray_constants, "ENABLE_RAY_CLUSTER", True)


class LocalRay:
    """A Ray instance started by this process, and what is needed to stop it cleanly.

    The instance listens on loopback only and requires a token: a random 256-bit token in
    ``private/auth_token`` (modes 0700 and 0600) inside its own temp dir
    (``$TMPDIR/overlap-ray-*``, or ``/tmp/overlap-ray-*`` when ``$TMPDIR`` is too deep for
    Ray's socket paths), named to Ray by ``RAY_AUTH_TOKEN_PATH`` for this instance only. Nothing is
    written to the user's home.

    Start and stop cannot be cut in the middle by a signal: both run in a thread of their
    own (Python runs signal handlers in the main thread only), which starts Ray, waits for
    the stop and stops Ray; the calling thread waits for it, and a Ctrl-C or SIGTERM (any
    ``KeyboardInterrupt`` or ``SystemExit`` raised in the wait) is raised again once the
    start or stop has finished. Interrupted half-way, ``ray.init`` leaves processes that
    ``ray.shutdown`` does not know of and a driver whose core worker was never shut down,
    which Ray's C++ exit handler then destroys under its own running threads (a SIGSEGV at
    exit: ``CoreWorkerProcess::HandleAtExit``, ``TaskManager::RecordMetrics`` on a freed
    object); interrupted half-way, ``ray.shutdown`` does the same. The thread lives as long
    as the instance: Ray has the kernel kill its processes when the *thread* that started
    them ends (``PR_SET_PDEATHSIG``). In that thread, ``ray.init`` installs no SIGTERM
    handler of its own either (it does so only in the main thread).

    After ``ray.shutdown``, every process of the instance still alive is stopped (SIGTERM,
    then SIGKILL after :data:`STOP_GRACE_S`): Ray kills its raylet when it has not exited
    within a second, and the raylet's children (``ray::DashboardAgent``,
    ``ray::RuntimeEnvAgent``, idle workers) then outlive the run for up to a minute. The
    processes are those found, just before the stop, among this process's descendants
    with this instance's token path in their environment (Linux ``/proc``; elsewhere only
    ``ray.shutdown`` stops them): never another instance's, never anything by name.

    Args:
        num_cpus: CPUs to give the instance; None means every CPU this process may use.

    Raises:
        ExecutionError: Ray could not start.
        KeyboardInterrupt: a Ctrl-C or SIGTERM (as the caller's handler raises it) came
            during the start; the instance was stopped and its temp dir removed first.

    """

    def __init__(self, *, num_cpus: int | None = None) -> None:
        self.temp_dir = tempfile.mkdtemp(prefix="overlap-ray-", dir=_temp_root())
        self._saved_env: dict[str, str | None] = {}
        self._cleaned = False
        self._owner: threading.Thread | None = None
        self._started = threading.Event()
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._failure: BaseException | None = None
        _RUNNING.append(self)  # from here on, stop_local_instances() stops it
        try:
            interrupt = self._start(num_cpus)
        except BaseException:
            self.shutdown()
            raise
        failure = self._failure
        if failure is not None or interrupt is not None:
            self.shutdown()
            if interrupt is not None:
                raise interrupt  # Ctrl-C, SIGTERM: stopped, not failed
            if failure is not None and not isinstance(failure, Exception):
                raise failure
            raise ExecutionError(f"could not start a local Ray instance: {failure}") from None

    def _start(self, num_cpus: int | None) -> BaseException | None:
        """Write the token, set Ray's environment, start the owner thread and wait for it.

        Returns:
            The first KeyboardInterrupt or SystemExit raised in the wait, or None.
        """
        # Ray makes its temp dir world-writable (0777): the token lives in a private subdir
        private = os.path.join(self.temp_dir, "private")
        os.mkdir(private, 0o700)
        token_path = os.path.join(private, AUTH_TOKEN_FILE)
        fd = os.open(token_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))
        # Every process of the instance inherits this variable: how they are recognised.
        self._marker = f"RAY_AUTH_TOKEN_PATH={token_path}".encode()
        # Ray reads some of these when it is imported: set them first.
        env: dict[str, str | None] = {
            "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": None,  # it would win over the file
            "RAY_AUTH_TOKEN_PATH": token_path,
            # Ray's C++ handler of SIGTERM prints a stack dump and aborts the driver
            # before any clean-up; the caller's handler is used instead
            "RAY_DISABLE_FAILURE_SIGNAL_HANDLER": "1",
            # a failed task that will be retried is pushed to the driver as an error through
            # the GCS; once a run is stopped the push fails and Ray's C++ core wrote "Failed
            # to push error to driver" on stderr, beside the interrupt's one line. Pushed
            # (and shown) with overlap --verbose only; the retries themselves are unchanged
            "RAY_enable_output_error_log_if_still_retry": None if _verbose() else "0"}
        self._saved_env = {k: os.environ.get(k) for k in env}
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._ray = _import_ray(local=True)
        _stop_at_exit()
        self.num_cpus = num_cpus or usable_cpus()
        self.node_ip_address = LOOPBACK_ADDRESS if _loopback_only() else FALLBACK_ADDRESS
        handlers = _signal_handlers()
        self._owner = threading.Thread(target=self._own, name="overlap-local-ray", daemon=True,
                                       kwargs={"num_cpus": self.num_cpus,
                                               "include_dashboard": False,
                                               "object_store_memory": LOCAL_OBJECT_STORE_BYTES,
                                               "logging_level": logging.ERROR,
                                               "log_to_driver": False,
                                               "_temp_dir": self.temp_dir,
                                               "_node_ip_address": self.node_ip_address})
        self._owner.start()
        interrupt = _wait_through_interrupts(self._started)
        _restore_signal_handlers(handlers)
        return interrupt

    def _own(self, **options: Any) -> None:
        """The owner thread: start Ray, wait for the stop, stop Ray and what outlives it."""
        ray = self._ray
        try:
            try:
                ray.init(**options)
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                self._failure = e
            self._started.set()
            if self._failure is None:
                self._stop.wait()
            ours = _processes_with(self._marker)
            try:
                ray.shutdown()  # also after a failed start: it stops what had started
            except BaseException as e:  # noqa: BLE001 - the stop goes on regardless
                self._failure = self._failure or e
            _end_processes(ours)
        finally:
            # here too, not in the caller's thread, where a signal could cut it short
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            self._started.set()
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop the instance (only the processes it started) and delete its temp dir.

        Idempotent. Returns when Ray's processes are gone (or after :data:`STOP_TIMEOUT_S`).

        Raises:
            KeyboardInterrupt: a Ctrl-C or SIGTERM came during the stop (raised again after
                it, so that the caller still learns of it).

        """
        interrupt = None
        if self._owner is not None and not self._stopped.is_set():
            self._stop.set()
            interrupt = _wait_through_interrupts(self._stopped, timeout_s=STOP_TIMEOUT_S)
            if not self._stopped.is_set():  # Ray's stop hangs: end what we can see
                _end_processes(_processes_with(self._marker))
        self._cleanup()
        if interrupt is not None:
            raise interrupt

    def _cleanup(self) -> None:
        if self in _RUNNING:
            _RUNNING.remove(self)
        if self._cleaned:
            return
        self._cleaned = True
        shutil.rmtree(self.temp_dir, ignore_errors=True)  # if the owner thread did not
        for k, v in self._saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# Local instances started and not yet stopped, oldest first.
_RUNNING: list[LocalRay] = []


_AT_EXIT: list[bool] = []


def _stop_at_exit() -> None:
    """Have the instances still running stopped when the interpreter exits (once).

    Registered after ``import ray``, so that it runs before Ray's own ``atexit`` handler
    (``ray.shutdown`` from the main thread).
    """
    if not _AT_EXIT:
        import atexit

        atexit.register(_stop_all_at_exit)
        _AT_EXIT.append(True)


def _stop_all_at_exit() -> None:
    try:
        stop_local_instances(list(_RUNNING))
    except (KeyboardInterrupt, SystemExit):
        pass


def local_instances() -> list[LocalRay]:
    """The local Ray instances this process started and has not stopped, oldest first."""
    return list(_RUNNING)


def stop_local_instances(instances: Sequence[LocalRay]) -> None:
    """Stop these local Ray instances (see :meth:`LocalRay.shutdown`), newest first.

    For a command line that stops the instance of a finished run itself, after printing its
    result (see ``defer_engine_stop`` of :func:`pipeline.api.score`), rather than from an
    ``atexit`` handler, where a Ctrl-C gives a traceback and leaves the temp dir.

    Raises:
        KeyboardInterrupt: a Ctrl-C or SIGTERM came during a stop (after it finished).

    """
    interrupt = None
    for instance in reversed(instances):
        try:
            instance.shutdown()
        except (KeyboardInterrupt, SystemExit) as e:
            interrupt = interrupt or e
    if interrupt is not None:
        raise interrupt


# Seconds the processes of a local instance get to exit after SIGTERM, once ray.shutdown
# has returned, before SIGKILL; and the longest wait for Ray's own stop.
STOP_GRACE_S = 2.0
STOP_TIMEOUT_S = 60.0


def _wait_through_interrupts(done: threading.Event, *,
                             timeout_s: float | None = None) -> BaseException | None:
    """Wait for ``done``; return the first KeyboardInterrupt/SystemExit raised meanwhile."""
    first: BaseException | None = None
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        try:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if done.wait(left) or (deadline is not None and time.monotonic() >= deadline):
                return first
        except (KeyboardInterrupt, SystemExit) as e:
            first = first or e


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks (``/proc/PID/stat`` field 22), or None."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[19] if len(fields) > 19 and fields[0] != "Z" else None


def _processes_with(marker: bytes) -> list[tuple[int, str]]:
    """``(pid, start time)`` of this process's descendants whose environment holds ``marker``.

    Read from Linux ``/proc``; an empty list elsewhere.
    """
    found: list[tuple[int, str]] = []
    for pid in descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                environ = fh.read().split(b"\0")
        except OSError:
            continue
        started = _start_time(pid)
        if marker in environ and started is not None:
            found.append((pid, started))
    return found


def _end_processes(processes: Sequence[tuple[int, str]]) -> None:
    """Stop the listed processes that are still alive (same PID and start time).

    SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`; waits (bounded) until they are gone.
    """

    def alive() -> list[int]:
        return [pid for pid, started in processes if _start_time(pid) == started]

    for sig, wait_s in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
        left = alive()
        for pid in left:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait_s
        while left and time.monotonic() < deadline:
            for pid in left:  # our own children (Ray's GCS, raylet...): reap them
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
            time.sleep(0.05)
            left = alive()
        if not left:
            return


# Ray puts Unix sockets at TEMP/session_<date>_<time>_<pid>/sockets/plasma_store, and a
# socket path has at most 107 bytes.
_SOCKET_PATH_MAX = 107
_SOCKET_SUFFIX = len("/overlap-ray-xxxxxxxx/session_2026-01-01_00-00-00_000000_4194304"
                     "/sockets/plasma_store")


def _temp_root() -> str:
    """The system temp dir, or /tmp when the former is too deep for Ray's socket paths."""
    root = tempfile.gettempdir()
    if len(os.fsencode(root)) + _SOCKET_SUFFIX > _SOCKET_PATH_MAX and os.path.isdir("/tmp"):
        return "/tmp"
    return root


def _signal_handlers() -> dict[int, Any]:
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}


def _restore_signal_handlers(handlers: Mapping[int, Any]) -> None:
    # Always set again: Ray's core worker installs its own C-level handlers (a SIGTERM
    # makes it print a stack dump and abort), which Python's getsignal does not see.
    for s, handler in handlers.items():
        if handler is not None:
            signal.signal(s, handler)


# How long to wait for a cluster address to accept a connection before giving up (Ray's
# own client retries an unreachable GCS for minutes).
CONNECT_TIMEOUT_S = 10.0


def check_reachable(address: str, *, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
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


# Seconds the driver check (:func:`check_driver`) may take before the run gives up.
DRIVER_CHECK_TIMEOUT_S = 30.0

# Run in a child process: Ray's GCS client aborts its process (a C++ check, a stack dump)
# when token authentication is on and no token is found, and retries a refused token for
# about 20 s inside ray.init. Prints one JSON line: the cause, or the nodes' raylet sockets
# and the cluster's versions.
_DRIVER_PROBE = r"""
import json, sys
try:
    from ray._raylet import GcsClient
    from ray._common.usage import usage_lib
    gcs = GcsClient(address=sys.argv[1])
    nodes = gcs.get_all_node_info(timeout=10)
    meta = usage_lib.get_cluster_metadata(gcs) or {}
    out = {"sockets": [n.raylet_socket_name for n in nodes.values() if n.state == 0],
           "ray": meta.get("ray_version"), "python": meta.get("python_version")}
except Exception as e:
    out = {"error": type(e).__name__, "message": str(e).splitlines()[0] if str(e) else ""}
print(json.dumps(out), flush=True)
"""


def check_driver(address: str, *, timeout_s: float = DRIVER_CHECK_TIMEOUT_S) -> None:
    """Check, in seconds, that this process can be a driver of the cluster at ``address``.

    A plain Ray driver (``host:port``) must run on a node of the cluster with the cluster's
    token and Ray and Python versions: ``ray.init`` otherwise fails after about 20 s with
    the cause among many warning lines, or aborts the process. The check asks the cluster's
    GCS in a child process (about 2 s) and names the first cause found: no token, a wrong
    token, this machine not a node (none of the nodes' raylet sockets is here), a version
    mismatch. ``ray://`` (Ray Client) addresses are not checked. What Ray printed while
    asking (its warnings) goes to stderr only with ``OVERLAP_VERBOSE=1`` (``overlap
    --verbose``).

    Raises:
        ExecutionError: one line naming the cause (exit 4).

    """
    import json
    import platform
    import subprocess

    if address.startswith("ray://") or address == "auto" or address in _CHECKED:
        return
    hint = "see docs/cluster.md (where the driver runs)"
    try:
        proc = subprocess.run([sys.executable, "-c", _DRIVER_PROBE, address],
                              capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ExecutionError(f"the Ray cluster at {address} did not answer within "
                             f"{timeout_s:.0f} s", hint=hint) from None
    if _verbose() and proc.stderr.strip():
        sys.stderr.write(proc.stderr)  # Ray's own lines, with overlap --verbose only
    try:
        found = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        found = {"error": "abort", "message": proc.stderr}
    error, message = found.get("error"), str(found.get("message") or "")
    if error == "AuthenticationError" or "InvalidAuthToken" in message \
            or "Unauthenticated" in message:
        raise ExecutionError(f"the Ray cluster at {address} refused this driver's token "
                             "(wrong token)", hint="set RAY_AUTH_TOKEN or "
                             "RAY_AUTH_TOKEN_PATH to the cluster's token; " + hint)
    if error == "abort" and "token" in message.lower():
        raise ExecutionError(f"the Ray cluster at {address} needs a token and this driver "
                             "has none", hint="set RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH to "
                             "the cluster's token; " + hint)
    if error:
        last = message.strip().splitlines()[-1] if message.strip() else error
        raise ExecutionError(f"could not connect to the Ray cluster at {address}: {last[:300]}",
                             hint=hint)
    ours = (getattr(_import_ray(), "__version__", None), platform.python_version())
    theirs = (found.get("ray"), found.get("python"))
    if theirs[0] and (theirs[0] != ours[0] or (theirs[1] and theirs[1] != ours[1])):
        raise ExecutionError(f"version mismatch: the Ray cluster at {address} runs Ray "
                             f"{theirs[0]} on Python {theirs[1]}, this driver Ray {ours[0]} on "
                             f"Python {ours[1]}", hint="install the cluster's versions, or "
                             "run the driver on the head node; " + hint)
    if not any(os.path.exists(str(s)) for s in found.get("sockets") or []):
        raise ExecutionError(f"this machine is not a node of the Ray cluster at {address}: "
                             "a Ray driver runs on a node (it talks to the node's raylet "
                             "through a local socket)",
                             hint="run the command on the head node, or submit it as a Ray "
                                  "job (ray job submit); " + hint)
    _CHECKED.add(address)


# Addresses check_driver passed in this process (a run checks before taking its output's
# lock, and the runner would check again).
_CHECKED: set[str] = set()


def package_runtime_env(extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Build a Ray ``runtime_env`` that ships this package to the workers (``py_modules``).

    The whole package goes, its data (ROUGE-1.5.5's word lists) and compiled kernels
    included; numba's caches and bytecode are left out. ``extra`` (e.g. ``pip``) is merged
    in; its own ``py_modules`` are kept after ours.
    """
    import pipeline

    env = dict(extra or {})
    env["py_modules"] = [os.path.dirname(pipeline.__file__)] + list(env.get("py_modules", []))
    env["excludes"] = ["__pycache__/", "*.nbi", "*.nbc"] + list(env.get("excludes", []))
    return env


# Set by Ray's job manager in the environment of a submitted job's driver (``ray job
# submit``): the job's config, its runtime_env included, as JSON.
JOB_CONFIG_VAR = "RAY_JOB_CONFIG_JSON_ENV_VAR"
# runtime_env fields that bring code to the workers
_CODE_FIELDS = ("working_dir", "py_modules")


def job_runtime_env(environ: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The runtime_env of the Ray job this process drives, or None outside a submitted job.

    Args:
        environ: the environment to read (default ``os.environ``).

    Raises:
        ExecutionError: the job's config is not JSON (not as Ray's job manager writes it).

    """
    import json

    raw = (os.environ if environ is None else environ).get(JOB_CONFIG_VAR)
    if raw is None:
        return None
    try:
        config = json.loads(raw)
    except ValueError:
        raise ExecutionError(f"cannot read the Ray job's config in {JOB_CONFIG_VAR}: not "
                             "JSON") from None
    return dict((config or {}).get("runtime_env") or {})


def runtime_env_within_job(ours: Mapping[str, Any] | None,
                           job: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The part of ``ours`` a driver may add to its job's runtime_env without a conflict.

    Inside a submitted Ray job, ``ray.init`` merges the job's runtime_env with the one it is
    given and refuses the run when a field, or a key of ``env_vars``, is in both (Ray 2.60:
    ``Failed to merge the Job's runtime env``). The job's settings win: when the job already
    brings code (``working_dir`` or ``py_modules``, e.g. a clone of this repository as its
    working_dir), this package is not shipped again (``py_modules``, ``excludes`` left
    out), since every task of the job gets the job's runtime_env; any other field the job
    sets is left out of ours, and so is every ``env_vars`` key it sets.

    Args:
        ours: the runtime_env the engine would pass (see :func:`package_runtime_env`).
        job: the job's runtime_env (:func:`job_runtime_env`); None: not inside a job.

    Returns:
        The runtime_env to pass to ``ray.init`` (None: nothing to add).

    """
    if not ours:
        return None
    if job is None:
        return dict(ours)
    out = {k: v for k, v in ours.items() if k != "env_vars" and k not in job}
    if any(job.get(k) for k in _CODE_FIELDS):
        out.pop("py_modules", None)
        out.pop("excludes", None)
    env_vars = {k: v for k, v in dict(ours.get("env_vars") or {}).items()
                if k not in dict(job.get("env_vars") or {})}
    if env_vars:
        out["env_vars"] = env_vars
    return out or None


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
        self._local: LocalRay | None = None
        self._connected = False
        self._remotes: dict[tuple[Callable[..., Any], int], Any] = {}
        self.address = address
        # ray is imported by LocalRay when it starts one (it sets Ray's environment first)
        running = sys.modules.get("ray") is not None and sys.modules["ray"].is_initialized()
        if not running and not address:
            self._local = LocalRay(num_cpus=num_cpus)
            self.address = None
        ray = _import_ray()
        self._ray = ray
        if running:
            self.address = "(existing connection)"
        elif address:
            check_reachable(address)
            check_driver(address)  # token, node, versions: one line within seconds
            handlers = _signal_handlers()
            try:
                ray.init(address=address, runtime_env=dict(runtime_env or {}) or None,
                         logging_level=logging.ERROR, log_to_driver=False)
            except Exception as e:  # noqa: BLE001 - any connection failure
                raise ExecutionError(f"could not connect to the Ray cluster at {address}: "
                                     f"{e}") from None
            finally:
                # ray.init sets a SIGTERM handler of its own (sys.exit), the caller's is kept
                _restore_signal_handlers(handlers)
            self._connected = True

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
        """Leave unfinished tasks alone: Ray's cancel can abort this process.

        In Ray 2.60 a cancel racing with a task that is finishing trips a check inside Ray
        (``task_manager.cc``: ``it != submissible_tasks_.end()``), which aborts the driver
        with a stack dump instead of our one-line error: seen on a local instance, and in a
        test session whose shared Ray had just run a task that raised an InputError. The
        tasks end anyway: a local instance is stopped right after, and a cluster ends a job's
        tasks when its driver disconnects. In a reused session (a notebook) they run to
        completion, writing into the run's staging directory: after an error there (called
        while handling an Exception) this waits for them, at most :data:`CANCEL_WAIT_S`, so
        that none still writes when the caller deletes that directory after a bad input (a
        file written during the deletion leaves the directory behind; partition 1 writes its
        examples just as partition 0 fails). After Ctrl-C or SIGTERM it returns at once (the
        staging directory is kept for a resume).
        """
        if self._local is not None or self._connected or not handles \
                or not isinstance(sys.exc_info()[1], Exception):
            return
        try:
            self._ray.wait(list(handles), num_returns=len(handles), timeout=CANCEL_WAIT_S)
        except Exception:  # noqa: BLE001, S110 - best effort: the caller's error goes on
            pass

    def describe(self) -> dict[str, Any]:
        """Engine, address (None for a local instance) and the cluster's CPUs."""
        try:
            cpus = int(self._ray.cluster_resources().get("CPU", 0))
        except Exception:  # noqa: BLE001 - informational only
            cpus = 0
        return {"engine": "ray", "address": self.address, "num_cpus": cpus,
                "ray_version": getattr(self._ray, "__version__", None)}

    def store_stats(self) -> dict[str, Any]:
        """Bytes the object store of a local instance spilled to disk, for the manifest.

        ``{"spilled_bytes": N}`` from the raylet's log of the instance we started (Ray logs
        ``Spilled X MiB, ...`` as it spills; MiB resolution, 0 when it never did); empty for
        a cluster or a reused connection (Ray tells it only through its gRPC API).
        """
        if self._local is None:
            return {}
        import glob
        import re

        spilled = 0
        for path in glob.glob(os.path.join(self._local.temp_dir, "session_*", "logs",
                                           "raylet*.out")):
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for mib in re.findall(r"Spilled (\d+) MiB", fh.read()):
                        spilled = max(spilled, int(mib) << 20)
            except OSError:
                continue
        return {"spilled_bytes": spilled}

    def close(self) -> None:
        """Stop the local instance we started, or disconnect from the cluster we joined."""
        if self._local is not None:
            self._local.shutdown()
            self._local = None
        elif self._connected:
            self._ray.shutdown()
            self._connected = False
