"""Nova resource types: servers (sandboxes running the guest agent) and server groups.

A server's ``networks`` entries either bind an existing port (``port``) or get
an implicit port on a network (``network``/``uuid``, optional ``fixed_ip`` and
``subnet``), which lives and dies with the server. ``user_data`` in ``RAW``
format may name a software config (as Murano's multipart user data does);
``SOFTWARE_CONFIG`` format boots without user data.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from murano_engine.clouds.local.flavors import check_image, flavor, is_windows
from murano_engine.clouds.local.network import (
    FLOATING_IP,
    PORT,
    SUBNET,
    allocate_port,
    mac_address,
    physical_name,
    release_port,
)
from murano_engine.clouds.local.resource import (
    Context,
    ResourceFailure,
    ResourceRecord,
    ResourceType,
)
from murano_engine.clouds.local.software import CONFIG_TYPES
from murano_engine.clouds.local.storage import VOLUME

if TYPE_CHECKING:
    from murano_engine.clouds.local.netns import Interface

SERVER = "OS::Nova::Server"


class Server(ResourceType):
    name = SERVER
    properties = frozenset(
        {
            "name",
            "image",
            "flavor",
            "networks",
            "user_data",
            "user_data_format",
            "key_name",
            "metadata",
            "availability_zone",
            "block_device_mapping",
            "block_device_mapping_v2",
            "scheduler_hints",
            "security_groups",
            "config_drive",
            "admin_pass",
            "admin_user",
            "software_config_transport",
            "user_data_update_policy",
            "flavor_update_policy",
            "image_update_policy",
            "personality",
            "diskConfig",
            "reservation_id",
            "deployment_swift_data",
            "tags",
        }
    )
    required = (("flavor",),)
    attributes = frozenset(
        {
            "name",
            "networks",
            "addresses",
            "first_address",
            "accessIPv4",
            "accessIPv6",
            "instance_name",
        }
    )
    updatable = frozenset(
        {
            "name",
            "metadata",
            "flavor",
            "networks",
            "admin_pass",
            "tags",
            "flavor_update_policy",
            "image_update_policy",
            "user_data_update_policy",
        }
    )

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        size = flavor(props["flavor"])
        image = check_image(_image(ctx, props))
        server_id = ctx.services.new_id()
        if ctx.claim is not None:
            ctx.claim(server_id)
        windows = is_windows(image, props.get("metadata"))
        user_data = _user_data(ctx, props)
        nics = _attach(ctx, server_id, props.get("networks") or [])
        name = physical_name(ctx, props, None)
        try:
            agent = ctx.services.guests.boot(server_id, image, windows, user_data, name,
                                             _sandbox_interfaces(ctx, nics), size)
        except BaseException:
            _detach(ctx, nics)
            ctx.services.guests.destroy(server_id, ctx.stack_name)
            raise
        return server_id, {
            "name": name,
            "image": image,
            "os": "windows" if windows else "linux",
            "agent": agent,
            "nics": nics,
        }

    def update(self, ctx: Context, record: ResourceRecord, props: dict[str, Any]) -> dict[str, Any]:
        size = flavor(props["flavor"])
        if props["flavor"] != record.properties.get("flavor"):
            ctx.services.guests.resize(record.id, size)
        data = dict(record.data, name=physical_name(ctx, props, record))
        if props.get("networks") != record.properties.get("networks"):
            _detach(ctx, record.data["nics"])
            data["nics"] = _attach(ctx, record.id, props.get("networks") or [])
        return data

    def delete(self, ctx: Context, record: ResourceRecord) -> None:
        ctx.services.guests.destroy(record.id, ctx.stack_name)
        _detach(ctx, record.data.get("nics", []))

    def attribute(self, ctx: Context, record: ResourceRecord, name: str) -> Any:
        interfaces = _interfaces(ctx, record)
        fixed = [
            item["ip_address"]
            for nic in interfaces
            for item in nic["fixed_ips"]
            if ":" not in item["ip_address"]
        ]
        if name == "networks":
            networks: dict[str, list[str]] = {}
            for nic in interfaces:
                ips = [item["ip_address"] for item in nic["fixed_ips"]]
                for key in (nic["network_name"], nic["network_id"]):
                    networks.setdefault(key, []).extend(ips)
            return networks
        if name == "addresses":
            return _addresses(ctx, interfaces)
        if name in ("first_address", "accessIPv4"):
            return fixed[0] if fixed else ""
        if name == "accessIPv6":
            return ""
        if name == "instance_name":
            return f"instance-{record.id[:8]}"
        return record.data.get(name)


def _image(ctx: Context, props: dict[str, Any]) -> str:
    if props.get("image"):
        return str(props["image"])
    for device in props.get("block_device_mapping_v2") or props.get("block_device_mapping") or []:
        if device.get("image") or device.get("image_id"):
            return str(device.get("image") or device.get("image_id"))
        if device.get("volume_id"):
            volume = ctx.require(device["volume_id"], "volume", VOLUME)
            if volume.data.get("image"):
                return str(volume.data["image"])
    raise ResourceFailure("the server has no image (set image, or boot from a volume with one)")


def _user_data(ctx: Context, props: dict[str, Any]) -> str | None:
    text = props.get("user_data")
    fmt = props.get("user_data_format", "HEAT_CFNTOOLS")
    if fmt == "SOFTWARE_CONFIG" or not text:
        return None
    if fmt == "RAW":
        config = ctx.services.find(str(text), *CONFIG_TYPES)
        if config is not None:
            return str(config.data["config"])
    return str(text)


def _attach(ctx: Context, server_id: str, networks: list[Any]) -> list[dict[str, Any]]:
    """Bind ports and make implicit ones for a server's ``networks`` entries."""
    nics: list[dict[str, Any]] = []
    with ctx.services.lock:
        try:
            for entry in networks:
                nics.append(_nic(ctx, server_id, entry))
        except BaseException:
            _detach(ctx, nics)
            raise
    return nics


