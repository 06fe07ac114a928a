"""What the sandbox broker relay's login gate costs
(:class:`murano_engine.clouds.local.relay.Relay`, RabbitMQ on 127.0.0.1:5672).

An AMQP connection (handshake, one channel, close) with py-amqp as ``guest``,
straight to the broker and through a relay on loopback that admits ``guest``;
then a login as ``guest`` through a relay that admits another user, timed until
the relay has cut it off. Each run is timed. Targets: under 50 ms straight,
under 15 ms through the relay (without TCP_NODELAY on the relay's sockets,
Nagle's algorithm and delayed ACKs made it ~47 ms), the refusal under 20 ms.
"""

from __future__ import annotations

import logging
import os
import socket
import sys

import amqp
import figures

from murano_engine.clouds.local.relay import Relay

BROKER = ("127.0.0.1", 5672)
RUNS = 50 * int(os.environ.get("BENCH_RUNS", "3"))


def connect(port: int) -> None:
    connection = amqp.Connection(f"127.0.0.1:{port}", userid="guest", password="guest",
                                 connect_timeout=5)
    connection.connect()
    connection.channel()
    connection.close()


def refused(port: int) -> None:
    try:
        connect(port)
    except OSError:
        return
    raise SystemExit("the relay let in a user it does not admit")


def main() -> int:
    logging.getLogger("murano_engine.clouds.local.relay").setLevel(logging.ERROR)  # the
    # refusals' warnings, one per run
    admitting = Relay(socket.create_server(("127.0.0.1", 0)), BROKER, "bench", "guest")
    refusing = Relay(socket.create_server(("127.0.0.1", 0)), BROKER, "bench", "somebody")
    figures.method(f"{RUNS} py-amqp connections as guest (handshake, a channel, close), "
                   "straight and through a relay on loopback; then as many logins "
                   "through a relay admitting another user, each timed until cut off")
    try:
        direct = figures.timed(lambda: connect(BROKER[1]), RUNS)
        relayed = figures.timed(lambda: connect(admitting.listener.getsockname()[1]), RUNS)
        cut = figures.timed(lambda: refused(refusing.listener.getsockname()[1]), RUNS)
    finally:
        admitting.close()
        refusing.close()
    figures.figure("connect straight to the broker", direct, "ms", 50, scale=1000)
    figures.figure("connect through the relay", relayed, "ms", 15, scale=1000)
    figures.figure("cut off another user's login", cut, "ms", 20, scale=1000)
    figures.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
