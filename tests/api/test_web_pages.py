"""The /ui/ pages over HTTP (no browser): login, upload, the wizard's checks, a failed
deployment's MuranoPL error and stack; the ui/model call; steps kept apart from reports."""

from __future__ import annotations

import html
import re
import shutil
import time
from pathlib import Path

import requests

from murano_engine.api import db, environments
from murano_engine.api.auth import Context
from murano_engine.api.catalog import pack_folder

PACKAGES = Path(__file__).parent / "packages"
UI = """
Version: 2.3
Application:
  ?: {type: com.example.apitest.Echo}
  name: $.settings.who
  fail: $.settings.fail
Forms:
  - settings:
      fields:
        - {name: who, type: string, label: Who, minLength: 2,
           errorMessages: {required: Say who}}
        - {name: fail, type: boolean, label: Fail on purpose}
        - {name: secret, type: password, required: false, hidden: true}
        - {name: peer, type: com.example.apitest.Echo, required: false}
"""


def echo_package(tmp_path: Path) -> bytes:
    folder = tmp_path / "apitest"
    shutil.copytree(PACKAGES / "apitest", folder)
    (folder / "UI").mkdir()
    (folder / "UI" / "ui.yaml").write_text(UI)
    return pack_folder(folder)


def login(api, token: str = "tok-a") -> requests.Session:
    browser = requests.Session()
    page = browser.post(api.url + "/ui/login", data={"token": token}, timeout=30)
    assert page.status_code == 200 and page.url.endswith("/ui/")
    return browser


def field_errors(page: str) -> dict[str, str]:
    return {name: html.unescape(text) for name, text in
            re.findall(r'id="error-([\w-]+)">([^<]*)<', page)}


def test_pages_need_a_login(start_api):
    api = start_api()
    page = requests.get(api.url + "/ui/", timeout=30)
    assert page.url.endswith("/ui/login")
    refused = requests.post(api.url + "/ui/login", data={"token": "nope"}, timeout=30)
    assert refused.status_code == 401 and "the token is not valid" in refused.text


def test_wizard_checks_then_adds_and_a_failure_shows_the_muranopl_stack(start_api, tmp_path):
    api = start_api(environment_class="com.example.apitest.Environment")
    browser = login(api)
    uploaded = browser.post(api.url + "/ui/packages", timeout=30,
                            files={"package": ("apitest.zip", echo_package(tmp_path))})
    package_id = uploaded.url.rsplit("/", 1)[1]
    broken = browser.post(api.url + "/ui/packages", timeout=30,
                          files={"package": ("broken.zip", b"not a zip")})
    assert broken.status_code == 400 and 'id="upload-error"' in broken.text
    assert "The upload failed" in broken.text
    assert "com.example.apitest.Echo" in uploaded.text
    assert "API test application" in browser.get(api.url + "/ui/?q=echo", timeout=30).text
    assert "No package matches" in browser.get(api.url + "/ui/?q=nothing", timeout=30).text

    created = browser.post(api.url + "/ui/environments", data={"name": "pages"}, timeout=30)
    env_id = created.url.rsplit("/", 1)[1]
    wizard = f"{api.url}/ui/environments/{env_id}/add/{package_id}"
    first = browser.get(wizard, timeout=30)
    assert 'id="f-who"' in first.text and 'id="f-fail"' in first.text
    assert 'id="f-secret"' not in first.text  # hidden

    def post(**values: str) -> requests.Response:
        return browser.post(wizard, data={"_step": "0", "_answers": "{}", **values},
                            timeout=30)

    assert field_errors(post(who="").text) == {"who": "Say who"}
    short = post(who="x")
    assert short.status_code == 400
    assert field_errors(short.text)["who"].startswith("Ensure this value has at least 2")
    # the last form (2.2+) has the application's name, initially the package's
    assert 'value="API test application"' in short.text
    added = post(who="web", fail="on", application_name="failing echo")
    assert added.url.endswith(f"/ui/environments/{env_id}") and "failing echo" in added.text
    assert 'id="pending"' in added.text
    # a field naming a class offers the environment's applications of that class
    echo_id = re.search(r'value="(\w+)">failing echo</option>', browser.get(
        wizard, timeout=30).text)
    assert echo_id, "the first Echo is not offered"

    deployed = browser.post(f"{api.url}/ui/environments/{env_id}/deploy", timeout=30)
    assert deployed.status_code == 200
    deadline = time.monotonic() + 60
    while True:
        live = browser.get(f"{api.url}/ui/environments/{env_id}/live", timeout=30).json()
        if live["status"] not in ("deploying", "pending") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert live["status"] == "deploy failure", live
    assert live["failure"]["message"].endswith("web was asked to fail")
    assert "Echo.yaml" in (live["failure"].get("traceback") or ""), live["failure"]
    page = browser.get(f"{api.url}/ui/environments/{env_id}", timeout=30).text
    assert "web was asked to fail" in page and 'class="stack"' in page
    task_id = re.search(r"/deployments/(\w+)\"", page).group(1)
    picture = browser.get(f"{api.url}/ui/environments/{env_id}/deployments/{task_id}",
                          timeout=30).text
    assert "Failed:" in picture and "Action deploy is scheduled" in picture


