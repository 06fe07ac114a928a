"""The /ui/ pages over HTTP (no browser): login, upload, the wizard's checks, a failed
deployment's MuranoPL error and stack; the ui/model call; steps kept apart from reports."""

from __future__ import annotations

import html
import re
import shutil
import time
from pathlib import Path

import requests

from murano_engine.api import environments
from murano_engine.api.auth import Context
from murano_engine.api.catalog import pack_folder
from murano_engine.backend import db

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


def csrf_token(page: str) -> str:
    """The CSRF token a page's forms carry."""
    return re.search(r'name="csrf_token" value="(\w+)"', page).group(1)


def login(api, token: str = "tok-a") -> requests.Session:
    """A session logged in with ``token`` that sends its pages' CSRF token with each
    request (as the ``X-CSRF-Token`` header), as a browser sends it with each form."""
    browser = requests.Session()
    form = browser.get(api.url + "/ui/login", timeout=30)
    browser.headers["X-CSRF-Token"] = csrf_token(form.text)
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
    browser = requests.Session()
    form = browser.get(api.url + "/ui/login", timeout=30)
    refused = browser.post(api.url + "/ui/login", timeout=30,
                           data={"token": "nope", "csrf_token": csrf_token(form.text)})
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

    for damaged in ('{"appConfiguration": "greeting"}', '[1, 2]', '{"f": {"who": {"a": 1}}}'):
        refused = browser.post(wizard, data={"_step": "0", "_answers": damaged, "who": "x"},
                               timeout=30)  # a 500 before, without the pages' headers
        assert refused.status_code == 400 and "damaged" in refused.text, refused.text
        assert refused.headers.get("X-Frame-Options")
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
        if live["status"]["code"] not in ("deploying", "pending") \
                or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert live["status"] == {"code": "deploy failure", "words": "Deployment failed",
                              "tone": "failed"}, live
    assert "web was asked to fail</h2>" in live["failure"]
    stack = re.search(r'<pre class="stack">([^<]*)</pre>', live["failure"])
    assert stack and "Echo.yaml" in stack.group(1), live["failure"]
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


def wait_live(browser: requests.Session, api, env_id: str, timeout: float = 60) -> dict:
    """The live state once no deployment runs (``{"gone": True}`` after a deletion)."""
    deadline = time.monotonic() + timeout
    while True:
        live = browser.get(f"{api.url}/ui/environments/{env_id}/live", timeout=30).json()
        if live.get("gone") or live["status"]["code"] not in ("deploying", "deleting"):
            return live
        assert time.monotonic() < deadline, live
        time.sleep(0.2)


def added_echo(api, browser: requests.Session, tmp_path: Path, who: str = "web"
               ) -> tuple[str, str]:
    """An environment with one Echo added through the wizard and deployed: its id and
    the Echo's object id (the package is uploaded once)."""
    found = api.ok("GET", "/v1/catalog/packages?fqn=com.example.apitest")["packages"]
    package = found[0] if found else api.ok(
        "POST", "/v1/catalog/packages",
        files={"file": ("apitest.zip", echo_package(tmp_path))})
    env_id = browser.post(api.url + "/ui/environments", data={"name": f"acts-{who}"},
                          timeout=30).url.rsplit("/", 1)[1]
    browser.post(f"{api.url}/ui/environments/{env_id}/add/{package['id']}", timeout=30,
                 data={"_step": "0", "_answers": "{}", "who": who,
                       "application_name": f"echo {who}"})
    assert browser.post(f"{api.url}/ui/environments/{env_id}/deploy",
                        timeout=30).status_code == 200
    assert wait_live(browser, api, env_id)["status"]["code"] == "ready"
    echo_id = api.ok("GET", f"/v1/environments/{env_id}")["services"][0]["?"]["id"]
    return env_id, echo_id


