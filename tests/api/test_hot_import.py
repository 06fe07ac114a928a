"""A HOT package through the API: made and imported with python-muranoclient's ``murano``
(``package-create --template``, ``package-import``), its generated class and UI in the
catalog, deployed on the local cloud, its stack deleted with the environment; a broken
template refused with its lines.
"""

from __future__ import annotations

import io
import re
import time
import zipfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "hot-store"
CLASS = "io.example.hot.Store"


def _stacks(cloud: Path) -> set[str]:
    folder = cloud / "stacks"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def test_import_deploy_and_delete_a_hot_package(start_api, tmp_path: Path) -> None:
    api = start_api(environment_class="io.murano.Environment",
                    sections={"local_cloud": {"state_dir": str(tmp_path / "cloud")}})
    cloud = tmp_path / "cloud" / "projects" / "proj-a"
    archive = tmp_path / "store.zip"
    api.murano("package-create", "--template", str(EXAMPLE / "template.yaml"),
               "--resources-dir", str(EXAMPLE / "Resources"), "--full-name", CLASS,
               "--name", "Network store", "--author", "tests", "--output", str(archive))
    imported = api.murano("package-import", str(archive)).stdout
    assert CLASS in imported
    [package] = api.ok("GET", "/v1/catalog/packages")["packages"]
    assert package["class_definitions"] == [CLASS]
    assert package["tags"] == ["Heat-generated"]
    ui = yaml.safe_load(api.request("GET", f"/v1/catalog/packages/{package['id']}/ui")
                        .text.replace("!yaql ", ""))
    assert ui["Application"]["?"]["type"] == CLASS
    assert set(ui["Application"]["templateParameters"]) == {"cidr", "volume_size", "tier",
                                                            "owner"}

    env_id = api.ok("POST", "/v1/environments", json={"name": "hot"})["id"]
    session = {"X-Configuration-Session": api.ok(
        "POST", f"/v1/environments/{env_id}/configure")["id"]}
    api.ok("POST", f"/v1/environments/{env_id}/services", headers=session, json={
        "?": {"id": "===id1===", "type": CLASS}, "name": "store",
        "templateParameters": {"volume_size": 3, "owner": "api"}})
    api.ok("POST", f"/v1/environments/{env_id}/sessions/"
                   f"{session['X-Configuration-Session']}/deploy")
    env = api.wait_env(env_id, timeout=60)
    assert env["status"] == "ready", env
    [app] = env["services"]
    stack = app["generatedHeatStackName"]
    assert stack.endswith("_" + env_id) and _stacks(cloud) == {stack}
    assert app["templateOutputs"]["volume_size"] == 3
    assert app["templateOutputs"]["welcome"] == "Welcome, api: a standard volume is yours."

    api.ok("DELETE", f"/v1/environments/{env_id}")
    deadline = time.monotonic() + 60
    while api.ok("GET", "/v1/environments")["environments"]:
        assert time.monotonic() < deadline, "the environment was not deleted"
        time.sleep(0.2)
    assert _stacks(cloud) == set()


def test_a_broken_template_is_refused_with_its_lines(start_api) -> None:
    api = start_api()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.yaml", "Format: Heat.HOT/1.0\nFullName: t.hot.Broken\n")
        archive.writestr("template.yaml", "heat_template_version: 2016-10-14\n"
                                          "parameters:\n  size: {type: integer}\n"
                                          "resources: {}\n")
    response = api.request("POST", "/v1/catalog/packages",
                           files={"p": ("p.zip", buffer.getvalue())})
    assert response.status_code == 400
    assert response.json()["error"]["problems"] == [
        "template.yaml:3:9: parameter 'size': type must be one of string, number, boolean, "
        "json, comma_delimited_list, not 'integer'"]
    assert api.ok("GET", "/v1/catalog/packages")["packages"] == []
    assert not re.search(r"/tmp|Traceback", response.text)
