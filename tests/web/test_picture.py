"""The deployment picture: bars per server from the plan steps, data-flow arrows, stack
marks, the topology, and ``murano-engine deploy --report`` on the local cloud."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from murano_engine.clouds.local.sandbox import missing_for_namespaces
from murano_engine.dsl import reports
from murano_engine.web import picture

REPO = Path(__file__).resolve().parents[2]


def plan(phase: str, key: str, lane: str, at: float, **extra) -> dict:
    return {"kind": "plan", "phase": phase, "key": key, "lane": lane, "name": f"plan {key}",
            "timestamp": at, **extra}


MASTER = reports.digests({"address": "10.0.0.5:18700"})
STEPS = [
    {"kind": "stack", "phase": "pushed", "lane": "stack", "name": "env-stack", "started": 0.5,
     "timestamp": 1.0},
    plan("sent", "a", "kv-1", 2.0, inputs=reports.digests({"port": "18700"})),
    plan("sent", "b", "kv-2", 2.1),
    plan("answered", "a", "kv-1", 4.0, result="success", outputs=MASTER),
    plan("answered", "b", "kv-2", 3.0, result="error", error="exit code 3"),
    plan("sent", "c", "kv-2", 5.0, inputs=MASTER),
    plan("sent", "d", "kv-1", 5.5, inputs=MASTER),
]


def test_plan_bars_pair_sent_and_answered():
    bars = picture.plan_bars(STEPS)
    assert [(b["lane"], b["sent"], b["answered"], b["result"]) for b in bars] == [
        ("kv-1", 2.0, 4.0, "success"), ("kv-2", 2.1, 3.0, "error"),
        ("kv-2", 5.0, None, "running"), ("kv-1", 5.5, None, "running")]


def test_an_arrow_joins_an_output_to_a_later_input_on_another_lane():
    # c (kv-2) got a's result (kv-1); d is on a's own lane: no arrow
    assert picture.arrows(picture.plan_bars(STEPS)) == [(0, 2)]


def test_digests_skip_short_and_boolean_values():
    assert reports.digests({"a": "yes", "b": True, "c": "true", "d": [1]}) == []
    assert reports.digests(["abcd", {"x": "abcd"}]) == reports.digests("abcd")
    assert len(reports.digests(12345)) == 1


def test_the_timeline_has_a_lane_per_server_bars_marks_and_arrows():
    svg = picture.timeline_svg(STEPS, now=6.0)
    lanes = re.findall(r'<g class="lane" data-lane="([^"]+)"', svg)
    assert lanes == ["stack", "kv-1", "kv-2"]
    assert re.findall(r'class="plan (\w+)"', svg) == ["success", "running", "error",
                                                      "running"]
    assert svg.count('class="stack-mark"') == 1 and svg.count('class="flow"') == 1
    assert "exit code 3" in svg  # the failed plan's tooltip


def test_no_steps_says_so():
    assert "No execution plan" in picture.timeline_svg([])


def test_topology_lists_applications_servers_and_networks():
    objects = {"?": {"type": "io.murano.Environment"},
               "defaultNetworks": {"environment": {"?": {"type": "io.murano.resources."
                                                         "NeutronNetwork"}, "name": "net-1"}},
               "applications": [{
                   "?": {"type": "com.example.Kv/1.0.0@com.example", "id": "a1",
                         "_26411a1861294160833743e45d0eaad9": {"name": "My KV"}},
                   "servers": [{"?": {"type": "com.example.KvServer"}, "name": "kv-1"},
                               {"?": {"type": "io.murano.resources.LinuxMuranoInstance"},
                                "name": "kv-2"}],
                   "other": {"?": {"type": "com.example.Helper"}, "name": "helper"}}]}
    shape = picture.topology(objects, ["kv-1"])
    assert shape == {"applications": [{"name": "My KV", "type": "com.example.Kv",
                                       "servers": ["kv-1", "kv-2"]}],
                     "networks": ["net-1"]}
    svg = picture.topology_svg(objects, ["kv-1"])
    assert svg.count('class="server"') == 2 and "net-1" in svg


def test_the_document_is_self_contained_and_shows_a_failure():
    page = picture.document("Deploy <x>", STEPS, [{"text": "stage 1", "level": "info",
                                                   "timestamp": 1.5}], None,
                            {"message": "boom", "traceback": "at Kv.deploy line 3"})
    assert "Deploy &lt;x&gt;" in page and "at Kv.deploy line 3" in page
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "<script" not in page


@pytest.mark.skipif(bool(missing_for_namespaces()), reason="the servers are sandboxes")
def test_deploy_report_writes_the_picture_of_a_local_run(tmp_path):
    state = tmp_path / "state.json"
    env = dict(os.environ, MURANO_LOCAL_CLOUD_STATE_DIR=str(tmp_path / "cloud"),
               PYTHONPATH=str(REPO))

    def engine(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "murano_engine.cli.main", *args, "-l",
                               str(REPO / "dsl_packages"), "--state", str(state)],
                              capture_output=True, text=True, timeout=300, cwd=tmp_path,
                              env=env)

    report = tmp_path / "picture.html"
    try:
        done = engine("deploy", str(REPO / "examples" / "linux-cluster.json"), "--report",
                      str(report))
        assert done.returncode == 0, done.stdout + done.stderr
    finally:
        removed = engine("destroy")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    page = report.read_text()
    lanes = re.findall(r'<g class="lane" data-lane="([^"]+)"', page)
    assert lanes == ["stack", "kv-1", "kv-2"]
    for server in ("kv-1", "kv-2"):
        lane = page.split(f'data-lane="{server}"')[1].split('<g class="lane"')[0]
        assert 'class="plan success" data-name="install the key-value service' in lane
    assert "class=\"stack-mark\"" in page and 'class="flow"' in page
    assert "is deployed" in page and 'class="server" data-name="kv-1"' in page


def test_axis_labels_are_round_and_never_repeat():
    for span in (0.02, 0.3, 1.0, 7.3, 95.0, 1234.0):
        labels = [label for _, label in picture.ticks(span)]
        assert len(labels) == len(set(labels)) and 2 <= len(labels) <= 6, (span, labels)
        assert labels[0] in ("0s", "0.0s", "0.00s", "0.000s")
    assert [label for _, label in picture.ticks(0.3)] == ["0.0s", "0.1s", "0.2s", "0.3s"]
    svg = picture.timeline_svg([plan("sent", "a", "vm", 10.0),
                                plan("answered", "a", "vm", 10.2, result="success")])
    axis = re.findall(r'fill="#777">([^<]+)</text>', svg)
    assert len(axis) == len(set(axis)) >= 2, axis


def test_pictures_scale_to_their_page():
    svg = picture.timeline_svg(STEPS, now=6.0) + picture.topology_svg(
        {"applications": [{"?": {"type": "A", "id": str(i)}} for i in range(5)]})
    assert len(re.findall(r'<svg [^>]*viewBox="0 0 \d+ \d+"', svg)) == 2
    assert "svg { max-width: 100%; height: auto; }" in picture.STYLE


def test_a_server_template_is_not_a_server():
    objects = {"applications": [{
        "?": {"type": "io.murano.apps.linux.HelloWeb", "id": "h", "name": "hello"},
        "servers": {"?": {"type": "io.murano.applications.ServerReplicationGroup"},
                    "items": [{"?": {"type": "io.murano.resources.LinuxMuranoInstance",
                                     "id": "s1"}, "name": "hello-1"}],
                    "provider": {"?": {"type": "io.murano.applications."
                                               "TemplateServerProvider"},
                                 "template": {"?": {"type": "io.murano.resources."
                                                            "LinuxMuranoInstance",
                                                    "id": "tpl"}}}}}]}
    assert picture.topology(objects)["applications"] == [
        {"name": "hello", "type": "io.murano.apps.linux.HelloWeb", "servers": ["hello-1"]}]
