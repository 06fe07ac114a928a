"""io.murano.system.MetadefBrowser: Glance's metadata definitions (namespaces, objects).

Glance is found as :mod:`murano_engine.system.openstack` says (``[glance] url``,
else the keystone catalog's ``image`` endpoint); with neither there are no
definitions, which is what the local cloud has. Answers are cached per browser
(unless made with ``cache => false``) and go through the run's journal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from murano_engine.dsl import values
from murano_engine.dsl.natives import NativeCall, method, native_class
from murano_engine.dsl.objects import MuranoObject, real_object
from murano_engine.system import openstack

if TYPE_CHECKING:
    from keystoneauth1.session import Session

#: Pages Glance is asked for at most, per list (a guard against a looping ``next``).
MAX_PAGES = 100


def _region_name(obj: MuranoObject | None) -> str | None:
    """The name of the CloudRegion owning ``obj`` (None when there is none)."""
    current = obj
    while current is not None:
        if any(c.name == "io.murano.CloudRegion" for c in current.murano_class.ancestors()):
            name = current.props.get("name")
            return str(name) if name else None
        current = current.owner
    return None


def _pages(keystone: Session, base: str, path: str, key: str) -> list[dict[str, Any]]:
    """Every item of a paged Glance list (``key`` holds the items, ``next`` the path of
    the rest, from the API root: ``/v2/...``)."""
    url: str | None = f"{base}{path}"
    items: list[dict[str, Any]] = []
    for _ in range(MAX_PAGES):
        if url is None:
            return items
        body = openstack.get_json(keystone, url, "Glance metadata definitions")
        found = body.get(key) or []
        if not isinstance(found, list):
            raise ValueError(f"Glance metadata definitions: {url}: {key!r} is not a list")
        items.extend(item for item in found if isinstance(item, dict))
        following = str(body.get("next") or "")
        url = f"{base}{following.removeprefix('/v2')}" if following else None
    raise ValueError(f"Glance metadata definitions: {path} has more than {MAX_PAGES} pages")


@native_class("io.murano.system.MetadefBrowser")
class MetadefBrowser:
    def __init__(self, call: NativeCall, regionName: str | None = None,  # noqa: N803
                 cache: bool = True) -> None:
        self.region = regionName or _region_name(real_object(call.receiver))
        self.cache = bool(cache)
        self.answers: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def _glance(self, call: NativeCall) -> tuple[str, Session] | None:
        """Glance's v2 API root and the session to reach it with, or None when no
        Glance is configured."""
        keystone = openstack.session(call)
        found = openstack.endpoint(call, "glance", "image", self.region, keystone)
        if found is None:
            return None
        return (found if found.endswith("/v2") else f"{found}/v2"), keystone

    def _list(self, call: NativeCall, kind: str, scope: str, path: str,
              key: str) -> list[dict[str, Any]]:
        if self.cache and (kind, scope) in self.answers:
            return self.answers[(kind, scope)]

        def fetch() -> list[dict[str, Any]]:
            glance = self._glance(call)
            return [] if glance is None else _pages(glance[1], glance[0], path, key)

        found = call.executor.outside.value(f"glance.{kind}", scope, fetch)
        if self.cache:
            self.answers[(kind, scope)] = found
        return found

    @method
    def getNamespaces(call: NativeCall, resourceType: str) -> Any:  # noqa: N802, N803
        path = "/metadefs/namespaces?" + urlencode({"resource_types": resourceType})
        return values.freeze(call.native._list(call, "namespaces", str(resourceType), path,
                                               "namespaces"))

    @method
    def getObjects(call: NativeCall, namespace: str) -> Any:  # noqa: N802
        path = f"/metadefs/namespaces/{quote(str(namespace), safe='')}/objects"
        return values.freeze(call.native._list(call, "objects", str(namespace), path,
                                               "objects"))
