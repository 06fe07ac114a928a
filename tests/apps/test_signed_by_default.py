"""Plans are signed in ``make demo``'s configuration: the engine makes its key on first
use (mode 0600, beside the local cloud's state, in no sandbox), each server's agent
gets the public half, and an agent so booted refuses unsigned and foreign-signed plans
with an error result, running nothing."""

from __future__ import annotations

import configparser
import json
import shutil
import sys
import uuid
from pathlib import Path

import pytest

from murano_engine.clouds.local.sandbox import missing_for_namespaces
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.config import broker_url, load_config
from murano_engine.engine.interpreter import build_interpreter
from murano_engine.engine.services import close_services, engine_services
from murano_engine.engine.tasks import run_task
from murano_engine.messaging import AgentClient, AgentError
from murano_engine.messaging.signing import KeyRing, PlanSigner

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "linux-cluster.json"
ENV_ID = "e00000000000000000000000000005a1"
PING = {"FormatVersion": "2.0.0", "Body": "return 7", "Scripts": {}, "Files": {}}
pytestmark = pytest.mark.skipif(shutil.which("python3") is None or sys.platform != "linux",
                                reason="the local cloud's Linux guests need python3 on Linux")


def _run(services: dict, loader: PackageLoader, model: dict, deploy: bool) -> dict:
    """Deploy ``model``, or destroy it (``deploy`` false); returns the resulting model."""
    action = {"object_id": ENV_ID, "method": "deploy", "args": {}} if deploy else None
    result = run_task({"id": ENV_ID, "model": model, "action": action}, loader,
                      services=services)
    assert not result["action"]["isException"], result["action"]["result"]
    return result["model"]


def test_demo_configuration_signs_plans_and_its_agents_refuse_unsigned_ones(tmp_path: Path):
    if missing_for_namespaces():
        pytest.skip("sandboxes need " + ", ".join(missing_for_namespaces()))
    cloud = tmp_path / "cloud"
    (tmp_path / "engine.ini").write_text(f"[local_cloud]\nstate_dir = {cloud}\n")
    config = load_config(tmp_path / "engine.ini", {})
    loader = PackageLoader([REPO / "dsl_packages"], build_interpreter())
    environment = json.loads(EXAMPLE.read_text())
    environment["applications"][0].update(name="kv", nodeCount=1, basePort=29950)
    environment["?"]["id"] = ENV_ID
    services = engine_services(config)
    deployed = None
    try:
        deployed = _run(services, loader, {"Objects": environment, "Attributes": []}, True)
        key_file = cloud / "signing-keys" / f"{ENV_ID}.pem"  # the environment's own key
        assert key_file.stat().st_mode & 0o777 == 0o600
        key = key_file.read_bytes()
        configs = list((cloud / "servers").glob("*/agent.conf"))
        assert len(configs) == 1
        assert not [p for p in (cloud / "servers").rglob("*")
                    if p.is_file() and b"PRIVATE KEY" in p.read_bytes()], "a key in a sandbox"
        ini = configparser.ConfigParser(interpolation=None)
        ini.read_string(configs[0].read_text())
        assert ini["DEFAULT"]["engine_key"].strip() == PlanSigner(key).public_key_pem().strip()
        queue = ini["rabbitmq"]["input_queue"]
        region = ini["rabbitmq"]["result_routing_key"].removeprefix("-execution-results-")

        services["agents"].close()  # the servers stay reachable while the cloud is open
        # the key of another environment of the same engine is as foreign as any
        KeyRing(cloud / "signing-keys").keys("another-environment")
        foreign = (cloud / "signing-keys" / "another-environment.pem").read_bytes()
        for signing_key, reason in ((None, "message is not signed"),
                                    (foreign, "signature does not match")):
            client = AgentClient(broker_url(config), region, signing_key_pem=signing_key)
            try:
                with pytest.raises(AgentError, match=reason):
                    client.call(queue, dict(PING, ID=uuid.uuid4().hex), 20)
            finally:
                client.close()
        client = AgentClient(broker_url(config), region, signing_key_pem=key)
        try:
            assert client.call(queue, dict(PING, ID=uuid.uuid4().hex), 20) == 7
        finally:
            client.close()
    finally:
        close_services(services)
        if deployed is not None:
            services = engine_services(config)  # takes the servers back, then removes them
            try:
                _run(services, loader, deployed, False)
            finally:
                close_services(services)
        assert not list((cloud / "servers").glob("*/agent.conf"))
        assert not (cloud / "signing-keys" / f"{ENV_ID}.pem").exists()  # gone with it
