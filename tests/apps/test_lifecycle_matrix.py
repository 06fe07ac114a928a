"""Every shipped application's whole life on the local cloud, by the CLI and by the API.

For each package of ``dsl_packages/`` and each example of ``examples/`` that
deploys on the local cloud: deploy, run each action that needs no input,
(HelloWeb) scale to zero servers, remove the application, deploy it again (as
the wizard makes it: ``ui-model`` or the API's ``ui/model``, with a name of its
own, which its reports then show), delete the environment; afterwards nothing
it made is left (:mod:`tests.leftovers`). Once with ``murano-engine``, once
with python-muranoclient's ``murano`` against one ``murano-api`` shared by the
API cases.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from murano_engine.api.catalog import pack_folder
from murano_engine.clouds.local.sandbox import missing_for_namespaces
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter
from tests.api.conftest import ApiServer
from tests.leftovers import REGION_STACK_PREFIX, Footprint, leftovers

REPO = Path(__file__).resolve().parents[2]
DSL = REPO / "dsl_packages"
EXAMPLES = REPO / "examples"
REPORT = re.compile(r"^\[\s*[\d.]+s[^\]]*\]\s+(\w+)\s+[0-9a-f]{8} (.*)$")
PROJECT = "proj-a"  # the project of the API's token tok-a

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or bool(missing_for_namespaces()),
    reason="the applications' servers are sandboxes (Linux namespaces, root)")


@dataclass(frozen=True)
class Case:
    """One application as an example environment deploys it."""

    name: str
    model: Path  # an environment with the application as its only one
    package: Path  # the application's package folder
    folders: tuple[Path, ...]  # -l folders
    #: answers to the package's UI for the wizard-made copy (None: it has no UI)
    answers: dict[str, dict[str, Any]] | None = None
    #: the report line that shows the name of a wizard-made copy ("{name}" in it)
    named_report: str = ""
    #: the property path (in the application) of its number of servers, set to 0 to
    #: scale to zero (None: it has no such number, or needs at least one server)
    server_count: tuple[str, ...] | None = None
    #: whether the application has a stack of its own (a HOT package)
    own_stack: bool = False

    @property
    def app(self) -> dict[str, Any]:
        return json.loads(self.model.read_text())["applications"][0]


CASES = [
    Case("hello-web", EXAMPLES / "hello-web.json", DSL / "io.murano.apps.linux.HelloWeb",
         (DSL,),
         answers={"appConfiguration": {"greeting": "Hi", "port": 8080, "nodeCount": 1,
                                       "scaleFactor": 1},
                  "instanceConfiguration": {"namePattern": "greeter-{0}",
                                            "osImage": "debian-12", "flavor": "m1.small"}},
         named_report="Installing {name}", server_count=("servers", "numItems")),
    Case("linux-cluster", EXAMPLES / "linux-cluster.json",
         DSL / "io.murano.apps.linux.ReplicatedKV", (DSL,),
         answers={"appConfiguration": {"name": "kvw", "nodeCount": 1, "basePort": 18700},
                  "instanceConfiguration": {"osImage": "debian-12", "flavor": "m1.small"}}),
    Case("hot-store", EXAMPLES / "hot-store.json", EXAMPLES / "hot-store", (EXAMPLES,),
         own_stack=True),
]
#: what is shipped but does not deploy on the local cloud, and why
NOT_ON_THE_LOCAL_CLOUD = {
    "io.murano.windows.ActiveDirectory": "Windows servers (PowerShell plans)",
    "io.murano.windows.FailoverCluster": "Windows servers (PowerShell plans)",
    "io.murano.windows.SqlServerCluster": "Windows servers (PowerShell plans)",
    "examples.hello": "no environment: a class for `murano-engine run`",
}
NAME = "greeter"  # the name typed in the wizard


def _loader() -> PackageLoader:
    return PackageLoader([DSL, EXAMPLES], build_interpreter())


def _actions(app_class: str) -> tuple[str, ...]:
    """The application's actions (public methods) whose arguments all have defaults."""
    cls = _loader().find_class(app_class)
    return tuple(sorted({m.name for c in cls.init_order() for m in c.methods.values()
                         if m.scope == "Public" and all(a.has_default for a in m.arguments)}))


def test_the_leftover_check_sees_a_server_broker_user(tmp_path):
    """A broker user minted for a server of the footprint counts as left until revoked."""
    from murano_engine.engine.config import load_config
    from murano_engine.messaging.identities import BrokerIdentities, identity_name

    identities = BrokerIdentities.from_config(load_config(None, environ={}))
    queue = f"e{uuid.uuid4().hex}-h{uuid.uuid4().hex}"
    results = f"-execution-results-{uuid.uuid4().hex[:8]}"
    footprint = Footprint(tmp_path, queues={queue})
    identities.mint(queue, results)
    try:
        assert f"broker user {identity_name(queue)}" in leftovers(footprint)
    finally:
        identities.revoke(queue)
        identities.remove_exchange(results)
    assert leftovers(footprint) == []


