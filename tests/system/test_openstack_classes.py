"""io.murano.Project and User, io.murano.system.MetadefBrowser and MistralClient, driven
from MuranoPL against a fake keystone, Glance and Mistral on loopback (and with no
OpenStack configured at all)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from murano_engine.dsl import values
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.config import load_config
from murano_engine.engine.interpreter import build_interpreter
from murano_engine.engine.journal import Journal

DRIVER = """\
Namespaces:
  =: test.openstack
  std: io.murano
  sys: io.murano.system

Name: Driver

Properties:
  env:
    Contract: $.class(std:Environment)
    Usage: Runtime

Methods:
  .init:
    Body:
      - $.env: new(std:Environment, name => 'os', region => 'RegionOne')

  people:
    Body:
      - Return:
          project: std:Project.getCurrent()
          owner: std:Project.getEnvironmentOwner()
          user: std:User.getCurrent()
          userOwner: std:User.getEnvironmentOwner()

  browse:
    Arguments:
      - tag:
          Contract: $.string()
      - resourceType:
          Contract: $.string()
    Body:
      - $browser: new(sys:MetadefBrowser, $.env.regions.get(''))
      - Return:
          applies: $browser.canBeAppliedTo($tag, $resourceType)
          namespaces: $browser.getNamespaces($resourceType).select($.namespace)
          again: $browser.canBeAppliedTo($tag, $resourceType)

  mistral:
    Arguments:
      - definition:
          Contract: $.string()
      - name:
          Contract: $.string()
      - timeout:
          Contract: $.int()
    Body:
      - $client: new(sys:MistralClient, $.env)
      - $client.upload($definition)
      - Return: $client.run($name, $timeout, inputs => dict(who => world),
          params => dict(env => dict(level => 3)))

  mistralError:
    Arguments:
      - name:
          Contract: $.string()
    Body:
      - Try:
          - new(sys:MistralClient, $.env).run($name, timeout => 1)
        Catch:
          - With: 'murano.engine.system.workflowclient.MistralError'
            As: e
            Do:
              - Return: $e.message
      - Return: null
"""

WORKFLOW = """\
version: '2.0'
greet:
  input: [who]
  tasks:
    say:
      action: std.echo output=<% $.who %>
