"""Agent parts on their own: configuration, plan checks, storage, PowerShell literals."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import threading

import pytest

from murano_agent import plans, service, storage
from murano_agent.config import ConfigError, load_config
from murano_agent.executors import ps_literal
from murano_agent.files import sweep
from murano_agent.plans import PlanError
from murano_agent.security import Rejected, StampGuard
from murano_agent.storage import PlanStore

MURANO_AGENT_CONF = """[DEFAULT]
debug=True
verbose=True
log_file = /var/log/murano-agent.log
storage=/var/murano/plans
engine_key = \t-----BEGIN RSA PUBLIC KEY-----
\tMIIBCgKCAQEAtest
\t-----END RSA PUBLIC KEY-----

[rabbitmq]
input_queue=e123-h456
result_routing_key=-execution-results--abc
host=10.0.0.5
port=5671
ssl=true
insecure=false
ca_certs='/etc/murano/certs/ca_certs'
login=murano
password=p%ss
virtual_host=/
"""


def test_reads_the_config_murano_renders_into_instances(tmp_path):
    path = tmp_path / "agent.conf"
    path.write_text(MURANO_AGENT_CONF)
    cfg = load_config(path)
    assert cfg.debug is True and cfg.storage == "/var/murano/plans"
    assert cfg.engine_key.splitlines() == [
        "-----BEGIN RSA PUBLIC KEY-----",
        "MIIBCgKCAQEAtest",
        "-----END RSA PUBLIC KEY-----",
    ]
    rabbit = cfg.rabbitmq
    assert (rabbit.host, rabbit.port, rabbit.ssl, rabbit.password) == (
        "10.0.0.5",
        5671,
        True,
        "p%ss",
    )
    assert rabbit.ca_certs == "/etc/murano/certs/ca_certs" and rabbit.input_queue == "e123-h456"
    assert str(cfg.files_root) == "/var/murano/plans/files"


def test_text_and_overrides(tmp_path):
    cfg = load_config(MURANO_AGENT_CONF, {"storage": tmp_path, "rabbitmq.url": "memory://"})
    assert cfg.storage == str(tmp_path) and cfg.rabbitmq.url == "memory://"


def test_bad_config_names_the_option(tmp_path):
    with pytest.raises(ConfigError, match=r"\[rabbitmq\]: option 'port' = 'many'"):
        load_config("[rabbitmq]\nport = many\n")
    with pytest.raises(ConfigError, match="cannot read agent config"):
        load_config(tmp_path / "missing.conf")
    with pytest.raises(ConfigError, match="unknown section 'nosuch'"):
        load_config("[DEFAULT]\n", {"nosuch.x": 1})


@pytest.mark.parametrize(
    ("version", "code"), [("0.0.0", 9), ("1000.0.0", 9), ("2.3.0", 9), ("x", 9)]
)
def test_unsupported_format_versions(version, code):
    with pytest.raises(PlanError) as caught:
        plans.format_version({"FormatVersion": version})
    assert caught.value.code == code


def test_supported_format_versions():
    assert plans.format_version({}) == (1, 0, 0)
    assert plans.format_version({"FormatVersion": "2.2.0"}) == (2, 2, 0)


def v2(version: str, **script) -> dict:
    script = {"Type": "Application", "EntryPoint": "f", **script}
    files = {
        "f": {"Name": "a.sh", "BodyType": "Text", "Body": ""},
        "u": {"Name": "u", "Type": "Downloadable", "URL": "http://x/u"},
    }
    return {"FormatVersion": version, "Scripts": {"s": script}, "Files": files}


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        (v2("2.0.0"), "downloadable files need FormatVersion 2.1.0"),
        ({"FormatVersion": "2.1.0", "Scripts": {}}, "Files: is required"),
        (
            v2("2.1.0", Type="Chef", EntryPoint="c::r", Options={"useBerkshelf": True}),
            "Berkshelf options need",
        ),
        (v2("2.1.0", Type="Chef", EntryPoint="norecipe"), "must be module::recipe"),
        (v2("2.1.0", Type="Shell"), "Scripts.s.Type: 'Shell' is not one of"),
        (v2("2.1.0", Files=["zz"]), "file 'zz' is not in Files"),
        (v2("2.1.0", Files=[3]), r"Scripts\.s\.Files\[0\]: must be a string or an object"),
        (
            v2("2.2.0", Options={"berksfilePath": "x"}),
            "Scripts.s.Type: Berkshelf options need a Chef script",
        ),
        (v2("2.1.0", Options="x"), "Scripts.s.Options: must be an object"),
        ({**v2("2.1.0"), "Body": 1}, "Body: must be a string or null"),
        (
            {"FormatVersion": "2.0", "Scripts": {"s": {"Type": "Chef", "EntryPoint": "a::b"}},
             "Files": {}},
            r"Scripts\.s\.Type: 'Chef' is not one of \['Application'\]",
        ),
        (
            {"FormatVersion": "2.1", "Scripts": {}, "Files": {"f": {"Name": "a", "Body": ""}}},
            "Files.f.BodyType: is required",
        ),
    ],
)
def test_v2_structure_errors(plan, message):
    with pytest.raises(PlanError, match=message) as caught:
        plans.validate_v2(plan, plans.format_version(plan))
    assert caught.value.code == 2


def test_v2_structures_that_pass():
    """Downloadable files pass from 2.1.0 on and Berkshelf options from 2.2.0 on, not before."""
    downloadable = v2("2.1.0", Files=["u", {"alias": "f"}])
    expected = copy.deepcopy(downloadable)
    plans.validate_v2(downloadable, plans.format_version(downloadable))  # raises nothing
    assert downloadable == expected  # validating changes nothing
    assert plans.script_file_ids(downloadable["Scripts"]["s"]) == ["u", "f"]
    with pytest.raises(PlanError, match="downloadable files need FormatVersion 2.1.0"):
        plans.validate_v2(downloadable, (2, 0, 0))

    chef = v2("2.2.0", Type="Chef", EntryPoint="c::r", Options={"useBerkshelf": True})
    plans.validate_v2(chef, plans.format_version(chef))  # raises nothing
    with pytest.raises(PlanError, match="Berkshelf options need"):
        plans.validate_v2(chef, (2, 1, 0))


@pytest.mark.parametrize(
    "name", ["../x", "/etc/passwd", "C:\\Windows\\x", "a/../../b", "a\\..\\..\\b", ""]
)
def test_file_names_may_not_leave_the_work_folder(name):
    with pytest.raises(PlanError):
        plans.safe_relative_path(name, "Files.x")


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({"Scripts": ["a", 1]}, r"Scripts\[1\]: must be a string"),
        ({"Commands": {}}, "Commands: must be a list"),
        ({"Commands": [{"Arguments": {}}]}, r"Commands\[0\]\.Name: is required"),
        ({"Commands": [{"Name": "A", "Arguments": []}]}, "Arguments: must be an object"),
        ({"RebootOnCompletion": True}, "RebootOnCompletion: must be an integer"),
    ],
)
def test_v1_structure_errors(plan, message):
    with pytest.raises(PlanError, match=message) as caught:
        plans.validate_v1(plan)
    assert caught.value.code == 2


def test_plan_checks_load_their_schema_without_the_engine():
    code = (
        "import sys; from murano_agent import plans; plans.validate_v1({}); "
        "assert not [m for m in sys.modules if m.startswith('murano_engine')]"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_v1_command_names_cannot_inject_code():
    with pytest.raises(PlanError, match="is not a command name"):
        plans.validate_v1({"Commands": [{"Name": "A; Remove-Item C:\\"}]})
    with pytest.raises(PlanError, match="is not a name"):
        plans.validate_v1({"Commands": [{"Name": "A", "Arguments": {"x y": 1}}]})


def test_powershell_literals():
    value = {"Name": "it's", "List": [1, 2.5, True, None], "Nested": {"k": False}}
    assert ps_literal(value) == (
        "@{'Name' = 'it''s'; 'List' = @(1, 2.5, $true, $null); 'Nested' = @{'k' = $false}}"
    )


def test_store_survives_reopening_and_remembers_results(tmp_path):
    store = PlanStore(tmp_path)
    store.receive("p1", b'{"a": 1}', "reply")
    store.receive("p2", b"raw", None)
    again = PlanStore(tmp_path)  # as after a crash
    pending = again.pending()
    assert [(m.plan_id, m.body, m.reply_to) for m in pending] == [
        ("p1", b'{"a": 1}', "reply"),
        ("p2", b"raw", None),
    ]
    assert again.is_queued("p1") and again.start_attempt(pending[0]) == 1
    assert again.start_attempt(pending[0]) == 2
    again.finish(pending[0], {"r": 1})
    assert not again.is_queued("p1") and again.stored_result("p1") == {"r": 1}
    [reopened] = PlanStore(tmp_path).outbox()
    assert (reopened.plan_id, reopened.reply_to, reopened.result) == ("p1", "reply", {"r": 1})
    [outgoing] = again.outbox()
    again.sent(outgoing)
    assert again.outbox() == [] and [m.plan_id for m in again.pending()] == ["p2"]
    last = PlanStore(tmp_path)
    assert last.outbox() == [] and last.stored_result("p1") == {"r": 1}
    assert [m.plan_id for m in last.pending()] == ["p2"]


def test_store_skips_a_torn_journal_line_and_compacts(tmp_path, monkeypatch):
    store = PlanStore(tmp_path)
    store.receive("p1", b"one", None)
    with open(tmp_path / "journal", "ab") as journal:
        journal.write(b'["P", "9", "torn')  # a crash in the middle of a write
    store = PlanStore(tmp_path)
    assert [m.plan_id for m in store.pending()] == ["p1"]
    monkeypatch.setattr(storage, "COMPACT_BYTES", 200)
    monkeypatch.setattr(storage, "KEPT_RESULTS", 2)
    for index in range(5):
        store.receive(f"q{index}", b"x" * 50, None)
        store.finish(store.pending()[-1], {"n": index})
        store.sent(store.outbox()[0])
    assert (tmp_path / "journal").stat().st_size < 600
    again = PlanStore(tmp_path)
    assert [m.plan_id for m in again.pending()] == ["p1"] and again.outbox() == []
    assert not again.has_result("q2") and again.stored_result("q4") == {"n": 4}


def test_store_counts_redeliveries_across_restarts_and_compaction(tmp_path, monkeypatch):
    store = PlanStore(tmp_path)
    assert store.redelivered("d1") == 1 and store.redelivered("d2") == 1
    assert PlanStore(tmp_path).redelivered("d1") == 2  # as after the agent died reading it
    store = PlanStore(tmp_path)
    store.handled("d2")
    store.handled("d-never-counted")  # an ordinary message: nothing is written
    monkeypatch.setattr(storage, "COMPACT_BYTES", 200)
    for index in range(3):
        store.receive(f"q{index}", b"x" * 50, None)
        store.finish(store.pending()[-1], {"n": index})
        store.sent(store.outbox()[0])
    assert (tmp_path / "journal").stat().st_size < 400  # compacted
    again = PlanStore(tmp_path)
    assert again.redelivered("d1") == 3 and again.redelivered("d2") == 1
    store.answer("m-bad", None, {"ErrorCode": 2})
    [outgoing] = PlanStore(tmp_path).outbox()
    assert (outgoing.plan_id, outgoing.result) == ("m-bad", {"ErrorCode": 2})


def in_serving_thread(function, *args):
    """``function(*args)`` called on a thread sized as the agent's serving thread."""
    outcome: list = []

    def call() -> None:
        try:
            outcome.append(function(*args))
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome.append(exc)

    previous = threading.stack_size(service.STACK_BYTES)
    try:
        thread = threading.Thread(target=call)
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    return outcome[0]