def test_the_matrix_holds_every_shipped_package_and_example():
    loader = _loader()
    deployed = {c.app["?"]["type"] for c in CASES}
    shipped = {name for name in loader.packages
               if (DSL / name).is_dir() or any(p.name == name or _full_name(p) == name
                                                for p in EXAMPLES.iterdir() if p.is_dir())}
    assert shipped == deployed | set(NOT_ON_THE_LOCAL_CLOUD)
    assert {c.model for c in CASES} == set(EXAMPLES.glob("*.json"))


def _full_name(folder: Path) -> str | None:
    manifest = folder / "manifest.yaml"
    if not manifest.exists():
        return None
    found = re.search(r"^FullName:\s*(\S+)", manifest.read_text(), re.M)
    return found.group(1) if found else None


def _reports(output: str) -> list[str]:
    return [m.group(2) for m in map(REPORT.match, output.splitlines()) if m]


def _running_once(output: str) -> None:
    running = [r for r in _reports(output) if r.endswith(" is running")]
    assert len(running) == len(set(running)), output


def _wizard_app(case: Case, tmp: Path) -> dict[str, Any]:
    """The application as ``murano-engine ui-model`` makes it from the case's answers."""
    answers = copy.deepcopy(case.answers or {})
    # the package's own name field where it has one (the wizard then adds none), else
    # the application name field the wizard adds to the last form
    own = next((form for form, values in answers.items() if "name" in values), None)
    if own is not None:
        answers[own]["name"] = NAME
    else:
        answers[list(answers)[-1]]["application_name"] = NAME
    (tmp / "answers.json").write_text(json.dumps(answers))
    done = subprocess.run([sys.executable, "-m", "murano_engine.cli.main", "ui-model",
                           str(case.package / "UI" / "ui.yaml"), str(tmp / "answers.json")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# -- the command line ---------------------------------------------------------------------

class Engine:
    """``murano-engine`` on one state file and a local cloud of its own."""

    def __init__(self, tmp: Path, case: Case) -> None:
        self.tmp = tmp
        self.cloud = tmp / "cloud"
        self.config = tmp / "engine.ini"
        self.config.write_text(f"[local_cloud]\nstate_dir = {self.cloud}\n")
        self.state = tmp / "state.json"
        self.case = case
        self.environment = json.loads(case.model.read_text())
        self.footprint = Footprint(self.cloud)

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "murano_engine.cli.main", *args,
             *(a for f in self.case.folders for a in ("-l", str(f))),
             "--state", str(self.state), "--config", str(self.config)],
            capture_output=True, text=True, timeout=300, cwd=self.tmp)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "null" not in _reports(done.stdout), done.stdout
        if self.state.exists():
            state = json.loads(self.state.read_text())
            self.footprint.note(self.environment["?"]["id"], state.get("Objects"),
                                (state.get("Resources") or {}).get("queues") or ())
        return done.stdout

    def deploy(self, applications: list[dict[str, Any]]) -> str:
        model = dict(self.environment, applications=applications)
        (self.tmp / "model.json").write_text(json.dumps(model))
        return self.run("deploy", str(self.tmp / "model.json"))

    def applications(self) -> list[dict[str, Any]]:
        return json.loads(self.state.read_text())["Objects"]["applications"]


def _with(value: dict[str, Any], path: tuple[str, ...], new: Any) -> dict[str, Any]:
    """A copy of ``value`` with the item at ``path`` replaced."""
    changed = copy.deepcopy(value)
    holder = changed
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = new
    return changed


def _servers(cloud: Path) -> list[str]:
    folder = cloud / "servers"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def _application_stacks(cloud: Path) -> list[str]:
    """Stacks of applications' own (a HOT package's), not of the environment's regions."""
    folder = cloud / "stacks"
    return sorted(p.name for p in folder.iterdir()
                  if not p.name.startswith(REGION_STACK_PREFIX)) if folder.is_dir() else []


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_cli_lifecycle(case: Case, tmp_path: Path) -> None:
    engine = Engine(tmp_path, case)
    app = case.app
    try:
        engine.deploy([app])
        assert bool(_application_stacks(engine.cloud)) is case.own_stack
        app_id = app["?"]["id"]
        for action in _actions(app["?"]["type"]):
            _running_once(engine.run("action", app_id, action))
        if case.server_count is not None:
            engine.deploy([_with(app, case.server_count, 0)])
            assert _servers(engine.cloud) == []
        engine.deploy([])
        assert engine.applications() == [] and _servers(engine.cloud) == []
        assert _application_stacks(engine.cloud) == []
        again = _wizard_app(case, tmp_path) if case.answers else app
        out = engine.deploy([again])
        assert [a["?"]["id"] for a in engine.applications()] == [again["?"]["id"]]
        if case.named_report:
            assert case.named_report.format(name=NAME) in _reports(out), out
        engine.run("destroy")
        assert not engine.state.exists()
    finally:
        if engine.state.exists():  # an assertion failed: leave nothing running
            subprocess.run([sys.executable, "-m", "murano_engine.cli.main", "destroy", "--state",
                            str(engine.state)], capture_output=True, timeout=300)
    assert leftovers(engine.footprint) == []


