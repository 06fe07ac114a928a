"""Building wire plans from templates and resources, and decoding results."""

from __future__ import annotations

import base64
import copy

import pytest

from murano_engine.dsl import boundary
from murano_engine.messaging import AgentClient, AgentError, PlanBuildError
from murano_engine.messaging.results import decode_result

RESOURCES = {
    "deploy.sh": b"#!/bin/sh\r\necho one\recho two\n",
    "blob.bin": b"\x00\xff\xfe",
    "helper.py": b"print('h')\n",
    "a.ps1": b"function A { 1 }",
}


def read(name: str) -> bytes:
    return RESOURCES[name]


class FrozenClock(boundary.Outside):
    def now(self) -> float:
        return 1000.0


def test_v2_template_gets_ids_stamp_action_and_inlined_files():
    template = {
        "FormatVersion": "2.1.0",
        "Body": "return deploy().stdout",
        "Files": {"pre": {"Name": "helper.py", "BodyType": "Text", "Body": "x"}},
        "Scripts": {
            "deploy": {
                "Type": "Application",
                "EntryPoint": "deploy.sh",
                "Files": [
                    "<blob.bin>",
                    "helper.py",
                    "https://example.org/pkg/tool.tar.gz",
                    {"repo": "git://example.org/repo.git"},
                ],
            },
            "cook": {"Type": "Chef", "EntryPoint": "book::recipe", "Files": []},
        },
    }
    original = copy.deepcopy(template)
    plan = AgentClient("memory://").build_plan(template, read)
    assert template == original
    assert len(plan["ID"]) == 32 and plan["Action"] == "Execute" and isinstance(plan["Stamp"], int)
    files = plan["Files"]
    deploy = plan["Scripts"]["deploy"]
    assert files[deploy["EntryPoint"]] == {
        "Name": "deploy.sh",
        "BodyType": "Text",
        "Body": "#!/bin/sh\necho one\necho two\n",
    }
    blob, helper, url, repo = (files[i] for i in deploy["Files"])
    assert blob["BodyType"] == "Base64" and base64.b64decode(blob["Body"]) == b"\x00\xff\xfe"
    assert blob["Body"].endswith("\n") and blob["Name"] == "blob.bin"
    assert deploy["Files"][1] == "pre" and helper["Body"] == "x"  # pre-declared, reused
    assert url == {
        "Name": "tool.tar.gz",
        "URL": "https://example.org/pkg/tool.tar.gz",
        "Type": "Downloadable",
    }
    assert repo == {"Name": "repo", "URL": "git://example.org/repo.git", "Type": "Downloadable"}
    assert plan["Scripts"]["cook"]["EntryPoint"] == "book::recipe"
    assert plan["Scripts"]["cook"]["Files"] == []


def test_a_script_without_files_gets_none():
    """As Murano: only a script that lists Files has the list (of file ids)."""
    template = {"FormatVersion": "2.0.0", "Body": "return run()",
                "Files": {"scriptFile": {"Name": "scriptFile.sh", "BodyType": "Text",
                                         "Body": "echo hi"}},
                "Scripts": {"run": {"Type": "Application", "EntryPoint": "scriptFile.sh"}}}
    plan = AgentClient("memory://").build_plan(template, read)
    assert plan["Scripts"]["run"] == {"Type": "Application", "EntryPoint": "scriptFile"}
    assert list(plan["Files"]) == ["scriptFile"]


def test_v1_template_inlines_scripts_and_has_no_id():
    plan = AgentClient("memory://").build_plan(
        {"Scripts": ["a.ps1"], "Commands": [{"Name": "A"}], "RebootOnCompletion": 1}, read
    )
    assert "ID" not in plan and plan["RebootOnCompletion"] == 1
    assert base64.b64decode(plan["Scripts"][0]) == RESOURCES["a.ps1"]


def test_stamps_grow_even_when_the_clock_stands_still():
    client = AgentClient("memory://")
    with boundary.use(FrozenClock()):
        stamps = [client.build_plan({"Scripts": []}, read)["Stamp"] for _ in range(3)]
    assert stamps[0] >= 10_000_000 and stamps[0] < stamps[1] < stamps[2]


def test_bad_templates_name_the_field_and_file():
    client = AgentClient("memory://")
    broken = {
        "FormatVersion": "2.0.0",
        "Scripts": {"deploy": {"EntryPoint": "deploy.sh", "Files": ["missing.sh"]}},
    }
    with pytest.raises(PlanBuildError, match=r"Scripts.deploy.Files\[0\].*'missing.sh'"):
        client.build_plan(broken, read)
    binary = {"FormatVersion": "2.0.0", "Scripts": {"s": {"EntryPoint": "blob.bin"}}}
    with pytest.raises(PlanBuildError, match="write it as <blob.bin>"):
        client.build_plan(binary, read)
    with pytest.raises(PlanBuildError, match=r"Scripts\[0\].*'nope.ps1'"):
        client.build_plan({"Scripts": ["nope.ps1"]}, read)
    with pytest.raises(PlanBuildError, match="must be a mapping"):
        client.build_plan(["not", "a", "dict"], read)


def test_v2_results_decode_to_values_or_errors():
    assert decode_result({"FormatVersion": "2.0.0", "ErrorCode": 0, "Body": {"a": 1}}) == {"a": 1}
    failure = {
        "FormatVersion": "2.0.0",
        "ErrorCode": 100,
        "Time": "t",
        "Body": {"Message": "script failed", "AdditionalInfo": {"exitCode": 3}, "Extra": 1},
    }
    with pytest.raises(AgentError) as caught:
        decode_result(failure)
    assert caught.value.info == {
        "message": "script failed",
        "details": {"exitCode": 3},
        "errorCode": 100,
        "time": "t",
        "extra": {"Extra": 1},
    }
    assert str(caught.value) == "script failed"


def test_v1_results_decode_like_murano():
    ok = {
        "IsException": False,
        "Result": [
            {"IsException": False, "Result": [1]},
            {"IsException": False, "Result": ["last"]},
        ],
    }
    assert decode_result(ok) == ["last"]
    command_failed = {
        "IsException": False,
        "Result": [
            {"IsException": True, "Result": ["System.Exception", "boom", "Join-Domain", {"x": 1}]}
        ],
    }
    with pytest.raises(AgentError) as caught:
        decode_result(command_failed)
    assert caught.value.info == {
        "type": "System.Exception",
        "message": "boom",
        "command": "Join-Domain",
        "details": {"x": 1},
        "timestamp": None,
        "source": "command",
    }
    with pytest.raises(AgentError, match="whole plan failed") as caught:
        decode_result({"IsException": True, "Result": "whole plan failed"})
    assert caught.value.info["source"] == "execution_plan"