def test_messages_too_deep_or_too_big_are_plan_errors():
    deep = b"[" * 200_000
    error = in_serving_thread(plans.decode, deep, len(deep))
    assert isinstance(error, PlanError)
    assert error.message == "message body nests deeper than 100 levels"
    nested = {"ID": "x", "Parameters": json.loads("[" * 99 + "]" * 99)}  # 100 levels
    assert plans.decode(json.dumps(nested).encode(), 10_000) == nested
    nested["Parameters"] = [nested["Parameters"]]
    with pytest.raises(PlanError, match="message body nests deeper than 100 levels"):
        plans.decode(json.dumps(nested).encode(), 10_000)
    with pytest.raises(PlanError, match="message body is 11 bytes, more than the 10 allowed"):
        plans.decode(b'{"ID": "x"}', 10)
    with pytest.raises(PlanError, match="message body is not a JSON object"):
        plans.decode(b"null", 10)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("../..", "Scripts.../..: script name '../..' escapes the agent's work folder"),
        ("C:", "Scripts.C:: script name 'C:' escapes the agent's work folder"),
        ("a\\b", "Scripts.a\\b: script name 'a\\\\b' is not a single folder name"),
        ("", "Scripts.: script name '' is not a valid path"),
    ],
)
def test_script_names_are_single_folder_names(name, message):
    plan = {"FormatVersion": "2.0.0", "Scripts": {name: {"Type": "Application",
            "EntryPoint": "f"}}, "Files": {"f": {"Name": "f", "BodyType": "Text", "Body": ""}}}
    with pytest.raises(PlanError) as caught:
        plans.validate_v2(plan, (2, 0, 0))
    assert caught.value.message == message


def test_sweep_keeps_only_the_files_about_to_be_rewritten(tmp_path):
    (tmp_path / "run" / "sub").mkdir(parents=True)
    (tmp_path / "run" / "deploy.sh").write_text("old")
    (tmp_path / "run" / "output.log").write_text("left by a script")
    (tmp_path / "run" / "sub" / "lib.sh").write_text("lib")
    (tmp_path / "other").mkdir()
    (tmp_path / "run" / "link").symlink_to(tmp_path / "other")
    sweep(tmp_path, {"run/deploy.sh", "run/link", "run/sub/lib.sh"})
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert left == ["run", "run/deploy.sh", "run/sub", "run/sub/lib.sh"]
    sweep(tmp_path, set())
    assert list(tmp_path.iterdir()) == []


def test_stamp_guard_persists_and_requires_growth(tmp_path):
    guard = StampGuard(tmp_path / "stamp", durable=True)
    guard.check(5, required=True)
    guard.accept(5)
    with pytest.raises(Rejected, match="Stamp 5 <= last accepted 5"):
        StampGuard(tmp_path / "stamp", durable=False).check(5, required=False)
    with pytest.raises(Rejected, match="no Stamp"):
        guard.check(None, required=True)
    guard.check(None, required=False)