def test_an_action_runs_from_a_form_of_its_argument_contracts(start_api, tmp_path):
    api = start_api(environment_class="com.example.apitest.Environment")
    browser = login(api)
    env_id, echo_id = added_echo(api, browser, tmp_path)
    page = browser.get(f"{api.url}/ui/environments/{env_id}", timeout=30).text
    # the output the deployment set, and a link per action
    assert re.search(r'data-key="greeting">hello from web<', page), page
    form_url = f"{api.url}/ui/environments/{env_id}/actions/{echo_id}_greet"
    assert f'href="/ui/environments/{env_id}/actions/{echo_id}_greet"' in page
    form = browser.get(form_url, timeout=30)
    assert form.status_code == 200
    assert 'data-argument="who" data-kind="string"' in form.text and "who *" in form.text
    # the same arguments /v1/schemas describes
    schema = api.ok("GET", "/v1/schemas/com.example.apitest.Echo/greet")["greet"]
    assert re.findall(r'data-argument="(\w+)"', form.text) == list(schema["properties"])
    assert schema["required"] == ["who"]
    missing = browser.post(form_url, data={"who": " "}, timeout=30)
    assert missing.status_code == 400
    assert field_errors(missing.text) == {"who": "This argument is required."}
    ran = browser.post(form_url, data={"who": "bob"}, timeout=30)
    assert ran.url.endswith(f"/ui/environments/{env_id}")
    wait_live(browser, api, env_id)
    page = browser.get(f"{api.url}/ui/environments/{env_id}", timeout=30).text
    assert 'data-key="greeting">web greets bob<' in page, page  # the output it changed
    assert ">greet<" in page and "Succeeded" in page  # the deployments list names it
    assert 'class="returned">returned &#34;web greets bob&#34;<' in page, page
    assert browser.get(f"{api.url}/ui/environments/{env_id}/actions/nothing",
                       timeout=30).status_code == 404


def test_arguments_are_read_by_their_contract_types():
    from murano_engine.web.actions import argument_fields, parse_arguments
    schema = {"properties": {"n": {"type": "integer"}, "x": {"type": ["number", "null"]},
                             "on": {"type": "boolean", "default": True},
                             "items": {"type": "array"}, "s": {"type": "string",
                                                               "default": "a"}},
              "required": ["n"]}
    assert [(f.name, f.kind, f.required, f.value) for f in argument_fields(schema)] == [
        ("n", "integer", True, ""), ("x", "number", False, ""), ("on", "boolean", False, "on"),
        ("items", "json", False, ""), ("s", "string", False, "a")]
    assert parse_arguments(schema, {"n": "3", "x": "1.5", "items": "[1, 2]", "s": "b"}) == (
        {"n": 3, "x": 1.5, "on": False, "items": [1, 2], "s": "b"}, {})
    args, errors = parse_arguments(schema, {"n": "three", "items": "[1,"})
    assert errors == {"n": "Enter a whole number.", "items": errors["items"]}
    assert errors["items"].startswith("Enter a JSON value")


def test_removing_an_application_deploys_its_removal(start_api, tmp_path):
    api = start_api(environment_class="com.example.apitest.Environment")
    browser = login(api)
    env_id, echo_id = added_echo(api, browser, tmp_path)
    removed = browser.post(
        f"{api.url}/ui/environments/{env_id}/applications/{echo_id}/remove", timeout=30)
    assert removed.url.endswith(f"/ui/environments/{env_id}")
    assert wait_live(browser, api, env_id)["status"]["code"] == "ready"
    assert api.ok("GET", f"/v1/environments/{env_id}")["services"] == []
    page = browser.get(f"{api.url}/ui/environments/{env_id}", timeout=30).text
    assert "No application yet." in page and 'id="pending"' not in page


