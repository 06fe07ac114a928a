"""Servers' namespaces and their networks' switches, made and removed for real."""

from __future__ import annotations

import time
import uuid

import pytest

from murano_engine.clouds.local import netns
from murano_engine.clouds.local.sandbox import missing_for_namespaces

pytestmark = pytest.mark.skipif(bool(missing_for_namespaces()),
                                reason=f"no namespaces here: {missing_for_namespaces()}")


def _server(network: str, index: int) -> tuple[str, list[netns.Interface]]:
    interfaces = [netns.Interface(network, f"10.0.77.{index + 2}/24",
                                  f"fa:16:3e:00:77:{index:02x}")]
    server_id = str(uuid.uuid4())
    netns.create_server(server_id, interfaces)
    return server_id, interfaces


def _ports(switch: str) -> list[str]:
    return [name for name in netns.links_in(switch) if name not in ("lo", netns.BRIDGE)]


def test_a_switch_goes_with_the_last_server_on_it():
    network = str(uuid.uuid4())
    switch = netns.network_namespace(network)
    servers = [_server(network, index) for index in range(3)]
    try:
        assert len(_ports(switch)) == 3
        netns.delete_server(*servers[0])
        assert not netns.exists(netns.server_namespace(servers[0][0]))
        assert netns.exists(switch)  # two servers still on it
        deadline = time.monotonic() + 5
        while len(_ports(switch)) > 2 and time.monotonic() < deadline:
            time.sleep(0.02)  # the removed server's port goes in the background
        assert len(_ports(switch)) == 2
        # The last two one right after the other: the first one's port may still be
        # there when the second looks; the switch goes all the same.
        netns.delete_server(*servers[1])
        netns.delete_server(*servers[2])
        assert not netns.exists(switch)
    finally:
        for server_id, _ in servers:
            netns.delete(netns.server_namespace(server_id))
        netns.delete(switch)


def test_a_switch_whose_delete_was_cut_short_goes_with_the_next_server_removed():
    """A destroy killed between a switch's two deleting steps (the namespace's mount
    detached, its file not yet removed) leaves a file that is no namespace: the next
    removal of a server on that network removes it instead of failing to enter it."""
    network = str(uuid.uuid4())
    switch = netns.network_namespace(network)
    server = _server(network, 1)
    try:
        netns.syscalls.umount(netns.namespace_file(switch), netns.syscalls.MNT_DETACH)
        assert netns.exists(switch)  # the file is left, an empty one
        netns.delete_server(*server)
        assert not netns.exists(switch)
        assert not netns.exists(netns.server_namespace(server[0]))
    finally:
        netns.delete(netns.server_namespace(server[0]))
        netns.delete(switch)
