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
