"""What the wizard's cloud fields offer: flavors, images, key pairs... of the configured cloud.

The embedded local cloud offers the flavors and images of its catalog
(:mod:`murano_engine.clouds.local.flavors`), has no key pairs, volumes to pick,
or zones but one: it lists the small set below. With Heat configured, the OpenStack services
of its keystone catalog are asked (with the ``[heat]`` credentials), as Murano's
dashboard does: Nova's flavors (a field's ``requirements``: ``min_vcpus``,
``min_disk``, ``min_memory_mb``), key pairs and zones; Glance's images that
carry ``murano_image_info`` (``imageType`` keeps those of that type or a
subtype); Neutron's networks and subnets (``include_subnets``, ``filter``,
``allow_auto``) and security groups; Cinder's available volumes and snapshots
(``include_snapshots``). A service that cannot be asked leaves its field typed
in (None: not listed, taken as given).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from murano_engine.clouds.local.flavors import FLAVORS, IMAGES
from murano_engine.web.dynamic_ui import Field

LOG = logging.getLogger(__name__)

LOCAL = {
    "flavor": [(name, name) for name in FLAVORS],
    "image": [(name, f"{title} ({kind})") for name, (title, kind) in IMAGES.items()],
    "keypair": [("", "No keypair")],
    "azone": [("nova", "nova")],
    "network": [("", "Auto (the environment's network)")],
    "securitygroup": [("default", "default")],
    "volume": [],
}
IMAGE_TYPES = {name: kind for name, (_title, kind) in IMAGES.items()}


def local_choices(spec: Field) -> list[tuple[str, str]] | None:
    """The local cloud's choices for a cloud field (None for other fields)."""
    if spec.type not in LOCAL:
        return None
    options = list(LOCAL[spec.type])
    if spec.type == "image" and spec.extra.get("imageType"):
        wanted = str(spec.extra["imageType"])
        options = [(k, v) for k, v in options
                   if IMAGE_TYPES[k] == wanted or IMAGE_TYPES[k].startswith(wanted + ".")]
    if spec.type == "network" and not spec.extra.get("allow_auto", True):
        options = []
    # A flavor's requirements are not applied: the local flavors are scaled down to
    # suit one host (ActiveDirectory's min_disk of 40 GB would leave none).
    return options


class OpenStackChoices:
    """The choices of the OpenStack behind ``[heat]`` (each service asked once)."""

    def __init__(self, heat: Mapping[str, Any]) -> None:
        from murano_engine.clouds.heat import keystone_session

        self.session = keystone_session(heat)
        self.filter = {"interface": str(heat.get("endpoint_type") or "public")
                       .removesuffix("URL")}
        if heat.get("region_name"):
            self.filter["region_name"] = str(heat["region_name"])
        self._answers: dict[tuple[str, str], Any] = {}

    def get(self, service: str, path: str) -> Any:
        """The JSON a service answers at ``path`` (its catalog endpoint's base)."""
        key = (service, path)
        if key not in self._answers:
            response = self.session.get(path, endpoint_filter={
                "service_type": service, **self.filter}, raise_exc=True)
            self._answers[key] = response.json()
        return self._answers[key]

    def __call__(self, spec: Field) -> list[tuple[str, str]] | None:
        lister = getattr(self, "_" + spec.type, None) if spec.type in LOCAL else None
        if lister is None:
            return None
        try:
            return lister(spec)
        except Exception as exc:  # noqa: BLE001 - an unreachable service: typed in
            LOG.warning("cannot list %s choices: %s", spec.type, exc)
            return None

    def _flavor(self, spec: Field) -> list[tuple[str, str]]:
        needs = spec.extra.get("requirements") or {}
        fits = [f for f in self.get("compute", "/flavors/detail").get("flavors", [])
                if f.get("vcpus", 0) >= needs.get("min_vcpus", 0)
                and f.get("disk", 0) >= needs.get("min_disk", 0)
                and f.get("ram", 0) >= needs.get("min_memory_mb", 0)]
        return [(f["name"], f["name"]) for f in fits]

    def _keypair(self, spec: Field) -> list[tuple[str, str]]:
        pairs = self.get("compute", "/os-keypairs").get("keypairs", [])
        return [("", "No keypair")] + [(p["keypair"]["name"], p["keypair"]["name"])
                                       for p in pairs]

    def _azone(self, spec: Field) -> list[tuple[str, str]]:
        zones = self.get("compute", "/os-availability-zone").get("availabilityZoneInfo", [])
        return [(z["zoneName"], z["zoneName"]) for z in zones
                if (z.get("zoneState") or {}).get("available")]

    def _image(self, spec: Field) -> list[tuple[str, str]]:
        wanted = spec.extra.get("imageType")
        found = []
        for image in self.get("image", "/v2/images").get("images", []):
            try:
                info = json.loads(image.get("murano_image_info") or "")
            except ValueError:
                continue
            kind = str(info.get("type") or "")
            if wanted and kind != wanted and not kind.startswith(f"{wanted}."):
                continue
            found.append((image["id"], str(info.get("title") or image.get("name"))))
        return sorted(found, key=lambda item: item[1])

    def _network(self, spec: Field) -> list[tuple[str, str]]:
        pattern = spec.extra.get("filter")
        subnets = self.get("network", "/v2.0/subnets").get("subnets", [])
        options = [("", "Auto (the environment's network)")] \
            if spec.extra.get("allow_auto", True) else []
        for net in self.get("network", "/v2.0/networks").get("networks", []):
            name = str(net.get("name") or net["id"])
            if pattern and not re.search(str(pattern), name):
                continue
            if not spec.extra.get("include_subnets", True):
                options.append((f"{net['id']},", name))
                continue
            options += [(f"{net['id']},{sub['id']}", f"{name}: {sub.get('cidr')}")
                        for sub in subnets if sub.get("network_id") == net["id"]]
        return options

    def _securitygroup(self, spec: Field) -> list[tuple[str, str]]:
        groups = self.get("network", "/v2.0/security-groups").get("security_groups", [])
        return [(g["name"], g["name"]) for g in groups]

    def _volume(self, spec: Field) -> list[tuple[str, str]]:
        volumes = [(v["id"], f"volume {v.get('name') or v['id']}") for v in self.get(
            "volumev3", "/volumes/detail?status=available").get("volumes", [])]
        if spec.extra.get("include_snapshots", True):
            volumes += [(s["id"], f"snapshot {s.get('name') or s['id']}") for s in self.get(
                "volumev3", "/snapshots/detail?status=available").get("snapshots", [])]
        return volumes


def for_cloud(config: Mapping[str, Any]) -> Callable[[], Callable]:
    """A maker of choices functions for the engine configuration ``config`` (sections as
    dicts): one per wizard request, so each OpenStack service is asked once per page."""
    from murano_engine.clouds.heat import heat_configured

    heat = config.get("heat") or {}
    if heat_configured(heat):
        return lambda: OpenStackChoices(heat)
    return lambda: local_choices
