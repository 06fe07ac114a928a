"""Every stand-in of ``[heat] no_compute`` in real Heat: it passes Heat's check against
the real type (the same properties and attributes) and answers what the core library
reads; an update keeps the resources it does not replace."""

from __future__ import annotations

import ipaddress
import time
from typing import Any

from heatclient import exc as heat_exc

from murano_engine.clouds.heat_providers import REGISTRY, with_stand_ins

NET = "envnet-test"


def _template(flavor: str) -> dict[str, Any]:
    def ref(name: str) -> dict[str, str]:
        return {"get_resource": name}

    resources = {
        "net": {"type": "OS::Neutron::Net", "properties": {"name": NET}},
        "subnet": {"type": "OS::Neutron::Subnet", "properties": {
            "network": ref("net"), "cidr": "10.0.42.0/24", "ip_version": 4,
            "dns_nameservers": ["192.0.2.53"]}},
        "uplink": {"type": "OS::Neutron::RouterInterface", "properties": {
            "router_id": "murano-default-router", "subnet": ref("subnet")}},
        "group": {"type": "OS::Neutron::SecurityGroup", "properties": {
            "description": "the environment's", "rules": [
                {"protocol": "tcp", "port_range_min": 22, "port_range_max": 22,
                 "remote_ip_prefix": "0.0.0.0/0"}]}},
        "port": {"type": "OS::Neutron::Port", "properties": {
            "network": ref("net"), "replacement_policy": "AUTO",
            "fixed_ips": [{"subnet": ref("subnet")}], "security_groups": [ref("group")]}},
        "fixed": {"type": "OS::Neutron::Port", "properties": {
            "network": ref("net"), "fixed_ips": [{"ip_address": "10.0.42.7"}]}},
        "affinity": {"type": "OS::Nova::ServerGroup", "properties": {
            "policies": ["anti-affinity"]}},
        "vm": {"type": "OS::Nova::Server", "properties": {
            "name": "vm", "flavor": flavor, "image": "debian-12", "user_data": "#!/bin/sh\n",
            "user_data_format": "RAW", "metadata": {"role": "test"},
            "networks": [{"port": ref("port")}, {"port": ref("fixed")}],
            "scheduler_hints": {"group": ref("affinity")}}},
        "fip": {"type": "OS::Neutron::FloatingIP", "properties": {
            "floating_network": "public", "port_id": ref("port")}},
        "nova_fip": {"type": "OS::Nova::FloatingIP"},
        "nova_fip_link": {"type": "OS::Nova::FloatingIPAssociation", "properties": {
            "floating_ip": ref("nova_fip"), "server_id": ref("vm")}},
        "disk": {"type": "OS::Cinder::Volume", "properties": {"size": 1, "name": "disk"}},
        "disk_link": {"type": "OS::Cinder::VolumeAttachment", "properties": {
            "instance_uuid": ref("vm"), "volume_id": ref("disk"), "mountpoint": "/dev/vdb"}},
    }
    outputs = {
        "vm-id": ref("vm"),
        "addresses": {"get_attr": ["vm", "addresses", NET]},
        "networks": {"get_attr": ["vm", "networks"]},
        "first": {"get_attr": ["vm", "first_address"]},
        "user_data": {"get_attr": ["vm", "user_data"]},
        "port-ip": {"get_attr": ["port", "fixed_ips", 0, "ip_address"]},
        "fip": {"get_attr": ["fip", "floating_ip_address"]},
        "fip-fixed": {"get_attr": ["fip", "fixed_ip_address"]},
        "nova-fip": {"get_attr": ["nova_fip", "ip"]},
        "attachments": {"get_attr": ["disk", "attachments_list"]},
        "subnet-cidr": {"get_attr": ["subnet", "cidr"]},
    }
    assert {r["type"] for r in resources.values()} == set(REGISTRY)
    return {"heat_template_version": "2013-05-23", "resources": resources,
            "outputs": {key: {"value": value} for key, value in outputs.items()}}


def _settled(heat, name: str, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        stack = heat.stacks.get(name)
        if not stack.stack_status.endswith("IN_PROGRESS") or time.monotonic() > deadline:
            return stack
        time.sleep(0.5)


def _outputs(stack) -> dict[str, Any]:
    return {o["output_key"]: o.get("output_value") for o in stack.outputs}


def test_every_stand_in_in_real_heat(demo_heat):
    name = f"stand-ins-{time.monotonic_ns()}"
    files, environment = with_stand_ins({}, {})
    demo_heat.stacks.create(stack_name=name, template=_template("m1.small"), files=files,
                            environment=environment, disable_rollback=True)
    stack = _settled(demo_heat, name)
    assert stack.stack_status == "CREATE_COMPLETE", stack.stack_status_reason
    out = _outputs(stack)
    port_ip = out["port-ip"]
    assert ipaddress.ip_address(port_ip) in ipaddress.ip_network("10.0.42.0/24")
    assert [a["addr"] for a in out["addresses"]] == [port_ip, "10.0.42.7"]
    assert out["networks"] == {NET: [port_ip, "10.0.42.7"]}
    assert out["first"] == port_ip and out["user_data"] == "#!/bin/sh\n"
    assert ipaddress.ip_address(out["fip"]) in ipaddress.ip_network("198.51.100.0/24")
    assert out["fip-fixed"] == port_ip
    assert ipaddress.ip_address(out["nova-fip"]) in ipaddress.ip_network("198.51.100.0/24")
    assert out["attachments"] == [] and out["subnet-cidr"] == "10.0.42.0/24"
    before = {r.resource_name: r.physical_resource_id
              for r in demo_heat.resources.list(stack.id)}

    # a new flavor updates the server in place (as Nova resizes): nothing is replaced
    demo_heat.stacks.update(stack.id, template=_template("m1.large"), files=files,
                            environment=environment, disable_rollback=True)
    time.sleep(1)
    updated = _settled(demo_heat, stack.id)
    assert updated.stack_status == "UPDATE_COMPLETE", updated.stack_status_reason
    assert {r.resource_name: r.physical_resource_id
            for r in demo_heat.resources.list(stack.id)} == before
    assert _outputs(updated)["port-ip"] == port_ip
    assert demo_heat.stacks.get(before["vm"]).parameters["flavor"] == "m1.large"

    demo_heat.stacks.delete(stack.id)
    deadline = time.monotonic() + 120
    while True:
        try:
            if demo_heat.stacks.get(stack.id).stack_status == "DELETE_COMPLETE":
                break
        except heat_exc.HTTPNotFound:
            break
        assert time.monotonic() < deadline
        time.sleep(0.5)
