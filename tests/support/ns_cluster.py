"""A Ray cluster whose nodes share no disk, and an S3-compatible server, on loopback, for tests.

:class:`PrivateTmpCluster` is a :class:`~tests.support.ray_cluster.LoopbackCluster` whose every
node runs in a mount namespace of its own (``unshare --mount``, as root) with a fresh tmpfs
on ``/tmp`` and ``/dev/shm``: as on separate machines, a file one node writes under ``/tmp``
is not there for another (a scratch file in the driver's temp dir is not seen by the
workers). Ray's temp dir is inside that private ``/tmp``. The driver runs on the head
(:meth:`PrivateTmpCluster.driver_prefix`: ``nsenter`` into the head's mount namespace), as a
plain Ray driver must: it talks to its node's raylet over a Unix socket under that node's
``/tmp``.

:class:`MotoServer` is moto's S3 server (``moto[server]``), on 127.0.0.1 and a free port,
started and stopped (by its PID) by the test.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.ray_cluster import RAY, READY, LoopbackCluster, free_port

UNSHARE = shutil.which("unshare")
NSENTER = shutil.which("nsenter")


def can_isolate() -> str | None:
    """Why private-/tmp nodes cannot be simulated here (None: they can)."""
    if os.geteuid() != 0:
        return "mount namespaces need root (CI runs as root)"
    if UNSHARE is None or NSENTER is None:
        return "unshare/nsenter (util-linux) not found"
    probe = subprocess.run([UNSHARE, "--mount", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs tmpfs /tmp"], capture_output=True)
    if probe.returncode != 0:
        return f"unshare --mount failed: {probe.stderr.decode(errors='replace').strip()}"
    return None


@dataclass
class PrivateTmpCluster(LoopbackCluster):
    """Nodes in mount namespaces of their own with private ``/tmp`` and ``/dev/shm``.

    Attributes:
        node_env_extra: further variables of the nodes' environment (e.g. AWS keys: a
            node's credentials are its own).

    """

    node_ips: tuple[str, ...] = ("127.0.0.7", "127.0.0.8", "127.0.0.9")
    # inside each node's private /tmp (unique: it is also the cluster's marker)
    temp_dir: str = field(default_factory=lambda: f"/tmp/ovray-{secrets.token_hex(4)}")
    log_dir: str = ""
    node_env_extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.log_dir:
            import tempfile

            self.log_dir = tempfile.mkdtemp(prefix="ovns-logs-")

    def node_env(self) -> dict[str, str]:
        """The nodes' environment: the cluster's, the marker, and :attr:`node_env_extra`."""
        return {**super().node_env(), **self.node_env_extra}

    def _start(self, i: int, args: list[str], timeout_s: float) -> None:
        log = Path(self.log_dir) / f"ray-start-{i}.log"
        ray = " ".join(shlex.quote(a) for a in [str(RAY), "start", *args])
        script = ("mount -t tmpfs -o size=2g tmpfs /tmp && mount -t tmpfs -o size=2g tmpfs "
                  f"/dev/shm && mkdir -p {shlex.quote(self.temp_dir)} && "
                  f"cd {shlex.quote(self.temp_dir)} && exec {ray}")
        with open(log, "wb") as fh:
            proc = subprocess.Popen([str(UNSHARE), "--mount", "--propagation", "private",
                                     "bash", "-c", script], stdout=fh,
                                    stderr=subprocess.STDOUT, env=self.node_env(),
                                    start_new_session=True)
        self.procs.append(proc)
        deadline = time.monotonic() + timeout_s
        while READY not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start for node {self.node_ips[i]} failed:\n"
                                   + log.read_text(errors="replace")[-3000:])
            time.sleep(0.2)

    def driver_prefix(self, node: int = 0) -> list[str]:
        """The command prefix that runs a command on node ``node`` (its mount namespace)."""
        return [str(NSENTER), "--target", str(self.procs[node].pid), "--mount", "--"]

    def run_on(self, node: int, command: list[str], **kwargs) -> subprocess.CompletedProcess:
        """Run ``command`` in node ``node``'s mount namespace (sees that node's /tmp only)."""
        return subprocess.run([*self.driver_prefix(node), *command], **kwargs)

    def node_processes(self, node: int) -> dict[int, str]:
        """The live processes of node ``node`` under its ``ray start``: PID -> command line
        (Ray's workers show the task they run as ``ray::NAME``)."""
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
        found: dict[int, str] = {}
        todo = list(children.get(self.procs[node].pid, []))
        while todo:
            pid = todo.pop()
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            found[pid] = cmd.decode(errors="replace").strip()
            todo.extend(children.get(pid, []))
        return found

    def stop(self, *, timeout_s: float = 30.0) -> list[int]:
        """Stop the nodes (see :meth:`LoopbackCluster.stop`); their tmpfs go with them."""
        leftovers = super().stop(timeout_s=timeout_s)
        shutil.rmtree(self.log_dir, ignore_errors=True)
        return leftovers


@dataclass
class MotoServer:
    """moto's S3 server on 127.0.0.1 (a free port), stopped by :meth:`stop` (its PID only)."""

    host: str = "127.0.0.1"
    port: int = 0
    proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        """The endpoint URL (plain HTTP, loopback)."""
        return f"http://{self.host}:{self.port}"

    def start(self, *, timeout_s: float = 30.0) -> None:
        """Start the server and wait until it answers."""
        import urllib.request

        import moto  # noqa: F401 - moto[server] brings the moto_server command

        self.port = free_port(self.host)
        exe = Path(sys.executable).with_name("moto_server")
        self.proc = subprocess.Popen([str(exe), "-H", self.host, "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1):
                    return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto_server did not start") from None
                time.sleep(0.2)

    def stop(self) -> None:
        """Stop the server started here."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
