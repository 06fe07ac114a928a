"""``murano-engine plan`` with the real engine and real packages, and nothing made.

Every plan here runs on a local cloud folder that does not exist, with the agents'
broker and its management API on ports where nothing listens: a plan that made a
folder, a key, a stack, a broker user or sent a plan would fail or leave something.
The servers of a deploy are in tests/apps/test_plan_e2e.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from murano_engine.clouds.base import Stack
from murano_engine.clouds.recording import (
    LocalRecordingCloud,
    NoStacks,
    RecordingCloud,
    is_placeholder,
    planned_outputs,
    template_diff,
)

REPO = Path(__file__).resolve().parents[2]
PACKAGES = REPO / "dsl_packages"
BRANCHES = Path(__file__).parent / "packages"


def _config(tmp_path: Path, **sections: dict[str, str]) -> Path:
    """A configuration whose cloud folder does not exist and whose broker is nowhere."""
    options = {"local_cloud": {"state_dir": str(tmp_path / "cloud")},
               "rabbitmq": {"host": "127.0.0.1", "port": "9",
                            "management_url": "http://guest:guest@127.0.0.1:9"},
               "quotas": {"servers": "-1"}, **sections}
    path = tmp_path / "engine.ini"
    path.write_text("".join(f"[{name}]\n" + "".join(f"{k} = {v}\n" for k, v in opts.items())
                            for name, opts in options.items()))
    return path


def _plan(tmp_path: Path, *args: str, packages: Path = PACKAGES, code: int = 0,
          config: Path | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", "plan", *args, "-l", str(packages),
         "--config", str(config or _config(tmp_path)), "--json"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == code, done.stdout + done.stderr
    return json.loads(done.stdout)


def _per_server(plan: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for entry in plan["plans"]:
        found.setdefault(entry["server"], []).append(entry["name"])
    return found


def _added(plan: dict[str, Any]) -> list[tuple[str, str]]:
    (stack,) = plan["stacks"]
    return [(r["type"], r["name"]) for r in stack["added"]]


def test_a_plan_of_hello_web_from_nothing_lists_what_a_deploy_makes_and_makes_nothing(
        tmp_path):
    plan = _plan(tmp_path, str(REPO / "examples" / "hello-web.json"))
    assert plan["outcome"] == "complete" and plan["failure"] is None
    added = _added(plan)
    types = [kind for kind, _ in added]
    assert {("OS::Nova::Server", "hello-1"), ("OS::Nova::Server", "hello-2")} <= set(added)
    assert types.count("OS::Neutron::Net") == types.count("OS::Neutron::Subnet") == 1
    assert sorted(n for k, n in added if k == "OS::Neutron::Port")[0].endswith("-hello-1")
    assert types.count("OS::Neutron::Port") == 2
    assert [s["name"] for s in plan["servers"]["made"]] == ["hello-1", "hello-2"]
    assert plan["servers"]["made"][0] == {"name": "hello-1", "flavor": "m1.small",
                                          "image": "debian-12"}
    assert _per_server(plan) == {
        server: ["Install the hello-web service", "Configure the hello-web service"]
        for server in ("hello-1", "hello-2")}
    configure = [p for p in plan["plans"] if p["name"].startswith("Configure")][0]
    assert configure["scripts"] == ["configure: configure.sh (common.sh)"]
    assert configure["parameters"]["port"] == 8080
    assert is_placeholder(configure["parameters"]["host"])  # an address the cloud gives
    assert [p["action"] for p in plan["pushes"]] == ["create", "update", "update"]
    assert len(plan["broker"]["users_made"]) == 2
    texts = [r["text"] for r in plan["reports"]]
    assert "Creating 2 servers" in texts and texts[-1].endswith("is deployed (2 units)")
    # nothing made: no cloud folder (no stack, lock, signing key), no state, no journal
    assert sorted(p.name for p in tmp_path.iterdir()) == ["engine.ini"]


def test_the_text_and_the_picture_say_the_same(tmp_path):
    config = _config(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", "plan",
         str(REPO / "examples" / "linux-cluster.json"), "-l", str(PACKAGES), "--config",
         str(config), "--report", str(tmp_path / "plan.html")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("plan of the deploy of environment 0f6b2e4c") \
        and lines[0].endswith("(linux-cluster): complete")
    assert "server kv-1 is made (m1.small, debian-12)" in lines
    kv1 = lines.index("  kv-1:")
    assert [line.strip() for line in lines[kv1 + 1:kv1 + 10:3]] == [
        "1. install the key-value service @ kv-1", "2. start the master @ kv-1",
        "3. write the check key on the master @ kv-1"]
    assert lines[-2:] == ["nothing was made, changed or sent",
                          f"plan picture written to {tmp_path / 'plan.html'}"]
    page = (tmp_path / "plan.html").read_text()
    assert page.count('<g class="plan planned declared"') == 6
    assert page.count('class="stack-mark"') == 2
    assert '<g class="lane" data-lane="kv-2">' in page


def test_a_branch_needing_an_undeclared_result_stops_and_the_others_go_on(tmp_path):
    """Server ``left`` asks for a result no template declares: its pselect branch stops
    there, with what it depends on; ``right``'s branch, and what follows the pselect,
    are planned."""
    model = {"?": {"id": "7d1c7e2a9b4f4e0c8a6d3b2f1e0a9d00", "type": "io.murano.Environment"},
             "name": "branches",
             "defaultNetworks": {"environment": {"?": {
                 "id": "7d1c7e2a9b4f4e0c8a6d3b2f1e0a9d01",
                 "type": "io.murano.resources.NeutronNetwork"}, "name": "branches-net"},
                 "flat": None},
             "applications": [{"?": {"id": "7d1c7e2a9b4f4e0c8a6d3b2f1e0a9d02",
                                     "type": "com.example.planbranches.TwoBranches"},
                               "servers": [_server("left", "d03"), _server("right", "d04")]}]}
    (tmp_path / "model.json").write_text(json.dumps(model))
    plan = _plan(tmp_path, str(tmp_path / "model.json"), packages=BRANCHES)
    assert plan["outcome"] == "stopped"
    assert _per_server(plan) == {"left": ["Ask the server", "Tell the server"],
                                 "right": ["Tell the server", "Tell the server"]}
    left = [p for p in plan["plans"] if p["server"] == "left"]
    assert [p["result"] for p in left] == ["unknown", "declared"]
    assert left[1]["parameters"] == {"step": "after both branches"}  # not the answer's
    assert [p["parameters"]["step"] for p in plan["plans"] if p["server"] == "right"] == \
        ["first", "second"]
    (stop,) = plan["stops"]
    assert stop["text"] == "then: depends on the result of `Ask the server` on `left`"
    assert stop["order"] == left[0]["order"]
    # the two branches side by side, the last plan after both
    right = [p for p in plan["plans"] if p["server"] == "right"]
    assert left[0]["start"] == right[0]["start"] and left[1]["start"] >= right[1]["end"]


def _server(name: str, suffix: str) -> dict[str, Any]:
    return {"?": {"id": f"7d1c7e2a9b4f4e0c8a6d3b2f1e0a9{suffix}",
                  "type": "io.murano.resources.LinuxMuranoInstance"},
            "name": name, "image": "debian-12", "flavor": "m1.tiny"}


def test_a_shipped_package_without_its_declared_result_stops_where_it_reads_it(tmp_path):
    """ReplicatedKV reads the master's address from its start script: without the
    declared result the plan stops there, after what did not need it."""
    packages = tmp_path / "packages"
    shutil.copytree(PACKAGES / "io.murano.apps.linux.ReplicatedKV",
                    packages / "io.murano.apps.linux.ReplicatedKV")
    start = packages / "io.murano.apps.linux.ReplicatedKV" / "Resources" / "Start.template"
    text = start.read_text()
    assert "DryRunResult:" in text
    start.write_text("".join(line for line in text.splitlines(keepends=True)
                             if not line.startswith("DryRunResult:")))
    plan = _plan(tmp_path, str(REPO / "examples" / "linux-cluster.json"), packages=packages)
    assert plan["outcome"] == "stopped"
    assert _per_server(plan) == {
        "kv-1": ["install the key-value service @ kv-1", "start the master @ kv-1"],
        "kv-2": ["install the key-value service @ kv-2"]}
    assert [s["text"] for s in plan["stops"]] == [
        "then: depends on the result of `start the master @ kv-1` on `kv-1`"]
    assert [r["text"] for r in plan["reports"]][-1] == "kv - stage 4/6 (start the master)"


def test_a_hostile_package_is_stopped_by_the_budgets_as_its_deploy_is(tmp_path):
    """The API tests' Stepper counting to 500,000 in rounds, under a step budget."""
    config = _config(tmp_path, engine={"task_step_limit": "200000"})
    model = {"?": {"id": "8d1c7e2a9b4f4e0c8a6d3b2f1e0a9e00",
                   "type": "com.example.apitest.Environment"},
             "name": "spin", "applications": [{"?": {"id": "8d1c7e2a9b4f4e0c8a6d3b2f1e0a9e01",
                                                     "type": "com.example.apitest.Stepper"},
                                               "name": "spin", "steps": 1, "pause": 0,
                                               "busy": 1000}]}
    (tmp_path / "spin.json").write_text(json.dumps(model))
    apitest = REPO / "tests" / "api" / "packages"
    plan = _plan(tmp_path, str(tmp_path / "spin.json"), packages=apitest, code=1,
                 config=config)
    assert plan["outcome"] == "failed"
    assert plan["failure"]["names"] == ["murano.dsl.exceptions.StepBudgetExceededError"]
    assert "step budget of 200000 steps is spent" in plan["failure"]["message"]
    deployed = subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", "deploy", str(tmp_path / "spin.json"),
         "-l", str(apitest), "--config", str(config), "--state", str(tmp_path / "s.json")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert deployed.returncode == 1
    assert "step budget of 200000 steps is spent" in deployed.stdout + deployed.stderr


