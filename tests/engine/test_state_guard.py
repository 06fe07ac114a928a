"""What guards a state file and its journal: one environment per state file, a journal
that checks out and records the model given, one command at a time.

A tiny package stands in for an environment; each application "installs" through the
engine's outside boundary (so the journal records it, and a resumed run replays it
instead of installing again), and ``CRASH`` makes the install of a name die as a
killed process would.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from murano_engine.cli.deploy import DEFAULT_STATE, journal_path
from murano_engine.cli.environments import run_command
from murano_engine.cli.state_lock import holding, lock_path
from murano_engine.dsl.natives import NativeCall, native_class, static
from murano_engine.engine.interpreter import build_interpreter
from murano_engine.engine.journal import TAMPERED, Chain

INSTALLED: list[str] = []
CRASH: set[str] = set()


class Killed(BaseException):
    """Stands for the process dying in the middle of an install."""


@native_class("t.guard.Probe")
class Probe:
    @static
    def install(call: NativeCall, name: str) -> str:
        def install() -> str:
            if name in CRASH:
                raise Killed(name)
            INSTALLED.append(name)
            return f"installed {name}"
        return call.executor.outside.value("probe.install", name, install)


CLASSES = {
    "Probe.yaml": "Name: t.guard.Probe\n",
    "Env.yaml": """
        Namespaces:
          =: t.guard
        Name: Env
        Properties:
          name:
            Contract: $.string()
          applications:
            Contract: [$.class(App).notNull()]
        Methods:
          deploy:
            Scope: Public
            Body:
              - For: app
                In: $.applications
                Do:
                  - $app.deploy()
    """,
    "App.yaml": """
        Namespaces:
          =: t.guard
        Name: App
        Properties:
          name:
            Contract: $.string().notNull()
          fail:
            Contract: $.bool()
            Default: false
          result:
            Contract: $.string()
            Usage: Out
        Methods:
          deploy:
            Body:
              - If: $.fail
                Then:
                  - Throw: DeployFailed
                    Message: format('{0} cannot deploy', $.name)
              - $.result: :Probe.install($.name)
    """,
}


@pytest.fixture()
def packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "packages" / "t.guard"
    (root / "Classes").mkdir(parents=True)
    (root / "manifest.yaml").write_text(
        "Format: 1.4\nType: Application\nFullName: t.guard\nClasses:\n" +
        "".join(f"  t.guard.{name[:-5]}: {name}\n" for name in CLASSES))
    for name, text in CLASSES.items():
        (root / "Classes" / name).write_text(textwrap.dedent(text))
    monkeypatch.setenv("MURANO_LOCAL_CLOUD_STATE_DIR", str(tmp_path / "cloud"))
    monkeypatch.setenv("MURANO_ENGINE_JOURNAL_KEY_FILE", str(tmp_path / "keys" / "journal.key"))
    INSTALLED.clear()
    CRASH.clear()
    return root.parent


def model(*apps: str, env: str = "env1", fail: str = "") -> dict:
    return {"?": {"id": env, "type": "t.guard.Env"}, "name": f"{env}-name",
            "applications": [{"?": {"id": name, "type": "t.guard.App"}, "name": name,
                      "fail": name == fail} for name in apps]}


def deploy(tmp_path: Path, packages: Path, given: dict | None, state: str | None = "state.json",
           file: str = "model.json") -> int:
    model_path = tmp_path / file
    if given is not None:
        model_path.write_text(json.dumps(given))
    options = SimpleNamespace(load_packages_from=[str(packages)], config=None,
                              state=str(tmp_path / state) if state else None,
                              model=str(model_path) if given is not None else None)
    return run_command(options, "deploy", build_interpreter(natives=[Probe]))


def interrupted(tmp_path: Path, packages: Path, *apps: str, at: str) -> list[bytes]:
    """Deploy ``apps``, killed as the install of ``at`` runs; the journal's lines."""
    CRASH.add(at)
    with pytest.raises(Killed):
        deploy(tmp_path, packages, model(*apps))
    CRASH.clear()
    INSTALLED.clear()
    return journal_path(tmp_path / "state.json").read_bytes().splitlines(keepends=True)


def refused_journal(tmp_path: Path, packages: Path, line: int) -> None:
    """The next deploy of the same model is refused naming ``line``; nothing installed."""
    path = journal_path(tmp_path / "state.json")
    before = path.read_bytes()
    with pytest.raises(SystemExit) as caught:
        deploy(tmp_path, packages, model("a", "b", "c"))
    message = str(caught.value)
    assert message.startswith(f"error: {path}:{line}: {TAMPERED}. Nothing was run from it.")
    assert f"move it away (mv {path} {path}.untrusted)" in message
    assert INSTALLED == []
    assert path.read_bytes() == before  # left for the user to look at
    assert not (tmp_path / "state.json").exists()
    assert not lock_path(tmp_path / "state.json").exists()


