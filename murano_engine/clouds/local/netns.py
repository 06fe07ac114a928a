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

import contextlib
import errno
import ipaddress
import os
import socket
import subprocess
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from murano_engine.clouds.local import syscalls

BRIDGE = "br0"
#: where ``ip netns`` keeps a file per namespace
NAMESPACES = "/run/netns"
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


def namespace_file(name: str) -> str:
    """The file that keeps namespace ``name`` (``ip netns add`` makes it)."""
    return f"{NAMESPACES}/{name}"


def exists(name: str) -> bool:
    return os.path.exists(namespace_file(name))


def create_server(server_id: str, interfaces: Iterable[Interface]) -> str:
    """The server's namespace with loopback and its ports plugged into their networks.

    Three ``ip`` runs a server with one port: the namespace; each port's veth pair,
    made in its switch's namespace with the switch end on the bridge and the server
    end (``eth<N>``, the port's MAC) in the server's; then, in one batch, the
    server's addresses and links up.
    """
    name = server_namespace(server_id)
    delete(name)
    ip("netns", "add", name)
    inside = ["link set lo up"]
    for index, interface in enumerate(interfaces):
        device = f"eth{index}"
        _plug(name, index, device, interface)
        inside += [f"addr add {ipaddress.ip_interface(interface.address)} dev {device}",
                   f"link set {device} up"]
    batch(name, inside)
    return name


def batch(namespace: str, commands: list[str], force: bool = False) -> str:
    """Run ``ip`` commands (one a line, without ``ip``) in ``namespace`` in one process;
    its output. ``force`` goes on past a failed command (the run still fails)."""
    done = subprocess.run(["ip", *(["-force"] if force else []), "-o", "-n", namespace,
                           "-batch", "-"], input="\n".join(commands) + "\n",
                          capture_output=True, text=True)
    if done.returncode != 0 and not force:
        raise NetnsError(f"ip -n {namespace} -batch: {done.stderr.strip()}")
    return done.stdout


def _veth_name(server_ns: str, index: int) -> str:
    """The switch-side name of a port's veth pair."""
    return f"{_port_prefix(server_ns)}{index}"[:15]


#: the length of what a server's ports' switch-side names begin with
PORT_PREFIX = 13


def _port_prefix(server_ns: str) -> str:
    return f"v{_short(server_ns)}"


def _plug(server_ns: str, index: int, device: str, interface: Interface) -> None:
    """The port's veth pair: its switch end up on the bridge, ``device`` (with the
    port's MAC) in the server's namespace."""
    with _SWITCHES:  # so the switch is not removed before the server is plugged in
        switch = _network(interface.network_id)
        batch(switch, [f"link add {_veth_name(server_ns, index)} up master {BRIDGE} type veth "
                       f"peer name {device} address {interface.mac} netns {server_ns}"])


def _network(network_id: str) -> str:
    """The namespace of a network's switch, made on first use (under ``_SWITCHES``)."""
    name = network_namespace(network_id)
    if not exists(name):
        ip("netns", "add", name)
        batch(name, ["link set lo up", f"link add {BRIDGE} type bridge",
                     f"link set {BRIDGE} up"])
    return name


def delete(name: str) -> None:
    """Remove a namespace; absent is fine. As ``ip netns del`` does it, without starting
    a process: detach the mount that keeps the namespace, then remove its file (the
    namespace goes once no process is left in it)."""
    path = namespace_file(name)
    with contextlib.suppress(OSError):  # absent or not mounted: nothing to detach
        syscalls.umount(path, syscalls.MNT_DETACH)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def delete_server(server_id: str, interfaces: Iterable[Interface]) -> None:
    """Remove a server's namespace, then every switch it was plugged into that has no
    port of a live server left.

    Its ports go with the namespace: once the namespace is gone (its processes must be
    gone already) the kernel removes both ends of each veth pair, many namespaces'
    at once, where an ``ip link del`` waits for the kernel once per port (20 ms).
    """
    delete(server_namespace(server_id))
    switches = sorted({network_namespace(i.network_id) for i in interfaces})
    with _SWITCHES:
        for switch in switches:
            if exists(switch) and not _live_ports(switch):
                delete(switch)


def _live_ports(switch: str) -> list[str]:
    """The ports of a switch whose server's namespace still exists (the ports of a
    removed one may still be going). None either for a switch whose file is no
    namespace any more, a :func:`delete` cut short between its two steps by a killed
    destroy: it is deleted then."""
    live = {_port_prefix(name) for name in _namespaces() if name.startswith("ms-")}
    try:
        return [port for port in links_in(switch) if port[:PORT_PREFIX] in live]
    except NetnsError as exc:
        if exc.errno != errno.EINVAL:
            raise
        return []


def _namespaces() -> list[str]:
    try:
        return os.listdir(NAMESPACES)
    except FileNotFoundError:
        return []


def links_in(name: str) -> list[str]:
    """The names of the network devices in namespace ``name``, asked without starting a
    process (the calling thread enters it for the one call, as :func:`socket_in`)."""
    with _entered(name):
        return [device for _, device in socket.if_nameindex()]


def pids(name: str) -> list[int]:
    """The processes living in a namespace: those whose ``/proc/PID/ns/net`` is the
    namespace's file, as ``ip netns pids`` finds them, without starting a process (a
    destroy asks this for every server, several times)."""
    try:
        namespace = os.stat(namespace_file(name))
    except OSError:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            inside = os.stat(f"/proc/{entry}/ns/net")
        except OSError:  # ended meanwhile, or not ours to look at
            continue
        if inside.st_ino == namespace.st_ino and inside.st_dev == namespace.st_dev:
            found.append(int(entry))
    return found


def socket_in(name: str) -> socket.socket:
    """A TCP socket made inside network namespace ``name`` (it stays in it)."""
    with _entered(name):
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM)


@contextlib.contextmanager
def _entered(name: str) -> Iterator[None]:
    """The calling thread inside network namespace ``name``, then back in its own.

    Whatever runs inside must not switch threads (no green-thread I/O)."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(namespace_file(name), os.O_RDONLY)
    try:
        try:
            syscalls.setns(target, syscalls.CLONE_NEWNET)
        except OSError as exc:
            raise NetnsError(exc.errno, f"cannot enter network namespace {name}") from None
        try:
            yield
        finally:
            try:
                syscalls.setns(home, syscalls.CLONE_NEWNET)
            except OSError as exc:
                raise NetnsError(exc.errno, "cannot return to the engine's namespace") from None
    finally:
        os.close(home)
        os.close(target)


def listening_socket(name: str, host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port`` inside namespace ``name``."""
    sock = socket_in(name)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    return sock
