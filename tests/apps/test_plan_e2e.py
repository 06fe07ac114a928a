"""``murano-engine plan`` against real deploys on the sandboxed local cloud.

A plan from nothing of HelloWeb (three servers) and of linux-cluster, then the
deploy: the deploy does what the plan listed. Its journal (kept aside as the
command removes it) holds the same stack pushes, plans per server (in the same
order on each server), and broker users as the plan's calls; the stack it made
has the resources the plan added; its picture (``--report``) has the same plans
on the same servers, in order. Names the run makes at random (a new stack's,
a network's, a new server's id in its queue) are compared once mapped to what
they name.

Then plans of what comes next, on the state the deploy left: HelloWeb scaled
from three servers to one (the two it deletes named), its scaleOut action, and
ReplicatedKV's scaleTo action with its argument; none changes anything: the
servers, their namespaces, broker users and queues, the state file and its
journal are as they were.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from murano_common import amqp
from murano_engine.clouds.local import netns
from murano_engine.clouds.local.sandbox import missing_for_namespaces
from murano_engine.engine.config import load_config
from murano_engine.engine.plan import COMPARED_CALLS
from murano_engine.messaging.identities import BrokerIdentities
from murano_engine.messaging.management import name as quoted
from tests.apps import kv_nodes

REPO = Path(__file__).resolve().parents[2]
PACKAGES = REPO / "dsl_packages"
HEX = re.compile(r"[0-9a-f]{32}")
pytestmark = pytest.mark.skipif(sys.platform != "linux" or bool(missing_for_namespaces()),
                                reason="the servers are sandboxes with addresses of their "
                                       "own (Linux network namespaces)")

# The deploy command as users run it, its journal copied aside before it is removed.
KEEP_JOURNAL = """
import shutil, sys
from murano_engine.engine import journal
removed, kept = journal.FileJournal.remove, sys.argv[1]
def keep(self):
    shutil.copy(self.path, kept)
    removed(self)
journal.FileJournal.remove = keep
from murano_engine.cli.main import console
sys.argv = ["murano-engine", *sys.argv[2:]]
console()
"""


class Place:
    """A test's folder: its engine config, state file and local cloud."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.cloud = folder / "cloud"
        self.state = folder / "state.json"
        self.config = folder / "engine.ini"
        self.config.write_text(f"[local_cloud]\nstate_dir = {self.cloud}\n"
                               "isolation = namespaces\n")

    def engine(self, *args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, "-m", "murano_engine.cli.main", *args, "-l", str(PACKAGES),
             "--state", str(self.state), "--config", str(self.config)],
            capture_output=True, text=True, timeout=300, cwd=self.folder)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    def plan(self, *args: str) -> dict[str, Any]:
        return json.loads(self.engine("plan", *args, "--json").stdout)

    def deploy(self, model: Path) -> tuple[list[str], Path]:
        """Deploy ``model``: the calls its journal recorded, and its picture."""
        kept, picture = self.folder / "deploy.journal", self.folder / "deploy.html"
        done = subprocess.run(
            [sys.executable, "-c", KEEP_JOURNAL, str(kept), "deploy", str(model), "-l",
             str(PACKAGES), "--state", str(self.state), "--config", str(self.config),
             "--report", str(picture)],
            capture_output=True, text=True, timeout=300, cwd=self.folder)
        assert done.returncode == 0, done.stdout + done.stderr
        entries = [json.loads(line) for line in kept.read_text().splitlines()[1:]]
        return [e["k"] for e in entries if e.get("t") != "begin"
                and e["k"].split("|")[1] in COMPARED_CALLS], picture

    def state_model(self) -> dict[str, Any]:
        return json.loads(self.state.read_text())

    def server_ids(self) -> list[str]:
        return sorted(p.name for p in (self.cloud / "servers").iterdir()
                      if p.is_dir() and not p.name.startswith("."))


def _fresh(example: str) -> dict[str, Any]:
    """An example's model with object ids of its own (other tests deploy the example)."""
    text = (REPO / "examples" / example).read_text()
    for old in sorted(set(HEX.findall(text))):
        text = text.replace(old, uuid.uuid4().hex)
    return json.loads(text)