def test_ui_model_call_turns_answers_into_the_model(start_api, tmp_path):
    api = start_api()
    package = api.ok("POST", "/v1/catalog/packages",
                     files={"file": ("apitest.zip", echo_package(tmp_path))})
    path = f"/v1/catalog/packages/{package['id']}/ui/model"
    model = api.ok("POST", path, json={"answers": {"settings": {"who": "cli", "fail": False}},
                                       "name": "mine"})
    assert model["name"] == "cli" and model["fail"] is False
    assert model["?"]["type"] == "com.example.apitest.Echo"
    assert model["?"]["_26411a1861294160833743e45d0eaad9"] == {"name": "mine"}
    assert model["?"]["name"] == "mine"
    refused = api.request("POST", path, json={"answers": {"settings": {"who": "x"}}})
    assert refused.status_code == 400
    assert "settings.who: Ensure this value has at least 2" in refused.text


def test_steps_are_kept_apart_from_the_reports(tmp_path):
    store = db.Store(f"sqlite:///{tmp_path}/steps.sqlite")
    db.upgrade(store.engine)
    ctx = Context(project_id="p", user_id="u", token="t")
    env = environments.create_env(store, ctx, {"name": "e"}, "io.murano.Environment")
    session_id = environments.configure(store, ctx, env.id)["id"]
    task = environments.deploy(store, ctx, env.id, session_id)
    step = {"kind": "plan", "phase": "sent", "lane": "vm-1", "name": "install", "key": "q#1"}
    environments.store_report(store, task["task_id"], {"id": env.id, "text": "", "level":
                                                        "step", "timestamp": 12.5,
                                                        "step": step})
    environments.store_report(store, task["task_id"], {"id": env.id, "text": "hello",
                                                        "level": "info", "timestamp": 13})
    texts = [r["text"] for r in environments.reports(store, ctx, env.id, task["task_id"],
                                                      [])["reports"]]
    assert texts == ["Action deploy is scheduled", "hello"]
    assert environments.steps(store, ctx, env.id, task["task_id"]) == [
        {**step, "timestamp": 12.5}]
    store.engine.dispose()


PARAMS_CLASS = """
Namespaces:
  =: com.example.apitest
Name: Params
Methods:
  uiParameters:
    Scope: Public
    Usage: Static
    Body:
      - Return:
          prefix: 'from-muranopl'
"""
PARAMS_UI = """
Version: 2.4
ParametersSource: com.example.apitest.Params.uiParameters
Parameters:
  separator: '-'
Application:
  ?: {type: com.example.apitest.Echo}
  name: $prefix + $separator + $.f.who
Forms:
  - f:
      fields:
        - {name: who, type: string, initial: $prefix}
"""


def test_parameters_source_runs_the_packages_static_method(start_api, tmp_path):
    api = start_api()
    folder = tmp_path / "apitest"
    shutil.copytree(PACKAGES / "apitest", folder)
    (folder / "UI").mkdir()
    (folder / "UI" / "ui.yaml").write_text(PARAMS_UI)
    (folder / "Classes" / "Params.yaml").write_text(PARAMS_CLASS)
    manifest = folder / "manifest.yaml"
    manifest.write_text(manifest.read_text() + "  com.example.apitest.Params: Params.yaml\n")
    package = api.ok("POST", "/v1/catalog/packages",
                     files={"file": ("apitest.zip", pack_folder(folder))})
    model = api.ok("POST", f"/v1/catalog/packages/{package['id']}/ui/model",
                   json={"answers": {"f": {"who": "x"}}})
    assert model["name"] == "from-muranopl-x"
    browser = login(api)
    env = api.ok("POST", "/v1/environments", json={"name": "params"})
    page = browser.get(f"{api.url}/ui/environments/{env['id']}/add/{package['id']}",
                       timeout=30)
    assert 'value="from-muranopl"' in page.text  # the initial value, from the parameters
