"""Who may do what: the core library stays the engine's own, admins alone publish and manage
categories, and every route answers the owner, another project and an admin as it should."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import time
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from murano_engine.api.app import ROUTES
from murano_engine.backend import db
from murano_engine.dsl.packages import META_DIR
from tests.api.conftest import PACKAGES, ApiServer

OWNER, OTHER, ADMIN = "tok-a", "tok-b", "tok-admin"
TOKENS = (OWNER, OTHER, ADMIN)
KEYSTONE_PASSWORD = "ks-pa55word-never-shown"
SECRETS = {"keystone_authtoken": {"password": KEYSTONE_PASSWORD, "username": "murano"}}
VERSIONS = itertools.count(1)
SESSION = "X-Configuration-Session"


def _zip(files: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _files(folder: Path) -> dict[str, bytes | str]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


UI = ("Version: 2\nApplication:\n  ?: {type: com.example.apitest.Echo}\n  name: $.f.n\n"
      "Forms:\n  - f:\n      fields:\n        - {name: n, type: string}\n")


def apitest_zip(version: str | None = None) -> bytes:
    """The API test package (a new version each time), with a logo, supplier logo and UI."""
    files = _files(PACKAGES / "apitest")
    manifest = files["manifest.yaml"].decode()
    manifest += f"Version: {version or f'1.0.{next(VERSIONS)}'}\n"
    manifest += "Supplier:\n  Name: Tests\n  Logo: supplier.png\n"
    files.update({"manifest.yaml": manifest, "logo.png": b"\x89PNG logo",
                  "supplier.png": b"\x89PNG supplier", "UI/ui.yaml": UI})
    return _zip(files)


def fake_core_zip(version: str = "0.99.1") -> bytes:
    """io.murano as a hostile tenant ships it: the whole core library, a higher version, and
    an io.murano.Object whose .init copies the server's secrets into every object."""
    files = _files(Path(META_DIR, "io.murano"))
    files["manifest.yaml"] = files["manifest.yaml"].decode() + f"Version: {version}\n"
    files["Classes/Object.yaml"] = """
Namespaces:
  =: io.murano
Name: Object
Properties:
  loot:
    Contract: $.string()
    Usage: Out
Methods:
  .init:
    Body:
      - $.loot: format('HIJACKED {0} {1}', config(database, connection),
                       config(keystone_authtoken, password))
"""
    return _zip(files)


def spy_zip() -> bytes:
    """An application (an Echo for the test environment) whose deploy reads engine settings."""
    return _zip({"manifest.yaml": """
Format: MuranoPL/1.4
Type: Application
FullName: com.example.spy
Require:
  com.example.apitest: '1'
Classes:
  com.example.spy.Spy: Spy.yaml
""", "Classes/Spy.yaml": """
Namespaces:
  =: com.example.spy
  api: com.example.apitest
Name: Spy
Extends: api:Echo
Methods:
  deploy:
    Body:
      - $.greeting: format('LEAK {0} {1}', config(database, connection),
                           config(keystone_authtoken, password))
"""})


def upload(api: ApiServer, data: bytes, token: str = OWNER, **metadata: Any) -> Any:
    form = {"__metadata__": json.dumps(metadata)} if metadata else None
    return api.request("POST", "/v1/catalog/packages", token, data=form,
                       files={"p": ("p.zip", data)})


def echo(name: str, cls: str = "com.example.apitest.Echo", **extra: Any) -> dict:
    return {"?": {"id": uuid.uuid4().hex, "type": cls}, "name": name, **extra}


def deploy(api: ApiServer, services: list[dict], token: str = OWNER) -> tuple[str, str, dict]:
    """A new environment with ``services`` deployed: (env id, task id, env)."""
    env_id = api.ok("POST", "/v1/environments", token, json={"name": uuid.uuid4().hex})["id"]
    session_id = api.ok("POST", f"/v1/environments/{env_id}/configure", token)["id"]
    api.ok("PUT", f"/v1/environments/{env_id}/services", token,
           headers={SESSION: session_id}, json=services)
    api.ok("POST", f"/v1/environments/{env_id}/sessions/{session_id}/deploy", token)
    env = api.wait_env(env_id) if token == OWNER else _wait(api, env_id, token)
    task_id = api.ok("GET", f"/v1/environments/{env_id}/deployments", token)[
        "deployments"][0]["id"]
    return env_id, task_id, env


