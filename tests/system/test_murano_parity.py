"""The Heat template and the agent plans of a Linux deployment equal Murano's.

``parity/`` holds two small packages: ``parity.linux.Telnet``, of the shape of the
incubator's ``io.murano.apps.linux.Telnet`` (Format 1.0, one LinuxMuranoInstance,
a security rule, one v2 plan with an entry point and two more script files), and
``parity.linux.Motd``, which uses the core library's ``configuration.Linux``
putFile and runCommand. ``parity/model.json`` deploys both on the local cloud,
whose servers run the real agent (each keeps the plans it received in its
journal). ``parity/expected.yaml`` is what Murano's core library makes of the same
model, worked out from its classes; the stack's template and the plans the agents
received are compared with it, resource names and types, properties, file names
and parameters included.
"""

from __future__ import annotations

import base64
import configparser
import json
import re
from pathlib import Path
from typing import Any

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from murano_engine.clouds.local.sandbox import missing_for_namespaces
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.config import load_config
from murano_engine.engine.interpreter import build_interpreter
from murano_engine.engine.services import close_services, engine_services
from murano_engine.engine.tasks import run_task
from murano_engine.server.worker import remove_result_queues

HERE = Path(__file__).parent / "parity"
CORE_SCRIPTS = Path(__file__).resolve().parents[2] / "meta" / "io.murano" / "Resources" / "scripts"
ENV_ID = "e0000000000000000000000000000001"
HEX_ID = re.compile(r"[0-9a-f]{32}")


def _deploy(tmp_path: Path, settings: str = "") -> tuple[dict[str, Any], dict[str, Any],
                                                        dict[str, dict[str, Any]]]:
    """Deploy model.json; returns the template of its stack, the resulting model and,
    by server name, the plans each server's agent received and its agent.conf; then
    destroys the environment."""
    isolation = "none" if missing_for_namespaces() else "namespaces"
    ini = tmp_path / "engine.ini"
    ini.write_text(f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\nisolation = {isolation}\n"
                   + settings)
    config = load_config(ini, {})
    loader = PackageLoader([HERE], build_interpreter())
    model = {"Objects": json.loads((HERE / "model.json").read_text()), "Attributes": []}
    services = engine_services(config)
    try:
        result = run_task({"id": ENV_ID, "model": model,
                           "action": {"object_id": ENV_ID, "method": "deploy", "args": {}}},
                          loader, services=services)
        deployed = result["model"]
        try:
            assert not result["action"]["isException"], result["action"]["result"]
            stack = next(attr[3] for attr in deployed["Attributes"]
                         if attr[2] == "generatedStackName")
            found = services["cloud"].get(f"murano-{stack}")
            assert found is not None and found.status.endswith("COMPLETE"), found
            servers = tmp_path / "cloud" / "servers"
            seen = {app["instance"]["name"]: {
                "plans": _received_plans(servers / app["instance"]["openstackId"]),
                "agent.conf": (servers / app["instance"]["openstackId"] / "agent.conf")
                .read_text()} for app in deployed["Objects"]["applications"]}
            return found.template, deployed, seen
        finally:
            gone = run_task({"id": ENV_ID, "model": deployed, "action": None}, loader,
                            services=services)
            assert not gone["action"]["isException"], gone["action"]["result"]
            # its results queues, as the command line's destroy and the workers remove them
            remove_result_queues(services["agents"], ENV_ID, deployed)
    finally:
        close_services(services)


def _received_plans(server: Path) -> list[dict[str, Any]]:
    """The plans a server's agent received, in order (from its journal)."""
    journal = server / "agent" / "journal"
    plans = []
    for line in journal.read_text().splitlines():
        record = json.loads(line)
        if record[0] == "P":
            plans.append(json.loads(base64.b64decode(record[4])))
    return plans


def _agent_ini(script: str) -> configparser.ConfigParser:
    """The agent configuration a boot script writes."""
    (line,) = [x for x in script.splitlines() if x.startswith("AgentConfigBase64=")]
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(base64.b64decode(line.split("=", 1)[1].strip("'")).decode())
    return parser


def _check_user_data(template: dict[str, Any], server: str, instance_id: str,
                     results_queue: str) -> None:
    """The two user data parts of a server: this engine's text, Murano's purpose."""
    resources = template["resources"]
    config = resources[f"boot_config-{server}"]["properties"]["cloud_config"]
    assert config["hostname"] == server
    resources[f"boot_config-{server}"]["properties"]["cloud_config"] = "<cloud-config>"
    script = resources[f"boot_script_{server}"]["properties"]["config"]
    assert script.startswith("#!/bin/sh\n") and "%" not in script
    ini = _agent_ini(script)
    assert ini["rabbitmq"]["input_queue"] == f"e{ENV_ID}-h{instance_id}"
    assert ini["rabbitmq"]["result_routing_key"] == results_queue
    assert ini["DEFAULT"]["storage"] == "/var/murano/plans"
    resources[f"boot_script_{server}"]["properties"]["config"] = "<boot script>"


