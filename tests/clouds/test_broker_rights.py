"""A server's broker identity, tried from inside its sandbox (issue 21, item 1).

Two environments are deployed with the engine command on the local cloud; then
environment A's server runs the probe of :mod:`tests.broker_probe`, which connects
through the sandbox's broker relay with exactly the credentials in its agent
config and tries what a hostile package would against environment B, the results
queue, the task queue and the engine's virtual host, and logs in as
``guest/guest`` through the relay. Every attempt must be refused (the guest
login cut off by the relay), while the probe's own login (PLAIN or AMQPLAIN),
plan and result still flow; destroying the environments removes their servers'
broker users.
"""

from __future__ import annotations

import configparser
import json
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import kombu
import pytest

from murano_engine.clouds.local.sandbox import missing_for_namespaces
from murano_engine.engine.config import load_config
from murano_engine.messaging.identities import BrokerIdentities, identity_name
from murano_engine.messaging.transport import prepare_transport
from tests.broker_probe import Deployment, assert_only_its_own, targets, write_package

CONFIG = load_config(None, environ={})

pytestmark = pytest.mark.skipif(bool(missing_for_namespaces()),
                                reason=f"no namespaces here: {missing_for_namespaces()}")


@pytest.fixture
def deployments(tmp_path):
    write_package(tmp_path / "packages")
    (tmp_path / "engine.ini").write_text(
        f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\npoll_interval = 0.01\n")
    made = [Deployment(tmp_path, "a"), Deployment(tmp_path, "b")]
    engine_vhost = f"murano-engine-test-{uuid.uuid4().hex[:8]}"  # where tasks would go
    prepare_transport(f"amqp://guest:guest@127.0.0.1:5672/{engine_vhost}", CONFIG)
    yield engine_vhost, made
    for deployment in made:  # also deletes their results queues
        deployment.destroy()
    _identities().api.request("DELETE", f"/api/vhosts/{engine_vhost}")


def _identities() -> BrokerIdentities:
    identities = BrokerIdentities.from_config(CONFIG)
    assert identities is not None
    return identities


def test_a_sandbox_can_reach_its_own_queue_and_results_and_nothing_else(deployments):
    engine_vhost, (a, b) = deployments
    identities = _identities()

    def users() -> set[str]:  # the broker users of these two environments' servers
        return {u for u in identities.users()
                if u.startswith((identity_name(f"e{a.id}-"), identity_name(f"e{b.id}-")))}

    b.deploy()
    results = b.results_queue(a.tmp / "cloud" / "servers")
    outcome = json.loads(a.deploy(targets(b, results, engine_vhost))["probe"])
    assert users() == {identity_name(a.queue), identity_name(b.queue)}
    assert_only_its_own(outcome)

    # Removing the servers removes their users.
    a.destroy()
    b.destroy()
    assert users() == set()


def test_without_identities_the_relay_admits_the_configured_login(tmp_path):
    """``server_identities = false``: the agents log in as ``[rabbitmq] login`` (guest),
    which the relay lets through, for the probe and for the agent's own plans."""
    write_package(tmp_path / "packages")
    (tmp_path / "engine.ini").write_text(
        f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\npoll_interval = 0.01\n"
        "[rabbitmq]\nserver_identities = false\n")
    deployment = Deployment(tmp_path, "a")
    absent = f"murano-relay-test-{uuid.uuid4().hex[:8]}"  # no such queue, exchange, vhost
    try:
        outcome = json.loads(deployment.deploy(" ".join(
            [absent, f"{absent}-exchange", f"{absent}-results", f"{absent}-tasks",
             f"{absent}-vhost"]))["probe"])
        urls = [_broker_url(conf) for conf in
                (tmp_path / "cloud" / "servers").glob("*/agent.effective.conf")]
    finally:
        stolen = f"stolen-{deployment.queue}"  # guest may declare it: the probe did
        deployment.destroy()
    with kombu.Connection(urls[0]) as conn:  # the relay's address inside is the host's
        conn.default_channel.queue_delete(stolen)
    assert [urlsplit(url).username for url in urls] == ["guest"]
    assert outcome["own queue passively"] == outcome["own queue passively, PLAIN login"] == 0
    assert outcome["log in as guest/guest"] == outcome["log in as guest/guest, AMQPLAIN"] == 0


def _broker_url(agent_config: Path) -> str:
    """The broker URL (with its login) of an agent config file."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(agent_config.read_text())
    return parser.get("rabbitmq", "url")
