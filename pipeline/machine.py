"""What this machine gives the process: the CPUs it may run on, and its descendants."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, e.g. under ``taskset``), >= 1."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def descendants(pid: int) -> list[int]:
    """PIDs of every live descendant of ``pid`` (not ``pid`` itself), from Linux ``/proc``.

    A snapshot: processes may start or end while it is read. An empty list where there is
    no ``/proc``.
    """
    if not os.path.isdir("/proc/self"):
        return []
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        out.append(child)
        todo.extend(children.get(child, []))
    return out


def memory_bytes() -> int:
    """Bytes of memory this process can hold: the machine's, or a lower limit set on it.

    The smallest of the physical memory, the cgroup's limit (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``) and the address-space limit (``ulimit -v``), where each is
    known; physical memory alone elsewhere.
    """
    sizes = []
    try:
        sizes.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit():
            sizes.append(int(text))
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            sizes.append(soft)
    except (ImportError, ValueError, OSError):
        pass
    positive = [s for s in sizes if s > 0]
    return min(positive) if positive else 1 << 40


def _size(n_bytes: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:,.1f} {unit}"
    return f"{n_bytes:,} bytes"


def check_fits(name: str, count: int, *, bytes_each: int, what: str = "resamples",
               at_most: int | None = None, hint: str | None = None) -> None:
    """Refuse a count a user gave whose memory passes what this machine can hold.

    The one bound of every user-given size that memory grows with (bootstrap resamples,
    randomization trials): checked up front, before any work or any file, so that a
    typo like ``--bootstrap 10000000000`` is an error with exit 2, not a ``MemoryError``
    an hour later with a staging directory left.

    Args:
        name: the setting, as the user wrote it (``bootstrap``, ``n_bootstrap``).
        count: its value, >= 0.
        bytes_each: bytes held per unit of ``count`` (a lower bound: the arrays the work
            keeps per resample), > 0.
        what: the unit, for the message.
        at_most: the setting's own maximum, if any (> 0): the largest count the message
            gives is the smaller of it and the count that fits in memory, so that it is a
            value the setting accepts.
        hint: a further bound the count must also meet, for the message (e.g. a work
            limit that depends on the input's size).

    Raises:
        ConfigError: ``count * bytes_each`` exceeds :func:`memory_bytes` (names the setting,
            the memory it needs, the machine's and the largest accepted count).

    """
    from pipeline.errors import ConfigError

    have = memory_bytes()
    need = count * bytes_each
    if need > have:
        fits = have // bytes_each
        largest = fits if at_most is None else min(fits, at_most)
        why = " (its maximum)" if largest < fits else ""
        raise ConfigError(f"{name}: {count:,} {what} need at least {_size(need)} of memory; "
                          f"this machine holds {_size(have)} (at most {fits:,} {what})",
                          hint=f"the largest {name} accepted is {largest:,}{why}"
                               + (f"; {hint}" if hint else ""))
