"""The output lock on object storage: takeover of a provably dead holder, and fencing.

Object storage is simulated by fsspec's in-memory filesystem (``memory://``), which the
lock treats as it treats S3 (no ``flock``: a record with a heartbeat). Issue 24, failure 4:
after a SIGKILLed driver the rerun was refused for 3 minutes although the holder was a dead
PID on the same host; a driver frozen past the stale limit lost its lock without noticing
and went on to delete what the new holder was using.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.errors import OutputExistsError
from pipeline.io import lock as lockmod
from pipeline.io.files import locate
from pipeline.io.lock import OutputLock, holder_is_dead, lock_location
from pipeline.io.write import RUN_ID_KEY, OutputDir


@pytest.fixture(autouse=True)
def fast_settle(monkeypatch):
    monkeypatch.setattr(lockmod, "SETTLE_S", 0.01)


def _uri() -> str:
    return f"memory://locks-{uuid.uuid4().hex[:8]}/runs/out"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: the PID names no process now
    return proc.pid


def _start_ticks(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[19]


def _boot() -> str:
    with open("/proc/sys/kernel/random/boot_id") as fh:
        return fh.read().strip()


def _plant(uri: str, **record) -> None:
    loc = lock_location(locate(uri))
    loc.fs.create_dir(os.path.dirname(loc.path), recursive=True)
    with loc.fs.open_output_stream(loc.path) as fh:
        fh.write(json.dumps(record).encode())


def _fresh(**extra):
    import time

    return {"host": socket.gethostname(), "boot_id": _boot(), "heartbeat_unix_s": time.time(),
            "started_at": "2026-12-03T00:00:00+00:00", "run_id": "old", "token": "0" * 16,
            **extra}


def test_a_dead_holder_on_this_host_is_taken_over_at_once():
    uri = _uri()
    # a SIGKILLed driver: its record is fresh (heartbeat just now) but its PID is gone
    _plant(uri, **_fresh(pid=_dead_pid(), pid_start="1"))
    lock = OutputLock(locate(uri), output=uri)
    lock.acquire(run_id="new")  # the old code refused this for STALE_S (180 s)
    try:
        lock.verify()
    finally:
        lock.release()


def test_a_reused_pid_is_told_apart_by_its_start_time():
    uri = _uri()
    # the PID is alive (this process) but started at another time than the holder's record
    _plant(uri, **_fresh(pid=os.getpid(), pid_start=str(int(_start_ticks(os.getpid())) + 7)))
    lock = OutputLock(locate(uri), output=uri)
    lock.acquire(run_id="new")
    lock.release()


def test_a_live_holder_is_refused_and_a_holder_elsewhere_waits_for_staleness():
    live = _fresh(pid=os.getpid(), pid_start=_start_ticks(os.getpid()))
    assert not holder_is_dead(live)
    assert holder_is_dead({**live, "pid": _dead_pid()})
    # another host: never called dead from here, whatever its PID
    assert not holder_is_dead({**live, "host": "elsewhere.invalid", "pid": _dead_pid()})
    uri = _uri()
    _plant(uri, **live)
    with pytest.raises(OutputExistsError, match="being written by another run"):
        OutputLock(locate(uri), output=uri).acquire(run_id="new")


def test_a_holder_that_lost_its_lock_cannot_publish_or_delete():
    uri = _uri()
    first = OutputDir(uri, overwrite=False, key="k")
    first.prepare(run_id="first")
    staged = first.staged("examples/part-00000.parquet")
    table = pa.table({"id": ["a"]}).replace_schema_metadata({RUN_ID_KEY: "first"})
    with staged.fs.open_output_stream(staged.path) as fh:
        pq.write_table(table, fh)
    # the first run freezes; a second run takes the lock over (stale, or on another host)
    _plant(uri, **_fresh(host="other-host.invalid", pid=1, run_id="second",
                         token="f" * 16))
    with pytest.raises(OutputExistsError, match="lost the lock"):
        first.publish(run_id="first")
    final = locate(uri)
    assert final.fs.get_file_info(final.path).type.name == "NotFound"  # nothing published
    first.abort()  # fenced: the staging, now the second run's, is left alone
    assert first.staging.fs.get_file_info(staged.path).type.name == "File"
    first.release()  # and the second run's lock stays
    holder = json.loads(locate(uri).fs.open_input_stream(
        lock_location(locate(uri)).path).read())
    assert holder["token"] == "f" * 16


def test_the_record_names_the_holders_pid_and_its_start_time():
    uri = _uri()
    lock = OutputLock(locate(uri), output=uri)
    lock.acquire(run_id="r")
    try:
        loc = lock_location(locate(uri))
        record = json.loads(loc.fs.open_input_stream(loc.path).read())
        assert record["pid"] == os.getpid()
        assert record["pid_start"] == _start_ticks(os.getpid())
        assert record["boot_id"] == _boot()
    finally:
        lock.release()
