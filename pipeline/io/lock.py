"""One writer per output: a lock beside the output directory, naming its holder.

The lock is the file ``.{name}.overlap-lock`` beside ``DIR`` (JSON: host, boot id, pid and
the process's start time, start time of the run, run id, a random token). On a local
filesystem it is held with ``flock``, which the kernel releases when the holder dies,
however it dies: a dead holder's lock is simply taken. The lock file is opened with
``O_NOFOLLOW`` and must be a regular file with one link: a symlink or hard link planted at
its name is refused (exit 3), never followed, so no other file is truncated.

Object stores have no such primitive. There the holder rewrites the lock every
``HEARTBEAT_S`` seconds; a lock is taken over when its holder is provably dead (same host
and boot, and its PID is gone or now belongs to a process started at another time: the
record keeps the PID's start time, so a reused PID is told apart) or when it was not
rewritten for ``STALE_S`` seconds (a holder on another host, whose death cannot be seen
from here). A writer checks after ``SETTLE_S`` that the lock it wrote is still its own
(last writer wins), so that of two runs starting together only one goes on.

**Fencing.** A holder frozen longer than ``STALE_S`` (a stopped VM, a debugger) loses its
lock to the next run. Its token is then no longer the one in the lock: :meth:`OutputLock.verify`
(called before each destructive step: publishing the output, deleting the staging or the
exchange files) fails with exit 3, and the heartbeat stops rewriting a lock that is not its
own. Object stores give no compare-and-swap here, so a check and the step after it are not
atomic: a holder that freezes again *between* the check and the step (milliseconds, against
a takeover that needs ``STALE_S`` of silence) can still act once. docs/cluster.md states
the guarantees per storage kind.
"""

from __future__ import annotations

import errno
import json
import os
import posixpath
import secrets
import socket
import stat
import threading
import time
from datetime import datetime, timezone
from typing import Any

import pyarrow.fs as pafs

from pipeline.errors import ExecutionError, OutputExistsError
from pipeline.io.files import Location

HEARTBEAT_S = 30.0
STALE_S = 180.0
SETTLE_S = 2.0


def lock_location(final: Location) -> Location:
    """The lock of an output directory: ``.{name}.overlap-lock`` beside it."""
    head, name = posixpath.split(final.path.rstrip("/"))
    lock_name = f".{name}.overlap-lock"
    base = final.uri.rstrip("/")
    uri = base.rsplit("/", 1)[0] + "/" + lock_name if "/" in base else lock_name
    return Location(final.fs, posixpath.join(head, lock_name), uri)