def test_a_resumed_deploy_replays_what_was_installed(tmp_path, packages):
    lines = interrupted(tmp_path, packages, "a", "b", "c", at="b")
    assert len(lines) == 2  # the header, a's install
    assert deploy(tmp_path, packages, model("a", "b", "c")) == 0
    assert INSTALLED == ["b", "c"]
    state = json.loads((tmp_path / "state.json").read_text())
    assert [app["result"] for app in state["Objects"]["applications"]] == \
        ["installed a", "installed b", "installed c"]


def test_a_forged_result_line_is_refused(tmp_path, packages):
    lines = interrupted(tmp_path, packages, "a", "b", "c", at="b")
    last = json.loads(lines[-1])
    # The made-up result of b's install, chained as well as one can without the key.
    forged = {"k": last["k"].replace("|a|", "|b|"), "t": "end", "v": "installed b"}
    chain = Chain(None)
    chain.last = last["d"]
    body = json.dumps(forged, separators=(",", ":")).encode()
    journal_path(tmp_path / "state.json").write_bytes(
        b"".join(lines) + b'{"d":"' + chain.seal(body).encode() + b'",' + body[1:] + b"\n")
    refused_journal(tmp_path, packages, len(lines) + 1)


def test_a_reordered_line_is_refused(tmp_path, packages):
    CRASH.add("c")
    with pytest.raises(Killed):
        deploy(tmp_path, packages, model("a", "b", "c"))
    CRASH.clear()
    INSTALLED.clear()
    path = journal_path(tmp_path / "state.json")
    header, first, second = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(header + second + first)
    refused_journal(tmp_path, packages, 2)


def test_an_edited_header_is_refused(tmp_path, packages):
    lines = interrupted(tmp_path, packages, "a", "b", "c", at="b")
    assert b'"name":"c"' in lines[0]
    journal_path(tmp_path / "state.json").write_bytes(
        b"".join([lines[0].replace(b'"name":"c"', b'"name":"z"'), *lines[1:]]))
    refused_journal(tmp_path, packages, 1)


def test_another_model_is_refused_while_a_deploy_is_interrupted(tmp_path, packages, capsys):
    interrupted(tmp_path, packages, "a", "b", "c", at="b")
    with pytest.raises(SystemExit) as caught:
        deploy(tmp_path, packages, model("a", "x"))
    state = tmp_path / "state.json"
    assert str(caught.value) == (
        f"error: a deploy of another model ({tmp_path / 'model.json'}) was interrupted on "
        f"{state}; {tmp_path / 'model.json'} differs from it, so nothing was run. Carry the "
        f"interrupted deploy on with `murano-engine deploy --state {state}` (no model), "
        f"then deploy the new model; or move {journal_path(state)} away to start afresh "
        f"(what it recorded is then done again, and what it made is not in {state})")
    assert INSTALLED == [] and not state.exists()

    capsys.readouterr()
    assert deploy(tmp_path, packages, None) == 0  # --state alone carries it on
    assert INSTALLED == ["b", "c"]
    out = capsys.readouterr().out
    assert "resuming the run interrupted earlier" in out
    assert "a (t.guard.App)\n  result: installed a\nb (t.guard.App)\n  result: installed b" in out
    assert deploy(tmp_path, packages, model("a", "x")) == 0
    assert INSTALLED == ["b", "c", "a", "x"]  # a redeploy installs again
    with pytest.raises(SystemExit, match="deploy takes MODEL"):
        deploy(tmp_path, packages, None)


def test_another_environment_is_refused_on_a_state_file(tmp_path, packages):
    assert deploy(tmp_path, packages, model("a")) == 0
    before = (tmp_path / "state.json").read_bytes()
    with pytest.raises(SystemExit) as caught:
        deploy(tmp_path, packages, model("b", env="env2"), file="other.json")
    assert str(caught.value) == (
        f"error: {tmp_path / 'state.json'} holds environment env1 (env1-name); "
        f"{tmp_path / 'other.json'} is environment env2 (env2-name). Each environment has "
        f"its own state file: deploy it with --state other.state.json, or first remove the "
        f"other with `murano-engine destroy --state {tmp_path / 'state.json'}`")
    assert INSTALLED == ["a"]
    assert (tmp_path / "state.json").read_bytes() == before
    assert deploy(tmp_path, packages, model("b", env="env2"), state="other.state.json") == 0
    assert INSTALLED == ["a", "b"]


