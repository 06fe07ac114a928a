"""What the wizard's cloud fields offer: flavors, images, key pairs... of the configured cloud.

The embedded local cloud takes any flavor and image name (an image whose name
contains "win" is Windows), has no key pairs, volumes to pick, or zones but
one: it lists the small set below. With Heat configured the values are typed
in (None: not listed, taken as given).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from murano_engine.dynamic_ui import Field

LOCAL = {
    "flavor": [("m1.tiny", "m1.tiny"), ("m1.small", "m1.small"), ("m1.medium", "m1.medium"),
               ("m1.large", "m1.large")],
    "image": [("debian-12", "Debian 12 (linux)"), ("windows-2019", "Windows Server 2019")],
    "keypair": [("", "No keypair")],
    "azone": [("nova", "nova")],
    "network": [("", "Auto (the environment's network)")],
    "securitygroup": [("default", "default")],
    "volume": [],
}
IMAGE_TYPES = {"debian-12": "linux", "windows-2019": "windows"}


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
    return options  # a flavor's requirements: the local cloud's flavors have no size


def for_cloud(config: Mapping[str, Any]) -> Any:
    """The choices function for the engine configuration ``config`` (sections as dicts)."""
    from murano_engine.clouds.heat import heat_configured

    if heat_configured(config.get("heat") or {}):
        return lambda spec: None
    return local_choices
