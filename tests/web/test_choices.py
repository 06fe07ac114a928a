"""What the wizard's cloud fields offer on the local cloud, and with Heat configured."""

from __future__ import annotations

from murano_engine import dynamic_ui as ui
from murano_engine.web.choices import for_cloud, local_choices


def field(spec: str) -> ui.Field:
    definition = ui.parse("Version: 2.1\nApplication: {?: {type: a.B}}\nForms:\n  - f:\n"
                          f"      fields:\n        - {spec}\n", "t.yaml")
    return definition.forms[0].fields[0]


def test_images_are_filtered_by_image_type():
    assert [k for k, _ in local_choices(field("{name: i, type: image}"))] == [
        "debian-12", "windows-2019"]
    assert [k for k, _ in local_choices(field("{name: i, type: image, imageType: linux}"))
            ] == ["debian-12"]
    assert [k for k, _ in local_choices(field(
        "{name: i, type: image, imageType: windows}"))] == ["windows-2019"]


def test_keypair_may_be_none_and_network_auto_may_be_refused():
    assert ("", "No keypair") in local_choices(field("{name: k, type: keypair}"))
    assert local_choices(field("{name: n, type: network}"))[0][0] == ""
    assert local_choices(field("{name: n, type: network, allow_auto: false}")) == []


def test_other_fields_are_not_listed():
    assert local_choices(field("{name: s, type: string}")) is None


def test_with_heat_the_values_are_typed_in():
    choose = for_cloud({"heat": {"auth_url": "http://keystone:5000/v3"}})
    assert choose(field("{name: f, type: flavor}")) is None
    assert for_cloud({"heat": {}}) is local_choices
