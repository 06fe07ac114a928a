"""What an environment left behind on the local cloud and the broker once it is gone.

A :class:`Footprint` is noted while an environment lives (after each deploy or
action): its servers, their networks, its stacks, broker queues and the servers'
broker users.
:func:`leftovers` lists what of it still exists once the environment is
deleted; one place to add a check for anything else an environment makes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kombu import Connection

from murano_common.amqp import result_queue_name
from murano_engine.clouds.local import netns
from murano_engine.engine.config import load_config
from murano_engine.messaging.identities import BrokerIdentities, identity_name

AMQP = "amqp://guest:guest@127.0.0.1:5672//"
#: the prefix of the stack a framework region makes (its agents' result queue drops it)
REGION_STACK_PREFIX = "murano-"


@dataclass
class Footprint:
    """What one environment made on a local cloud (its folder ``cloud``)."""

    cloud: Path
    servers: set[str] = field(default_factory=set)
    networks: set[str] = field(default_factory=set)
    stacks: set[str] = field(default_factory=set)
    queues: set[str] = field(default_factory=set)

    def note(self, environment_id: str, model: Any = None, queues: Any = ()) -> None:
        """Add what the cloud holds now, the agent queues of the model's servers
        (``e<environment>-h<instance>``) and ``queues`` (a state file's)."""
        for folder in _entries(self.cloud / "servers"):
            self.servers.add(folder.name)
            meta = folder / "server.json"
            if meta.exists():
                interfaces = json.loads(meta.read_text()).get("interfaces") or []
                self.networks |= {i["network_id"] for i in interfaces}
        for folder in _entries(self.cloud / "stacks"):
            self.stacks.add(folder.name)
            if folder.name.startswith(REGION_STACK_PREFIX):
                self.queues.add(result_queue_name(folder.name[len(REGION_STACK_PREFIX):]))
        self.queues |= {f"e{environment_id}-h{i}" for i in _instance_ids(model)}
        self.queues |= set(queues)


def leftovers(footprint: Footprint) -> list[str]:
    """What of ``footprint`` still exists: server sandboxes, stacks and their locks,
    network namespaces, broker queues, the servers' broker users."""
    left = [f"server {p.name}" for p in _entries(footprint.cloud / "servers")]
    left += [f"stack {p.name}" for p in _entries(footprint.cloud / "stacks")]
    left += [f"stack lock {p.name}" for p in _entries(footprint.cloud / "locks")]
    names = [netns.server_namespace(s) for s in sorted(footprint.servers)]
    names += [netns.network_namespace(n) for n in sorted(footprint.networks)]
    left += [f"network namespace {n}" for n in names if netns.exists(n)]
    left += [f"queue {q}" for q in sorted(footprint.queues) if _queue_exists(q)]
    users = {identity_name(q) for q in footprint.queues if _is_agent_queue(q)}
    left += [f"broker user {u}" for u in sorted(users & set(_broker_users()))]
    return left


def _is_agent_queue(queue: str) -> bool:
    """An agent's input queue (``e<environment>-h<instance>``), not a results queue."""
    return queue.startswith("e") and "-h" in queue


def _broker_users() -> list[str]:
    """The servers' broker users the broker has now."""
    identities = BrokerIdentities.from_config(load_config(None, environ={}))
    assert identities is not None, "the default configuration mints server identities"
    return identities.users()


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _instance_ids(value: Any) -> set[str]:
    """Ids of the objects in a model that are servers (they have an ``openstackId``)."""
    found: set[str] = set()
    if isinstance(value, dict):
        header = value.get("?")
        if isinstance(header, dict) and "openstackId" in value and header.get("id"):
            found.add(str(header["id"]))
        for item in value.values():
            found |= _instance_ids(item)
    elif isinstance(value, list):
        for item in value:
            found |= _instance_ids(item)
    return found


def _queue_exists(name: str) -> bool:
    with Connection(AMQP) as connection:
        channel = connection.channel()
        try:
            channel.queue_declare(name, passive=True)
        except connection.channel_errors:  # 404: no such queue
            return False
        return True