def test_deleting_and_abandoning_environments(start_api, tmp_path):
    api = start_api(environment_class="com.example.apitest.Environment")
    browser = login(api)
    env_id, _ = added_echo(api, browser, tmp_path)
    deleted = browser.post(f"{api.url}/ui/environments/{env_id}/delete", timeout=30)
    # the environment's page while it goes, or, when the deletion (nothing was deployed)
    # ended before that page was asked for, "not found" with the way back to the list
    assert deleted.status_code == 200 or (
        deleted.status_code == 404 and 'href="/ui/environments"' in deleted.text), deleted
    assert wait_live(browser, api, env_id) == {"gone": True}
    assert api.request("GET", f"/v1/environments/{env_id}").status_code == 404
    assert api.ok("GET", "/v1/deployments")["deployments"] == []

    env_id, _ = added_echo(api, browser, tmp_path, who="again")
    abandoned = browser.post(f"{api.url}/ui/environments/{env_id}/delete",
                             data={"abandon": "on"}, timeout=30)
    assert abandoned.url.endswith("/ui/environments")  # gone at once
    assert api.request("GET", f"/v1/environments/{env_id}").status_code == 404
    gone = browser.get(f"{api.url}/ui/environments/{env_id}", timeout=30)
    assert gone.status_code == 404 and 'href="/ui/environments"' in gone.text
    assert "<header>" in gone.text and 'id="back"' in gone.text


def test_a_second_deploy_click_comes_back_to_the_environment(start_api, tmp_path):
    api = start_api(environment_class="com.example.apitest.Environment")
    browser = login(api)
    package = api.ok("POST", "/v1/catalog/packages",
                     files={"file": ("apitest.zip", echo_package(tmp_path))})
    env_id = browser.post(api.url + "/ui/environments", data={"name": "twice"},
                          timeout=30).url.rsplit("/", 1)[1]
    browser.post(f"{api.url}/ui/environments/{env_id}/add/{package['id']}", timeout=30,
                 data={"_step": "0", "_answers": "{}", "who": "slow"})
    session_cookie = dict(browser.cookies)
    # a deployment that lasts (3 s): the second click comes while it runs
    header = {"X-Configuration-Session": session_cookie[f"murano_session_{env_id}"]}
    echo = api.ok("GET", f"/v1/environments/{env_id}/services", headers=header)[0]
    api.ok("PUT", f"/v1/environments/{env_id}/services/{echo['?']['id']}", headers=header,
           json={**echo, "delay": 3})
    first = browser.post(f"{api.url}/ui/environments/{env_id}/deploy", timeout=30,
                         allow_redirects=False)
    # the double click: the same cookies as the first, sent before its answer came
    second = requests.post(f"{api.url}/ui/environments/{env_id}/deploy", timeout=30,
                           cookies=session_cookie, allow_redirects=False,
                           headers={"X-CSRF-Token": browser.headers["X-CSRF-Token"]})
    assert first.status_code == second.status_code == 302, second.text
    assert second.headers["Location"].endswith(f"/ui/environments/{env_id}")
    # while it runs the page shows what is being deployed: applications and topology
    live = browser.get(f"{api.url}/ui/environments/{env_id}/live", timeout=30).json()
    assert live["status"]["code"] == "deploying", live
    assert "API test application" in live["applications"], live["applications"]
    assert "No application yet" not in live["applications"]
    assert 'class="topology"' in live["picture"] and 'data-name="API test application"' \
        in live["picture"]
    wait_live(browser, api, env_id)
    assert len(api.ok("GET", f"/v1/environments/{env_id}/deployments")["deployments"]) == 1


def test_the_environment_page_words_states_and_times(start_api, tmp_path):
    api = start_api(environment_class="com.example.apitest.Environment")
    browser = login(api)
    env_id, _ = added_echo(api, browser, tmp_path)
    page = browser.get(f"{api.url}/ui/environments/{env_id}", timeout=30).text
    assert 'data-code="ready">Ready<' in page and ">Succeeded<" in page
    assert not re.search(r"\d\d:\d\d:\d\d\.\d{6}", page)  # no raw ISO with microseconds
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", page)
    listing = browser.get(f"{api.url}/ui/environments", timeout=30).text
    assert not re.search(r"T\d\d:\d\d:\d\d\.\d{6}", listing)
    # no inline script (the pages' Content-Security-Policy allows only their own files)
    assert "<script>" not in page and "onsubmit" not in page and "onclick" not in page
    assert '<script src="/ui/static/environment.js"></script>' in page
    script = browser.get(f"{api.url}/ui/static/environment.js", timeout=30)
    assert script.status_code == 200 and "javascript" in script.headers["Content-Type"]
    assert browser.get(f"{api.url}/ui/static/nothing.js", timeout=30).status_code == 404


