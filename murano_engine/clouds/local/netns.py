"""Network namespaces for local-cloud servers: one per server, one switch per network.

A server's namespace (``ms-<id>``) has loopback and one ``eth<N>`` per port,
with the port's address. A Neutron network is a bridge in a namespace of its
own (``mn-<id>``); each port is a veth pair between the two. Nothing is
connected to the host's namespace, so a server reaches the servers on its
networks and nothing else: not other environments' servers, not the host's
processes. Names are derived from resource ids, so they can be found again
after a restart.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import ipaddress
import os
import socket
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass

CLONE_NEWNET = 0x40000000
BRIDGE = "br0"
# Servers boot side by side; a network's switch is made (and removed) by one at a time.
_SWITCHES = threading.Lock()


class NetnsError(OSError):
    """An ``ip`` command failed."""


@dataclass(frozen=True)
class Interface:
    """One port of a server: its network, its address with prefix, its MAC."""

    network_id: str
    address: str  # e.g. "10.0.0.4/24"
    mac: str


def server_namespace(server_id: str) -> str:
    return f"ms-{_short(server_id)}"


def network_namespace(network_id: str) -> str:
    return f"mn-{_short(network_id)}"


def _short(resource_id: str) -> str:
    return resource_id.replace("-", "")[:12]


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise NetnsError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def exists(name: str) -> bool:
    return os.path.exists(f"/run/netns/{name}")


def create_server(server_id: str, interfaces: Iterable[Interface]) -> str:
    """The server's namespace with loopback and its ports plugged into their networks."""
    name = server_namespace(server_id)
    delete(name)
    ip("netns", "add", name)
    ip("-n", name, "link", "set", "lo", "up")
    for index, interface in enumerate(interfaces):
        _plug(name, index, interface)
    return name


def _plug(server_ns: str, index: int, interface: Interface) -> None:
    outer = f"v{_short(server_ns)}{index}"[:15]
    inner = f"t{_short(server_ns)}{index}"[:15]
    with _SWITCHES:  # so the switch is not removed before the server is plugged in
        switch = _network(interface.network_id)
        ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        try:
            ip("link", "set", outer, "netns", switch)
            ip("link", "set", inner, "netns", server_ns)
        except NetnsError:
            ip("link", "del", outer, check=False)
            raise
        ip("-n", switch, "link", "set", outer, "master", BRIDGE, "up")
    device = f"eth{index}"
    ip("-n", server_ns, "link", "set", inner, "name", device)
    ip("-n", server_ns, "link", "set", device, "address", interface.mac)
    ip("-n", server_ns, "addr", "add", str(ipaddress.ip_interface(interface.address)),
       "dev", device)
    ip("-n", server_ns, "link", "set", device, "up")


def _network(network_id: str) -> str:
    """The namespace of a network's switch, made on first use (under ``_SWITCHES``)."""
    name = network_namespace(network_id)
    if not exists(name):
        ip("netns", "add", name)
        ip("-n", name, "link", "set", "lo", "up")
        ip("-n", name, "link", "add", BRIDGE, "type", "bridge")
        ip("-n", name, "link", "set", BRIDGE, "up")
    return name


def delete(name: str) -> None:
    """Remove a namespace and its veth ends; absent is fine.

    The kernel tears a namespace's devices down after ``ip netns del`` returns,
    so the veths are deleted first: their peers leave the switches now, and
    :func:`delete_unused_networks` sees a switch no server is plugged into.
    """
    if exists(name):
        links = ip("-n", name, "-o", "link", "show", "type", "veth", check=False).stdout
        for line in links.splitlines():
            device = line.split(":", 2)[1].strip().split("@", 1)[0]
            ip("-n", name, "link", "del", device, check=False)
        ip("netns", "del", name, check=False)


def delete_unused_networks(network_ids: Iterable[str]) -> None:
    """Remove the switches of networks no server is plugged into any more."""
    with _SWITCHES:
        for network_id in network_ids:
            name = network_namespace(network_id)
            if exists(name):
                links = ip("-n", name, "-o", "link", "show", "master", BRIDGE,
                           check=False).stdout
                if not links.strip():
                    delete(name)


def pids(name: str) -> list[int]:
    """The processes living in a namespace."""
    if not exists(name):
        return []
    return [int(p) for p in ip("netns", "pids", name, check=False).stdout.split()]


def listening_socket(name: str, host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port`` inside namespace ``name``.

    The calling thread enters the namespace only to create the socket (which
    stays in it), then returns to its own; nothing in between can switch threads.
    """
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise NetnsError(ctypes.get_errno(), f"cannot enter network namespace {name}")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(64)
        except OSError:
            sock.close()
            raise
        finally:
            if libc.setns(home, CLONE_NEWNET) != 0:
                raise NetnsError(ctypes.get_errno(), "cannot return to the engine's namespace")
    finally:
        os.close(home)
        os.close(target)
    return sock
