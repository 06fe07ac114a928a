"""Reaching the replicated key-value store's nodes from the host, in both isolation modes.

With ``isolation = namespaces`` each node listens on its own address inside
its server's network namespace (``ms-<server id>``), which the host cannot
reach: requests run in that namespace (``ip netns exec``), and the node's
processes are the namespace's (``ip netns pids``). With ``isolation = none``
every node is on the host's 127.0.0.1, on a port of its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from murano_engine.clouds.local import netns
from tests import processes

LOOPBACK = "127.0.0.1"

# Runs in the node's namespace: one HTTP request, prints "<status> <body>".
_REQUEST = """
import sys, urllib.error, urllib.request
url, method, data = sys.argv[1], sys.argv[2], sys.argv[3]
request = urllib.request.Request(url, data=data.encode() if method == "PUT" else None,
                                 method=method)
try:
    with urllib.request.urlopen(request, timeout=float(sys.argv[4])) as response:
        code, body = response.status, response.read()
except urllib.error.HTTPError as exc:
    code, body = exc.code, exc.read()
except OSError as exc:
    print(f"0 {exc}")
    sys.exit(0)
print(code, body.decode())
"""


@dataclass(frozen=True)
class Node:
    """One node as the deploy recorded it: its server, namespace and address."""

    name: str
    server_id: str
    ip: str  # its address in the cloud (ipAddresses[0])
    port: int
    sandboxed: bool

    @property
    def namespace(self) -> str:
        return netns.server_namespace(self.server_id)

    @property
    def address(self) -> str:
        """Where the node listens: its own address in a sandbox, else loopback."""
        return f"{self.ip if self.sandboxed else LOOPBACK}:{self.port}"

    def request(self, path: str, method: str = "GET", data: str = "", *,
                address: str | None = None, timeout: float = 2.0) -> tuple[int, str]:
        """An HTTP request made from this node's place (its namespace when sandboxed)
        to ``address`` (by default its own); status 0 when it could not connect."""
        url = f"http://{address or self.address}{path}"
        command = [sys.executable, "-c", _REQUEST, url, method, data, str(timeout)]
        if self.sandboxed:
            command = ["ip", "netns", "exec", self.namespace, *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 10,
                              check=True)
        code, _, body = done.stdout.rstrip("\n").partition(" ")
        return int(code), body

    def status(self) -> dict:
        code, body = self.request("/status")
        assert code == 200, f"{self.name}: {code} {body}"
        return json.loads(body)

    def serves(self, key: str, value: str, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.request(f"/kv/{key}") == (200, value):
                return True
            time.sleep(0.1)
        return False


def nodes(app: dict, sandboxed: bool) -> list[Node]:
    """The application's nodes, in order (the master first)."""
    return [Node(s["name"], s["openstackId"], s["ipAddresses"][0], s["port"], sandboxed)
            for s in app["servers"]]


def kv_processes(marker: str) -> list[int]:
    """Host processes running kv.py whose command line holds ``marker`` (isolation none)."""
    return [pid for pid, command in processes.command_lines()
            if b"kv.py" in command and marker.encode() in command]


def command_line(pid: int) -> str:
    return processes.cmdline(pid).replace(b"\0", b" ").decode()


def sandbox_kv_pids(node: Node) -> list[int]:
    """The kv.py service processes in the node's sandbox."""
    return [p for p in netns.pids(node.namespace) if "kv.py serve" in command_line(p)]


def network_ids(cloud: Path, server_ids: list[str]) -> set[str]:
    """The networks the servers are plugged into (from their folders in the local cloud)."""
    found = set()
    for server_id in server_ids:
        meta = json.loads((cloud / "servers" / server_id / "server.json").read_text())
        found |= {i["network_id"] for i in meta["interfaces"]}
    return found


def namespaces_left(server_ids: list[str], networks: set[str]) -> list[str]:
    names = [netns.server_namespace(s) for s in server_ids]
    names += [netns.network_namespace(n) for n in networks]
    return [n for n in names if netns.exists(n)]


def alive(pids: list[int]) -> list[int]:
    """The processes among ``pids`` that still exist and have not ended (zombies have)."""
    found = []
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[-1].split()[0] != "Z":
            found.append(pid)
    return found


def force_cleanup(server_ids: list[str], networks: set[str]) -> None:
    """After a failed test only: kill what is left in the servers' namespaces, remove them."""
    for server_id in server_ids:
        name = netns.server_namespace(server_id)
        for pid in netns.pids(name):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        netns.delete(name)
    for network in networks:
        netns.delete(netns.network_namespace(network))
