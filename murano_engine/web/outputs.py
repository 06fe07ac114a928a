"""What the environment page shows of a deployed application: its outputs (the values
its deployment set) and its servers, with the command that reaches a sandboxed one
(its addresses live in the server's own network namespace, ``ms-<server id>``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from murano_engine.clouds.local.netns import server_namespace
from murano_engine.web.actions import objects


def _plain(value: Any) -> bool:
    scalars = (str, int, float, bool)
    return isinstance(value, scalars) or (
        isinstance(value, list) and bool(value) and all(isinstance(v, scalars) for v in value))


def out_properties(cls: Any) -> set[str]:
    """The names of the properties a class's deployment sets (Usage Out)."""
    return {name for name, specs in cls.all_properties().items() if specs[0].usage == "Out"}


def output_values(app: Mapping[str, Any], names: set[str]) -> list[tuple[str, str]]:
    """``(name, value)`` of the plain values among an application's ``names`` (a
    mapping's entries as ``name.key``), lists joined with commas."""
    found: list[tuple[str, Any]] = []
    for key in sorted(names):
        value = app.get(key)
        if isinstance(value, Mapping):
            found += [(f"{key}.{k}", v) for k, v in sorted(value.items()) if _plain(v)]
        elif _plain(value):
            found.append((key, value))
    return [(k, ", ".join(map(str, v)) if isinstance(v, list) else str(v)) for k, v in found]


@dataclass
class Server:
    """A server an application holds, as the page lists it."""

    name: str
    addresses: list[str]
    namespace: str | None  # the network namespace a sandboxed server's addresses live in


def servers(app: Mapping[str, Any]) -> list[Server]:
    """The servers an application holds: objects a cloud gave an id (``openstackId``)."""
    found: dict[str, Server] = {}
    for obj in objects(app):
        cloud_id = obj.get("openstackId")
        if obj is app or not cloud_id or str(cloud_id) in found:
            continue
        namespace = server_namespace(str(cloud_id))
        found[str(cloud_id)] = Server(
            str(obj.get("name") or cloud_id),
            [str(a) for a in obj.get("ipAddresses") or [] if a],
            namespace if os.path.exists(f"/run/netns/{namespace}") else None)
    return list(found.values())


def reach_commands(values: list[tuple[str, str]], held: list[Server]) -> list[str]:
    """A curl command for each output that is a URL or ``host:port`` of a server; in the
    server's namespace when it is a sandbox."""
    commands = []
    for _, text in values:
        for item in (part.strip() for part in text.split(",")):
            target = item if "://" in item else f"http://{item}"
            try:
                host = urlsplit(target).hostname
                port = urlsplit(target).port
            except ValueError:
                continue
            if not host or ("://" not in item and port is None):
                continue
            server = next((s for s in held if host in s.addresses), None)
            if server is None:
                continue
            prefix = f"ip netns exec {server.namespace} " if server.namespace else ""
            commands.append(f"{prefix}curl -s {target}")
    return list(dict.fromkeys(commands))