def _normalised_template(template: dict[str, Any]) -> dict[str, Any]:
    """The template with the region id, the CIDR and the router as placeholders and the
    security group's rules in a fixed order (Heat does not care for their order)."""
    # The region's network is built from the environment's template: an object of its
    # own with a fresh id (as in Murano), named in the expectation by the model's id.
    (network,) = [name for name, res in template["resources"].items()
                  if res["type"] == "OS::Neutron::Net"]
    template = json.loads(json.dumps(template).replace(
        network.removeprefix("network-"), "e0000000000000000000000000000002"))
    (region,) = [name for name, res in template["resources"].items()
                 if res["type"] == "OS::Neutron::SecurityGroup"]
    props = template["resources"]["subnet-e0000000000000000000000000000002"]["properties"]
    router = template["resources"]["ri-e0000000000000000000000000000002"]["properties"]
    text = json.dumps(template)
    for value, placeholder in ((region, "<region>"), (props["cidr"], "<cidr>"),
                               (router["router_id"], "<router>")):
        text = text.replace(json.dumps(value), json.dumps(placeholder))
    normalised = json.loads(text)
    rules = normalised["resources"]["<region>"]["properties"]["rules"]
    rules.sort(key=json.dumps)
    return normalised


def _script_resource(name: str) -> str:
    for folder in (HERE / "parity.linux.Telnet" / "Resources" / "scripts", CORE_SCRIPTS):
        if (folder / name).exists():
            return (folder / name).read_text()
    raise AssertionError(f"no script resource {name}")


def _normalised_plan(plan: dict[str, Any]) -> dict[str, Any]:
    """A received plan with generated ids, ID and Stamp as placeholders, script bodies
    checked against the package resources they come from."""
    assert HEX_ID.fullmatch(plan["ID"]) and isinstance(plan["Stamp"], int)
    plan = {**plan, "ID": "<id>", "Stamp": "<stamp>"}
    ids = {}
    for file_id, entry in plan["Files"].items():
        if HEX_ID.fullmatch(file_id):
            ids[file_id] = f"<file:{entry['Name']}>"
            assert entry["Body"] == _script_resource(entry["Name"])
            entry["Body"] = f"<resource {entry['Name']}>"
    text = json.dumps(plan)
    for file_id, placeholder in ids.items():
        text = text.replace(json.dumps(file_id), json.dumps(placeholder))
    return json.loads(text)


def test_linux_deployment_template_and_plans_equal_murano(tmp_path):
    expected = yaml.safe_load((HERE / "expected.yaml").read_text())
    template, deployed, servers = _deploy(tmp_path)

    apps = {app["?"]["type"].split("/")[0]: app for app in deployed["Objects"]["applications"]}
    telnet, motd = apps["parity.linux.Telnet"], apps["parity.linux.Motd"]
    assert telnet["installed"] == "telnet for parity-telnet installed"
    assert motd["readBack"] == "Welcome to the parity test"

    stack_attr = next(a for a in deployed["Attributes"] if a[2] == "generatedStackName")
    # Murano's name with the environment first: the engine's id of it, never the model's
    results_queue = f"-execution-results-e{ENV_ID}-{stack_attr[3]}".lower()
    for app in (telnet, motd):
        instance = app["instance"]
        _check_user_data(template, instance["name"], instance["?"]["id"], results_queue)
    assert _normalised_template(template) == _normalised_template(expected["template"])

    for server, seen in servers.items():
        received = [_normalised_plan(p) for p in seen["plans"]]
        assert received == expected["plans"][server], server


def test_linux_agents_get_the_engines_plan_key(tmp_path):
    """With [engine] signing_key the boot script gives each agent the public key
    (engine_key, as Murano's), and the agents run the signed plans."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "engine-key.pem"
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    _, deployed, servers = _deploy(tmp_path, f"[engine]\nsigning_key = {pem}\n")
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.PKCS1).decode()
    for seen in servers.values():
        ini = configparser.ConfigParser(interpolation=None)
        ini.read_string(seen["agent.conf"])
        assert ini["DEFAULT"]["engine_key"].strip() == public.strip()
        assert seen["plans"]
    motd = next(a for a in deployed["Objects"]["applications"] if "Motd" in a["?"]["type"])
    assert motd["readBack"] == "Welcome to the parity test"