def test_an_action_is_planned_on_the_state_files_model_with_its_argument(tmp_path):
    """ReplicatedKV's scaleTo(3) on the state a deploy of two nodes left: a third server
    and its plans; the state file is read, not written."""
    state = tmp_path / "state.json"
    state.write_text(json.dumps({**_deployed_kv(), "Resources": {}, "Run": {
        "packages": [str(PACKAGES)], "config": str(_config(tmp_path))}}))
    before = state.read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", "plan", "--state", str(state),
         "--action", "kv", "scaleTo", "--arg", "nodeCount=3", "--json"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["action"]["method"] == "scaleTo" and plan["action"]["args"] == {"nodeCount": 3}
    assert [s["name"] for s in plan["servers"]["made"]] == ["kv-1", "kv-2", "kv-3"]
    assert _per_server(plan)["kv-3"][:2] == ["install the key-value service @ kv-3",
                                             "start a replica @ kv-3"]
    assert state.read_bytes() == before
    assert not (tmp_path / "state.json.journal").exists()


def _deployed_kv() -> dict[str, Any]:
    """The model of examples/linux-cluster.json as a state holds it before its deploy."""
    return {"Objects": json.loads((REPO / "examples" / "linux-cluster.json").read_text()),
            "ObjectsCopy": None, "Attributes": []}


