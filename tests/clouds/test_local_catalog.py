"""The local cloud's catalog: servers and volumes name its flavors and images, as on Nova."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from murano_engine.clouds.base import StackFailed, push_stack
from murano_engine.clouds.local.flavors import FLAVORS, IMAGES

ROOT = Path(__file__).resolve().parents[2]
#: ``image: 'x'``, ``flavor => x`` ... with a literal value (not an expression)
NAMED = re.compile(
    r"""\b(image|flavor)['"]?\s*(?::|=>)\s*['"]?([A-Za-z0-9][\w.-]*)['"]?\s*[,)}\n]""")


def test_an_unknown_image_fails_the_server_with_the_images_listed(cloud, agents, environment):
    with pytest.raises(StackFailed) as caught:
        push_stack(cloud, "env", environment(("vm1",), image="no-such-image"))

    assert caught.value.stack.status_reason == (
        "Resource CREATE failed: resources.vm1: image 'no-such-image' could not be found; "
        "the local cloud's images: debian-12, ubuntu-22.04, cirros, windows-2019")
    assert not agents.running()


def test_an_unknown_flavor_fails_the_server_with_the_flavors_listed(cloud, agents, environment):
    with pytest.raises(StackFailed) as caught:
        push_stack(cloud, "env", environment(("vm1",), flavor="m1.huge"))

    assert caught.value.stack.status_reason == (
        "Resource CREATE failed: resources.vm1: flavor 'm1.huge' could not be found; "
        "the local cloud's flavors: m1.tiny, m1.small, m1.medium, m1.large")
    assert not agents.running()


def test_a_resize_to_an_unknown_flavor_fails(cloud, agents, environment):
    push_stack(cloud, "env", environment(("vm1",)))

    with pytest.raises(StackFailed, match="flavor 'm1.huge' could not be found"):
        push_stack(cloud, "env", environment(("vm1",), flavor="m1.huge"))


def test_a_volume_from_an_unknown_image_fails(cloud):
    template = {"heat_template_version": "2013-05-23", "resources": {
        "disk": {"type": "OS::Cinder::Volume", "properties": {"size": 1, "image": "nope"}}}}

    with pytest.raises(StackFailed, match="image 'nope' could not be found; the local "
                                          "cloud's images: debian-12"):
        push_stack(cloud, "vol", template)


def test_the_server_gets_its_flavor(cloud, agents, environment):
    push_stack(cloud, "env", environment(("vm1",), flavor="m1.medium"))

    (agent,) = agents.running().values()
    assert agent.spec.flavor == FLAVORS["m1.medium"]


def _named(value: Any) -> list[tuple[str, str]]:
    """The (key, value) pairs of ``image``/``flavor`` keys anywhere in a JSON value."""
    if isinstance(value, dict):
        return [(k, v) for k, v in value.items() if k in ("image", "flavor")
                and isinstance(v, str)] + [p for v in value.values() for p in _named(v)]
    if isinstance(value, list):
        return [p for v in value for p in _named(v)]
    return []


def test_shipped_examples_and_packages_name_catalog_entries_only():
    found: list[tuple[str, str, str]] = []
    for path in sorted((ROOT / "examples").glob("*.json")):
        found += [(str(path), k, v) for k, v in _named(json.loads(path.read_text()))]
    for folder in ("dsl_packages", "meta", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".yaml", ".py"):
                found += [(str(path), k, v) for k, v in NAMED.findall(path.read_text())]
    catalog = {"image": IMAGES, "flavor": FLAVORS}

    assert {(p, k, v) for p, k, v in found if v not in catalog[k]} == set()
    assert {k for _, k, _ in found} == {"image", "flavor"}  # the scan sees them


@pytest.mark.parametrize(("key", "value", "choices"), [
    ("image", "no-such-image", "debian-12, ubuntu-22.04, cirros, windows-2019"),
    ("flavor", "m1.huge", "m1.tiny, m1.small, m1.medium, m1.large")])
def test_a_deploy_naming_what_the_catalog_lacks_fails_with_the_choices(
        tmp_path, key, value, choices):
    model = json.loads((ROOT / "examples" / "hello-web.json").read_text())
    model["applications"][0]["servers"]["provider"]["template"][key] = value
    (tmp_path / "model.json").write_text(json.dumps(model))
    (tmp_path / "engine.ini").write_text(
        f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\nisolation = none\n")

    def engine(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "murano_engine.cli.main", *args,
             "-l", str(ROOT / "dsl_packages"),
             "--state", str(tmp_path / "state.json"), "--config", str(tmp_path / "engine.ini")],
            capture_output=True, text=True, timeout=300, cwd=tmp_path)

    done = engine("deploy", str(tmp_path / "model.json"))
    engine("destroy")

    assert done.returncode != 0
    assert (f"{key} '{value}' could not be found; the local cloud's {key}s: {choices}"
            in done.stdout + done.stderr)