def _wait(api: ApiServer, env_id: str, token: str) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        env = api.ok("GET", f"/v1/environments/{env_id}", token)
        if env["status"] in ("ready", "deploy failure"):
            return env
        time.sleep(0.1)
    raise TimeoutError(env_id)


def everything_seen(api: ApiServer, env_id: str, task_id: str, token: str) -> str:
    """All an environment's user can read about a deployment, as one text."""
    parts = [api.request("GET", f"/v1/environments/{env_id}", token).text,
             api.request("GET", f"/v1/environments/{env_id}/model/", token).text,
             api.request("GET", f"/v1/environments/{env_id}/deployments/{task_id}", token).text,
             api.request("GET", f"/v1/environments/{env_id}/actions/{task_id}", token).text,
             api.request("GET", "/v1/deployments", token).text]
    return "\n".join(parts)


def assert_nothing_leaked(api: ApiServer, text: str) -> None:
    database = api.config.read_text().split("connection = ", 1)[1].split("\n", 1)[0]
    assert KEYSTONE_PASSWORD not in text
    assert database not in text and "murano.sqlite" not in text
    assert "HIJACKED" not in text and "LEAK" not in text


def smuggle(api: ApiServer, data: bytes, owner: str, public: bool) -> str:
    """Put a package straight into the database, past the API's checks."""
    store = db.Store(f"sqlite:///{api.folder}/murano.sqlite")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        manifest = yaml.safe_load(archive.read("manifest.yaml"))
    try:
        with store.write() as session:
            row = db.Package(fully_qualified_name=manifest["FullName"],
                             version=str(manifest["Version"]), name="smuggled",
                             type="Library", description="", enabled=True, is_public=public,
                             owner_id=owner, archive=data,
                             archive_hash=hashlib.sha256(data).hexdigest())
            session.add(row)
            session.flush()
            for name in manifest["Classes"]:
                session.add(db.ClassDefinition(name=name, package_id=row.id))
            return row.id
    finally:
        store.engine.dispose()


# -- the attacks ----------------------------------------------------------------------

def test_an_upload_named_like_the_core_library_is_refused(start_api):
    api = start_api()
    before = api.ok("GET", "/v1/catalog/packages?include_disabled=true", ADMIN)
    for token, metadata in ((OWNER, {}), (ADMIN, {"is_public": True}), (ADMIN, {})):
        response = upload(api, fake_core_zip(), token, **metadata)
        assert response.status_code == 409, response.text
        assert "package name io.murano is reserved for the engine's core library" in \
            response.json()["error"]["message"]
    # a package of another name may not define the core library's classes either
    squatter = _zip({"manifest.yaml": "Format: 1.4\nFullName: com.example.squat\nClasses:\n"
                                      "  io.murano.Environment: Environment.yaml\n",
                     "Classes/Environment.yaml": "Name: io.murano.Environment\n"})
    response = upload(api, squatter)
    assert response.status_code == 409, response.text
    assert "io.murano.Environment" in response.json()["error"]["message"]
    # a member publishing it is refused for publishing first
    assert upload(api, fake_core_zip(), OWNER, is_public=True).status_code == 403
    assert api.ok("GET", "/v1/catalog/packages?include_disabled=true", ADMIN) == before
    assert api.ok("GET", "/v1/catalog/packages?fqn=io.murano", ADMIN)["packages"] == []


def test_a_core_library_smuggled_into_the_catalog_is_not_used(start_api):
    """Public (another project's) and private (the deployer's own) io.murano rows in the
    database: deployments use the engine's meta/ io.murano, no hijacked code runs."""
    api = start_api(sections={"keystone_authtoken": SECRETS["keystone_authtoken"]})
    smuggle(api, fake_core_zip("0.99.1"), "proj-a", public=True)
    smuggle(api, fake_core_zip("0.99.2"), "proj-b", public=False)
    assert upload(api, apitest_zip(), OTHER).status_code == 200
    env_id, task_id, env = deploy(api, [echo("victim")], OTHER)
    seen = everything_seen(api, env_id, task_id, OTHER)
    assert env["status"] == "ready", seen
    assert env["services"][0]["greeting"] == "hello from victim"
    assert "loot" not in json.dumps(env)
    assert_nothing_leaked(api, seen + (api.folder / "api.log").read_text())


