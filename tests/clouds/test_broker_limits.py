"""What one server's broker user may take (issue 44): RabbitMQ's per-user limits on every
user minted for a server, and a bound on its environment's results queue against a guest
publishing results in a loop. The real broker and its management API; each test in a
virtual host of its own (the results policy is a virtual host's)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import amqp
import pytest

from murano_engine.engine.config import load_config
from murano_engine.messaging.identities import (
    BrokerIdentities,
    BrokerIdentity,
    ServerLimits,
)
from murano_engine.messaging.management import ManagementApi, management_url, name

CONFIG = load_config(None, environ={})
BROKER = "127.0.0.1:5672"


@pytest.fixture
def vhost() -> Iterator[str]:
    """A virtual host of the test's own, guest's to use; deleted with all it holds, and
    the users minted in it (users are the broker's, not a virtual host's)."""
    api = ManagementApi(str(management_url(CONFIG)))
    made = f"murano-limits-test-{uuid.uuid4().hex[:8]}"
    api.request("PUT", f"/api/vhosts/{name(made)}", {})
    api.request("PUT", f"/api/permissions/{name(made)}/guest",
                {"configure": ".*", "write": ".*", "read": ".*"})
    yield made
    for user in api.request("GET", f"/api/vhosts/{name(made)}/permissions"):
        if user["user"] != "guest":
            api.request("DELETE", f"/api/users/{name(user['user'])}", missing_ok=True)
    api.request("DELETE", f"/api/vhosts/{name(made)}")


def _identities(vhost: str, limits: ServerLimits) -> BrokerIdentities:
    return BrokerIdentities(ManagementApi(str(management_url(CONFIG))), vhost, limits)


def _log_in(identity: BrokerIdentity) -> amqp.Connection:
    connection = amqp.Connection(BROKER, userid=identity.login, password=identity.password,
                                 virtual_host=identity.virtual_host, connect_timeout=5,
                                 read_timeout=10)
    connection.connect()
    return connection


def _engine(vhost: str) -> amqp.Connection:
    connection = amqp.Connection(BROKER, userid="guest", password="guest",
                                 virtual_host=vhost, connect_timeout=5, read_timeout=10)
    connection.connect()
    return connection


def test_the_limits_come_from_the_rabbitmq_section():
    config = load_config(None, environ={
        "MURANO_RABBITMQ_SERVER_MAX_CONNECTIONS": "2", "MURANO_RABBITMQ_SERVER_MAX_CHANNELS": "5",
        "MURANO_RABBITMQ_RESULTS_MAX_LENGTH": "7", "MURANO_RABBITMQ_RESULTS_MAX_BYTES": "0"})
    identities = BrokerIdentities.from_config(config)
    assert identities is not None
    assert identities.limits == ServerLimits(2, 5, 7, 0)


def test_a_minted_user_carries_connection_and_channel_limits_the_broker_holds_it_to(vhost):
    identities = _identities(vhost, ServerLimits(max_connections=2, max_channels=3))
    queue = f"e{uuid.uuid4().hex[:8]}-hserver"
    identity = identities.mint(queue, "-execution-results-e1")
    assert identities.api.request("GET", f"/api/user-limits/{name(identity.login)}") == [
        {"user": identity.login, "value": {"max-connections": 2, "max-channels": 3}}]

    held = [_log_in(identity), _log_in(identity)]
    try:
        with pytest.raises(amqp.exceptions.AMQPError, match="connection limit \\(2\\)"):
            _log_in(identity)
        for number in (1, 2):
            held[0].channel(number)
        held[1].channel(1)  # the user's third channel, over its two connections
        with pytest.raises(amqp.exceptions.AMQPError, match="user limit of \\(3\\)"):
            held[1].channel(2)
    finally:
        for connection in held:
            connection.collect()
    identities.revoke(queue)
    assert identities.api.request("GET", f"/api/user-limits/{name(identity.login)}",
                                  missing_ok=True) is None  # gone with the user


def test_a_guest_publishing_results_in_a_loop_cannot_grow_its_results_queue(vhost):
    """The results queue holds 64 KiB of bodies at most (the policy set with the first
    user minted); past it the broker refuses a publish, and says so to a publisher that
    asks for confirms, as the agent does: nothing is dropped unannounced, and a result
    sent again once the engine read the queue gets through."""
    results = f"-execution-results-{uuid.uuid4().hex[:8]}"
    identities = _identities(vhost, ServerLimits(results_max_length=1000,
                                                 results_max_bytes=64 * 1024))
    identity = identities.mint(f"e{uuid.uuid4().hex[:8]}-hserver", results)
    body = b"r" * 1024
    with _log_in(identity) as guest:  # the flood: 2,000 results of 1 KiB, no confirms
        agent = guest.channel()
        for _ in range(2000):
            agent.basic_publish(amqp.Message(body), identity.result_exchange, results)
        # then, on the same channel (so after the flood), as the agent publishes: with
        # confirms
        with pytest.raises(amqp.exceptions.MessageNacked):
            agent.basic_publish_confirm(amqp.Message(b'{"result": 1}'),
                                        identity.result_exchange, results)

        with _engine(vhost) as engine:
            reader = engine.channel()
            _, held, _ = reader.queue_declare(results, passive=True)
            assert held <= 64
            while reader.basic_get(results, no_ack=True) is not None:  # the engine reads
                pass
            agent.basic_publish_confirm(amqp.Message(b'{"result": 1}'),
                                        identity.result_exchange, results)  # confirmed
            assert reader.queue_declare(results, passive=True)[1] == 1
