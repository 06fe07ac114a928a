"""Address allocation: fixed IPs from each subnet's CIDR, floating IPs from one pool.

The addresses are fiction local to this machine; no interface is configured.
"""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from murano_engine.clouds.local.resource import ResourceFailure

FLOATING_POOL = "floating"


class Addresses:
    """Which addresses are taken, per subnet id (and in the floating pool)."""

    def __init__(self, floating_cidr: str = "172.24.4.0/24") -> None:
        self.floating_network = ipaddress.ip_network(floating_cidr)
        self._used: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def reserve(self, pool: str, address: str) -> None:
        """Mark an address as taken (used when reloading state)."""
        with self._lock:
            self._used.setdefault(pool, set()).add(address)

    def release(self, pool: str, address: str) -> None:
        with self._lock:
            self._used.get(pool, set()).discard(address)

    def in_use(self, pool: str) -> int:
        with self._lock:
            return len(self._used.get(pool, ()))

    def allocate(self, subnet_id: str, subnet: dict[str, Any], wanted: str | None = None) -> str:
        """A free address of the subnet (``wanted`` if given and free)."""
        network = ipaddress.ip_network(subnet["cidr"])
        reserved = {subnet.get("gateway_ip")}
        return self._take(subnet_id, network, _candidates(network, subnet), reserved, wanted)

    def allocate_floating(self, wanted: str | None = None) -> str:
        network = self.floating_network
        gateway = str(next(network.hosts()))
        return self._take(FLOATING_POOL, network, network.hosts(), {gateway}, wanted)

    def _take(
        self,
        pool: str,
        network: ipaddress.IPv4Network | ipaddress.IPv6Network,
        candidates: Iterable[Any],
        reserved: set[str | None],
        wanted: str | None,
    ) -> str:
        with self._lock:
            used = self._used.setdefault(pool, set())
            if wanted:
                address = ipaddress.ip_address(wanted)
                if address not in network:
                    raise ResourceFailure(f"address {wanted} is outside {network}")
                if str(address) in used or str(address) in reserved:
                    raise ResourceFailure(f"address {wanted} is already in use")
                used.add(str(address))
                return str(address)
            for candidate in candidates:
                text = str(candidate)
                if text not in used and text not in reserved:
                    used.add(text)
                    return text
        raise ResourceFailure(f"no free address left in {network}")


def _candidates(
    network: ipaddress.IPv4Network | ipaddress.IPv6Network, subnet: dict[str, Any]
) -> Iterator[Any]:
    pools = subnet.get("allocation_pools") or []
    if not pools:
        yield from network.hosts()
        return
    for pool in pools:
        current = ipaddress.ip_address(pool["start"])
        end = ipaddress.ip_address(pool["end"])
        while current <= end:
            yield current
            current += 1
