"""The engine's traffic on a virtual host apart from the guests' (issue 21, item 2):
``transport_url`` on the agents' virtual host is refused; its own one is made on first
use, with every right for the URL's user, and a server's broker user cannot open it."""

from __future__ import annotations

import uuid

import amqp
import pytest

from murano_engine.engine.config import load_config
from murano_engine.messaging.identities import BrokerIdentities
from murano_engine.messaging.management import ManagementApi, management_url
from murano_engine.messaging.transport import TransportError, prepare_transport

CONFIG = load_config(None, environ={})


@pytest.fixture
def engine_vhost():
    name = f"murano-engine-test-{uuid.uuid4().hex[:8]}"
    yield name
    api = ManagementApi(management_url(CONFIG) or "")
    api.request("DELETE", f"/api/vhosts/{name}", missing_ok=True)


def test_the_guests_virtual_host_is_refused_for_the_engines_traffic():
    with pytest.raises(TransportError, match=r"virtual host '/', where the guest agents' "
                                             r"broker users live .* e\.g\. amqp://127\.0\.0\.1"
                                             r":5672/murano-engine"):
        prepare_transport("amqp://guest:guest@127.0.0.1:5672//", CONFIG)
    shared = load_config(None, environ={"MURANO_RABBITMQ_SERVER_IDENTITIES": "false"})
    prepare_transport("amqp://guest:guest@127.0.0.1:5672//", shared)  # Murano's shared login


def test_the_engines_virtual_host_is_made_on_first_use_and_guests_cannot_open_it(
        engine_vhost):
    url = f"amqp://guest:guest@127.0.0.1:5672/{engine_vhost}"
    prepare_transport(url, CONFIG)
    prepare_transport(url, CONFIG)  # already there: left as it is
    with amqp.Connection("127.0.0.1:5672", userid="guest", password="guest",
                         virtual_host=engine_vhost) as conn:
        channel = conn.channel()
        channel.queue_declare("murano-tasks", durable=True)
        channel.basic_publish(amqp.Message("task"), "", "murano-tasks")
        assert channel.basic_get("murano-tasks", no_ack=True).body == "task"

    identities = BrokerIdentities.from_config(CONFIG)
    assert identities is not None
    environment = uuid.uuid4().hex
    queue, results = f"e{environment}-hserver", f"-execution-results-{environment}"
    guest = identities.mint(queue, results)
    try:
        with pytest.raises(amqp.exceptions.NotAllowed, match="access to vhost"):
            with amqp.Connection("127.0.0.1:5672", userid=guest.login,
                                 password=guest.password, virtual_host=engine_vhost):
                pass
    finally:
        assert identities.revoke(queue)
        assert identities.remove_exchange(results)
        identities.api.request("DELETE", f"/api/queues/%2F/{results}")
