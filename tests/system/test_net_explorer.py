"""io.murano.system.NetworkExplorer: CIDRs, router, DNS and networks from config and cloud."""

from __future__ import annotations

import re

import pytest

from murano_engine.clouds import push_stack
from murano_engine.clouds.local import LocalCloud
from murano_engine.dsl import values
from murano_engine.system.net_explorer import candidate_cidrs, pick_cidr

NETWORKING = {"env_ip_template": "10.0.0.0", "max_environments": 250, "max_hosts": 250,
              "default_dns": "8.8.8.8, 1.1.1.1", "external_network": "ext-net",
              "router_name": "murano-default-router"}


def test_candidates_are_one_24_per_network():
    candidates = candidate_cidrs("10.0.0.0", 250, 250)
    assert len(candidates) == 256
    assert candidates[:2] == ["10.0.0.0/24", "10.0.1.0/24"]
    assert candidate_cidrs("192.168.0.0", 4, 60) == [
        "192.168.0.0/26", "192.168.0.64/26", "192.168.0.128/26", "192.168.0.192/26"]


def test_pick_skips_overlapping_subnets_and_is_stable():
    candidates = candidate_cidrs("10.0.0.0", 4, 250)
    first = pick_cidr(candidates, [], "net-a")
    assert pick_cidr(candidates, [], "net-a") == first
    second = pick_cidr(candidates, [first], "net-a")
    assert second != first
    with pytest.raises(RuntimeError, match="no free subnet"):
        pick_cidr(candidates, ["10.0.0.0/16"], "net-a")


def test_explorer_answers_from_config_without_a_local_cloud(make_object):
    executor, explorer = make_object("io.murano.system.NetworkExplorer",
                                     {"config": {"networking": NETWORKING}})
    assert executor.call(explorer, "getDefaultRouter") == "murano-default-router"
    assert values.thaw(executor.call(explorer, "getDefaultDns")) == ["8.8.8.8", "1.1.1.1"]
    assert executor.call(explorer, "getExternalNetworkIdForRouter", ("r",)) == "ext-net"
    cidr = executor.call(explorer, "getAvailableCidr", ("r", "n1"))
    assert cidr.startswith("10.0.") and cidr.endswith(".0/24")
    aliases = [e["alias"] for e in executor.call(explorer, "listNeutronExtensions")]
    assert "security-group" in aliases
    assert values.thaw(executor.call(explorer, "listNetworks")) == [
        {"id": "ext-net", "name": "ext-net", "router:external": True}]


def test_explorer_sees_the_local_clouds_networks(tmp_path, make_object):
    cloud = LocalCloud(tmp_path, poll_interval=0.01)
    try:
        push_stack(cloud, "s", {"heat_template_version": "2013-05-23", "resources": {
            "n": {"type": "OS::Neutron::Net", "properties": {"name": "inner"}},
            "sn": {"type": "OS::Neutron::Subnet",
                   "properties": {"network": {"get_resource": "n"}, "cidr": "10.0.0.0/17"}}}})
        executor, explorer = make_object(
            "io.murano.system.NetworkExplorer",
            {"cloud": cloud, "config": {"networking": {**NETWORKING, "max_environments": 2}}})
        networks = values.thaw(executor.call(explorer, "listNetworks"))
        assert [(n["name"], n["router:external"]) for n in networks] == [
            ("inner", False), ("ext-net", True)]
        subnets = values.thaw(executor.call(explorer, "listSubnetworks"))
        assert subnets[0]["cidr"] == "10.0.0.0/17"
        assert subnets[0]["network_id"] == networks[0]["id"]
        # Only 10.0.0.0/24 and 10.0.1.0/24 are candidates; both overlap the /17.
        with pytest.raises(RuntimeError,
                           match=re.escape("no free subnet left in 10.0.0.0/24..10.0.1.0/24")):
            executor.call(explorer, "getAvailableCidr", ("r", "n2"))
    finally:
        cloud.close()