# -- the recording cloud --------------------------------------------------------------

SERVER = {"type": "OS::Nova::Server", "properties": {"flavor": "m1.small",
                                                     "image": "debian-12"}}


def test_a_template_diff_names_the_properties_that_change():
    before = {"resources": {"a": SERVER, "b": {"type": "OS::Neutron::Net"},
                            "c": {"type": "OS::Neutron::Port"}}}
    after = {"resources": {
        "a": {**SERVER, "properties": {"flavor": "m1.large", "image": "debian-12"},
              "depends_on": ["b"]},
        "b": {"type": "OS::Neutron::Net"}, "d": {"type": "OS::Cinder::Volume"}}}
    assert template_diff(before, after) == {
        "added": [{"name": "d", "type": "OS::Cinder::Volume"}],
        "changed": [{"name": "a", "type": "OS::Nova::Server", "properties": ["flavor"],
                     "other": ["depends_on"]}],
        "removed": [{"name": "c", "type": "OS::Neutron::Port"}]}
    assert template_diff(None, None) == {"added": [], "changed": [], "removed": []}


def test_outputs_are_kept_where_nothing_they_name_is_new_else_known_after_apply():
    template = {"resources": {"old": SERVER, "new": SERVER},
                "outputs": {"kept": {"value": {"get_attr": ["old", "first_address"]}},
                            "fresh": {"value": {"get_attr": ["new", "addresses", "net"]}},
                            "param": {"value": {"get_param": "size"}}},
                "parameters": {"size": {"type": "number", "default": 3}}}
    current = Stack("s", "id", "CREATE_COMPLETE", outputs={"kept": "10.0.0.5"},
                    template={"resources": {"old": SERVER},
                              "outputs": {"kept": template["outputs"]["kept"]}})
    outputs = planned_outputs("s", template, {}, {}, current)
    assert outputs["kept"] == "10.0.0.5" and outputs["param"] == 3
    (address,) = outputs["fresh"]
    assert address["addr"] == "(known after apply: address of new on net)"


