"""Faults injected into score tasks, for the tests of failure handling (never set otherwise).

The driver reads them from the environment variable ``OVERLAP_FAULTS`` (a JSON object with
the fields of :class:`Faults`) and passes them to every score task as an argument, so they
reach Ray workers on any node. Examples::

    OVERLAP_FAULTS='{"delay_s": 2}'                         # each partition takes 2 s longer
    OVERLAP_FAULTS='{"partition": 1, "action": "kill", "log": "/tmp/attempts"}'

A fault acts just before the partition's examples file is written, i.e. mid-run, after the
reading, joining and scoring of that partition.
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass, fields

from pipeline.errors import ConfigError, ExecutionError, InputError

ENV_VAR = "OVERLAP_FAULTS"
ACTIONS = ("kill", "hang", "transient", "input")
# How long a hanging task sleeps: longer than any test waits for it.
HANG_S = 3600.0


@dataclass(frozen=True)
class Faults:
    """What goes wrong in the score tasks.

    Attributes:
        delay_s: seconds every score task sleeps before writing its partition, >= 0.
        partition: the partition ``action`` hits (None: no action).
        action: ``kill`` (the task's process sends itself SIGKILL, as a crashed or
            OOM-killed worker), ``hang`` (the task sleeps for an hour, as a stuck worker: its
            partition stays unfinished until the run is killed), ``transient`` (raises
            :class:`ExecutionError`, as a storage hiccup) or ``input`` (raises
            :class:`InputError`, as bad data).
        log: a file to which each attempt at ``partition`` appends a line with its process
            id. ``kill``, ``hang`` and ``transient`` act only on the first attempt (while the
            log is empty), ``input`` on every attempt.

    Raises:
        ConfigError: an invalid value.

    """

    delay_s: float = 0.0
    partition: int | None = None
    action: str | None = None
    log: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.delay_s, (int, float)) or self.delay_s < 0:
            raise ConfigError(f"{ENV_VAR}: delay_s must be a number >= 0, got {self.delay_s!r}")
        if self.action is not None:
            if self.action not in ACTIONS:
                raise ConfigError(f"{ENV_VAR}: unknown action {self.action!r}; choose one of "
                                  f"{', '.join(ACTIONS)}")
            if not isinstance(self.partition, int) or not self.log:
                raise ConfigError(f"{ENV_VAR}: action {self.action!r} needs a partition "
                                  "and a log file")

    def before_write(self, index: int) -> None:
        """Apply the faults to partition ``index`` (called inside its score task).

        Raises:
            ExecutionError: action ``transient``, first attempt.
            InputError: action ``input``.

        """
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.action is None or index != self.partition or self.log is None:
            return
        first = not os.path.exists(self.log) or os.path.getsize(self.log) == 0
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")
        if self.action == "input":
            raise InputError(f"injected input error in partition {index}")
        if not first:
            return
        if self.action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if self.action == "hang":
            time.sleep(HANG_S)
            return
        raise ExecutionError(f"injected transient failure in partition {index}")


def faults_from_env() -> Faults | None:
    """Read :data:`ENV_VAR`; None when it is unset or empty.

    Raises:
        ConfigError: not a JSON object of :class:`Faults` fields.

    """
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ConfigError(f"{ENV_VAR}: invalid JSON ({e})") from None
    known = {f.name for f in fields(Faults)}
    if not isinstance(data, dict) or not set(data) <= known:
        raise ConfigError(f"{ENV_VAR}: expected a JSON object with keys among "
                          f"{', '.join(sorted(known))}, got {text!r}")
    return Faults(**data)