def _servers_of(objects: Any) -> Iterator[dict[str, Any]]:
    """The instances of a model's objects (their templates left out)."""
    if isinstance(objects, dict):
        header = objects.get("?")
        if isinstance(header, dict) and str(header.get("type", "")).split("/")[0].endswith(
                ("Instance", "KvServer")):
            yield objects
        for key, value in objects.items():
            if key != "template":
                yield from _servers_of(value)
    elif isinstance(objects, list):
        for value in objects:
            yield from _servers_of(value)


def _queues(environment: str, *models: Any) -> dict[str, str]:
    """Each server's agent queue -> its name."""
    return {amqp.agent_queue_name(environment, s["?"]["id"]): s["name"]
            for model in models for s in _servers_of(model)}


def _named(calls: list[str], queues: dict[str, str], stack: str) -> list[str]:
    """``calls`` with each queue named by its server, the stack as STACK."""
    out = []
    for key in calls:
        branch, kind, *scope, count = key.split("|")
        about = "|".join(scope)
        about = "STACK" if about == stack else queues.get(about, about)
        out.append(f"{branch}|{kind}|{about}|{count}")
    return out


def _per_server(calls: list[str]) -> dict[str, list[str]]:
    """The agent calls of each server, in the order they were made."""
    found: dict[str, list[str]] = {}
    for key in calls:
        branch, kind, server, _ = key.split("|")
        if kind == "agent.call":
            found.setdefault(server, []).append(branch)
    return found


