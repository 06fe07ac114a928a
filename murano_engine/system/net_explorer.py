"""io.murano.system.NetworkExplorer: what the region's network looks like.

Answers come from the local cloud's records when the engine deploys there,
and from the ``[networking]`` settings otherwise: ``env_ip_template`` with
``max_environments`` and ``max_hosts`` (a /24 per network for the defaults
10.0.0.0, 250, 250), ``default_dns`` (comma separated), ``external_network``
and ``router_name``.
"""

from __future__ import annotations

import ipaddress
import math
import zlib
from typing import Any

from murano_engine.dsl import values
from murano_engine.dsl.natives import NativeCall, method, native_class

EXTENSIONS = ("security-group", "router", "external-net", "allowed-address-pairs",
              "port-security")


def _settings(call: NativeCall) -> dict[str, Any]:
    return (call.executor.services.get("config") or {}).get("networking") or {}


def _records(call: NativeCall, kind: str) -> list[dict[str, Any]]:
    """Live resources of one Heat type in the local cloud (``id`` and their data); none
    for other clouds. An answer from outside: journaled."""
    cloud = call.executor.services.get("cloud")
    records = getattr(cloud, "records", None)
    if not callable(records):
        return []
    return call.executor.outside.value(
        "cloud.records", kind, lambda: [{"id": r.id, **r.data} for r in records(kind)])


def candidate_cidrs(template: str, max_environments: int, max_hosts: int) -> list[str]:
    """The subnets networks may take: ``max_hosts``-sized blocks of the template's range."""
    host_bits = math.ceil(math.log2(max_hosts + 2))
    env_bits = math.ceil(math.log2(max(max_environments, 1)))
    supernet = ipaddress.ip_network(f"{template}/{32 - host_bits - env_bits}", strict=False)
    return [str(net) for net in supernet.subnets(new_prefix=32 - host_bits)]


def pick_cidr(candidates: list[str], used: list[str], seed: str) -> str:
    """The first candidate not overlapping ``used``, starting at a place fixed by ``seed``."""
    taken = [ipaddress.ip_network(cidr, strict=False) for cidr in used]
    start = zlib.crc32(seed.encode()) % len(candidates)
    for offset in range(len(candidates)):
        cidr = candidates[(start + offset) % len(candidates)]
        network = ipaddress.ip_network(cidr)
        if not any(network.overlaps(other) for other in taken):
            return cidr
    raise RuntimeError(f"no free subnet left in {candidates[0]}..{candidates[-1]}")


@native_class("io.murano.system.NetworkExplorer")
class NetworkExplorer:
    def __init__(self, call: NativeCall, regionName: str | None = None) -> None:  # noqa: N803
        self.region = regionName

    @method
    def getDefaultRouter(call: NativeCall) -> str:  # noqa: N802
        name = str(_settings(call).get("router_name") or "murano-default-router")
        for router in _records(call, "OS::Neutron::Router"):
            if router.get("name") == name:
                return str(router["id"])
        return name

    @method
    def getAvailableCidr(call: NativeCall, routerId: Any = None, netId: Any = None,  # noqa: N802, N803
                         ipVersion: int = 4) -> str:  # noqa: N803
        if int(ipVersion) != 4:
            raise ValueError("only IPv4 subnets are allocated")
        settings = _settings(call)
        candidates = candidate_cidrs(str(settings.get("env_ip_template") or "10.0.0.0"),
                                     int(settings.get("max_environments") or 250),
                                     int(settings.get("max_hosts") or 250))
        used = [subnet["cidr"] for subnet in _records(call, "OS::Neutron::Subnet")]
        return pick_cidr(candidates, used, str(netId or routerId or ""))

    @method
    def getDefaultDns(call: NativeCall, ipVersion: int = 4) -> Any:  # noqa: N802, N803
        servers = str(_settings(call).get("default_dns") or "")
        return tuple(item.strip() for item in servers.split(",") if item.strip())

    @method
    def getExternalNetworkIdForRouter(call: NativeCall, routerId: Any) -> str:  # noqa: N802, N803
        for router in _records(call, "OS::Neutron::Router"):
            if router["id"] == routerId:
                gateway = router.get("external_gateway_info") or {}
                if gateway.get("network"):
                    return str(gateway["network"])
        return str(_settings(call).get("external_network") or "public")

    @method
    def getExternalNetworkIdForNetwork(call: NativeCall, networkId: Any) -> str:  # noqa: N802, N803
        return str(_settings(call).get("external_network") or "public")

    @method
    def listNetworks(call: NativeCall) -> Any:  # noqa: N802
        external = str(_settings(call).get("external_network") or "public")
        networks = [{**net, "router:external": False}
                    for net in _records(call, "OS::Neutron::Net")]
        networks.append({"id": external, "name": external, "router:external": True})
        return values.freeze(networks)

    @method
    def listSubnetworks(call: NativeCall) -> Any:  # noqa: N802
        return values.freeze(_records(call, "OS::Neutron::Subnet"))

    @method
    def listPorts(call: NativeCall) -> Any:  # noqa: N802
        return values.freeze(_records(call, "OS::Neutron::Port"))

    @method
    def listNeutronExtensions(call: NativeCall) -> Any:  # noqa: N802
        return values.freeze([{"alias": alias, "name": alias} for alias in EXTENSIONS])
