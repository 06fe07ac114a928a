"""``murano-engine deploy/destroy/action``: state file, incremental redeploy, failures.

A tiny package stands in for an environment so the command's own logic is
tested without a cloud; the probe class records what MuranoPL did.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from murano_engine.cli.deploy import incoming_model, print_outputs
from murano_engine.cli.environments import run_command
from murano_engine.dsl.natives import NativeCall, native_class, static
from murano_engine.engine.interpreter import build_interpreter

EVENTS: list[str] = []


@native_class("t.env.Probe")
class Probe:
    @static
    def record(call: NativeCall, text: str) -> None:
        EVENTS.append(str(text))


CLASSES = {
    "Probe.yaml": """
        Name: t.env.Probe
    """,
    "Env.yaml": """
        Namespaces:
          =: t.env
        Name: Env
        Properties:
          apps:
            Contract: [$.class(App).notNull()]
          holders:
            Contract: [$.class(Holder).notNull()]
            Default: []
          deployments:
            Contract: $.int()
            Usage: Out
            Default: 0
        Methods:
          deploy:
            Scope: Public
            Body:
              - $.deployments: $.deployments + 1
              - $.apps.pselect($.deploy())
          status:
            Scope: Public
            Arguments:
              - prefix:
                  Contract: $.string()
            Body:
              - Return: format('{0}{1} apps', $prefix, len($.apps))
    """,
    "App.yaml": """
        Namespaces:
          =: t.env
        Name: App
        Properties:
          name:
            Contract: $.string().notNull()
          fail:
            Contract: $.bool()
            Default: false
          deployedAt:
            Contract: $.int()
            Usage: Out
        Methods:
          deploy:
            Body:
              - If: $.getAttr(done, false)
                Then:
                  - :Probe.record(format('skip {0}', $.name))
                  - Return:
              - If: $.fail
                Then:
                  - Throw: DeployFailed
                    Message: format('{0} cannot deploy', $.name)
              - :Probe.record(format('deploy {0}', $.name))
              - $.setAttr(done, true)
              - $.deployedAt: 1
          .destroy:
            Body:
              - :Probe.record(format('destroy {0}', $.name))
    """,
    "Holder.yaml": """
        Namespaces:
          =: t.env
        Name: Holder
        Properties:
          part:
            Contract: $.class(App)
          spec:
            Contract: $.template(App, excludeProperties => [name]).notNull()
        Methods:
          .destroy:
            Body:
              - :Probe.record('destroy holder')
    """,
}


@pytest.fixture()
def packages(tmp_path: Path) -> Path:
    root = tmp_path / "packages" / "t.env"
    (root / "Classes").mkdir(parents=True)
    (root / "manifest.yaml").write_text(
        "Format: 1.4\nType: Application\nFullName: t.env\nClasses:\n" +
        "".join(f"  t.env.{name[:-5]}: {name}\n" for name in CLASSES))
    for name, text in CLASSES.items():
        (root / "Classes" / name).write_text(textwrap.dedent(text))
    EVENTS.clear()
    return root.parent


def _model(*apps: dict) -> dict:
    return {"?": {"id": "env1", "type": "t.env.Env"},
            "apps": [{"?": {"id": a["id"], "type": "t.env.App"}, "name": a["id"],
                      **{k: v for k, v in a.items() if k != "id"}} for a in apps]}


def _run(tmp_path: Path, packages: Path, action: str, model: dict | None = None,
         **extra) -> int:
    model_path = tmp_path / "model.json"
    if model is not None:
        model_path.write_text(json.dumps(model))
    options = SimpleNamespace(load_packages_from=[str(packages)], config=None,
                              state=str(tmp_path / "state.json"), model=str(model_path),
                              **extra)
    return run_command(options, action, build_interpreter(natives=[Probe]))


@pytest.fixture(autouse=True)
def _local_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MURANO_LOCAL_CLOUD_STATE_DIR", str(tmp_path / "cloud"))


def test_deploy_writes_state_and_redeploy_destroys_removed(tmp_path, packages, capsys):
    assert _run(tmp_path, packages, "deploy", _model({"id": "a"}, {"id": "b"})) == 0
    assert sorted(EVENTS) == ["deploy a", "deploy b"]
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["Objects"]["deployments"] == 1
    assert {a["?"]["id"]: a["deployedAt"] for a in state["Objects"]["apps"]} == \
        {"a": 1, "b": 1}
    assert ["a", "t.env.App", "done", True] in state["Attributes"]
    assert "deploy finished" in capsys.readouterr().out

    EVENTS.clear()
    assert _run(tmp_path, packages, "deploy", _model({"id": "a"})) == 0
    assert EVENTS == ["destroy b", "skip a"]
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["Objects"]["deployments"] == 2
    assert [a["?"]["id"] for a in state["Objects"]["apps"]] == ["a"]
    assert state["Objects"]["apps"][0]["deployedAt"] == 1


def _holder(part: str | None, template_id: str) -> dict:
    return {"?": {"id": "h", "type": "t.env.Holder"},
            "part": part and {"?": {"id": part, "type": "t.env.App"}, "name": part},
            "spec": {"?": {"id": template_id, "type": "t.env.App"}, "fail": True}}


def test_an_object_id_defined_twice_is_refused(tmp_path, packages):
    """The first was deployed for both and the second dropped without a word."""
    with pytest.raises(SystemExit, match="object id 'a' is defined twice"):
        _run(tmp_path, packages, "deploy", _model({"id": "a"}, {"id": "b"}, {"id": "a"}))
    assert EVENTS == [] and not (tmp_path / "state.json").exists()


def test_outputs_skip_applications_written_out_elsewhere(capsys):
    print_outputs({"applications": []}, {"applications": [
        "a1", {"?": {"id": "a2", "type": "t.App/1.0"}, "name": "two", "url": "http://x"}]})
    assert capsys.readouterr().out == "two (t.App)\n  name: two\n  url: http://x\n"


def test_removal_makes_templates_no_objects(tmp_path, packages):
    """A template() value (a server template, its name left out) stays data when
    its holder is removed or when it changes: it is never made (and destroyed) as
    an object, which its name's notNull() would refuse."""
    model = _model({"id": "a"})
    model["holders"] = [_holder("p", "t1")]
    assert _run(tmp_path, packages, "deploy", model) == 0
    model["holders"] = [_holder(None, "t2")]
    EVENTS.clear()
    assert _run(tmp_path, packages, "deploy", model) == 0
    assert EVENTS == ["destroy p", "skip a"]
    model["holders"] = [_holder("q", "t3")]
    assert _run(tmp_path, packages, "deploy", model) == 0
    model["holders"] = []
    EVENTS.clear()
    assert _run(tmp_path, packages, "deploy", model) == 0
    assert sorted(EVENTS) == ["destroy holder", "destroy q", "skip a"]
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["Objects"]["holders"] == []