"""


@pytest.fixture(scope="module")
def loader(tmp_path_factory: pytest.TempPathFactory) -> PackageLoader:
    root = tmp_path_factory.mktemp("packages")
    package = root / "test.openstack"
    (package / "Classes").mkdir(parents=True)
    (package / "manifest.yaml").write_text(
        "Format: 1.4\nType: Library\nFullName: test.openstack\n"
        "Classes:\n  test.openstack.Driver: Driver.yaml\n")
    (package / "Classes" / "Driver.yaml").write_text(DRIVER)
    return PackageLoader([root], build_interpreter())


def config(tmp_path: Path, text: str = "") -> Any:
    path = tmp_path / "engine.ini"
    path.write_text(textwrap.dedent(text))
    return load_config(path, {})


def keystone(openstack: Any) -> str:
    return f"""
        [heat]
        auth_url = {openstack.url}/identity/v3
        username = alice
        password = secret
        project_name = demo
        """


def run(loader: PackageLoader, method: str, *args: Any, services: dict[str, Any]) -> Any:
    executor = Executor(loader, services=services)
    driver = executor.new_object(loader.find_class("test.openstack.Driver"))
    return values.thaw(executor.call(driver, method, args))


def fields(obj: Any, *names: str) -> tuple:
    return tuple(obj.props.get(name) if hasattr(obj, "props") else obj[name] for name in names)


# -- Project and User -------------------------------------------------------------------

def test_without_keystone_the_task_ids_are_all_there_is(loader, tmp_path):
    task = {"project_id": "p-run", "user_id": "u-run",
            "model": {"project_id": "p-owner", "user_id": "u-owner"}}
    found = run(loader, "people", services={"config": config(tmp_path), "task": task})
    assert fields(found["project"], "id", "name", "domain", "extra") == (
        "p-run", "p-run", "Default", {})
    assert fields(found["owner"], "id", "name") == ("p-owner", "p-owner")
    assert fields(found["user"], "id", "name", "domain") == ("u-run", "u-run", "Default")
    assert fields(found["userOwner"], "id") == ("u-owner",)
    assert found["project"].murano_class.name == "io.murano.Project"
    assert found["user"].murano_class.name == "io.murano.User"


def test_with_keystone_the_fields_are_keystones(loader, tmp_path, openstack):
    task = {"project_id": "p1", "user_id": "u1", "model": {"project_id": "p1",
                                                           "user_id": "u1"}}
    found = run(loader, "people", services={"config": config(tmp_path, keystone(openstack)),
                                            "task": task})
    project, user = found["project"], found["user"]
    assert fields(project, "id", "name", "domain", "description") == (
        "p1", "demo", "d1", "the demo project")
    assert values.thaw(project.props["extra"]) == {"tags": ["blue"]}
    assert fields(user, "id", "name", "domain", "email") == (
        "u1", "alice", "d1", "alice@example.org")
    assert user.props["extra"] == {"password_expires_at": None}
    assert ("GET", "/identity/v3/projects/p1", "") in openstack.requests


def test_with_keystone_and_no_ids_the_engines_own_project_and_user(loader, tmp_path, openstack):
    found = run(loader, "people", services={"config": config(tmp_path, keystone(openstack))})
    assert found["project"].props["name"] == "demo"
    assert found["user"].props["name"] == "alice"


def test_an_unknown_project_is_a_clear_error(loader, tmp_path, openstack):
    task = {"project_id": "nope", "user_id": "u1", "model": {}}
    with pytest.raises(Exception, match=r"keystone project nope: .*/projects/nope answered 404"):
        run(loader, "people", services={"config": config(tmp_path, keystone(openstack)),
                                        "task": task})


# -- MetadefBrowser ---------------------------------------------------------------------

def test_metadef_browser_reads_every_page_and_caches(loader, tmp_path, openstack):
    openstack.namespaces["OS::Nova::Server"] = [{"namespace": "ns-a"}, {"namespace": "ns-b"}]
    openstack.objects["ns-a"] = [{"name": "cpu", "properties": {"hw_cpu_policy": {}}}]
    openstack.objects["ns-b"] = [{"name": "mem", "properties": {"hw_mem_page_size": {}}},
                                 {"name": "rng", "properties": {"hw_rng_model": {}}}]
    openstack.page_size = 1
    settings = config(tmp_path, f"[glance]\nurl = {openstack.url}/image\n")
    found = run(loader, "browse", "hw_rng_model", "OS::Nova::Server",
                services={"config": settings})
    assert found == {"applies": True, "namespaces": ["ns-a", "ns-b"], "again": True}
    listed = [path for method, path, _ in openstack.requests if method == "GET"]
    assert listed.count("/image/v2/metadefs/namespaces") == 2  # two pages, read once
    assert listed.count("/image/v2/metadefs/namespaces/ns-b/objects") == 2
    assert run(loader, "browse", "hw_video_ram", "OS::Nova::Server",
               services={"config": settings})["applies"] is False


def test_metadef_browser_finds_glance_in_the_catalog(loader, tmp_path, openstack):
    openstack.namespaces["OS::Cinder::Volume"] = [{"namespace": "vol"}]
    openstack.objects["vol"] = [{"name": "qos", "properties": {"qos": {}}}]
    found = run(loader, "browse", "qos", "OS::Cinder::Volume",
                services={"config": config(tmp_path, keystone(openstack))})
    assert found["applies"] is True


def test_without_glance_there_are_no_definitions(loader, tmp_path):
    found = run(loader, "browse", "hw_cpu_policy", "OS::Nova::Server",
                services={"config": config(tmp_path)})
    assert found == {"applies": False, "namespaces": [], "again": False}


class MemoryStore:
    """A journal store in memory: each run made with it replays what earlier ones wrote."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def load(self) -> list[dict[str, Any]]:
        return list(self.entries)

    def append(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)

    def close(self) -> None:
        pass


def journaled(loader: PackageLoader, store: MemoryStore, method: str, *args: Any,
              settings: Any) -> Any:
    executor = Executor(loader, services={"config": settings}, outside=Journal(store))
    driver = executor.new_object(loader.find_class("test.openstack.Driver"))
    return values.thaw(executor.call(driver, method, args))


