"""OpenStack services the core library reaches besides Heat: keystone, Glance, Mistral.

Credentials are the engine's ``[heat]`` ones (a keystoneauth1 session, made on
first use); a service's endpoint is its own section's ``url``, else the keystone
catalog's when ``[heat] auth_url`` is set, else there is none. Client libraries
are imported on first use, so they cost the engine's start-up nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from murano_engine.dsl.natives import NativeCall

if TYPE_CHECKING:
    from keystoneauth1.session import Session


def settings(call: NativeCall, section: str) -> Mapping[str, Any]:
    """One section of the engine's configuration (empty where there is none)."""
    return (call.executor.services.get("config") or {}).get(section) or {}


def keystone_configured(call: NativeCall) -> bool:
    """Whether ``[heat]`` names keystone (``auth_url``), so the catalog can be read."""
    return bool(settings(call, "heat").get("auth_url"))


def session(call: NativeCall, *, insecure: bool = False, cafile: str = "") -> Session:
    """A keystoneauth1 session: authenticated from ``[heat]`` when Heat is configured,
    else a plain one (for a service reached by ``url`` alone)."""
    from keystoneauth1 import session as ks_session

    from murano_engine.clouds.heat import heat_configured, keystone_session

    heat = settings(call, "heat")
    if heat_configured(heat):
        return keystone_session(heat)
    verify: bool | str = not insecure
    if verify and cafile:
        verify = cafile
    return ks_session.Session(verify=verify)


def endpoint(call: NativeCall, section: str, service_type: str, region: str | None,
             keystone: Session | None = None) -> str | None:
    """``[section] url``, else the catalog's ``service_type`` endpoint in ``region``
    (``[heat] region_name`` when the region has no name), else None."""
    own = settings(call, section)
    if own.get("url"):
        return str(own["url"]).rstrip("/")
    if not keystone_configured(call) or keystone is None:
        return None
    from keystoneauth1 import exceptions as ks_exc

    interface = str(own.get("endpoint_type") or "public").removesuffix("URL")
    region_name = region or settings(call, "heat").get("region_name") or None
    try:
        found = keystone.get_endpoint(service_type=service_type, interface=interface,
                                      region_name=region_name)
    except ks_exc.ClientException as exc:
        raise LookupError(f"the keystone catalog has no {service_type} endpoint "
                          f"({interface}, region {region_name or 'any'}): {exc}") from None
    if not found:
        raise LookupError(f"the keystone catalog has no {service_type} endpoint "
                          f"({interface}, region {region_name or 'any'}); set [{section}] url")
    return str(found).rstrip("/")


def identity_url(call: NativeCall) -> str:
    """Keystone's v3 API root, from ``[heat] auth_url``."""
    base = str(settings(call, "heat")["auth_url"]).rstrip("/")
    return base if base.endswith("/v3") else f"{base}/v3"


def get_json(keystone: Session, url: str, what: str) -> dict[str, Any]:
    """GET ``url`` as JSON; an error naming ``what`` when the answer is not a success."""
    from keystoneauth1 import exceptions as ks_exc

    try:
        response = keystone.get(url, raise_exc=False)
    except ks_exc.ClientException as exc:
        raise ConnectionError(f"{what}: {url} cannot be reached: {exc}") from None
    if response.status_code >= 400:
        raise LookupError(f"{what}: {url} answered {response.status_code}: "
                          f"{response.text[:200]}")
    try:
        body = response.json()
    except ValueError:
        raise ValueError(f"{what}: {url} did not answer JSON") from None
    if not isinstance(body, dict):
        raise ValueError(f"{what}: {url} answered {type(body).__name__}, not an object")
    return body
