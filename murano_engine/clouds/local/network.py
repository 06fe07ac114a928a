"""Neutron resource types: networks, subnets, ports, routers, floating IPs, security groups.

Nets, subnets and ports are checked strictly (a reference to a missing one fails
the resource). Routers and external networks may also live outside the stacks
(Murano takes the project's default router and external network from the
cloud), so a router or external network id that no stack owns is accepted as
such an outside object.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from murano_engine.clouds.local.addresses import FLOATING_POOL
from murano_engine.clouds.local.resource import (
    Context,
    DataOnlyResourceType,
    ResourceFailure,
    ResourceRecord,
    ResourceType,
)

NET = "OS::Neutron::Net"
SUBNET = "OS::Neutron::Subnet"
PORT = "OS::Neutron::Port"
ROUTER = "OS::Neutron::Router"
FLOATING_IP = "OS::Neutron::FloatingIP"


def _first(props: dict[str, Any], *names: str) -> Any:
    for name in names:
        if props.get(name) is not None:
            return props[name]
    return None


def physical_name(ctx: Context, props: dict[str, Any], record: ResourceRecord | None) -> str:
    """The ``name`` property, else the name already given, else Heat's default."""
    return props.get("name") or (record.data.get("name") if record else None) or ctx.default_name()


def mac_address(port_id: str) -> str:
    """A stable locally administered MAC derived from the port id."""
    digits = port_id.replace("-", "")[:10]
    return "fa:16:3e:" + ":".join(digits[i : i + 2] for i in range(4, 10, 2))


class Net(DataOnlyResourceType):
    name = NET
    properties = frozenset(
        {
            "name",
            "admin_state_up",
            "shared",
            "port_security_enabled",
            "value_specs",
            "tenant_id",
            "dns_domain",
            "qos_policy",
            "tags",
        }
    )
    attributes = frozenset({"name", "subnets", "admin_state_up", "status", "port_security_enabled"})
    updatable = properties

    @staticmethod
    def _data(ctx: Context, props: dict[str, Any], record: ResourceRecord | None) -> dict[str, Any]:
        return {
            "name": physical_name(ctx, props, record),
            "admin_state_up": props.get("admin_state_up", True),
            "status": "ACTIVE",
            "port_security_enabled": props.get("port_security_enabled", True),
        }

    def attribute(self, ctx: Context, record: ResourceRecord, name: str) -> Any:
        if name == "subnets":
            return sorted(
                s.id for s in ctx.services.records(SUBNET) if s.data["network_id"] == record.id
            )
        return record.data.get(name)


class Subnet(ResourceType):
    name = SUBNET
    properties = frozenset(
        {
            "network",
            "network_id",
            "cidr",
            "ip_version",
            "gateway_ip",
            "allocation_pools",
            "dns_nameservers",
            "enable_dhcp",
            "host_routes",
            "name",
            "subnetpool",
            "prefixlen",
            "ipv6_address_mode",
            "ipv6_ra_mode",
            "value_specs",
            "tenant_id",
            "tags",
        }
    )
    required = (("network", "network_id"),)
    attributes = frozenset(
        {
            "name",
            "network_id",
            "cidr",
            "ip_version",
            "gateway_ip",
            "allocation_pools",
            "dns_nameservers",
            "enable_dhcp",
            "host_routes",
        }
    )
    updatable = frozenset({"name", "dns_nameservers", "enable_dhcp", "host_routes", "tags"})

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        net = ctx.require(_first(props, "network", "network_id"), "network", NET)
        if props.get("subnetpool") or not props.get("cidr"):
            raise ResourceFailure("the local cloud needs an explicit cidr (no subnet pools)")
        try:
            cidr = ipaddress.ip_network(str(props["cidr"]), strict=False)
        except ValueError as exc:
            raise ResourceFailure(f"cidr {props['cidr']!r} is invalid: {exc}") from None
        if "gateway_ip" in props:
            gateway = props["gateway_ip"] or None
        else:
            gateway = str(next(cidr.hosts()))
        if gateway and ipaddress.ip_address(gateway) not in cidr:
            raise ResourceFailure(f"gateway_ip {gateway} is outside {cidr}")
        for pool in props.get("allocation_pools") or []:
            for end in ("start", "end"):
                if ipaddress.ip_address(pool[end]) not in cidr:
                    raise ResourceFailure(f"allocation pool {end} {pool[end]} is outside {cidr}")
        data = {
            "network_id": net.id,
            "cidr": str(cidr),
            "ip_version": cidr.version,
            "gateway_ip": gateway,
            "allocation_pools": props.get("allocation_pools") or [],
        }
        data.update(self._mutable(ctx, props, None))
        return ctx.services.new_id(), data

    def update(self, ctx: Context, record: ResourceRecord, props: dict[str, Any]) -> dict[str, Any]:
        return {**record.data, **self._mutable(ctx, props, record)}

    @staticmethod
    def _mutable(
        ctx: Context, props: dict[str, Any], record: ResourceRecord | None
    ) -> dict[str, Any]:
        return {
            "name": physical_name(ctx, props, record),
            "dns_nameservers": props.get("dns_nameservers") or [],
            "enable_dhcp": props.get("enable_dhcp", True),
            "host_routes": props.get("host_routes") or [],
        }

    def delete(self, ctx: Context, record: ResourceRecord) -> None:
        used = ctx.services.addresses.in_use(record.id)
        if used:
            raise ResourceFailure(f"subnet {record.id} still has {used} address(es) in use")


