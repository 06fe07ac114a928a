"""Bad requests get the right status and a clear message; nothing is changed or lost."""

from __future__ import annotations

import io
import re
import shutil
import warnings
import zipfile

import pytest

from murano_engine.api.catalog import check_archive, pack_folder
from murano_engine.api.environments import status_of
from murano_engine.api.errors import ApiError
from murano_engine.backend.settings import Settings
from tests.api.conftest import PACKAGES
from tests.zips import damaged


def _zip(files: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == status and body["error"]["message"]
    return body["error"]


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    from tests.api.conftest import ApiServer

    server = ApiServer(tmp_path_factory.mktemp("api"), "sqlite:///{}".format(
        tmp_path_factory.mktemp("db") / "m.sqlite"), False, package_size_limit="0.05")
    server.ok("POST", "/v1/catalog/packages", files={"p": ("p.zip", pack_folder(
        PACKAGES / "apitest"))})
    yield server
    server.stop()


def test_auth_and_tenants(api):
    assert api.request("GET", "/v1/environments", token="").status_code == 401
    assert api.request("GET", "/v1/environments", token="wrong").status_code == 401
    env = api.ok("POST", "/v1/environments", json={"name": "private"})
    _error(api.request("GET", f"/v1/environments/{env['id']}", "tok-b"), 404)
    assert api.ok("GET", "/v1/environments", "tok-b")["environments"] == []
    assert api.ok("GET", "/v1/catalog/packages", "tok-b")["packages"] == []
    package = api.ok("GET", "/v1/catalog/packages")["packages"][0]
    _error(api.request("DELETE", f"/v1/catalog/packages/{package['id']}", "tok-b"), 404)
    _error(api.request("GET", "/v1/environments?all_tenants=true"), 403)
    assert len(api.ok("GET", "/v1/environments?all_tenants=true", "tok-admin")[
        "environments"]) == 1
    api.ok("DELETE", f"/v1/environments/{env['id']}")


def test_bad_uploads_change_nothing(api):
    before = api.ok("GET", "/v1/catalog/packages")

    def upload(data: bytes) -> object:
        return api.request("POST", "/v1/catalog/packages", files={"p": ("p.zip", data)})

    _error(upload(b"x" * 60_000), 413)
    assert "outside" in _error(upload(_zip({"../evil.yaml": "x", "manifest.yaml": "x"})),
                               400)["message"]
    assert "zip bomb" in _error(upload(_zip({"manifest.yaml": "FullName: a.b",
                                             "big.bin": b"\0" * 3_000_000})), 400)["message"]
    _error(upload(b"not a zip"), 400)
    broken = _error(upload(_zip({"manifest.yaml": "Format: MuranoPL/1.4\nType: Wrong\n"})), 400)
    assert any("FullName" in p for p in broken["problems"])
    bad_class = _zip({"manifest.yaml": "FullName: a.b\nClasses:\n  a.b.C: C.yaml\n",
                      "Classes/C.yaml": "Name: a.b.C\nMethods:\n  m:\n    Body:\n"
                                        "      - $x: $.(\n"})
    assert _error(upload(bad_class), 400)["problems"]
    needs = _zip({"manifest.yaml": "FullName: a.c\nRequire:\n  com.example.missing: 1\n"})
    assert "com.example.missing" in _error(upload(needs), 400)["problems"][0]
    _error(upload(pack_folder(PACKAGES / "apitest")), 409)
    assert api.ok("GET", "/v1/catalog/packages") == before


def test_a_package_without_classes_uploads_and_names_too_long_are_refused(api):
    """A package with no Classes is a 200 (it was a 409 that no retry cured); a FullName or
    a class name longer than the catalog keeps is a 400 naming it (a 500 on PostgreSQL)."""
    def upload(manifest: str) -> object:
        return api.request("POST", "/v1/catalog/packages",
                           files={"p": ("p.zip", _zip({"manifest.yaml": manifest}))})

    made = upload("FullName: t.noclasses\nDescription: library\n")
    assert made.status_code == 200, made.text
    assert made.json()["fully_qualified_name"] == "t.noclasses"
    api.ok("DELETE", f"/v1/catalog/packages/{made.json()['id']}")
    long_name = "t." + "x" * 130
    message = _error(upload(f"FullName: {long_name}\n"), 400)["message"]
    assert "FullName" in message and "longer than 128 characters" in message
    assert all(p["fully_qualified_name"] != long_name
               for p in api.ok("GET", "/v1/catalog/packages")["packages"])


def test_services_stay_objects_of_their_own_id_and_type(api):
    """A service replaced by a text, an id held twice, an id or type changed through the
    services routes: each was a 200 (the environment's pages then failed with 500s)."""
    env = api.ok("POST", "/v1/environments", json={"name": "svc-checks"})
    session = api.ok("POST", f"/v1/environments/{env['id']}/configure")["id"]
    headers = {"X-Configuration-Session": session}
    base = f"/v1/environments/{env['id']}/services"
    app = {"?": {"id": "app1", "type": "com.example.apitest.Echo"}, "name": "one"}
    api.ok("POST", base, json=app, headers=headers)
    refused = {
        ("PUT", f"{base}/app1", '"just a string"'): (400, "services[0] is no object"),
        ("POST", base, '{"?": {"id": "app1", "type": "com.example.apitest.Echo"}}'):
            (400, "object id 'app1' is at"),
        ("POST", base, '{"?": {"id": 5, "type": "com.example.apitest.Echo"}}'):
            (400, "needs a '?' naming its id and type"),
        ("PUT", f"{base}/app1/%3F/id", '"a2"'): (403, "id and type cannot be changed"),
        ("PUT", f"{base}/app1", '{"?": {"id": "app1", "type": "com.example.Other"}}'):
            (403, "it stays a com.example.apitest.Echo"),
    }
    for (method, path, body), (status, words) in refused.items():
        response = api.request(method, path, data=body, headers={
            **headers, "Content-Type": "application/json"})
        assert words in _error(response, status)["message"], (method, path, body)
    assert api.ok("GET", base, headers=headers) == [app]
    api.ok("DELETE", f"/v1/environments/{env['id']}")


def test_a_session_s_model_grows_no_bigger_than_a_model_may_be(api):
    """Each request is within the body limit (here 2 MiB); many of them made one model of
    60 MB."""
    env = api.ok("POST", "/v1/environments", json={"name": "growing"})
    headers = {"X-Configuration-Session": api.ok(
        "POST", f"/v1/environments/{env['id']}/configure")["id"]}
    base = f"/v1/environments/{env['id']}/services"
    blob = "x" * 2_000_000
    for number in range(8):
        api.ok("POST", base, headers=headers, json={
            "?": {"id": f"big{number}", "type": "com.example.apitest.Echo"}, "name": blob})
    refused = api.request("POST", base, headers=headers, json={
        "?": {"id": "big8", "type": "com.example.apitest.Echo"}, "name": blob})
    message = _error(refused, 413)["message"]
    assert re.fullmatch(r"the model would be \d+ bytes; a model holds at most 16777216 "
                        r"bytes \(16 MiB\)", message), message
    patched = api.request("PATCH", f"/v1/environments/{env['id']}/model/", headers=headers,
                          json=[{"op": "add", "path": "/more", "value": blob}])
    _error(patched, 413)
    kept = api.ok("GET", base, headers=headers)
    assert [s["?"]["id"] for s in kept] == [f"big{n}" for n in range(8)]
    assert "more" not in api.ok("GET", f"/v1/environments/{env['id']}/model/",
                                headers=headers)
    api.ok("DELETE", f"/v1/environments/{env['id']}")


def test_a_path_cannot_forge_a_line_of_the_request_log(api):
    forged = "2026-12-04 13:00:00,000 1 INFO murano_engine.api.requests: FORGED 200"
    api.request("GET", "/v1/environments/abc%0a" + forged.replace(" ", "%20"))
    api.log.flush()
    lines = (api.folder / "api.log").read_text().splitlines()
    assert not any(line.startswith(forged[:20]) for line in lines)
    assert any("abc\\x0a2026-12-04" in line for line in lines)


def test_bad_requests(api):
    _error(api.request("POST", "/v1/environments", data="{not json"), 400)
    assert "'name'" in _error(api.request("POST", "/v1/environments", json={"name": ""}),
                              400)["message"]
    api.ok("POST", "/v1/environments", json={"name": "dup"})
    _error(api.request("POST", "/v1/environments", json={"name": "dup"}), 409)
    _error(api.request("GET", "/v1/environments/nope"), 404)
    _error(api.request("GET", "/v1/catalog/packages/nope"), 404)
    _error(api.request("GET", "/v1/catalog/packages?limit=x"), 400)
    _error(api.request("GET", "/v1/no/such/path"), 404)
    _error(api.request("PATCH", "/v1/catalog/packages/nope", json=[]), 404)
    assert "'name'" in _error(api.request("POST", "/v1/catalog/categories",
                                          json={"name": "x" * 81}), 400)["message"]
    bad_tags = api.request("POST", "/v1/catalog/packages", data={"__metadata__": '{"tags": [1]}'},
                           files={"p": ("p.zip", b"")})
    assert "'__metadata__.tags[0]'" in _error(bad_tags, 400)["message"]
    assert "'parameters'" in _error(api.request("POST", "/v1/actions", json={
        "className": "a.B", "methodName": "m", "parameters": [1]}), 400)["message"]
    html = api.request("GET", "/v1/environments/nope", headers={"Accept": "*/*"})
    assert html.status_code == 404 and "environment nope is not found" in html.text


def test_stale_session_and_concurrent_deploy(api):
    env = api.ok("POST", "/v1/environments", json={"name": "race"})
    base = f"/v1/environments/{env['id']}"
    first = api.ok("POST", f"{base}/configure")["id"]
    second = api.ok("POST", f"{base}/configure")["id"]
    slow = {"?": {"id": "s1", "type": "com.example.apitest.Echo"}, "name": "slow", "delay": 2}
    hdr = {"X-Configuration-Session": first}
    _error(api.request("POST", f"{base}/services", json=slow), 400)
    assert "'?'" in _error(api.request("POST", f"{base}/services", json={"no": "header"},
                                       headers=hdr), 400)["message"]
    api.ok("POST", f"{base}/services", json=slow, headers=hdr)
    api.ok("POST", f"{base}/sessions/{first}/deploy")
    assert "being deployed" in _error(api.request("POST", f"{base}/sessions/{second}/deploy"),
                                      403)["message"]
    _error(api.request("POST", f"{base}/sessions/{first}/deploy"), 403)
    _error(api.request("POST", f"{base}/configure"), 403)
    assert api.wait_env(env["id"])["services"][0]["greeting"] == "hello from slow"
    assert "stale" in _error(api.request("POST", f"{base}/sessions/{second}/deploy"),
                             403)["message"]
    _error(api.request("POST", f"{base}/services", json=slow,
                       headers={"X-Configuration-Session": second}), 403)
    assert len(api.ok("GET", f"{base}/services")) == 1


def test_failed_deployment_reports_errors(api):
    env = api.ok("POST", "/v1/environments", json={"name": "fails"})
    base = f"/v1/environments/{env['id']}"
    sid = api.ok("POST", f"{base}/configure")["id"]
    api.ok("POST", f"{base}/services", headers={"X-Configuration-Session": sid},
           json={"?": {"type": "com.example.apitest.Echo"}, "name": "bad", "fail": True})
    api.ok("POST", f"{base}/sessions/{sid}/deploy")
    assert api.wait_env(env["id"])["status"] == "deploy failure"
    deployment = api.ok("GET", f"{base}/deployments")["deployments"][0]
    assert deployment["state"] == "completed_w_errors"
    reports = api.ok("GET", f"{base}/deployments/{deployment['id']}")["reports"]
    assert any("bad was asked to fail" in r["text"] and r["level"] == "error" for r in reports)


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_an_archive_with_a_damaged_file_is_refused_naming_it(method):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr("manifest.yaml", "FullName: damaged\n")
        archive.writestr("Resources/data.txt", "kept data " * 50)
    data = damaged(buffer.getvalue(), "Resources/data.txt")

    with pytest.raises(ApiError) as error:
        check_archive(data, Settings())
    assert error.value.status == 400
    assert "'Resources/data.txt' cannot be read" in str(error.value)


def test_a_package_with_a_broken_ui_definition_is_refused_naming_its_line(api, tmp_path):
    folder = tmp_path / "apitest"
    shutil.copytree(PACKAGES / "apitest", folder)
    (folder / "UI").mkdir(exist_ok=True)
    (folder / "UI" / "ui.yaml").write_text(
        "Version: 2\nApplication:\n  ?: {type: com.example.apitest.Echo}\nForms:\n"
        "  - one:\n      fields:\n        - name: a\n          type: nosuchtype\n")
    refused = _error(api.request("POST", "/v1/catalog/packages", token="tok-b",
                                 files={"p": ("p.zip", pack_folder(folder))}), 400)
    assert refused["problems"] == ["UI/ui.yaml:7:11: field one.a has the unknown type "
                                   "'nosuchtype'"]


def test_a_first_deployment_whose_model_does_not_load_leaves_the_environment_mendable(api):
    env = api.ok("POST", "/v1/environments", json={"name": "unloadable"})
    base = f"/v1/environments/{env['id']}"
    sid = api.ok("POST", f"{base}/configure")["id"]
    api.ok("POST", f"{base}/services", headers={"X-Configuration-Session": sid},
           json={"?": {"id": "u1", "type": "no.such.Class"}, "name": "u"})
    api.ok("POST", f"{base}/sessions/{sid}/deploy")
    assert api.wait_env(env["id"])["status"] == "deploy failure"
    assert [s["?"]["id"] for s in api.ok("GET", f"{base}/services")] == ["u1"]  # kept

    sid = api.ok("POST", f"{base}/configure")["id"]
    header = {"X-Configuration-Session": sid}
    api.ok("DELETE", f"{base}/services/u1", headers=header)
    api.ok("POST", f"{base}/services", headers=header,
           json={"?": {"type": "com.example.apitest.Echo"}, "name": "mended"})
    api.ok("POST", f"{base}/sessions/{sid}/deploy")
    deployed = api.wait_env(env["id"], ("ready",), version=2)
    assert [s["name"] for s in deployed["services"]] == ["mended"]


def test_archive_checks():
    settings = Settings(package_size_limit=1000, package_unpacked_limit=10_000)
    for name in ("/abs.yaml", "a/../../b", "C:/x"):
        with pytest.raises(ApiError, match="outside"):
            check_archive(_zip({name: "x"}), settings)
    with pytest.raises(ApiError) as error:
        check_archive(_zip({"a": "y" * 20_000}), settings)
    assert error.value.status == 413
    twice = io.BytesIO()
    with zipfile.ZipFile(twice, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate it writes
        archive.writestr("Classes/App.yaml", "Name: First")
        archive.writestr("Classes/App.yaml", "Name: Second")
    with pytest.raises(ApiError, match="the package holds 'Classes/App.yaml' twice"):
        check_archive(twice.getvalue(), settings)
    assert status_of(["opened", "deployed"]) == "pending"
    assert status_of(["deploy failure", "opened"]) == "deploy failure"
    assert status_of(["opened", "deploying"]) == "deploying"
    assert status_of(["deployed"]) == "ready"