def test_config_is_refused_to_a_tenants_package(start_api):
    api = start_api(sections={"keystone_authtoken": SECRETS["keystone_authtoken"]})
    assert upload(api, apitest_zip("1.0.0")).status_code == 200
    assert upload(api, spy_zip()).status_code == 200
    env_id, task_id, env = deploy(api, [echo("spy", "com.example.spy.Spy")])
    seen = everything_seen(api, env_id, task_id, OWNER)
    assert env["status"] == "deploy failure", seen
    assert "PolicyViolationException" in seen
    assert "config() is available to the engine's core library only" in seen
    assert_nothing_leaked(api, seen)


def test_publishing_and_categories_need_the_admin_role(start_api):
    api = start_api()
    response = upload(api, apitest_zip(), OWNER, is_public=True)
    assert response.status_code == 403, response.text
    assert "publishing a package (is_public) needs the admin role" in response.text
    assert api.ok("GET", "/v1/catalog/packages", ADMIN)["packages"] == []

    package = upload(api, apitest_zip(), OWNER).json()
    publish = [{"op": "replace", "path": "/is_public", "value": True}]
    patch = {"headers": {"Content-Type": "application/murano-packages-json-patch"}}
    path = f"/v1/catalog/packages/{package['id']}"
    assert api.request("PATCH", path, OWNER, data=json.dumps(publish), **patch
                       ).status_code == 403
    assert api.ok("GET", path)["is_public"] is False
    assert api.request("GET", path, OTHER).status_code == 404
    assert api.ok("PATCH", path, ADMIN, data=json.dumps(publish), **patch)["is_public"]
    assert api.ok("GET", path, OTHER)["is_public"] is True
    # the owner may still unpublish and edit its own package; others may not touch it
    api.ok("PATCH", path, OWNER, data=json.dumps([{"op": "replace", "path": "/is_public",
                                                   "value": False}]), **patch)
    assert api.request("GET", path, OTHER).status_code == 404

    for token in (OWNER, OTHER):
        response = api.request("POST", "/v1/catalog/categories", token, json={"name": "x"})
        assert response.status_code == 403, response.text
    assert api.ok("GET", "/v1/catalog/categories")["categories"] == []
    category = api.ok("POST", "/v1/catalog/categories", ADMIN, json={"name": "Admins'"})
    for token in (OWNER, OTHER):
        response = api.request("DELETE", f"/v1/catalog/categories/{category['id']}", token)
        assert response.status_code == 403, response.text
    assert [c["id"] for c in api.ok("GET", "/v1/catalog/categories")["categories"]] == \
        [category["id"]]
    # the owner's private package in it is counted for the owner alone
    api.ok("PATCH", path, OWNER, data=json.dumps(
        [{"op": "add", "path": "/categories", "value": ["Admins'"]}]), **patch)
    counts = {token: [c["package_count"] for c in api.ok(
        "GET", "/v1/catalog/categories", token)["categories"]] for token in (OWNER, OTHER)}
    assert counts == {OWNER: [1], OTHER: [0]}
    api.ok("PATCH", path, OWNER, data=json.dumps(
        [{"op": "remove", "path": "/categories", "value": ["Admins'"]}]), **patch)
    api.ok("DELETE", f"/v1/catalog/categories/{category['id']}", ADMIN)


# -- every route, every caller ----------------------------------------------------------

OWNED = {OWNER: 200, OTHER: 404, ADMIN: 200}
EVERYONE = {OWNER: 200, OTHER: 200, ADMIN: 200}
ADMIN_ONLY = {OWNER: 403, OTHER: 403, ADMIN: 200}
PATCH_MEDIA = {"Content-Type": "application/murano-packages-json-patch"}


