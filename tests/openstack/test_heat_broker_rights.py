"""A server made through real Heat gets a broker identity of its own in its user data
(issue 21, item 1): the agent standing in for its VM runs with exactly the login the
user data carries, the probe of :mod:`tests.broker_probe` finds everything but its
own queue and results refused, and ``destroy`` removes the servers' broker users."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from murano_engine.engine.config import load_config
from murano_engine.messaging.identities import BrokerIdentities, identity_name
from murano_engine.messaging.transport import prepare_transport
from tests.broker_probe import Deployment, assert_only_its_own, targets, write_package
from tests.openstack.agents import StandInAgents
from tests.openstack.conftest import AMQP, engine_ini

CONFIG = load_config(None, environ={})


def test_a_heat_servers_user_data_login_reaches_only_its_own(openstack, demo_heat,
                                                              tmp_path: Path):
    write_package(tmp_path / "packages")
    engine_ini(openstack, openstack.accounts["demo"], tmp_path)
    identities = BrokerIdentities.from_config(CONFIG)
    assert identities is not None
    a, b = Deployment(tmp_path, "a"), Deployment(tmp_path, "b")
    engine_vhost = f"murano-engine-test-{uuid.uuid4().hex[:8]}"
    prepare_transport(f"amqp://guest:guest@127.0.0.1:5672/{engine_vhost}", CONFIG)

    def users() -> set[str]:  # the broker users of these two environments' servers
        return {u for u in identities.users()
                if u.startswith((identity_name(f"e{a.id}-"), identity_name(f"e{b.id}-")))}

    servers = tmp_path / "servers"
    try:
        with StandInAgents(demo_heat, servers, AMQP) as agents:
            b.deploy()
            outcome = json.loads(a.deploy(targets(b, b.results_queue(servers),
                                                  engine_vhost))["probe"])
            assert users() == {identity_name(a.queue), identity_name(b.queue)}, agents.errors
            for conf in servers.glob("*/agent.effective.conf"):  # as the user data says
                assert f"//{identity_name('e')}" in conf.read_text()
            assert_only_its_own(outcome, relayed=False)  # its stand-in agent has no relay
            a.destroy()
            b.destroy()
            assert users() == set()
    finally:
        a.destroy()
        b.destroy()
        identities.api.request("DELETE", f"/api/vhosts/{engine_vhost}", missing_ok=True)