# -- the API with the murano CLI -----------------------------------------------------------

@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """One murano-api (SQLite, deployments in its own threads) for every API case."""
    folder = tmp_path_factory.mktemp("api")
    server = ApiServer(folder, f"sqlite:///{folder}/murano.sqlite", broker=False,
                       environment_class="io.murano.Environment")
    try:
        archives = []
        for package in sorted({c.package for c in CASES}):
            archives.append(folder / f"{package.name}.zip")
            archives[-1].write_bytes(pack_folder(package))
        server.murano("package-import", "--exists-action", "u", *map(str, archives))
        yield server
    finally:
        server.stop()


def _id(text: str) -> str:
    return re.findall(r"\b[0-9a-f]{32}\b", text)[-1]


class ApiEnvironment:
    """One environment driven with the murano CLI: each change in a session, deployed."""

    def __init__(self, api: ApiServer, name: str) -> None:
        self.api = api
        self.name = name
        self.id = _id(api.murano("environment-create", name).stdout)
        self.version = 0
        self.footprint = Footprint(api.folder / "cloud" / "projects" / PROJECT)

    def deploy(self, patch: list[dict[str, Any]]) -> list[str]:
        """Apply a JSON patch of the applications, deploy; the deployment's reports."""
        session = _id(self.api.murano("environment-session-create", self.id).stdout)
        self.api.murano("environment-apps-edit", "--session-id", session, self.id,
                        stdin=json.dumps(patch))
        self.api.murano("environment-deploy", "--session-id", session, self.id)
        return self.settled()

    def settled(self) -> list[str]:
        """Wait for the environment's next deployment to end; its reports (it succeeded)."""
        self.version += 1
        env = self.api.wait_env(self.id, timeout=300, version=self.version)
        task = self.api.ok("GET", f"/v1/environments/{self.id}/deployments")[
            "deployments"][-1]  # the newest
        reports = self.api.ok("GET", f"/v1/environments/{self.id}/deployments/{task['id']}")[
            "reports"]
        texts = [r["text"] for r in reports]
        assert env["status"] == "ready", texts
        assert "null" not in texts, texts
        self.footprint.note(self.id, env)
        return texts

    def action(self, app_id: str, method: str) -> list[str]:
        called = self.api.murano("environment-action-call", self.id, "--action-id",
                                 f"{app_id}_{method}").stdout
        task = _id(called)
        deadline = time.monotonic() + 300
        while "isException" not in (result := self.api.murano(
                "environment-action-get-result", self.id, "--task-id", task).stdout):
            assert time.monotonic() < deadline, f"no result of {method}"
            time.sleep(0.5)
        assert "'isException': False" in result, result
        return self.settled()

    def services(self) -> list[dict[str, Any]]:
        return self.api.ok("GET", f"/v1/environments/{self.id}")["services"]

    def delete(self) -> None:
        self.api.murano("environment-delete", self.name)
        deadline = time.monotonic() + 300
        while any(e["id"] == self.id
                  for e in self.api.ok("GET", "/v1/environments")["environments"]):
            assert time.monotonic() < deadline, "the environment was not deleted"
            time.sleep(0.5)


def _wizard_app_by_api(api: ApiServer, case: Case) -> dict[str, Any]:
    """The application as the API's ui/model makes it from the case's answers."""
    class_name = case.app["?"]["type"]
    package = next(p for p in api.ok("GET", "/v1/catalog/packages")["packages"]
                   if p["fully_qualified_name"] == class_name)
    return api.ok("POST", f"/v1/catalog/packages/{package['id']}/ui/model",
                  json={"answers": case.answers, "name": NAME})


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_api_lifecycle(case: Case, api: ApiServer) -> None:
    env = ApiEnvironment(api, f"matrix-{case.name}")
    try:
        app = dict(case.app, **{"?": {"id": "===id1===", "type": case.app["?"]["type"]}})
        env.deploy([{"op": "add", "path": "/-", "value": app}])
        assert bool(_application_stacks(env.footprint.cloud)) is case.own_stack
        app_id = env.services()[0]["?"]["id"]
        actions = _actions(app["?"]["type"])
        shown = api.murano("environment-show", env.id).stdout
        for action in actions:
            assert f"{app_id}_{action}" in shown
            reports = env.action(app_id, action)
            running = [r for r in reports if r.endswith(" is running")]
            assert len(running) == len(set(running)), reports
        if case.server_count is not None:
            env.deploy([{"op": "replace", "path": "/0/" + "/".join(case.server_count),
                         "value": 0}])
            assert not _servers(env.footprint.cloud)
        env.deploy([{"op": "remove", "path": "/0"}])
        assert env.services() == [] and not _servers(env.footprint.cloud)
        assert _application_stacks(env.footprint.cloud) == []
        again = _wizard_app_by_api(api, case) if case.answers else app
        reports = env.deploy([{"op": "add", "path": "/-", "value": again}])
        assert len(env.services()) == 1
        if case.named_report:
            assert case.named_report.format(name=NAME) in reports, reports
    finally:
        env.delete()
    assert leftovers(env.footprint) == []
