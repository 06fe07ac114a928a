"""What a server's broker identity costs: minting it when the server is made, revoking
it when the server goes (:class:`murano_engine.messaging.identities.BrokerIdentities`,
RabbitMQ's management API on 127.0.0.1:15672 with the default ``[rabbitmq]`` login).

Minting is seven management requests on one connection (the environment's result
exchange, the result queue, their binding, the user, its permissions, its two
limits; the first mint of an object sets the results queues' policy too); revoking
is two (the user, the server's queue). Each server of one environment is minted,
then each revoked, every call timed. Target: under 50 ms each.
"""

from __future__ import annotations

import os
import sys
import uuid

import figures
import kombu

from murano_engine.engine.config import broker_url, load_config
from murano_engine.messaging.identities import BrokerIdentities

SERVERS = 20 * int(os.environ.get("BENCH_RUNS", "3"))


def main() -> int:
    config = load_config(None, environ={})
    identities = BrokerIdentities.from_config(config)
    assert identities is not None
    environment = f"bench{uuid.uuid4().hex[:12]}"
    results = f"-execution-results-{environment}"
    queues = [f"e{environment}-h{index:04d}" for index in range(SERVERS)]
    figures.method(f"{SERVERS} servers' identities minted one after another, then revoked, "
                   "each call timed (wall clock)")
    minted: list[str] = []  # the queues whose identities exist

    def mint() -> None:
        queue = queues[len(minted)]
        identities.mint(queue, results)
        minted.append(queue)

    def revoke() -> None:
        if not identities.revoke(minted.pop()):
            raise SystemExit("a minted identity was not there to revoke")

    try:
        mint_times = figures.timed(mint, SERVERS)
        revoke_times = figures.timed(revoke, SERVERS)
    finally:
        for queue in minted:
            identities.revoke(queue)
        identities.remove_exchange(results)
        with kombu.Connection(broker_url(config)) as conn:
            conn.default_channel.queue_delete(results)
    figures.figure("mint a server's broker identity", mint_times, "ms", 50, scale=1000)
    figures.figure("revoke a server's broker identity", revoke_times, "ms", 50, scale=1000)
    figures.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