class World:
    """The owner's (tok-a, proj-a) things, each made when first asked for."""

    def __init__(self, api: ApiServer) -> None:
        self.api = api

    def _ok(self, method: str, path: str, token: str = OWNER, **kwargs: Any) -> Any:
        return self.api.ok(method, path, token, **kwargs)

    @cached_property
    def package(self) -> str:
        response = upload(self.api, apitest_zip())
        assert response.status_code == 200, response.text
        return response.json()["id"]

    @cached_property
    def public_package(self) -> str:
        package_id = upload(self.api, apitest_zip()).json()["id"]
        self._ok("PATCH", f"/v1/catalog/packages/{package_id}", ADMIN, headers=PATCH_MEDIA,
                 data=json.dumps([{"op": "replace", "path": "/is_public", "value": True}]))
        return package_id

    @cached_property
    def category(self) -> str:
        return self._ok("POST", "/v1/catalog/categories", ADMIN,
                        json={"name": uuid.uuid4().hex})["id"]

    @cached_property
    def env(self) -> str:
        return self._ok("POST", "/v1/environments", json={"name": uuid.uuid4().hex})["id"]

    @cached_property
    def service(self) -> dict:
        return echo("draft", extra=[])

    @cached_property
    def session(self) -> str:
        session_id = self._ok("POST", f"/v1/environments/{self.env}/configure")["id"]
        self._ok("POST", f"/v1/environments/{self.env}/services",
                 headers={SESSION: session_id}, json=self.service)
        return session_id

    @cached_property
    def deployed(self) -> tuple[str, str, str]:
        """(environment id, deployment task id, an action id) of a deployed environment."""
        self.package  # noqa: B018 - the environment's classes
        env_id, task_id, env = deploy(self.api, [echo("one")])
        assert env["status"] == "ready", env
        action_id = next(iter(env["services"][0]["?"]["_actions"]))
        return env_id, task_id, action_id

    @cached_property
    def template(self) -> str:
        return self._ok("POST", "/v1/templates", json={
            "name": uuid.uuid4().hex, "services": [self.service]})["id"]

    @cached_property
    def public_template(self) -> str:
        return self._ok("POST", "/v1/templates", json={
            "name": uuid.uuid4().hex, "is_public": True, "services": [echo("t")]})["id"]


Request = Callable[[World], tuple[str, dict[str, Any]]]


@dataclass
class Case:
    """One call of a route: what to send, the status each caller gets, whether it changes
    things (then each caller gets a fresh world), and for lists who sees the owner's item."""

    method: str
    route: str
    request: Request
    expect: dict[str, int]
    changes: bool = False
    #: (list key, the owner's item in it, the callers that see it listed)
    listed: tuple[str, Callable[[World], str], tuple[str, ...]] | None = None
    label: str = field(default="")


def _sess(world: World, **extra: Any) -> dict[str, Any]:
    return {"headers": {SESSION: world.session}, **extra}


def _static_add(world: World) -> tuple[str, dict[str, Any]]:
    """Echo.add of the owner's (private) package."""
    assert world.package
    return "/v1/actions", {"json": {"className": "com.example.apitest.Echo",
                                    "methodName": "add", "parameters": {"a": 1, "b": 2}}}


