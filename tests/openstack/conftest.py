"""Real Keystone and Heat on loopback for the tests of this folder (one set per session).

The services come from a virtualenv of their own (:mod:`tests.openstack.venv`,
built once per machine, ``.ci/run`` builds it first) and run as
:mod:`tests.openstack.services` starts them. The tests skip, naming the
reason, when this machine cannot have them (no PostgreSQL, RabbitMQ or
rabbitmqctl; the virtualenv cannot be built) or when MURANO_SKIP_OPENSTACK is
set; a service that is there but fails to start is an error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from heatclient import client as heat_client
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

from tests.openstack.services import Account, NotHere, OpenStack, check_machine
from tests.openstack.venv import Unavailable, ensure_venv

AMQP = "amqp://guest:guest@127.0.0.1:5672//"


@pytest.fixture(scope="session")
def openstack(tmp_path_factory) -> Iterator[OpenStack]:
    if os.environ.get("MURANO_SKIP_OPENSTACK"):
        pytest.skip("MURANO_SKIP_OPENSTACK is set")
    if sys.platform != "linux":
        pytest.skip("Keystone and Heat are run on Linux only")
    try:
        check_machine()
        venv = ensure_venv(log=lambda line: print(line, file=sys.stderr))
    except (NotHere, Unavailable) as error:
        pytest.skip(f"no OpenStack services here: {error}")
    cloud = OpenStack(venv, tmp_path_factory.mktemp("openstack"))
    try:
        cloud.start()
        yield cloud
    finally:
        cloud.stop()


def heat_of(cloud: OpenStack, account: Account) -> heat_client.Client:
    """A heatclient as ``account``, through keystone's catalog."""
    auth = v3.Password(auth_url=cloud.auth_url, username=account.username,
                       password=account.password, project_name=account.project_name,
                       user_domain_id="default", project_domain_id="default")
    return heat_client.Client("1", session=ks_session.Session(auth=auth))


@pytest.fixture(scope="session")
def demo_heat(openstack) -> heat_client.Client:
    return heat_of(openstack, openstack.accounts["demo"])


def engine_ini(cloud: OpenStack, account: Account, folder: Path, extra: str = "") -> Path:
    """An engine config deploying to ``cloud``'s Heat as ``account``, without compute."""
    heat = {**account.heat_section(cloud.auth_url), "no_compute": "true",
            "poll_interval": "0.5", "stack_timeout": "300"}
    path = folder / "engine.ini"
    path.write_text("[heat]\n" + "".join(f"{k} = {v}\n" for k, v in heat.items())
                    + f"[rabbitmq]\nurl = {AMQP}\n" + extra)
    return path