def test_a_journal_of_a_run_that_never_began_takes_nothing_over(tmp_path, packages, capsys):
    assert deploy(tmp_path, packages, model("a")) == 0
    config = tmp_path / "bad.ini"
    (tmp_path / "key-folder.pem").mkdir()  # a signing key that cannot be read
    config.write_text(f"[engine]\nsigning_key = {tmp_path / 'key-folder.pem'}\n")
    options = SimpleNamespace(load_packages_from=[str(packages)], config=str(config),
                              state=str(tmp_path / "state.json"),
                              model=str(tmp_path / "model.json"))
    (tmp_path / "model.json").write_text(json.dumps(model("a", "b")))
    with pytest.raises(IsADirectoryError, match="key-folder.pem"):
        run_command(options, "deploy", build_interpreter(natives=[Probe]))
    assert not journal_path(tmp_path / "state.json").exists()

    # One an older engine left with nothing recorded is removed as well.
    from murano_engine.cli.deploy import _digest
    from murano_engine.engine.journal import FileJournal, journal_key
    FileJournal.create(journal_path(tmp_path / "state.json"),
                       {"command": "deploy", "task": {"model": "?"},
                        "base": _digest(tmp_path / "state.json")},
                       journal_key(str(tmp_path / "keys" / "journal.key"))).close()
    assert deploy(tmp_path, packages, model("a", "c")) == 0
    assert INSTALLED == ["a", "a", "c"]  # deployed afresh, not resumed
    assert "resuming" not in capsys.readouterr().out


def test_a_failed_deploy_on_the_default_state_file_leaves_nothing(tmp_path, packages,
                                                                   monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert deploy(tmp_path, packages, model("a", "bad", fail="bad"), state=None) == 1
    assert "it made nothing, so no state file was written" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cloud", "keys", "model.json",
                                                           "packages"]
    assert deploy(tmp_path, packages, model("b", env="env2"), state=None) == 0
    assert json.loads((tmp_path / DEFAULT_STATE).read_text())["Objects"]["?"]["id"] == "env2"


def test_a_held_state_file_is_refused_naming_the_holder(tmp_path, packages):
    import os
    with holding(tmp_path / "state.json"):
        with pytest.raises(SystemExit) as caught:
            deploy(tmp_path, packages, model("a"))
    assert str(caught.value) == (
        f"error: {tmp_path / 'state.json'} is in use by another murano-engine command "
        f"(pid {os.getpid()}); wait for it to end, or stop it (Ctrl-C there, or kill -INT "
        f"{os.getpid()}) and run this command again")
    assert INSTALLED == [] and not lock_path(tmp_path / "state.json").exists()
    assert deploy(tmp_path, packages, model("a")) == 0


def test_deploy_without_a_model_only_carries_an_interrupted_deploy_on(tmp_path):
    import os
    import subprocess
    import sys
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, MURANO_ENGINE_JOURNAL_KEY_FILE=str(tmp_path / "journal.key"))
    for state in ([], ["--state", "s.json"]):
        done = subprocess.run([sys.executable, "-m", "murano_engine.cli.main", "deploy", *state],
                              cwd=work, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 1
        assert done.stderr == ("error: deploy takes MODEL (only an interrupted deploy is "
                               "carried on with --state alone)\n")
        assert list(work.iterdir()) == []


def test_a_journal_key_beside_the_state_file_is_warned_about(tmp_path, packages, monkeypatch,
                                                             capsys):
    monkeypatch.setenv("MURANO_ENGINE_JOURNAL_KEY_FILE", str(tmp_path / "journal.key"))
    assert deploy(tmp_path, packages, model("a")) == 0
    assert (f"warning: the journal key {tmp_path / 'journal.key'} is in the state file's "
            "folder") in capsys.readouterr().err
    monkeypatch.setenv("MURANO_ENGINE_JOURNAL_KEY_FILE", "")  # unkeyed digests: no key file
    assert deploy(tmp_path, packages, model("a", "b")) == 0
    assert "warning" not in capsys.readouterr().err


def test_a_state_file_in_a_missing_folder_is_named(tmp_path, packages):
    with pytest.raises(SystemExit) as caught:
        deploy(tmp_path, packages, model("a"), state="no-such/state.json")
    assert str(caught.value) == (f"error: {tmp_path / 'no-such' / 'state.json'}: the state "
                                 f"file's folder {tmp_path / 'no-such'} does not exist")
    assert INSTALLED == []