def test_pushes_change_the_plan_only_and_a_quota_refuses_as_the_cloud_would():
    changes: list[dict[str, Any]] = []
    cloud = RecordingCloud(NoStacks(), changes.append)
    cloud.create("s", {"resources": {"a": SERVER}})
    assert cloud.get("s").template == {"resources": {"a": SERVER}}
    cloud.update("s", {"resources": {}})
    cloud.delete("s")
    assert cloud.get("s") is None
    assert [(c["action"], c["servers"]["made"], c["servers"]["deleted"]) for c in changes] == [
        ("create", [{"name": "a", "flavor": "m1.small", "image": "debian-12"}], []),
        ("update", [], [{"name": "a", "id": None}]), ("delete", [], [])]

    class Counted(NoStacks):
        def servers_by_stack(self) -> dict[str, int]:
            return {"other": 2}

    from murano_engine.clouds.local.quota import QuotaExceeded
    limited = LocalRecordingCloud(Counted(), changes.append, server_quota=3)
    with pytest.raises(QuotaExceeded, match="would take the project's servers to 4"):
        limited.create("s", {"resources": {"a": SERVER, "b": SERVER}})
    assert limited.get("s") is None


def test_every_shipped_plan_template_declares_its_dry_run_result():
    templates = sorted(PACKAGES.glob("*/Resources/*.template"))
    assert len(templates) > 20
    missing = [str(t.relative_to(PACKAGES)) for t in templates
               if "\nDryRunResult:" not in t.read_text()]
    assert missing == []