TWO_FORMS_UI = """
Version: 2.2
Application:
  ?: {type: com.example.apitest.Echo}
  name: $.appConfiguration.name
Forms:
  - appConfiguration:
      fields:
        - {name: name, type: string, label: Name}
  - moreSettings:
      fields:
        - {name: delay, type: integer, initial: 0, descriptionTitle: Timing,
           description: How long deploy sleeps}
"""


def test_wizard_titles_back_and_a_single_name_field(start_api, tmp_path):
    api = start_api(environment_class="com.example.apitest.Environment")
    browser = login(api)
    folder = tmp_path / "apitest"
    shutil.copytree(PACKAGES / "apitest", folder)
    (folder / "UI").mkdir()
    (folder / "UI" / "ui.yaml").write_text(TWO_FORMS_UI)
    package = api.ok("POST", "/v1/catalog/packages",
                     files={"file": ("apitest.zip", pack_folder(folder))})
    env = api.ok("POST", "/v1/environments", json={"name": "steps"})
    wizard = f"{api.url}/ui/environments/{env['id']}/add/{package['id']}"
    first = browser.get(wizard, timeout=30).text
    assert re.findall(r"<li[^>]*>\d\. ([^<]*)</li>", first) == ["App configuration",
                                                                "Timing"]
    assert 'id="back"' not in first
    second = browser.post(wizard, data={"_step": "0", "_answers": "{}", "name": "mine"},
                          timeout=30).text
    assert "Step 2 of 2: Timing" in second and 'id="back"' in second
    assert 'id="f-application_name"' not in second  # the package's name field names it
    answers = html.unescape(re.search(r'name="_answers" value="([^"]*)"', second).group(1))
    back = browser.post(wizard, data={"_step": "1", "_answers": answers, "delay": "x",
                                      "_back": "1"}, timeout=30).text
    assert "Step 1 of 2: App configuration" in back and 'value="mine"' in back
    answers = html.unescape(re.search(r'name="_answers" value="([^"]*)"', back).group(1))
    again = browser.post(wizard, data={"_step": "0", "_answers": answers, "name": "mine"},
                         timeout=30).text
    assert 'value="x"' in again  # what the step had when the user went back
    added = browser.post(wizard, data={"_step": "1", "_answers": html.unescape(re.search(
        r'name="_answers" value="([^"]*)"', again).group(1)), "delay": "0"}, timeout=30)
    assert added.url.endswith(f"/ui/environments/{env['id']}")
    session = re.search(r"<strong>([^<]*)</strong>", added.text)
    assert session and session.group(1) == "mine"


def test_removing_a_pending_application_only_changes_the_session(start_api, tmp_path):
    api = start_api(environment_class="com.example.apitest.Environment")
    browser = login(api)
    env_id, _ = added_echo(api, browser, tmp_path)
    package = api.ok("GET", "/v1/catalog/packages?fqn=com.example.apitest")["packages"][0]
    added = browser.post(f"{api.url}/ui/environments/{env_id}/add/{package['id']}",
                         data={"_step": "0", "_answers": "{}", "who": "later",
                               "application_name": "later echo"}, timeout=30)
    later = re.search(r'<tr class="application" data-id="(\w+)"><td><strong>later echo<',
                      added.text)
    assert later, added.text
    kept = browser.post(f"{api.url}/ui/environments/{env_id}/applications/{later.group(1)}"
                        f"/remove", timeout=30)
    assert "later echo" not in kept.text and "echo web" in kept.text  # the deployed one stays
    # its session changes nothing any more: no change waits, nor does the status say so
    assert 'id="pending"' not in kept.text and 'id="discard"' not in kept.text
    assert 'data-code="ready">Ready<' in kept.text
    assert api.ok("GET", f"/v1/environments/{env_id}")["status"] == "ready"
    deployments = api.ok("GET", f"/v1/environments/{env_id}/deployments")["deployments"]
    assert len(deployments) == 1  # nothing deployed for it


