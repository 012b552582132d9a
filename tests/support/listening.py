"""Listening TCP sockets of a process tree, read from /proc (Linux only; no psutil)."""

from __future__ import annotations

import ipaddress
import os
import socket
import struct


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process descended from it (from /proc/*/stat)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def _address(hex_address: str, v6: bool) -> tuple[str, int]:
    ip, port = hex_address.split(":")
    raw = bytes.fromhex(ip)
    if v6:  # four host-order 32-bit words
        raw = b"".join(struct.pack("<I", w) for w in struct.unpack(">4I", raw))
        return socket.inet_ntop(socket.AF_INET6, raw), int(port, 16)
    return socket.inet_ntoa(struct.pack("<I", int(ip, 16))), int(port, 16)


def listening_sockets(pids: list[int]) -> list[tuple[str, str, int]]:
    """``(process name, address, port)`` of every TCP socket the processes listen on."""
    owner: dict[str, int] = {}
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                owner[link[8:-1]] = pid
    found = []
    for table, v6 in (("tcp", False), ("tcp6", True)):
        try:
            with open(f"/proc/net/{table}") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if f[3] == "0A" and f[9] in owner:  # 0A: LISTEN
                ip, port = _address(f[1], v6)
                try:
                    with open(f"/proc/{owner[f[9]]}/comm") as fh:
                        name = fh.read().strip()
                except OSError:
                    name = "?"
                found.append((name, ip, port))
    return found


def _unmapped(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The address, an IPv4-mapped IPv6 one (``::ffff:a.b.c.d``) as its IPv4 address.

    A dual-stack socket shows an IPv4 peer or bind address in that form, and Python 3.11's
    ``IPv6Address.is_loopback`` and ``is_unspecified`` do not look through it.
    """
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ::1, or an IPv4-mapped loopback address (::ffff:127.x.y.z)."""
    return _unmapped(address).is_loopback


def is_wildcard(address: str) -> bool:
    """0.0.0.0, ::, or the IPv4-mapped wildcard (::ffff:0.0.0.0): every interface."""
    return _unmapped(address).is_unspecified
