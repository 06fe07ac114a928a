"""Stand-ins for the resource types of the services a Heat-only cloud lacks.

With ``[heat] no_compute = true`` the engine sends every stack with these
provider templates in its ``files`` and an environment ``resource_registry``
mapping ``OS::Nova::Server``, the ``OS::Neutron::*`` and ``OS::Cinder::*`` types
the core library emits to them: nested stacks of ``OS::Heat::*`` resources
that take the real types' properties and answer their attributes, so Heat
runs the whole lifecycle (order, ``get_attr``, outputs, updates) with nothing
booted. Each template's description says what it makes up.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

FOLDER = "murano-engine-no-compute"
REGISTRY = {
    "OS::Nova::Server": "server.yaml",
    "OS::Nova::ServerGroup": "server_group.yaml",
    "OS::Nova::FloatingIP": "nova_floating_ip.yaml",
    "OS::Nova::FloatingIPAssociation": "floating_ip_association.yaml",
    "OS::Neutron::Net": "net.yaml",
    "OS::Neutron::Subnet": "subnet.yaml",
    "OS::Neutron::Port": "port.yaml",
    "OS::Neutron::RouterInterface": "router_interface.yaml",
    "OS::Neutron::SecurityGroup": "security_group.yaml",
    "OS::Neutron::FloatingIP": "floating_ip.yaml",
    "OS::Cinder::Volume": "volume.yaml",
    "OS::Cinder::VolumeAttachment": "volume_attachment.yaml",
}


@cache
def _files() -> dict[str, str]:
    folder = resources.files(__name__)
    return {f"{FOLDER}/{name}": folder.joinpath(name).read_text()
            for name in sorted(set(REGISTRY.values()))}


def with_stand_ins(files: dict[str, str], environment: dict[str, Any]
                   ) -> tuple[dict[str, str], dict[str, Any]]:
    """``files`` and ``environment`` plus the stand-ins; the stack's own
    ``resource_registry`` entries win over them."""
    registry = {kind: f"{FOLDER}/{name}" for kind, name in REGISTRY.items()}
    registry.update(environment.get("resource_registry") or {})
    return {**_files(), **files}, {**environment, "resource_registry": registry}
