"""What the wizard's cloud fields offer on the local cloud, and from OpenStack's services
when Heat is configured (a fake keystone, Nova, Glance, Neutron and Cinder on loopback)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

import pytest

from murano_engine.web import dynamic_ui as ui
from murano_engine.web.choices import for_cloud, local_choices
from tests.loopback_http import serving


def field(spec: str) -> ui.Field:
    definition = ui.parse("Version: 2.1\nApplication: {?: {type: a.B}}\nForms:\n  - f:\n"
                          f"      fields:\n        - {spec}\n", "t.yaml")
    return definition.forms[0].fields[0]


def test_images_are_filtered_by_image_type():
    assert [k for k, _ in local_choices(field("{name: i, type: image}"))] == [
        "debian-12", "ubuntu-22.04", "cirros", "windows-2019"]
    assert [k for k, _ in local_choices(field("{name: i, type: image, imageType: linux}"))
            ] == ["debian-12", "ubuntu-22.04", "cirros"]
    assert [k for k, _ in local_choices(field(
        "{name: i, type: image, imageType: windows}"))] == ["windows-2019"]


def test_keypair_may_be_none_and_network_auto_may_be_refused():
    assert ("", "No keypair") in local_choices(field("{name: k, type: keypair}"))
    assert local_choices(field("{name: n, type: network}"))[0][0] == ""
    assert local_choices(field("{name: n, type: network, allow_auto: false}")) == []


def test_other_fields_are_not_listed():
    assert local_choices(field("{name: s, type: string}")) is None


def test_without_heat_the_local_cloud_lists_its_own():
    assert for_cloud({"heat": {}})() is local_choices


ANSWERS = {
    "/compute/flavors/detail": {"flavors": [
        {"name": "m1.tiny", "vcpus": 1, "ram": 512, "disk": 1},
        {"name": "m1.large", "vcpus": 4, "ram": 8192, "disk": 80}]},
    "/compute/os-keypairs": {"keypairs": [{"keypair": {"name": "mine"}}]},
    "/compute/os-availability-zone": {"availabilityZoneInfo": [
        {"zoneName": "nova", "zoneState": {"available": True}},
        {"zoneName": "broken", "zoneState": {"available": False}}]},
    "/image/v2/images": {"images": [
        {"id": "img-1", "name": "deb", "murano_image_info": json.dumps(
            {"type": "linux", "title": "Debian"})},
        {"id": "img-2", "name": "win", "murano_image_info": json.dumps(
            {"type": "windows.2019", "title": "Windows 2019"})},
        {"id": "img-3", "name": "plain"}]},
    "/network/v2.0/networks": {"networks": [{"id": "n1", "name": "private"},
                                            {"id": "n2", "name": "murano-env-net"}]},
    "/network/v2.0/subnets": {"subnets": [
        {"id": "s1", "network_id": "n1", "cidr": "10.0.0.0/24"},
        {"id": "s2", "network_id": "n1", "cidr": "10.0.1.0/24"},
        {"id": "s3", "network_id": "n2", "cidr": "10.9.0.0/24"}]},
    "/network/v2.0/security-groups": {"security_groups": [{"name": "default"}]},
    "/volume/volumes/detail": {"volumes": [{"id": "v1", "name": "data"}]},
    "/volume/snapshots/detail": {"snapshots": [{"id": "sn1", "name": "backup"}]},
}


@pytest.fixture
def openstack() -> Iterator[tuple[str, list[str]]]:
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: object, headers: dict | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 - the token
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            url = f"http://127.0.0.1:{self.server.server_address[1]}"
            catalog = [{"type": kind, "endpoints": [{"interface": "public",
                                                     "region": "RegionOne",
                                                     "url": f"{url}/{path}"}]}
                       for kind, path in (("identity", "identity"), ("compute", "compute"),
                                          ("image", "image"), ("network", "network"),
                                          ("volumev3", "volume"))]
            self._answer(201, {"token": {
                "methods": ["password"], "expires_at": "2999-01-01T00:00:00.000000Z",
                "project": {"id": "p1", "name": "demo", "domain": {"id": "d1"}},
                "user": {"id": "u1", "name": "alice", "domain": {"id": "d1"}},
                "catalog": catalog}}, {"X-Subject-Token": "tok"})

        def do_GET(self) -> None:  # noqa: N802
            path = urlsplit(self.path).path
            asked.append(path)
            if path in ANSWERS and self.headers.get("X-Auth-Token") == "tok":
                self._answer(200, ANSWERS[path])
            else:
                self._answer(404, {"error": path})

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as url:
        yield url, asked


def heat_choices(url: str):
    return for_cloud({"heat": {"auth_url": f"{url}/identity/v3", "username": "alice",
                               "password": "pw", "project_name": "demo"}})()


def keys(options) -> list[str]:
    return [key for key, _ in options]


def test_openstack_lists_flavors_keypairs_zones_images(openstack):
    url, asked = openstack
    choose = heat_choices(url)
    assert keys(choose(field("{name: f, type: flavor}"))) == ["m1.tiny", "m1.large"]
    assert keys(choose(field("{name: f, type: flavor, requirements: {min_vcpus: 2}}"))) == [
        "m1.large"]
    assert keys(choose(field("{name: k, type: keypair}"))) == ["", "mine"]
    assert keys(choose(field("{name: z, type: azone}"))) == ["nova"]
    assert choose(field("{name: i, type: image}")) == [("img-1", "Debian"),
                                                       ("img-2", "Windows 2019")]
    assert keys(choose(field("{name: i, type: image, imageType: windows}"))) == ["img-2"]
    assert asked.count("/compute/flavors/detail") == 1  # asked once per choices function


def test_openstack_lists_networks_groups_and_volumes(openstack):
    choose = heat_choices(openstack[0])
    assert keys(choose(field("{name: n, type: network}"))) == ["", "n1,s1", "n1,s2", "n2,s3"]
    assert keys(choose(field("{name: n, type: network, include_subnets: false, "
                             "filter: '^priv', allow_auto: false}"))) == ["n1,"]
    assert keys(choose(field("{name: g, type: securitygroup}"))) == ["default"]
    assert keys(choose(field("{name: v, type: volume}"))) == ["v1", "sn1"]
    assert keys(choose(field("{name: v, type: volume, include_snapshots: false}"))) == ["v1"]


def test_an_unreachable_service_leaves_the_field_typed_in(openstack, monkeypatch):
    monkeypatch.delitem(ANSWERS, "/compute/os-keypairs")
    assert heat_choices(openstack[0])(field("{name: k, type: keypair}")) is None