def test_a_windows_domain_is_planned_through_its_declared_results(tmp_path):
    """ActiveDirectory reads the DNS address of its primary controller from a script; the
    declared result (the addresses asked for) lets the secondary's joining be planned."""
    answers = {"appConfiguration": {
        "name": "corp.example.com", "dcInstances": 2, "adminAccountName": "Administrator",
        "adminPassword": "P@ssw0rd-1234", "recoveryPassword": "P@ssw0rd-5678",
        "assignFloatingIP": False, "unitNamingPattern": "dc-#"},
        "instanceConfiguration": {"flavor": "m1.medium", "osImage": "windows-2019",
                                  "keyPair": "", "availabilityZone": "nova"}}
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    made = subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", "ui-model",
         str(PACKAGES / "io.murano.windows.ActiveDirectory" / "UI" / "ui.yaml"),
         str(tmp_path / "answers.json")], capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    model = {"?": {"id": "9d1c7e2a9b4f4e0c8a6d3b2f1e0a9f00", "type": "io.murano.Environment"},
             "name": "ad", "defaultNetworks": {"environment": {"?": {
                 "id": "9d1c7e2a9b4f4e0c8a6d3b2f1e0a9f01",
                 "type": "io.murano.resources.NeutronNetwork"}, "name": "ad-net"},
                 "flat": None},
             "applications": [json.loads(made.stdout)]}
    (tmp_path / "ad.json").write_text(json.dumps(model))
    plan = _plan(tmp_path, str(tmp_path / "ad.json"))
    assert plan["outcome"] == "complete" and plan["stops"] == []
    dc2 = [p for p in plan["plans"] if p["server"] == "dc-2"]
    join = dc2[1]
    assert join["name"] == "join domain corp.example.com @ dc-2"
    # the primary's DNS address: its declared result, the address the cloud gives it
    assert join["parameters"]["DnsServer"].startswith("(known after apply: address of dc-1 on ")
    assert join["parameters"]["Password"] == "(hidden)"
    assert dc2[-1]["name"] == "wait for the agent after promote a secondary controller of " \
        "corp.example.com @ dc-2"


def test_a_workflow_service_is_not_called_and_its_result_stops_the_branch(tmp_path):
    """A Mistral upload and run: neither is made (no Mistral is even configured); the run
    waits for the workflow's output, so it stops there."""
    model = {"?": {"id": "6d1c7e2a9b4f4e0c8a6d3b2f1e0a9d00", "type": "io.murano.Environment"},
             "name": "wf", "applications": [{"?": {
                 "id": "6d1c7e2a9b4f4e0c8a6d3b2f1e0a9d02",
                 "type": "com.example.planbranches.Workflow"}}]}
    (tmp_path / "wf.json").write_text(json.dumps(model))
    plan = _plan(tmp_path, str(tmp_path / "wf.json"), packages=BRANCHES)
    assert plan["outcome"] == "stopped"
    assert [(c["kind"], c["name"]) for c in plan["elsewhere"]] == [
        ("mistral.upload", ""), ("mistral.start", "hello")]
    assert [s["text"] for s in plan["stops"]] == [
        "then: depends on the result of `hello` on `Mistral`"]
    assert [r["text"] for r in plan["reports"]] == ["the workflow is uploaded"]


def test_a_plan_imports_nothing_that_reaches_a_broker_a_sandbox_or_a_key(tmp_path: Path):
    """A plan makes nothing: kombu, the local cloud's sandboxes, cryptography and
    http.client are not imported (they cost a 50-server plan a quarter of its time)."""
    import os

    probe = ("import atexit, sys, runpy\n"
             "sys.argv = ['murano-engine', 'plan', sys.argv[1], '-l', sys.argv[2]]\n"
             "atexit.register(lambda: print(sorted({m.split('.')[0] if not m.startswith("
             "'murano_engine') else m for m in sys.modules if m.startswith(("
             "'kombu', 'amqp', 'cryptography', 'http.client', 'email', "
             "'murano_engine.clouds.local.sandbox', 'murano_engine.clouds.local.guest', "
             "'murano_engine.clouds.local.cloud', 'murano_common.amqp'))})))\n"
             "runpy.run_module('murano_engine.cli.main', run_name='__main__')\n")
    done = subprocess.run(
        [sys.executable, "-c", probe, str(REPO / "examples" / "hello-web.json"),
         str(REPO / "dsl_packages")], capture_output=True, text=True, cwd=tmp_path,
        env=dict(os.environ, MURANO_LOCAL_CLOUD_STATE_DIR=str(tmp_path / "cloud")))
    assert "nothing was made, changed or sent" in done.stdout, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