def allocate_port(
    ctx: Context, network: Any, fixed_ips: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """Addresses for a new port on ``network``: as asked, or one from its first subnet."""
    net = ctx.require(network, "network", NET)
    subnets = {s.id: s for s in ctx.services.records(SUBNET) if s.data["network_id"] == net.id}
    wanted: list[tuple[ResourceRecord, str | None]] = []
    for item in fixed_ips or []:
        subnet_ref = _first(item, "subnet", "subnet_id")
        if subnet_ref is not None:
            subnet = ctx.require(subnet_ref, "subnet", SUBNET)
            if subnet.id not in subnets:
                raise ResourceFailure(f"subnet {subnet.id} is not on network {net.id}")
        else:
            subnet = _subnet_holding(item.get("ip_address"), subnets.values())
        wanted.append((subnet, item.get("ip_address")))
    if not fixed_ips and subnets:
        wanted.append((min(subnets.values(), key=lambda s: s.data["cidr"]), None))
    allocated: list[dict[str, str]] = []
    try:
        for subnet, address in wanted:
            ip = ctx.services.addresses.allocate(subnet.id, subnet.data, address)
            allocated.append({"subnet_id": subnet.id, "ip_address": ip})
    except ResourceFailure:
        release_port(ctx, {"fixed_ips": allocated})
        raise
    return {"network_id": net.id, "network_name": net.data["name"], "fixed_ips": allocated}


def _subnet_holding(address: str | None, subnets: Any) -> ResourceRecord:
    for subnet in subnets:
        if address and ipaddress.ip_address(address) in ipaddress.ip_network(subnet.data["cidr"]):
            return subnet
    raise ResourceFailure(f"no subnet of the network holds fixed ip {address!r}")


def release_port(ctx: Context, data: dict[str, Any]) -> None:
    for item in data.get("fixed_ips", []):
        ctx.services.addresses.release(item["subnet_id"], item["ip_address"])


class Port(ResourceType):
    name = PORT
    properties = frozenset(
        {
            "network",
            "network_id",
            "fixed_ips",
            "security_groups",
            "allowed_address_pairs",
            "mac_address",
            "name",
            "admin_state_up",
            "port_security_enabled",
            "replacement_policy",
            "binding:vnic_type",
            "device_owner",
            "device_id",
            "value_specs",
            "qos_policy",
            "dns_name",
            "tags",
        }
    )
    required = (("network", "network_id"),)
    attributes = frozenset(
        {
            "name",
            "network_id",
            "fixed_ips",
            "mac_address",
            "device_id",
            "security_groups",
            "allowed_address_pairs",
            "admin_state_up",
            "status",
        }
    )
    updatable = frozenset(
        {
            "name",
            "security_groups",
            "allowed_address_pairs",
            "admin_state_up",
            "port_security_enabled",
            "replacement_policy",
            "value_specs",
            "dns_name",
            "tags",
        }
    )

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        port_id = ctx.services.new_id()
        with ctx.services.lock:
            data = allocate_port(
                ctx, _first(props, "network", "network_id"), props.get("fixed_ips")
            )
        data.update(self._mutable(ctx, props, None))
        data["mac_address"] = props.get("mac_address") or mac_address(port_id)
        data["device_id"] = ""
        return port_id, data

    def update(self, ctx: Context, record: ResourceRecord, props: dict[str, Any]) -> dict[str, Any]:
        return {**record.data, **self._mutable(ctx, props, record)}

    @staticmethod
    def _mutable(
        ctx: Context, props: dict[str, Any], record: ResourceRecord | None
    ) -> dict[str, Any]:
        return {
            "name": physical_name(ctx, props, record),
            "security_groups": props.get("security_groups") or [],
            "allowed_address_pairs": props.get("allowed_address_pairs") or [],
            "admin_state_up": props.get("admin_state_up", True),
            "status": "ACTIVE",
        }

    def delete(self, ctx: Context, record: ResourceRecord) -> None:
        release_port(ctx, record.data)


class Router(DataOnlyResourceType):
    name = ROUTER
    properties = frozenset(
        {
            "name",
            "external_gateway_info",
            "admin_state_up",
            "value_specs",
            "l3_agent_ids",
            "distributed",
            "ha",
            "tags",
        }
    )
    attributes = frozenset({"name", "external_gateway_info", "admin_state_up", "status"})
    updatable = frozenset({"name", "external_gateway_info", "admin_state_up", "value_specs"})

    @staticmethod
    def _data(ctx: Context, props: dict[str, Any], record: ResourceRecord | None) -> dict[str, Any]:
        return {
            "name": physical_name(ctx, props, record),
            "external_gateway_info": props.get("external_gateway_info") or {},
            "admin_state_up": props.get("admin_state_up", True),
            "status": "ACTIVE",
        }


class RouterInterface(ResourceType):
    name = "OS::Neutron::RouterInterface"
    properties = frozenset({"router", "router_id", "subnet", "subnet_id", "port", "port_id"})
    required = (("router", "router_id"), ("subnet", "subnet_id", "port", "port_id"))

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        router = str(_first(props, "router", "router_id"))
        subnet_ref = _first(props, "subnet", "subnet_id")
        if subnet_ref is not None:
            target = ctx.require(subnet_ref, "subnet", SUBNET)
            return f"{router}:subnet_id={target.id}", {"router_id": router, "subnet_id": target.id}
        port = ctx.require(_first(props, "port", "port_id"), "port", PORT)
        return f"{router}:port_id={port.id}", {"router_id": router, "port_id": port.id}


class FloatingIP(ResourceType):
    name = FLOATING_IP
    properties = frozenset(
        {
            "floating_network",
            "floating_network_id",
            "floating_subnet",
            "floating_ip_address",
            "port_id",
            "fixed_ip_address",
            "value_specs",
            "dns_name",
            "dns_domain",
        }
    )
    required = (("floating_network", "floating_network_id"),)
    attributes = frozenset(
        {"floating_ip_address", "fixed_ip_address", "port_id", "floating_network_id"}
    )
    updatable = frozenset({"port_id", "fixed_ip_address", "value_specs"})

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        data = {
            "floating_network_id": str(_first(props, "floating_network", "floating_network_id"))
        }
        data.update(self._association(ctx, props))
        data["floating_ip_address"] = ctx.services.addresses.allocate_floating(
            props.get("floating_ip_address")
        )
        return ctx.services.new_id(), data

    def update(self, ctx: Context, record: ResourceRecord, props: dict[str, Any]) -> dict[str, Any]:
        return {**record.data, **self._association(ctx, props)}

    @staticmethod
    def _association(ctx: Context, props: dict[str, Any]) -> dict[str, Any]:
        if not props.get("port_id"):
            return {"port_id": None, "fixed_ip_address": None}
        port = ctx.require(props["port_id"], "port", PORT)
        addresses = [item["ip_address"] for item in port.data["fixed_ips"]]
        fixed = props.get("fixed_ip_address") or (addresses[0] if addresses else None)
        if fixed is None or fixed not in addresses:
            raise ResourceFailure(f"port {port.id} has no fixed address {fixed!r} to map to")
        return {"port_id": port.id, "fixed_ip_address": fixed}

    def delete(self, ctx: Context, record: ResourceRecord) -> None:
        ctx.services.addresses.release(FLOATING_POOL, record.data["floating_ip_address"])


_RULE_KEYS = frozenset(
    {
        "direction",
        "ethertype",
        "port_range_min",
        "port_range_max",
        "protocol",
        "remote_ip_prefix",
        "remote_group_id",
        "remote_mode",
        "description",
    }
)


def _check_rule(index: int, rule: Any) -> dict[str, Any]:
    where = f"rules[{index}]"
    if not isinstance(rule, dict):
        raise ResourceFailure(f"{where} must be a map")
    unknown = set(rule) - _RULE_KEYS
    if unknown:
        raise ResourceFailure(f"{where} has unknown key(s): {', '.join(sorted(unknown))}")
    if rule.get("direction", "ingress") not in ("ingress", "egress"):
        raise ResourceFailure(f"{where} direction must be ingress or egress")
    if rule.get("ethertype", "IPv4") not in ("IPv4", "IPv6"):
        raise ResourceFailure(f"{where} ethertype must be IPv4 or IPv6")
    low, high = rule.get("port_range_min"), rule.get("port_range_max")
    for value in (low, high):
        if value is not None and not 0 <= int(value) <= 65535:
            raise ResourceFailure(f"{where} port {value} is out of range")
    if low is not None and high is not None and int(low) > int(high):
        raise ResourceFailure(f"{where} port_range_min {low} exceeds port_range_max {high}")
    if rule.get("remote_ip_prefix"):
        ipaddress.ip_network(str(rule["remote_ip_prefix"]), strict=False)
    return {"direction": "ingress", "ethertype": "IPv4", **rule}


class SecurityGroup(DataOnlyResourceType):
    name = "OS::Neutron::SecurityGroup"
    properties = frozenset({"name", "description", "rules", "tags"})
    attributes = frozenset({"name", "rules"})
    updatable = properties

    @staticmethod
    def _data(ctx: Context, props: dict[str, Any], record: ResourceRecord | None) -> dict[str, Any]:
        try:
            rules = [_check_rule(i, rule) for i, rule in enumerate(props.get("rules") or [])]
        except ValueError as exc:
            raise ResourceFailure(str(exc)) from None
        return {"name": physical_name(ctx, props, record), "rules": rules}


TYPES: tuple[type[ResourceType], ...] = (
    Net,
    Subnet,
    Port,
    Router,
    RouterInterface,
    FloatingIP,
    SecurityGroup,
)
