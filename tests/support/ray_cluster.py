"""A real multi-node Ray cluster on this machine, on loopback addresses only, for tests.

Each node is one ``ray start --block`` process (the head on 127.0.0.2, further nodes on
127.0.0.3, ...), with its own CPUs, a temp dir of ours and every fixed-default port chosen
free. ``--block`` keeps the command in the foreground: it supervises its node's processes and
stops them when it gets SIGTERM, so :meth:`LoopbackCluster.stop` stops exactly the nodes
started here, by their recorded PIDs (never ``ray stop``, which kills every Ray process on the
host). Every process of the cluster inherits a marker in its environment (Ray workers rename
themselves, so command lines do not identify them): anything still running with that marker
afterwards is killed too.

Token authentication stays on, with a fresh random token passed in the environment
(``RAY_AUTH_TOKEN``): every process of the cluster and every driver must present it, and no
token file is written to the home directory.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.listening import is_loopback

RAY = Path(sys.executable).with_name("ray")
READY = "block forever"
MARKER = "OVERLAP_TEST_RAY"  # environment variable naming the cluster, in all its processes


def processes_with_env(name: str, value: str) -> list[int]:
    """Return the PIDs of live processes (of this user) whose environment has ``name=value``."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry))
    return sorted(found)


def free_port(host: str) -> int:
    """Return a TCP port that is free on ``host`` now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class LoopbackCluster:
    """A Ray cluster of ``len(node_ips)`` nodes, one ``ray start --block`` each.

    Attributes:
        node_ips: the nodes' addresses, head first (loopback only).
        cpus_per_node: ``--num-cpus`` of each node.
        temp_dir: Ray's temp dir (short: Ray's socket paths are limited to ~100 bytes).
        token: the cluster's authentication token.
        port: the head's GCS port (the cluster address is ``{node_ips[0]}:{port}``).
        procs: the ``ray start`` processes, head first.
        dashboard: start the head's dashboard (on the head's address), whose job server
            takes Ray jobs (``ray job submit``; needs ``ray[default]``).
        dashboard_port: its port (0 until started).

    """

    node_ips: tuple[str, ...] = ("127.0.0.2", "127.0.0.3")
    cpus_per_node: int = 1
    temp_dir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="ovc", dir="/tmp"))
    token: str = field(default_factory=lambda: secrets.token_hex(32))
    port: int = 0
    procs: list[subprocess.Popen] = field(default_factory=list)
    dashboard: bool = False
    dashboard_port: int = 0

    def __post_init__(self) -> None:
        for ip in self.node_ips:
            if not is_loopback(ip):
                raise ValueError(f"{ip} is not a loopback address")

    @property
    def dashboard_address(self) -> str:
        """The job server's address (``ray job submit --address``), with :attr:`dashboard`."""
        return f"http://{self.node_ips[0]}:{self.dashboard_port}"

    @property
    def address(self) -> str:
        """The cluster address a driver passes to ``ray.init`` / ``--address``."""
        return f"{self.node_ips[0]}:{self.port}"

    def env(self) -> dict[str, str]:
        """Environment of the cluster's processes and of its drivers."""
        env = {k: v for k, v in os.environ.items()
               if k not in ("RAY_ADDRESS", "RAY_AUTH_TOKEN_PATH")}
        env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=self.token,
                   RAY_USAGE_STATS_ENABLED="0")
        return env

    def node_env(self) -> dict[str, str]:
        """Environment of the cluster's own processes: :meth:`env` and the marker."""
        return {**self.env(), MARKER: self.temp_dir}

    def start(self, *, timeout_s: float = 90.0) -> None:
        """Start the head, then the other nodes; return once every node has joined.

        Raises:
            RuntimeError: a node did not come up within ``timeout_s`` (its log is quoted).

        """
        head = self.node_ips[0]
        self.port = free_port(head)
        common = [f"--num-cpus={self.cpus_per_node}", f"--temp-dir={self.temp_dir}",
                  "--disable-usage-stats", "--block"]
        if self.dashboard:
            self.dashboard_port = free_port(head)
            dashboard = ["--include-dashboard=true", f"--dashboard-host={head}",
                         f"--dashboard-port={self.dashboard_port}"]
        else:
            dashboard = ["--include-dashboard=false",
                         f"--dashboard-port={free_port('127.0.0.1')}"]
        self._start(0, [
            "--head", f"--node-ip-address={head}", f"--port={self.port}", *dashboard,
            f"--dashboard-agent-listen-port={free_port(head)}", *common], timeout_s)
        for i, ip in enumerate(self.node_ips[1:], start=1):
            self._start(i, [f"--address={self.address}", f"--node-ip-address={ip}",
                            f"--dashboard-agent-listen-port={free_port(ip)}", *common],
                        timeout_s)

    def _start(self, i: int, args: list[str], timeout_s: float) -> None:
        log = Path(self.temp_dir) / f"ray-start-{i}.log"
        with open(log, "wb") as fh:
            # started in its temp dir, as on a node of its own: a worker's working directory
            # comes first on its sys.path, and this checkout's must not stand in for the
            # package the driver ships
            proc = subprocess.Popen([str(RAY), "start", *args], stdout=fh,
                                    stderr=subprocess.STDOUT, env=self.node_env(),
                                    cwd=self.temp_dir, start_new_session=True)
        self.procs.append(proc)
        deadline = time.monotonic() + timeout_s
        while READY not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start for node {self.node_ips[i]} failed:\n"
                                   + log.read_text(errors="replace")[-3000:])
            time.sleep(0.2)

    def pids(self) -> list[int]:
        """Every live process of this cluster (the marker in its environment)."""
        return processes_with_env(MARKER, self.temp_dir)

    def listening_addresses(self) -> set[str]:
        """IP addresses the cluster's processes listen on (TCP, IPv4 and IPv6)."""
        inodes = set()
        for pid in self.pids():
            try:
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
            except OSError:
                continue
        found = set()
        for table, width in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
            try:
                lines = Path(table).read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                cols = line.split()
                if cols[3] != "0A" or cols[9] not in inodes:  # 0A: LISTEN
                    continue
                raw = bytes.fromhex(cols[1].split(":")[0])
                # /proc/net/tcp* print addresses as 32-bit words in host (little-endian) order
                ip = b"".join(raw[j:j + 4][::-1] for j in range(0, len(raw), 4))
                found.add(str(ipaddress.ip_address(ip if width == 16 else ip[:4])))
        return found

    def stop(self, *, timeout_s: float = 30.0) -> list[int]:
        """Stop the nodes started here (other nodes first, the head last).

        Returns:
            PIDs that were still alive after every ``ray start`` had exited and had to be
            killed (empty when the shutdown was clean).

        """
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        leftovers = []
        deadline = time.monotonic() + 5.0
        while (leftovers := self.pids()) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        return leftovers