def test_glance_answers_are_journaled(loader, tmp_path, openstack):
    openstack.namespaces["OS::Nova::Server"] = [{"namespace": "ns-a"}]
    openstack.objects["ns-a"] = [{"name": "cpu", "properties": {"hw_cpu_policy": {}}}]
    settings = config(tmp_path, f"[glance]\nurl = {openstack.url}/image\n")
    store = MemoryStore()
    args = ("hw_cpu_policy", "OS::Nova::Server")
    assert journaled(loader, store, "browse", *args, settings=settings)["applies"] is True
    reads = len(openstack.requests)
    assert journaled(loader, store, "browse", *args, settings=settings)["applies"] is True
    assert len(openstack.requests) == reads  # the replay asked Glance nothing


# -- MistralClient ----------------------------------------------------------------------

def test_mistral_without_configuration_is_a_clear_error(loader, tmp_path):
    message = run(loader, "mistralError", "greet", services={"config": config(tmp_path)})
    assert message.startswith("no Mistral is configured: set [mistral] url")


def test_mistral_uploads_runs_and_returns_the_workflow_output(loader, tmp_path, openstack):
    openstack.final_output = {"greeting": "hello world", "openstack": {"x": 1},
                              "__execution": {"id": "e"}, "task": {}}
    settings = config(tmp_path, f"[mistral]\nurl = {openstack.url}/workflow/v2\n"
                                "poll_interval = 0.01\n")
    found = run(loader, "mistral", WORKFLOW, "greet", 30, services={"config": settings})
    assert found == {"greeting": "hello world"}
    assert openstack.workflows == ["greet"]
    (execution,) = openstack.executions.values()
    assert execution["input"] == '{"who": "world"}'
    assert execution["params"] == '{"env": {"level": 3}}'
    assert execution["state"] == "SUCCESS"


def test_mistral_through_the_keystone_catalog_with_a_token(loader, tmp_path, openstack):
    settings = config(tmp_path, keystone(openstack) + "[mistral]\npoll_interval = 0.01\n")
    openstack.final_output = {"done": True}
    assert run(loader, "mistral", WORKFLOW, "greet", 30,
               services={"config": settings}) == {"done": True}
    assert any(path == "/workflow/v2/executions" for _, path, _ in openstack.requests)


def test_mistral_timeout_zero_returns_the_execution_id(loader, tmp_path, openstack):
    settings = config(tmp_path, f"[mistral]\nurl = {openstack.url}/workflow/v2\n")
    assert run(loader, "mistral", WORKFLOW, "greet", 0, services={"config": settings}) == "ex-1"
    assert openstack.executions["ex-1"]["polls"] == 0


@pytest.mark.parametrize(
    ("state", "polls", "expected"),
    [("ERROR", 2, "Mistral execution ex-1 ended in ERROR"),
     ("SUCCESS", 10 ** 6, "did not finish within 1 s (state RUNNING)")],
    ids=["error", "timeout"])
def test_mistral_failures_are_mistral_errors(loader, tmp_path, openstack, state, polls,
                                             expected):
    openstack.workflows.append("greet")
    openstack.final_state, openstack.polls_to_finish = state, polls
    settings = config(tmp_path, f"[mistral]\nurl = {openstack.url}/workflow/v2\n"
                                "poll_interval = 0.2\n")
    assert expected in run(loader, "mistralError", "greet", services={"config": settings})


def test_mistral_unknown_workflow_names_mistrals_answer(loader, tmp_path, openstack):
    settings = config(tmp_path, f"[mistral]\nurl = {openstack.url}/workflow/v2\n")
    message = run(loader, "mistralError", "missing", services={"config": settings})
    assert "start of workflow missing failed" in message and "Workflow not found" in message


def test_a_resumed_run_waits_for_the_execution_it_started(loader, tmp_path, openstack):
    settings = config(tmp_path, f"[mistral]\nurl = {openstack.url}/workflow/v2\n"
                                "poll_interval = 0.01\n")
    openstack.final_output = {"n": 1}
    store = MemoryStore()
    # A run that ended after starting the execution (its journal holds the upload and
    # the start) ...
    assert journaled(loader, store, "mistral", WORKFLOW, "greet", 0, settings=settings) == "ex-1"
    assert any("mistral.start" in entry["k"] for entry in store.entries)
    # ... run again (here asked to wait): nothing is uploaded or started again, and it
    # waits for the execution the journal names.
    assert journaled(loader, store, "mistral", WORKFLOW, "greet", 30,
                     settings=settings) == {"n": 1}
    assert list(openstack.executions) == ["ex-1"] and openstack.workflows == ["greet"]
    assert openstack.executions["ex-1"]["state"] == "SUCCESS"