class OutputLock:
    """An exclusive lock on one output directory (see the module docstring).

    Args:
        final: the output directory.
        output: the output as the user named it, for messages.

    """

    def __init__(self, final: Location, *, output: str) -> None:
        self.loc = lock_location(final)
        self.output = output
        self._fd: int | None = None
        self._token: str | None = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self._started_at: str | None = None
        self.lost = False  # the heartbeat found another run's token in the lock

    def _record(self, run_id: str | None) -> dict[str, Any]:
        if self._started_at is None:
            self._started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return {"host": socket.gethostname(), "boot_id": _boot_id(), "pid": os.getpid(),
                "pid_start": _pid_start(os.getpid()), "started_at": self._started_at,
                "heartbeat_unix_s": time.time(), "run_id": run_id, "token": self._token}

    def _refuse(self, holder: Any) -> OutputExistsError:
        if isinstance(holder, dict):
            who = (f"host {holder.get('host')}, pid {holder.get('pid')}, started "
                   f"{holder.get('started_at')}, run id {holder.get('run_id')}")
        else:
            who = "holder unknown"
        return OutputExistsError(f"output {self.output} is being written by another run ({who})",
                                 hint=f"wait for it to finish, or choose another --output; "
                                      f"the lock is {self.loc.uri}")

    def acquire(self, *, run_id: str | None) -> None:
        """Take the lock, or fail at once naming its holder.

        Raises:
            OutputExistsError: another live run holds it.
            ExecutionError: the storage refused (the message names the output and its
                directory: it cannot be written there).

        """
        self._token = secrets.token_hex(8)
        try:
            self.loc.fs.create_dir(posixpath.dirname(self.loc.path), recursive=True)
            if isinstance(self.loc.fs, pafs.LocalFileSystem):
                self._acquire_local(run_id)
            else:
                self._acquire_remote(run_id)
        except OSError as e:
            # the lock is the run's first file beside the output: the output's place
            # cannot be written (a read-only, missing or forbidden parent)
            where = self.loc.uri.rsplit("/", 1)[0] if "/" in self.loc.uri else "."
            raise ExecutionError(f"cannot write the output {self.output}: {where}: "
                                 f"{e.strerror or e}",
                                 hint="choose an --output in a directory you can write"
                                 ) from None

    def _acquire_local(self, run_id: str | None) -> None:
        import fcntl

        while True:
            fd = self._open_local()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                with os.fdopen(fd, "rb") as fh:
                    raise self._refuse(_parse(fh.read())) from None
            try:  # the file we locked may have been unlinked by its releasing holder
                same = os.fstat(fd).st_ino == os.lstat(self.loc.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(self._record(run_id)).encode())
        self._fd = fd

    def _open_local(self) -> int:
        """Open (creating) the lock file, never through a symlink or into a foreign file.

        ``O_NOFOLLOW`` refuses a symlink at the lock's name (planted or not, we never create
        one); a file with other links, or not a regular file, is not ours either. Nothing is
        truncated before these checks.

        Raises:
            OutputExistsError: something else than our lock file has the lock's name.

        """
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(self.loc.path, flags, 0o644)
        except OSError as e:
            if e.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.EMLINK):
                raise
            raise self._foreign("a symbolic link" if os.path.islink(self.loc.path)
                                else "not a regular file") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            raise self._foreign("not a regular file" if not stat.S_ISREG(st.st_mode)
                                else f"a file with {st.st_nlink} links")
        return fd

    def _foreign(self, what: str) -> OutputExistsError:
        return OutputExistsError(f"the lock of output {self.output}, {self.loc.uri}, is {what}; "
                                 "refusing to open it (overlap never creates one)",
                                 hint="remove it if it is not yours, or choose another --output")

    def _acquire_remote(self, run_id: str | None) -> None:
        holder = _read(self.loc)
        if isinstance(holder, dict) and time.time() - _number(
                holder.get("heartbeat_unix_s")) < STALE_S and not holder_is_dead(holder):
            raise self._refuse(holder)
        _write(self.loc, self._record(run_id))
        time.sleep(SETTLE_S)
        holder = _read(self.loc)
        if not isinstance(holder, dict) or holder.get("token") != self._token:
            raise self._refuse(holder)
        self._beat = threading.Thread(target=self._heartbeat, args=(run_id,), daemon=True,
                                      name="overlap-lock-heartbeat")
        self._beat.start()

    def _heartbeat(self, run_id: str | None) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                holder = _read(self.loc)
                if not isinstance(holder, dict) or holder.get("token") != self._token:
                    self.lost = True  # taken over: never write it back
                    return
                _write(self.loc, self._record(run_id))
            except OSError:
                pass  # a missed beat; the next one may get through

    def verify(self) -> None:
        """Check that the lock is still ours, before a destructive step (fencing).

        On object storage: the lock file still holds our token (no other run took it over
        while this one was frozen). Locally: the file we hold the ``flock`` of is still the
        one at the lock's name.

        Raises:
            OutputExistsError: the lock is lost (another run holds the output now).

        """
        if self._fd is not None:
            try:
                ours = os.fstat(self._fd).st_ino == os.lstat(self.loc.path).st_ino
            except OSError:
                ours = False
            holder = None
        elif self._token is not None and self._beat is not None:
            try:
                holder = _read(self.loc)
            except OSError as e:
                raise ExecutionError(f"cannot read the lock {self.loc.uri}: {e}") from None
            ours = not self.lost and isinstance(holder, dict) \
                and holder.get("token") == self._token
        else:
            return  # never taken (a dry run): nothing to fence
        if not ours:
            self.lost = True
            who = self._refuse(holder).message if isinstance(holder, dict) else \
                f"the lock {self.loc.uri} is gone"
            raise OutputExistsError(
                f"this run lost the lock of output {self.output} while it was stopped or "
                f"too slow to renew it; it stops without publishing or deleting anything "
                f"({who})", hint="the run holding the lock now finishes the output")

    def release(self) -> None:
        """Give the lock up (removing the lock file when it is still ours)."""
        if self._fd is not None:
            try:
                os.unlink(self.loc.path)
            except OSError:
                pass
            os.close(self._fd)  # closing releases the flock
            self._fd = None
        elif self._beat is not None:
            self._stop.set()
            self._beat.join()
            self._beat = None
            try:
                if (_read(self.loc) or {}).get("token") == self._token:
                    self.loc.fs.delete_file(self.loc.path)
            except OSError:
                pass


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _boot_id() -> str | None:
    """This boot's id (Linux ``/proc/sys/kernel/random/boot_id``), or None."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _pid_start(pid: int) -> str | None:
    """Return the start time of ``pid`` in clock ticks since boot, or None.

    ``/proc/PID/stat`` field 22; None for no such process, a zombie, or no ``/proc``.
    """
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[19] if len(fields) > 19 and fields[0] != "Z" else None


def holder_is_dead(holder: dict[str, Any]) -> bool:
    """Tell whether a lock's holder is provably dead: same host and boot, PID gone or reused.

    Only a holder on this host (same host name and, where known, same boot id) can be seen;
    one elsewhere is never called dead here (its lock goes stale instead).

    Args:
        holder: the lock's record (``host``, ``boot_id``, ``pid``, ``pid_start``).

    Returns:
        True when the PID is not running, or runs a process started at another time than
        the holder (the PID was reused).

    """
    if holder.get("host") != socket.gethostname():
        return False
    boot = _boot_id()
    if holder.get("boot_id") and boot and holder["boot_id"] != boot:
        return True  # the host restarted since: every process of that boot is gone
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    started = _pid_start(pid)
    recorded = holder.get("pid_start")
    if started is None:
        return os.path.isdir("/proc") and recorded is not None  # gone now, or a zombie
    return recorded is not None and str(recorded) != started


def _parse(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def _read(loc: Location) -> Any:
    try:
        with loc.fs.open_input_stream(loc.path) as fh:
            return _parse(fh.read())
    except FileNotFoundError:
        return None


def _write(loc: Location, record: dict[str, Any]) -> None:
    with loc.fs.open_output_stream(loc.path) as fh:
        fh.write(json.dumps(record).encode())


__all__ = ["HEARTBEAT_S", "STALE_S", "OutputLock", "holder_is_dead", "lock_location"]