def _nic(ctx: Context, server_id: str, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ResourceFailure(f"networks entry {entry!r} must be a map")
    if entry.get("port"):
        port = ctx.require(entry["port"], "port", PORT)
        for other in ctx.services.records(SERVER):
            if other.id != server_id and any(
                n.get("port_id") == port.id for n in other.data.get("nics", [])
            ):
                raise ResourceFailure(f"port {port.id} is already in use by server {other.id}")
        return {"port_id": port.id}
    network = entry.get("network") or entry.get("uuid")
    if not network:
        raise ResourceFailure(f"networks entry {entry!r} names neither a port nor a network")
    fixed: dict[str, Any] = {}
    if entry.get("fixed_ip"):
        fixed["ip_address"] = entry["fixed_ip"]
    if entry.get("subnet"):
        fixed["subnet"] = entry["subnet"]
    port_id = ctx.services.new_id()
    implicit = allocate_port(ctx, network, [fixed] if fixed else None)
    return {"implicit": {"id": port_id, "mac_address": mac_address(port_id), **implicit}}


def _sandbox_interfaces(ctx: Context, nics: list[dict[str, Any]]) -> tuple[Interface, ...]:
    """The server's ports as its sandbox gets them: network, first IPv4 address, MAC."""
    from murano_engine.clouds.local.netns import Interface  # here: a plan makes no sandbox

    found = []
    for port in _ports(ctx, nics):
        for item in port["fixed_ips"]:
            subnet = ctx.services.find(item["subnet_id"], SUBNET)
            if subnet is None or ":" in item["ip_address"]:
                continue
            prefix = ipaddress.ip_network(subnet.data["cidr"]).prefixlen
            found.append(Interface(port["network_id"], f"{item['ip_address']}/{prefix}",
                                   port["mac_address"]))
            break
    return tuple(found)


def _detach(ctx: Context, nics: list[dict[str, Any]]) -> None:
    for nic in nics:
        if "implicit" in nic:
            release_port(ctx, nic["implicit"])


def _interfaces(ctx: Context, record: ResourceRecord) -> list[dict[str, Any]]:
    """The server's ports as they are now (a deleted bound port drops out)."""
    return _ports(ctx, record.data.get("nics", []))


def _ports(ctx: Context, nics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for nic in nics:
        if "implicit" in nic:
            found.append(nic["implicit"])
            continue
        port = ctx.services.find(nic["port_id"], PORT)
        if port is not None:
            found.append({"id": port.id, **port.data})
    return found


def _addresses(ctx: Context, interfaces: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    floating = {
        fip.data["port_id"]: fip.data["floating_ip_address"]
        for fip in ctx.services.records(FLOATING_IP)
        if fip.data.get("port_id")
    }
    addresses: dict[str, list[dict[str, Any]]] = {}
    for nic in interfaces:
        entries = addresses.setdefault(nic["network_name"], [])
        for item in nic["fixed_ips"]:
            entries.append(_address(item["ip_address"], "fixed", nic))
        if nic["id"] in floating:
            entries.append(_address(floating[nic["id"]], "floating", nic))
    return addresses


def _address(ip: str, kind: str, nic: dict[str, Any]) -> dict[str, Any]:
    return {
        "addr": ip,
        "version": 6 if ":" in ip else 4,
        "OS-EXT-IPS:type": kind,
        "OS-EXT-IPS-MAC:mac_addr": nic["mac_address"],
        "port": nic["id"],
    }


class ServerGroup(ResourceType):
    name = "OS::Nova::ServerGroup"
    properties = frozenset({"name", "policies", "policy", "rules"})

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        policies = props.get("policies") or ([props["policy"]] if props.get("policy") else [])
        known = {"affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity"}
        unknown = [p for p in policies if p not in known]
        if unknown:
            raise ResourceFailure(f"unknown server group policy {unknown[0]!r}")
        return ctx.services.new_id(), {
            "name": physical_name(ctx, props, None),
            "policies": policies,
        }


TYPES: tuple[type[ResourceType], ...] = (Server, ServerGroup)