E = "/v1/environments/<env_id>"
P = "/v1/catalog/packages/<package_id>"
T = "/v1/templates/<template_id>"
CASES: list[Case] = [
    Case("GET", "/", lambda w: ("/", {}), {t: 300 for t in TOKENS}),
    Case("GET", "/v1/openapi.json", lambda w: ("/v1/openapi.json", {}), EVERYONE),
    # environments
    Case("GET", "/v1/environments", lambda w: ("/v1/environments", {}), EVERYONE,
         listed=("environments", lambda w: w.env, (OWNER,))),
    Case("GET", "/v1/environments", lambda w: ("/v1/environments?all_tenants=true", {}),
         ADMIN_ONLY, listed=("environments", lambda w: w.env, (ADMIN,)),
         label="all_tenants"),
    Case("POST", "/v1/environments",
         lambda w: ("/v1/environments", {"json": {"name": uuid.uuid4().hex}}), EVERYONE,
         changes=True),
    Case("GET", E, lambda w: (f"/v1/environments/{w.env}", {}), OWNED),
    Case("PUT", E, lambda w: (f"/v1/environments/{w.env}", {
        "json": {"name": uuid.uuid4().hex}}), OWNED, changes=True),
    Case("DELETE", E, lambda w: (f"/v1/environments/{w.env}", {}), OWNED, changes=True),
    Case("GET", f"{E}/lastStatus", lambda w: (f"/v1/environments/{w.env}/lastStatus", {}),
         OWNED),
    Case("GET", f"{E}/model/", lambda w: (f"/v1/environments/{w.env}/model/", {}), OWNED),
    Case("GET", f"{E}/model/<path:path>",
         lambda w: (f"/v1/environments/{w.env}/model/name", {}), OWNED),
    Case("PATCH", f"{E}/model/", lambda w: (f"/v1/environments/{w.env}/model/", _sess(
        w, json=[{"op": "replace", "path": "/name", "value": "patched"}])), OWNED,
         changes=True),
    Case("POST", f"{E}/configure", lambda w: (f"/v1/environments/{w.env}/configure", {}),
         OWNED, changes=True),
    Case("GET", f"{E}/sessions/<session_id>",
         lambda w: (f"/v1/environments/{w.env}/sessions/{w.session}", {}), OWNED),
    Case("DELETE", f"{E}/sessions/<session_id>",
         lambda w: (f"/v1/environments/{w.env}/sessions/{w.session}", {}), OWNED,
         changes=True),
    Case("POST", f"{E}/sessions/<session_id>/deploy",
         lambda w: (f"/v1/environments/{w.env}/sessions/{w.session}/deploy", {}), OWNED,
         changes=True),
    # a preview changes nothing: the session stays open, the world as it was
    Case("POST", f"{E}/sessions/<session_id>/preview",
         lambda w: (f"/v1/environments/{w.env}/sessions/{w.session}/preview", {}), OWNED),
    # services: the root and a path, read and edited in the owner's session
    Case("GET", f"{E}/services", lambda w: (f"/v1/environments/{w.env}/services",
                                            _sess(w)), OWNED),
    Case("POST", f"{E}/services", lambda w: (f"/v1/environments/{w.env}/services",
                                             _sess(w, json=echo("added"))), OWNED,
         changes=True),
    Case("PUT", f"{E}/services", lambda w: (f"/v1/environments/{w.env}/services",
                                            _sess(w, json=[echo("only")])), OWNED,
         changes=True),
    Case("DELETE", f"{E}/services", lambda w: (f"/v1/environments/{w.env}/services",
                                               _sess(w)),
         {OWNER: 400, OTHER: 404, ADMIN: 400}, changes=True,  # the root cannot go
         label="the root"),
    Case("GET", f"{E}/services/<path:path>", lambda w: (
        f"/v1/environments/{w.env}/services/{w.service['?']['id']}/name", _sess(w)), OWNED),
    Case("POST", f"{E}/services/<path:path>", lambda w: (
        f"/v1/environments/{w.env}/services/{w.service['?']['id']}/extra",
        _sess(w, json="item")), OWNED, changes=True),
    Case("PUT", f"{E}/services/<path:path>", lambda w: (
        f"/v1/environments/{w.env}/services/{w.service['?']['id']}/name",
        _sess(w, json="renamed")), OWNED, changes=True),
    Case("DELETE", f"{E}/services/<path:path>", lambda w: (
        f"/v1/environments/{w.env}/services/{w.service['?']['id']}", _sess(w)), OWNED,
         changes=True),
    # deployments and actions
    Case("GET", f"{E}/deployments",
         lambda w: (f"/v1/environments/{w.deployed[0]}/deployments", {}), OWNED),
    Case("GET", f"{E}/deployments/<task_id>", lambda w: (
        f"/v1/environments/{w.deployed[0]}/deployments/{w.deployed[1]}", {}), OWNED),
    Case("GET", "/v1/deployments", lambda w: ("/v1/deployments", {}), EVERYONE,
         listed=("deployments", lambda w: w.deployed[1], (OWNER,))),
    Case("POST", f"{E}/actions/<action_id>", lambda w: (
        f"/v1/environments/{w.deployed[0]}/actions/{w.deployed[2]}", {"json": {"who": "x"}}),
         OWNED, changes=True),
    Case("GET", f"{E}/actions/<action_id>", lambda w: (
        f"/v1/environments/{w.deployed[0]}/actions/{w.deployed[1]}", {}), OWNED),
    # a static method runs with the packages of the caller's project
    Case("POST", "/v1/actions", lambda w: _static_add(w), {OWNER: 200, OTHER: 404, ADMIN: 404}),
    # class schemas come from the packages of the caller's project too
    Case("GET", "/v1/schemas/<class_name>", lambda w: (
        w.package and "/v1/schemas/com.example.apitest.Echo", {}),
         {OWNER: 200, OTHER: 404, ADMIN: 404}),
    Case("GET", "/v1/schemas/<class_name>/<method_names>", lambda w: (
        w.package and "/v1/schemas/com.example.apitest.Echo/add,nap", {}),
         {OWNER: 200, OTHER: 404, ADMIN: 404}),
    # catalog
    Case("GET", "/v1/catalog/packages", lambda w: ("/v1/catalog/packages", {}), EVERYONE,
         listed=("packages", lambda w: w.package, (OWNER, ADMIN))),
    Case("POST", "/v1/catalog/packages", lambda w: ("/v1/catalog/packages", {
        "files": {"p": ("p.zip", apitest_zip())}}), EVERYONE, changes=True),
    Case("POST", "/v1/catalog/packages", lambda w: ("/v1/catalog/packages", {
        "files": {"p": ("p.zip", apitest_zip())},
        "data": {"__metadata__": json.dumps({"is_public": True})}}), ADMIN_ONLY,
         changes=True, label="public"),
    Case("POST", "/v1/catalog/packages", lambda w: ("/v1/catalog/packages", {
        "files": {"p": ("p.zip", fake_core_zip())}}), {t: 409 for t in TOKENS},
         changes=True, label="io.murano"),
    Case("GET", P, lambda w: (f"/v1/catalog/packages/{w.package}", {}), OWNED),
    Case("GET", P, lambda w: (f"/v1/catalog/packages/{w.public_package}", {}), EVERYONE,
         label="public"),
    Case("PATCH", P, lambda w: (f"/v1/catalog/packages/{w.package}", {
        "headers": PATCH_MEDIA, "data": json.dumps([
            {"op": "add", "path": "/tags", "value": ["new"]}])}), OWNED, changes=True),
    Case("PATCH", P, lambda w: (f"/v1/catalog/packages/{w.public_package}", {
        "headers": PATCH_MEDIA, "data": json.dumps([
            {"op": "add", "path": "/tags", "value": ["new"]}])}),
         {OWNER: 200, OTHER: 403, ADMIN: 200}, changes=True, label="public"),
    Case("PATCH", P, lambda w: (f"/v1/catalog/packages/{w.package}", {
        "headers": PATCH_MEDIA, "data": json.dumps([
            {"op": "replace", "path": "/is_public", "value": True}])}),
         {OWNER: 403, OTHER: 404, ADMIN: 200}, changes=True, label="publish"),
    Case("DELETE", P, lambda w: (f"/v1/catalog/packages/{w.package}", {}), OWNED,
         changes=True),
    Case("DELETE", P, lambda w: (f"/v1/catalog/packages/{w.public_package}", {}),
         {OWNER: 200, OTHER: 403, ADMIN: 200}, changes=True, label="public"),
    *(Case("GET", f"{P}/{part}", lambda w, part=part: (
        f"/v1/catalog/packages/{w.package}/{part}", {}), OWNED)
      for part in ("download", "ui", "logo", "supplier_logo")),
    Case("POST", f"{P}/ui/model", lambda w: (
        f"/v1/catalog/packages/{w.package}/ui/model", {"json": {"answers": {"f": {"n": "x"}}}}),
         OWNED),
    Case("GET", f"{P}/download", lambda w: (
        f"/v1/catalog/packages/{w.public_package}/download", {}), EVERYONE, label="public"),
    Case("GET", "/v1/catalog/categories", lambda w: ("/v1/catalog/categories", {}),
         EVERYONE),
    Case("POST", "/v1/catalog/categories", lambda w: (
        "/v1/catalog/categories", {"json": {"name": uuid.uuid4().hex}}), ADMIN_ONLY,
         changes=True),
    Case("GET", "/v1/catalog/categories/<category_id>", lambda w: (
        f"/v1/catalog/categories/{w.category}", {}), EVERYONE),
    Case("DELETE", "/v1/catalog/categories/<category_id>", lambda w: (
        f"/v1/catalog/categories/{w.category}", {}), ADMIN_ONLY, changes=True),
    # environment templates
    Case("GET", "/v1/templates", lambda w: ("/v1/templates", {}), EVERYONE,
         listed=("templates", lambda w: w.template, (OWNER,))),
    Case("POST", "/v1/templates", lambda w: ("/v1/templates", {
        "json": {"name": uuid.uuid4().hex}}), EVERYONE, changes=True),
    Case("GET", T, lambda w: (f"/v1/templates/{w.template}", {}), OWNED),
    Case("GET", T, lambda w: (f"/v1/templates/{w.public_template}", {}), EVERYONE,
         label="public"),
    Case("PUT", T, lambda w: (f"/v1/templates/{w.template}", {
        "json": {"description_text": "changed"}}), OWNED, changes=True),
    Case("PUT", T, lambda w: (f"/v1/templates/{w.public_template}", {
        "json": {"description_text": "changed"}}), OWNED, changes=True, label="public"),
    Case("DELETE", T, lambda w: (f"/v1/templates/{w.template}", {}), OWNED, changes=True),
    Case("DELETE", T, lambda w: (f"/v1/templates/{w.public_template}", {}), OWNED,
         changes=True, label="public"),
    Case("POST", f"{T}/create-environment", lambda w: (
        f"/v1/templates/{w.template}/create-environment", {"json": {"name": "from-t"}}),
         OWNED, changes=True),
    # only its own project copies a private template (Murano copies public ones only)
    Case("POST", f"{T}/clone", lambda w: (f"/v1/templates/{w.template}/clone", {
        "json": {"name": uuid.uuid4().hex}}), {OWNER: 200, OTHER: 404, ADMIN: 404},
         changes=True),
    Case("POST", f"{T}/clone", lambda w: (f"/v1/templates/{w.public_template}/clone", {
        "json": {"name": uuid.uuid4().hex}}), EVERYONE, changes=True, label="public"),
    Case("GET", f"{T}/services", lambda w: (f"/v1/templates/{w.template}/services", {}),
         OWNED),
    Case("POST", f"{T}/services", lambda w: (f"/v1/templates/{w.template}/services", {
        "json": echo("more")}), OWNED, changes=True),
    Case("POST", f"{T}/services", lambda w: (f"/v1/templates/{w.public_template}/services",
                                             {"json": echo("more")}), OWNED, changes=True,
         label="public"),
    Case("GET", f"{T}/services/<path:path>", lambda w: (
        f"/v1/templates/{w.template}/services/{w.service['?']['id']}", {}), OWNED),
    Case("PUT", f"{T}/services/<path:path>", lambda w: (
        f"/v1/templates/{w.template}/services/{w.service['?']['id']}",
        {"json": echo("replaced")}), OWNED, changes=True),
    Case("DELETE", f"{T}/services/<path:path>", lambda w: (
        f"/v1/templates/{w.template}/services/{w.service['?']['id']}", {}), OWNED,
         changes=True),
]


def test_every_route_is_walked():
    routes = {(m, r.path) for r in ROUTES for m in r.methods}
    walked = {(c.method, c.route) for c in CASES}
    assert routes - walked == set(), "routes no case calls"
    assert walked - routes == set(), "cases of routes that do not exist"


def test_every_route_for_the_owner_another_project_and_an_admin(start_api):
    api = start_api()
    shared = World(api)
    wrong = []
    for case, token in itertools.product(CASES, TOKENS):
        world = World(api) if case.changes else shared
        item = case.listed[1](world) if case.listed else None
        path, kwargs = case.request(world)
        response = api.request(case.method, path, token, **kwargs)
        name = f"{case.method} {case.route} {case.label} as {token}"
        if response.status_code != case.expect[token]:
            wrong.append(f"{name}: {response.status_code} (not {case.expect[token]}) "
                         f"{response.text[:300]}")
        elif case.listed and response.status_code == 200 and \
                (item in json.dumps(response.json()[case.listed[0]])) != \
                (token in case.listed[2]):
            wrong.append(f"{name}: the owner's item is listed to the wrong callers")
    assert wrong == [], "\n".join(wrong)