def test_removed_objects_under_a_property_whose_contract_changed_are_destroyed(
        tmp_path, packages):
    model = _model({"id": "a"})
    model["holders"] = [_holder("p", "t1")]
    assert _run(tmp_path, packages, "deploy", model) == 0
    holder = packages / "t.env" / "Classes" / "Holder.yaml"
    holder.write_text(holder.read_text().replace("Contract: $.class(App)",
                                                 "Contract: $.string()"))
    model["holders"] = [dict(_holder(None, "t1"), part="now a string")]
    EVENTS.clear()
    assert _run(tmp_path, packages, "deploy", model) == 0
    assert EVENTS == ["destroy p", "skip a"]


def test_failure_keeps_state_and_next_deploy_continues(tmp_path, packages, capsys):
    code = _run(tmp_path, packages, "deploy",
                _model({"id": "a"}, {"id": "bad", "fail": True}))
    assert code == 1
    out, err = capsys.readouterr()
    assert "t.env.DeployFailed" in err and "t.env.App.deploy" in err
    assert (out + err).count("bad cannot deploy") == 1  # said once, with its stack
    state = json.loads((tmp_path / "state.json").read_text())
    assert ["a", "t.env.App", "done", True] in state["Attributes"]

    EVENTS.clear()
    assert _run(tmp_path, packages, "deploy",
                _model({"id": "a"}, {"id": "bad", "fail": False})) == 0
    assert sorted(EVENTS) == ["deploy bad", "skip a"]


def test_action_and_destroy(tmp_path, packages, capsys):
    assert _run(tmp_path, packages, "deploy", _model({"id": "a"})) == 0
    capsys.readouterr()
    assert _run(tmp_path, packages, "action", object_id="env1", method="status",
                args=[("prefix", "env has ")]) == 0
    assert '"env has 1 apps"' in capsys.readouterr().out
    EVENTS.clear()
    assert _run(tmp_path, packages, "destroy") == 0
    assert EVENTS == ["destroy a"]
    assert not (tmp_path / "state.json").exists()