def test_a_packages_add_form_leads_to_the_chosen_environments_wizard(start_api, tmp_path):
    api = start_api(environment_class="com.example.apitest.Environment")
    browser = login(api)
    package = api.ok("POST", "/v1/catalog/packages",
                     files={"file": ("apitest.zip", echo_package(tmp_path))})
    env = api.ok("POST", "/v1/environments", json={"name": "chosen"})
    page = browser.get(f"{api.url}/ui/packages/{package['id']}", timeout=30).text
    assert f'<option value="{env["id"]}">chosen</option>' in page
    # the form sent as it is (a GET of this page with env=): to that wizard
    wizard = browser.get(f"{api.url}/ui/packages/{package['id']}", params={"env": env["id"]},
                         timeout=30)
    assert wizard.url.endswith(f"/ui/environments/{env['id']}/add/{package['id']}")
    assert 'id="f-who"' in wizard.text


def test_changes_made_in_one_browser_are_pending_in_another(start_api, tmp_path):
    """Changes are the user's, not the browser's: a second browser (logged in with the
    same token, without the first's cookies) shows them, adds to them, discards them and
    deploys them; with nothing to deploy, Deploy is not offered and a deploy is refused."""
    api = start_api(environment_class="com.example.apitest.Environment")
    package = api.ok("POST", "/v1/catalog/packages",
                     files={"file": ("apitest.zip", echo_package(tmp_path))})
    first, second = login(api), login(api)
    env_id = first.post(api.url + "/ui/environments", data={"name": "shared"},
                        timeout=30).url.rsplit("/", 1)[1]
    page_url = f"{api.url}/ui/environments/{env_id}"

    def add(browser: requests.Session, who: str) -> None:
        added = browser.post(f"{page_url}/add/{package['id']}", timeout=30, data={
            "_step": "0", "_answers": "{}", "who": who, "application_name": f"echo {who}"})
        assert added.url == page_url, added.text

    def listed(page: str) -> list[str]:
        return re.findall(r'<tr class="application" data-id="\w+"><td><strong>([^<]*)<', page)

    add(first, "one")
    page = second.get(page_url, timeout=30).text
    assert listed(page) == ["echo one"]
    assert 'data-code="pending">Changes not deployed yet<' in page
    assert 'id="pending"' in page and 'id="deploy"' in page and 'id="discard"' in page
    add(second, "two")  # into the same changes, not a session of its own
    assert listed(first.get(page_url, timeout=30).text) == ["echo one", "echo two"]

    second.post(f"{page_url}/discard", timeout=30)
    for browser in (first, second):
        page = browser.get(page_url, timeout=30).text
        assert listed(page) == [] and 'id="pending"' not in page
        assert 'id="deploy"' not in page and 'id="nothing-to-deploy"' in page
        assert 'data-code="ready">Ready<' in page
    # an open session that changes nothing (the API's) is no change waiting
    api.ok("POST", f"/v1/environments/{env_id}/configure")
    page = first.get(page_url, timeout=30).text
    assert 'data-code="ready">Ready<' in page and 'id="deploy"' not in page
    assert 'data-code="ready">Ready<' in first.get(api.url + "/ui/environments",
                                                   timeout=30).text
    refused = first.post(f"{page_url}/deploy", timeout=30)
    assert refused.status_code == 409 and "nothing to deploy" in refused.text
    assert api.ok("GET", f"/v1/environments/{env_id}/deployments")["deployments"] == []

    add(first, "three")
    deployed = second.post(f"{page_url}/deploy", timeout=30)
    assert deployed.url == page_url
    assert wait_live(second, api, env_id)["status"]["code"] == "ready"
    deployments = api.ok("GET", f"/v1/environments/{env_id}/deployments")["deployments"]
    assert [d["state"] for d in deployments] == ["success"]
    services = api.ok("GET", f"/v1/environments/{env_id}")["services"]
    assert [s["?"]["name"] for s in services] == ["echo three"]
    for browser in (first, second):
        page = browser.get(page_url, timeout=30).text
        assert listed(page) == ["echo three"] and 'id="pending"' not in page
        assert 'id="deploy"' in page  # deployed applications may be deployed again
