"""``murano-api`` with ``[auth] strategy = keystone`` against the real Keystone.

keystonemiddleware validates every token with Keystone (its user: a service
user made for the test); the API scopes what it answers by the token's
project and roles, and refuses a revoked or an expired token. Its engine
deploys to the real Heat (``[heat] no_compute``). The murano CLI authenticates
with Keystone and finds the API in the catalog.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from murano_engine.api.catalog import pack_folder
from tests.api.conftest import free_port, wait_for_port
from tests.openstack.services import Account, OpenStack

APP = """\
Namespaces:
  =: test.openstack
  std: io.murano
Name: Secret
Extends: std:Application
Properties:
  length:
    Contract: $.int().notNull()
  value:
    Contract: $.string()
    Usage: Out
Methods:
  deploy:
    Body:
      - $stack: $.find(std:Environment).require().stack
      - $stack.updateTemplate(dict(
          resources => dict(secret => dict(type => 'OS::Heat::RandomString',
                                           properties => dict(length => $.length))),
          outputs => dict(secret => dict(value => dict(get_attr => list(secret, value))))))
      - $stack.push()
      - $.value: $stack.output().secret
"""


class KeystoneApi:
    """A murano-api process behind keystonemiddleware."""

    def __init__(self, cloud: OpenStack, folder: Path) -> None:
        self.cloud = cloud
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        validator = cloud.service_user(f"murano-{self.port}")
        keystone = cloud.auth_url.removesuffix("/v3")
        heat = {**cloud.accounts["demo"].heat_section(cloud.auth_url), "no_compute": "true",
                "poll_interval": "0.5"}
        sections = {
            "DEFAULT": {"bind_port": str(self.port)},
            "database": {"connection": f"sqlite:///{folder}/murano.sqlite"},
            "engine": {"environment_class": "io.murano.Environment",
                       "packages_cache": str(folder / "packages-cache")},
            "auth": {"strategy": "keystone"},
            "keystone_authtoken": {
                "www_authenticate_uri": keystone, "auth_url": keystone,
                "auth_type": "password", "username": validator.username,
                "password": validator.password, "project_name": "service",
                "user_domain_id": "default", "project_domain_id": "default",
                "service_token_roles_required": "true",
                "token_cache_time": "-1"},  # a revoked token is refused at once
            "heat": heat,
            "local_cloud": {"state_dir": str(folder / "cloud")},
        }
        self.config = folder / "api.conf"
        self.config.write_text("".join(
            f"[{name}]\n" + "".join(f"{k} = {v}\n" for k, v in options.items())
            for name, options in sections.items()))
        self.log = open(folder / "api.log", "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "murano_engine.server.main", "--config-file",
             str(self.config)], stdout=self.log, stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.process)

    def call(self, method: str, path: str, token: str | None, **kwargs: Any
             ) -> requests.Response:
        headers = {"Accept": "application/json", **({"X-Auth-Token": token} if token else {})}
        return requests.request(method, self.url + path, headers=headers, timeout=60, **kwargs)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


@pytest.fixture
def api(openstack, tmp_path: Path) -> Iterator[KeystoneApi]:
    server = KeystoneApi(openstack, tmp_path)
    try:
        yield server
    finally:
        server.stop()


def test_tokens_scope_projects_and_roles(openstack, api):
    demo, other = openstack.accounts["demo"], openstack.accounts["other"]
    demo_token, other_token = openstack.token(demo), openstack.token(other)
    admin_token = openstack.admin_token()

    refused = api.call("GET", "/v1/environments", None)
    assert refused.status_code == 401
    assert openstack.auth_url.removesuffix("/v3") in refused.headers["WWW-Authenticate"]
    assert api.call("GET", "/v1/environments", "not-a-token").status_code == 401

    created = api.call("POST", "/v1/environments", demo_token, json={"name": "demo-env"})
    assert created.status_code == 200, created.text
    env = created.json()
    assert env["tenant_id"] == demo.project_id  # the project keystone scoped the token to
    path = f"/v1/environments/{env['id']}"
    listed = api.call("GET", "/v1/environments", demo_token).json()["environments"]
    assert [e["id"] for e in listed] == [env["id"]]
    assert api.call("GET", "/v1/environments", other_token).json()["environments"] == []
    assert api.call("GET", path, other_token).status_code == 404
    assert api.call("DELETE", path, other_token).status_code == 404
    assert api.call("GET", path, admin_token).status_code == 200  # admin sees every project

    # categories are the admins': a member's token is refused, the admin's is not
    body = {"name": f"cat-{api.port}"}
    assert api.call("POST", "/v1/catalog/categories", demo_token, json=body).status_code == 403
    category = api.call("POST", "/v1/catalog/categories", admin_token, json=body)
    assert category.status_code == 200, category.text
    assert api.call("DELETE", f"/v1/catalog/categories/{category.json()['id']}",
                    admin_token).status_code == 200
    assert api.call("DELETE", path, demo_token).status_code == 200


def test_a_revoked_token_is_refused(openstack, api):
    token = openstack.token(openstack.accounts["demo"])
    assert api.call("GET", "/v1/environments", token).status_code == 200
    openstack.revoke(token)
    refused = api.call("GET", "/v1/environments", token)
    assert refused.status_code == 401, refused.text
    fresh = openstack.token(openstack.accounts["demo"])
    assert api.call("GET", "/v1/environments", fresh).status_code == 200


def test_an_expired_token_is_refused(openstack, api):
    demo = openstack.accounts["demo"]
    token, expires = openstack.short_lived_token(demo, 6)
    assert expires - datetime.now(UTC) < timedelta(seconds=7)
    listed = api.call("GET", "/v1/environments", token)
    assert listed.status_code == 200, listed.text
    time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 1.5)
    refused = api.call("GET", "/v1/environments", token)
    assert refused.status_code == 401, refused.text


def _ids(text: str) -> list[str]:
    return re.findall(r"\b[0-9a-f]{32}\b", text)


def _murano(cloud: OpenStack, account: Account, *args: str, stdin: str | None = None
            ) -> str:
    """The murano CLI as ``account``: a keystone password login, the API from the catalog."""
    command = [sys.executable, "-m", "muranoclient.shell", "--os-auth-url", cloud.auth_url,
               "--os-username", account.username, "--os-password", account.password,
               "--os-project-name", account.project_name, "--os-user-domain-id", "default",
               "--os-project-domain-id", "default", "--os-region-name", "RegionOne", *args]
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_murano_cli_with_keystone_imports_deploys_lists(openstack, api, demo_heat,
                                                        tmp_path: Path):
    admin = openstack.keystone_admin()
    service = admin.create("service", name="murano", type="application-catalog")
    try:
        admin.create("endpoint", service_id=service, interface="public", region_id="RegionOne",
                     url=api.url)
        package = tmp_path / "test.openstack.Secret"
        (package / "Classes").mkdir(parents=True)
        (package / "manifest.yaml").write_text(
            "Format: 1.0\nType: Application\nFullName: test.openstack.Secret\n"
            "Name: Secret\nDescription: A random string from Heat.\nAuthor: tests\n"
            "Classes:\n  test.openstack.Secret: Secret.yaml\n")
        (package / "Classes" / "Secret.yaml").write_text(APP)
        archive = tmp_path / "Secret.zip"
        archive.write_bytes(pack_folder(package))
        demo, other = openstack.accounts["demo"], openstack.accounts["other"]

        assert "test.openstack.Secret" in _murano(openstack, demo, "package-import", str(archive))
        assert "test.openstack.Secret" in _murano(openstack, demo, "package-list")
        assert "test.openstack.Secret" not in _murano(openstack, other, "package-list")
        env_id = _ids(_murano(openstack, demo, "environment-create", "ks-env"))[0]
        session_id = _ids(_murano(openstack, demo, "environment-session-create", env_id))[0]
        patch = [{"op": "add", "path": "/-", "value": {
            "?": {"id": "===id1===", "type": "test.openstack.Secret"}, "length": 24}}]
        _murano(openstack, demo, "environment-apps-edit", "--session-id", session_id, env_id,
                stdin=json.dumps(patch))
        _murano(openstack, demo, "environment-deploy", "--session-id", session_id, env_id)
        deadline = time.monotonic() + 180
        while "success" not in (listed := _murano(openstack, demo, "deployment-list", env_id)):
            assert "failure" not in listed, listed
            assert time.monotonic() < deadline, listed
            time.sleep(1)
        assert "ks-env" in _murano(openstack, demo, "environment-list")
        assert "ks-env" not in _murano(openstack, other, "environment-list")

        token = openstack.token(demo)
        app = api.call("GET", f"/v1/environments/{env_id}", token).json()["services"][0]
        stacks = [s for s in demo_heat.stacks.list() if s.stack_name.startswith("murano-ks-env-")]
        assert len(stacks) == 1
        outputs = {o["output_key"]: o["output_value"]
                   for o in demo_heat.stacks.get(stacks[0].id).outputs}
        assert len(app["value"]) == 24 and outputs["secret"] == app["value"]

        _murano(openstack, demo, "environment-delete", "ks-env")
        deadline = time.monotonic() + 120
        while "ks-env" in _murano(openstack, demo, "environment-list"):
            assert time.monotonic() < deadline
            time.sleep(1)
        assert not [s for s in demo_heat.stacks.list() if s.id == stacks[0].id]
    finally:
        admin.call("DELETE", f"/services/{service}")