def test_action_must_be_public(tmp_path, packages, capsys):
    assert _run(tmp_path, packages, "deploy", _model({"id": "a"})) == 0
    with pytest.raises(SystemExit, match="MethodNotExposed: t.env.App.deploy is not public"):
        _run(tmp_path, packages, "action", object_id="a", method="deploy", args=[])
    assert not (tmp_path / "state.json.journal").exists()  # refused before anything ran


def test_action_refuses_unknown_objects_and_arguments_naming_the_known_ones(tmp_path,
                                                                            packages):
    assert _run(tmp_path, packages, "deploy", _model({"id": "a"})) == 0
    with pytest.raises(SystemExit, match=r"no object nope in the state; its objects: env1 "):
        _run(tmp_path, packages, "action", object_id="nope", method="status", args=[])
    with pytest.raises(SystemExit, match=r"takes no argument colour; its arguments: prefix"):
        _run(tmp_path, packages, "action", object_id="env1", method="status",
             args=[("colour", "red")])


def test_model_root_must_be_an_object():
    with pytest.raises(SystemExit, match="'\\?' header"):
        incoming_model({"name": "no header"}, None)


def test_model_that_fails_to_load_keeps_the_previous_state(tmp_path, packages, capsys):
    assert _run(tmp_path, packages, "deploy", _model({"id": "a"})) == 0
    before = json.loads((tmp_path / "state.json").read_text())
    broken = _model({"id": "a"})
    broken["apps"][0]["name"] = None
    assert _run(tmp_path, packages, "deploy", broken) == 1
    out, err = capsys.readouterr()
    assert "t.env.App.name" in out + err and "ContractViolationException" in err
    after = json.loads((tmp_path / "state.json").read_text())
    assert after["Objects"] == before["Objects"]
    assert after["Attributes"] == before["Attributes"]
    EVENTS.clear()
    assert _run(tmp_path, packages, "destroy") == 0
    assert EVENTS == ["destroy a"]


def test_environment_variables_override_sections_with_underscores():
    from murano_engine.engine.config import load_config
    config = load_config(None, {"MURANO_LOCAL_CLOUD_STATE_DIR": "/x",
                                "MURANO_ENGINE_AGENT_TIMEOUT": "7"})
    assert config["local_cloud"]["state_dir"] == "/x"
    assert config["engine"]["agent_timeout"] == 7


def test_destroy_and_action_need_only_the_state_file(tmp_path, packages):
    config = tmp_path / "engine.ini"
    config.write_text(f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\n")
    options = SimpleNamespace(load_packages_from=[str(packages)], config=str(config),
                              state=str(tmp_path / "state.json"),
                              model=str(tmp_path / "model.json"))
    (tmp_path / "model.json").write_text(json.dumps(_model({"id": "a"})))
    assert run_command(options, "deploy", build_interpreter(natives=[Probe])) == 0
    remembered = json.loads((tmp_path / "state.json").read_text())["Run"]
    assert remembered == {"packages": [str(packages.resolve())], "config": str(config)}

    bare = SimpleNamespace(load_packages_from=[], config=None, state=str(tmp_path / "state.json"))
    action = SimpleNamespace(**vars(bare), object_id="env1", method="status", args=[])
    assert run_command(action, "action", build_interpreter(natives=[Probe])) == 0
    assert run_command(bare, "destroy", build_interpreter(natives=[Probe])) == 0
    assert not (tmp_path / "state.json").exists()


def test_a_failed_scripts_exit_code_and_output_tail_are_shown():
    from murano_engine.dsl.errors import MuranoPlException
    from murano_engine.engine.tasks import script_output
    from murano_engine.messaging.errors import AgentError

    agent = AgentError({"message": "script 'verify' exited with code 3",
                        "details": {"exitCode": 3, "stdout": "\n".join(map(str, range(30))),
                                    "stderr": "bad thing\n"}})
    step = MuranoPlException(["app.StepFailed"], "verify failed on kv-1",
                             cause=MuranoPlException(["x.AgentException"], "exit 3",
                                                     native=agent))
    shown = script_output(step)
    assert shown.splitlines()[0] == "exit code 3"
    assert "stdout (last 10 lines):\n  20\n" in shown and "  29\nstderr" in shown
    assert shown.endswith("stderr (last 1 lines):\n  bad thing")
    assert script_output(MuranoPlException(["x.Other"], "no script here")) is None
