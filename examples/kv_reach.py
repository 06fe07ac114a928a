"""How to reach the replicated key-value store a deploy saved (``make demo`` prints it).

    python3 examples/kv_reach.py STATE_FILE

The nodes listen at the addresses the deploy recorded (``masterAddress``; a
replica at its first address and its port). On the local cloud's sandboxed
servers those addresses live in each server's own network namespace,
``ms-<its id>``, which the host cannot reach directly: the commands run curl
in the node's namespace with ``ip netns exec``. With ``isolation = none`` (or
a server whose namespace is not here) the node listens on an address the host
reaches, and plain curl does.
"""

from __future__ import annotations

import json
import os
import sys

from murano_engine.clouds.local.netns import server_namespace

LOOPBACK = "127.0.0.1"


def curl(server: dict, address: str, args: str) -> str:
    """The curl command line reaching ``address`` from where ``server`` is."""
    namespace = server_namespace(server.get("openstackId") or "")
    inside = not address.startswith(LOOPBACK + ":") and os.path.exists(f"/run/netns/{namespace}")
    return (f"ip netns exec {namespace} " if inside else "") + f"curl -s {args}"


def commands(app: dict) -> list[str]:
    master_address = app.get("masterAddress")
    if not master_address:
        return []
    servers = app.get("servers") or []
    master = next((s for s in servers if s.get("name") == app.get("masterNode")), {})
    lines = [f"Reach it: {curl(master, master_address, f'http://{master_address}/status')}",
             f"  write:  {curl(master, master_address, f'-X PUT --data v http://{master_address}/kv/k')}"]
    for replica in servers:
        if replica is master:
            continue
        host = LOOPBACK if master_address.startswith(LOOPBACK + ":") else \
            (replica.get("ipAddresses") or [LOOPBACK])[0]
        address = f"{host}:{replica['port']}"
        lines.append(f"  read a replica ({replica['name']}):  "
                     f"{curl(replica, address, f'http://{address}/kv/k')}")
        break
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as stream:
        state = json.load(stream)
    for app in state["Objects"].get("applications", []):
        for line in commands(app):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
