"""The local cloud's catalog: the flavors and images a server can be booted with.

As Nova does, a server names one of these or is refused (the error lists the
choices). A flavor sizes the server's sandbox (:mod:`.cgroups`, :mod:`.disk`):
memory past ``ram_mib`` is reclaimed or ends in an out-of-memory kill inside
the server, ``vcpus`` is its CPU quota and share, ``disk_mib`` bounds
``/sandbox``. The sizes suit one host running many small servers, not Nova's
defaults.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from murano_engine.clouds.local.resource import ResourceFailure


@dataclass(frozen=True)
class Flavor:
    """A server size."""

    name: str
    vcpus: int
    ram_mib: int
    disk_mib: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Flavor:
        return cls(**data)


FLAVORS: dict[str, Flavor] = {f.name: f for f in (
    Flavor("m1.tiny", vcpus=1, ram_mib=256, disk_mib=512),
    Flavor("m1.small", vcpus=1, ram_mib=512, disk_mib=1024),
    Flavor("m1.medium", vcpus=2, ram_mib=1024, disk_mib=2048),
    Flavor("m1.large", vcpus=4, ram_mib=2048, disk_mib=4096),
)}

#: image name -> (title, os type as Murano's image info names it)
IMAGES: dict[str, tuple[str, str]] = {
    "debian-12": ("Debian 12", "linux"),
    "ubuntu-22.04": ("Ubuntu 22.04", "linux"),
    "cirros": ("CirrOS", "linux"),
    "windows-2019": ("Windows Server 2019", "windows"),
}


def flavor(name: Any) -> Flavor:
    """The flavor called ``name``; a clear error listing the flavors when there is none."""
    found = FLAVORS.get(str(name))
    if found is None:
        raise ResourceFailure(f"flavor {name!r} could not be found; the local cloud's flavors: "
                              f"{', '.join(FLAVORS)}")
    return found


def check_image(name: Any) -> str:
    """``name`` when the catalog has that image; a clear error listing the images when not."""
    if str(name) not in IMAGES:
        raise ResourceFailure(f"image {name!r} could not be found; the local cloud's images: "
                              f"{', '.join(IMAGES)}")
    return str(name)


_WINDOWS_IMAGE = re.compile(r"(?<![a-z])win", re.IGNORECASE)


def is_windows(image: str, metadata: Mapping[str, Any] | None = None) -> bool:
    """Whether an image (by name, or ``os_type``/``os_distro`` metadata) is Windows."""
    meta = metadata or {}
    for key in ("os_type", "os_distro"):
        if str(meta.get(key, "")).lower().startswith("win"):
            return True
    return bool(_WINDOWS_IMAGE.search(image))
