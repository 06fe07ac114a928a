"""A server's broker identity, from the host (issue 21, item 1): what minting gives,
what a second mint and a revoke take away, and when there is none. The rights from
inside a real sandbox: tests/clouds/test_broker_rights.py."""

from __future__ import annotations

import threading
import uuid

import amqp
import pytest

from murano_engine.engine.config import load_config
from murano_engine.messaging.identities import BrokerIdentities, identity_name
from murano_engine.messaging.management import ManagementError

CONFIG = load_config(None, environ={})


def _connect(login: str, password: str) -> amqp.Connection:
    conn = amqp.Connection("127.0.0.1:5672", userid=login, password=password,
                           virtual_host="/", connect_timeout=5)
    conn.connect()
    return conn


@pytest.fixture
def server():
    """A minted identity for a server of a fresh environment (and the admin's view)."""
    identities = BrokerIdentities.from_config(CONFIG)
    assert identities is not None
    environment = uuid.uuid4().hex
    queue, results = f"e{environment}-hserver", f"-execution-results-{environment}"
    identity = identities.mint(queue, results)
    yield identities, identity, queue, results
    identities.revoke(queue)
    identities.remove_exchange(results)
    identities.api.request("DELETE", f"/api/queues/%2F/{results}", missing_ok=True)


def test_an_identity_consumes_its_queue_and_publishes_results_only(server):
    identities, identity, queue, results = server
    assert identity.login == identity_name(queue) and identity.virtual_host == "/"
    assert identity_name(queue) in identities.users()
    with _connect(identity.login, identity.password) as conn:
        channel = conn.channel()
        channel.queue_declare(queue, durable=True, auto_delete=False,
                              arguments={"x-ha-policy": "all", "x-expires": 86_400_000})
        channel.basic_publish(amqp.Message("result"), identity.result_exchange, results)
        channel.basic_qos(0, 1, False)
    with _connect("guest", "guest") as admin:
        channel = admin.channel()
        channel.basic_publish(amqp.Message("plan"), "", queue)
        assert channel.basic_get(results, no_ack=True).body == "result"
    with _connect(identity.login, identity.password) as conn:
        assert conn.channel().basic_get(queue, no_ack=True).body == "plan"
        channel = conn.channel()
        channel.basic_publish(amqp.Message("forged"), "", results)
        with pytest.raises(amqp.exceptions.AccessRefused, match="amq.default"):
            channel.basic_qos(0, 1, False)


def test_a_second_mint_replaces_the_password_and_a_revoke_removes_user_and_queue(server):
    identities, first, queue, results = server
    second = identities.mint(queue, results)
    assert second.password != first.password
    with pytest.raises(amqp.exceptions.AccessRefused):
        _connect(first.login, first.password)
    _connect(second.login, second.password).close()

    assert identities.revoke(queue)
    assert identity_name(queue) not in identities.users()
    with pytest.raises(amqp.exceptions.AccessRefused):
        _connect(second.login, second.password)
    assert identities.api.request("GET", f"/api/queues/%2F/{queue}", missing_ok=True) is None
    assert not identities.revoke(queue)


def test_two_revokes_of_one_user_at_once_both_end_well():
    """The engine and the local cloud both revoke a released server's user, maybe at the
    same moment; RabbitMQ then answers one of the two DELETEs with a 500 (about one race
    in three here). That request is sent again and finds the user gone."""
    identities = BrokerIdentities.from_config(CONFIG)
    assert identities is not None
    for _ in range(40):
        environment = uuid.uuid4().hex
        queue, results = f"e{environment}-hrace", f"-execution-results-{environment}"
        identities.mint(queue, results)
        start = threading.Barrier(2)
        outcomes: list[object] = []
        threads = [threading.Thread(target=_revoke_at, args=(identities, queue, start,
                                                             outcomes)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        identities.remove_exchange(results)
        identities.api.request("DELETE", f"/api/queues/%2F/{results}", missing_ok=True)
        assert sorted(outcomes, key=str) == [False, True]
        assert identity_name(queue) not in identities.users()


def _revoke_at(identities: BrokerIdentities, queue: str, start: threading.Barrier,
               outcomes: list[object]) -> None:
    """Revoke ``queue``'s user when the other thread is ready too; note what came of it."""
    start.wait()
    try:
        outcomes.append(identities.revoke(queue))
    except ManagementError as exc:
        outcomes.append(exc)


def test_no_identities_where_servers_share_the_engines_login():
    assert BrokerIdentities.from_config(
        load_config(None, environ={"MURANO_RABBITMQ_SERVER_IDENTITIES": "false"})) is None
    assert BrokerIdentities.from_config(
        load_config(None, environ={"MURANO_RABBITMQ_URL": "memory://"})) is None


def test_an_unreachable_management_api_says_what_to_do():
    identities = BrokerIdentities.from_config(load_config(None, environ={
        "MURANO_RABBITMQ_MANAGEMENT_URL": "http://guest:guest@127.0.0.1:9"}))
    assert identities is not None
    with pytest.raises(ManagementError, match=r"management API at http://127\.0\.0\.1:9 cannot "
                                              r"be reached .*`rabbitmq-plugins enable "
                                              r"--online rabbitmq_management`.* or set "
                                              r"\[rabbitmq\] management_url"):
        identities.mint("e1-h1", "-execution-results-x")