def _plans_of(plan: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for entry in plan["plans"]:
        found.setdefault(entry["server"], []).append(entry["name"])
    return found


def _pictured(picture: Path) -> dict[str, list[str]]:
    """The plans on each server's lane of a deploy's picture, in order."""
    found = {}
    for lane in picture.read_text().split('<g class="lane" data-lane="')[1:]:
        name, body = lane.split('"', 1)
        if name != "stack":
            found[name] = re.findall(r'<g class="plan \w+" data-name="([^"]+)"', body)
    return found


def _shape(resources: dict[str, Any] | list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(type, name) of resources, random ids in names as X."""
    items = resources.items() if isinstance(resources, dict) else \
        [(r["name"], {"type": r["type"]}) for r in resources]
    return sorted((body["type"], HEX.sub("X", name)) for name, body in items)


def _deployed_stack(place: Place) -> tuple[str, dict[str, Any]]:
    (stack,) = place.state_model()["Resources"]["stacks"]
    saved = json.loads((place.cloud / "stacks" / stack / "stack.json").read_text())
    return stack, saved["template"]["resources"]


def _check_the_deploy_did_what_the_plan_listed(place: Place, plan: dict[str, Any],
                                              calls: list[str], picture: Path) -> None:
    environment = plan["environment"]["id"]
    stack, resources = _deployed_stack(place)
    (planned_stack,) = plan["stacks"]
    assert planned_stack["before"] == "absent" and planned_stack["after"] == "present"
    assert _shape(planned_stack["added"]) == _shape(resources)
    deployed = _named(calls, _queues(environment, place.state_model()["Objects"]), stack)
    planned = _named(plan["calls"], _queues(environment, plan["model"]),
                     planned_stack["name"])
    assert sorted(planned) == sorted(deployed)
    assert _per_server(planned) == _per_server(deployed)
    assert _plans_of(plan) == _pictured(picture)


def _world(place: Place, environment: str) -> dict[str, Any]:
    """What a plan must leave as it is."""
    config = load_config(str(place.config))
    identities = BrokerIdentities.from_config(config)
    assert identities is not None
    queues = identities.api.request("GET", f"/api/queues/{quoted('/')}?columns=name")
    servers = place.server_ids()
    return {"servers": servers,
            "namespaces": sorted(n for n in (netns.server_namespace(s) for s in servers)
                                 if netns.exists(n)),
            "users": [u for u in identities.users() if f"-e{environment}-" in u],
            "queues": sorted(q["name"] for q in queues if environment in q["name"]),
            "state": place.state.read_bytes(),
            "journal": (place.folder / "state.json.journal").exists(),
            "stacks": sorted(p.name for p in (place.cloud / "stacks").iterdir())}


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Place]:
    here = Place(tmp_path)
    yield here
    if here.state.exists():  # the test failed before its destroy
        subprocess.run([sys.executable, "-m", "murano_engine.cli.main", "destroy", "--state",
                        str(here.state)], capture_output=True, timeout=300, cwd=tmp_path)


def test_hello_web_planned_deployed_then_scaled_in_and_out_in_plans_only(place):
    model = _fresh("hello-web.json")
    environment = model["?"]["id"]
    for count in (3, 1):
        model["applications"][0]["servers"]["numItems"] = count
        (place.folder / f"hello-{count}.json").write_text(json.dumps(model))

    plan = place.plan(str(place.folder / "hello-3.json"))
    names = ["hello-1", "hello-2", "hello-3"]
    assert [s["name"] for s in plan["servers"]["made"]] == names
    assert _plans_of(plan) == {n: ["Install the hello-web service",
                                   "Configure the hello-web service"] for n in names}
    assert not place.cloud.exists() and not place.state.exists()
    calls, picture = place.deploy(place.folder / "hello-3.json")
    _check_the_deploy_did_what_the_plan_listed(place, plan, calls, picture)

    before = _world(place, environment)
    assert len(before["servers"]) == len(before["namespaces"]) == len(before["users"]) == 3
    scaled_in = place.plan(str(place.folder / "hello-1.json"))
    assert scaled_in["outcome"] == "complete"
    ids = {s["name"]: s["openstackId"] for s in _servers_of(place.state_model()["Objects"])}
    assert scaled_in["servers"] == {"made": [], "changed": [], "deleted": [
        {"name": "hello-2", "id": ids["hello-2"]}, {"name": "hello-3", "id": ids["hello-3"]}]}
    assert scaled_in["plans"] == []  # hello-1 is configured already
    assert len(scaled_in["broker"]["users_removed"]) == 2
    assert "Removing 2 servers" in [r["text"] for r in scaled_in["reports"]]

    scaled_out = place.plan("--action", "hello", "scaleOut")
    assert [s["name"] for s in scaled_out["servers"]["made"]] == ["hello-4"]
    assert _plans_of(scaled_out) == {"hello-4": ["Install the hello-web service",
                                                 "Configure the hello-web service"]}
    assert _world(place, environment) == before

    place.engine("destroy")
    assert place.server_ids() == []


def test_linux_cluster_planned_deployed_then_scaled_to_three_in_a_plan_only(place):
    model = _fresh("linux-cluster.json")
    environment = model["?"]["id"]
    example = place.folder / "linux-cluster.json"
    example.write_text(json.dumps(model))
    plan = place.plan(str(example))
    assert [s["name"] for s in plan["servers"]["made"]] == ["kv-1", "kv-2"]
    assert _plans_of(plan) == {
        "kv-1": ["install the key-value service @ kv-1", "start the master @ kv-1",
                 "write the check key on the master @ kv-1"],
        "kv-2": ["install the key-value service @ kv-2", "start a replica @ kv-2",
                 "read the check key from a replica @ kv-2"]}
    calls, picture = place.deploy(example)
    _check_the_deploy_did_what_the_plan_listed(place, plan, calls, picture)

    before = _world(place, environment)
    scaled = place.plan("--action", "kv", "scaleTo", "--arg", "nodeCount=3")
    assert scaled["action"]["args"] == {"nodeCount": 3}
    assert [s["name"] for s in scaled["servers"]["made"]] == ["kv-3"]
    plans = _plans_of(scaled)
    assert plans["kv-3"] == ["install the key-value service @ kv-3", "start a replica @ kv-3",
                             "read the check key from a replica @ kv-3"]
    assert plans["kv-1"] == ["write the check key on the master @ kv-1"]
    master = scaled["model"]["applications"][0]["masterAddress"]
    start = [p for p in scaled["plans"] if p["name"] == "start a replica @ kv-3"][0]
    assert start["parameters"]["master"] == master  # the deployed master, known
    assert any("read back from 2 replica(s)" in r["text"] for r in scaled["reports"])
    assert _world(place, environment) == before

    place.engine("destroy")
    assert place.server_ids() == []
    assert kv_nodes.namespaces_left(before["servers"], set()) == []
