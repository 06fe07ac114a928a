"""What the command lines say: help, option spellings, and errors a new user meets first."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from murano_engine.cli import main as cli
from murano_engine.cli import test_runner
from murano_engine.cli.deploy import journal_steps

REPO = Path(__file__).resolve().parents[2]
HELLO_WEB = REPO / "dsl_packages" / "io.murano.apps.linux.HelloWeb"


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        cli.build_parser().parse_args([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_deploy_usage_shows_report(capsys):
    usage = _help(capsys, "deploy").split("\n\n")[0]
    assert "[--report FILE.html]" in usage
    assert "--report" not in _help(capsys, "destroy")


def test_worker_takes_config_as_the_other_commands_do(capsys):
    text = _help(capsys, "worker")
    assert "--config FILE" in text and "--config-file" not in text
    parser = cli.build_parser()
    for spelling in ("--config", "--config-file"):  # the older spelling still works
        assert parser.parse_args(["worker", spelling, "api.conf"]).config_file == "api.conf"
    with pytest.raises(SystemExit) as refused:
        cli.main(["worker"])
    assert str(refused.value) == "error: worker takes --config FILE (murano-api's configuration)"


def test_agent_help_is_plain_text():
    done = subprocess.run([sys.executable, "-m", "murano_agent.cli", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "`" not in done.stdout and "guest agent" in done.stdout


def test_validate_of_a_missing_path_says_so(capsys, tmp_path):
    missing = tmp_path / "io.murano.apps.linux.HelloWe"
    assert cli.main(["validate", str(missing)]) == 1
    out, err = capsys.readouterr()
    assert out == f"{missing}: no such package folder or zip\n"
    assert "Errno" not in out + err and "zip:" not in out


def test_test_runner_given_a_path_says_to_use_l(capsys):
    with pytest.raises(SystemExit) as refused:
        test_runner.main([str(HELLO_WEB)])
    assert refused.value.code == 2
    assert capsys.readouterr().err == (
        f"error: {HELLO_WEB} is a path; name the package and give the folder holding it "
        f"with -l: murano-test-runner io.murano.apps.linux.HelloWeb "
        f"-l {os.path.relpath(HELLO_WEB.parent)}\n")


def test_test_runner_names_a_mistyped_folder_after_the_package(capsys):
    with pytest.raises(SystemExit) as refused:
        test_runner.main(["io.murano.apps.linux.HelloWeb", "-l", "dsl_pakages"])
    assert refused.value.code == 2
    assert capsys.readouterr().err == "error: dsl_pakages: package folder does not exist\n"


def test_every_config_error_is_reported_without_python_names(tmp_path):
    config = tmp_path / "engine.ini"
    config.write_text("[engine]\nfoo = 1\ntask_step_limit = many\n[nosuch]\nx = 1\n")
    model = tmp_path / "model.json"
    model.write_text(json.dumps({"?": {"id": "e1", "type": "io.murano.Environment"}}))
    # a subprocess: deploy monkey-patches the process for green threads (never pytest's)
    done = subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", "deploy", str(model),
         "--config", str(config), "--state", str(tmp_path / "state.json")],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"error: {config} [engine]: unknown option 'foo'",
        f"error: {config} [engine]: option 'task_step_limit' = 'many' is not a whole number",
        f"error: {config}: unknown section [nosuch]"]
    assert not (tmp_path / "state.json").exists()


def test_journal_steps_count_finished_and_started_steps():
    entries = [{"k": "a", "t": "end", "v": 1},
               {"k": "b", "t": "begin", "v": "plan"}, {"k": "b", "t": "end", "v": 2},
               {"k": "c", "t": "begin", "v": "plan"}]
    assert journal_steps(entries) == (2, 1)


@pytest.mark.parametrize("debug", [False, True])
def test_a_failed_deploy_shows_its_murano_stack_and_with_debug_the_python_one(tmp_path, debug):
    model = json.loads((REPO / "examples" / "hello-web.json").read_text())
    model["applications"][0]["servers"]["provider"]["template"]["flavor"] = [1]
    (tmp_path / "model.json").write_text(json.dumps(model))
    (tmp_path / "engine.ini").write_text(f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\n")
    done = subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", "deploy", str(tmp_path / "model.json"),
         "-l", str(REPO / "dsl_packages"), "--state", str(tmp_path / "state.json"),
         "--config", str(tmp_path / "engine.ini"), *(["--debug"] if debug else [])],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    output = done.stdout + done.stderr
    assert "[io.murano.resources.Instance.flavor] value (1,) is not a string" in output
    template = REPO / "meta/io.murano.applications/Classes/servers/TemplateServerProvider.yaml"
    assert "io.murano.applications io.murano.applications.TemplateServerProvider.template " \
           f"(property contract) at {template}:" in output
    assert ("Traceback (most recent call last):" in output) is debug


@pytest.mark.parametrize("spelling", ["--config", "--config-file"])
def test_test_runner_reads_its_config_before_running_anything(capsys, tmp_path, spelling):
    config = tmp_path / "engine.ini"
    config.write_text("[engine]\ntask_step_limit = many\n")
    code = test_runner.main(["io.murano.apps.linux.HelloWeb", "-l", str(HELLO_WEB.parent),
                             spelling, str(config)])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err == f"error: {config} [engine]: option 'task_step_limit' = 'many' is not a " \
                  "whole number\n"


@pytest.mark.parametrize("argv", [["run", "-l", "x"], ["--debug", "deploy", "m.json"],
                                  ["validate", "p"], ["worker", "--config", "c"]])
def test_the_parser_of_one_command_parses_as_the_whole_one_does(argv: list[str]) -> None:
    whole = cli.build_parser().parse_args(argv)
    one = cli.build_parser(argv[1] if argv[0] == "--debug" else argv[0]).parse_args(argv)
    assert {k: v for k, v in vars(one).items() if k != "handler"} == \
        {k: v for k, v in vars(whole).items() if k != "handler"}
    assert cli.build_parser(argv[0]).format_usage() == cli.build_parser().format_usage()


def _small_disk() -> None:
    """A file size limit in the child, standing for a full disk: a write past 20,000
    bytes fails with EFBIG."""
    import resource
    import signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, resource.RLIM_INFINITY))


def _one_class_package(root: Path, body: str) -> None:
    package = root / "packages" / "t.full"
    (package / "Classes").mkdir(parents=True)
    (package / "manifest.yaml").write_text(
        "Format: MuranoPL/1.4\nType: Application\nFullName: t.full\nName: t.full\n"
        "Classes:\n  t.full.Stamps: Stamps.yaml\n")
    (package / "Classes" / "Stamps.yaml").write_text(
        "Namespaces:\n  =: t.full\n  res: io.murano\nName: Stamps\nExtends: res:Application\n"
        "Properties:\n  stamps:\n    Contract: $\n    Usage: Out\n"
        f"Methods:\n  deploy:\n    Body:\n      - $.stamps: {body}\n")
    model = {"?": {"id": "e" * 32, "type": "io.murano.Environment"}, "name": "full",
             "applications": [{"?": {"id": "a" * 32, "type": "t.full.Stamps"}}]}
    (root / "model.json").write_text(json.dumps(model))


def _deploy_command(root: Path) -> list[str]:
    return [sys.executable, "-m", "murano_engine.cli.main", "deploy", str(root / "model.json"),
            "-l", str(REPO / "meta"), "-l", str(root / "packages"), "--state",
            str(root / "state.json")]


def test_a_deploy_whose_state_file_cannot_be_written_says_so_and_resumes(tmp_path):
    # The run records little (no step reaches outside) and ends with a state of some
    # 30 KB: its last write, the state file's, is the one that meets the full disk.
    _one_class_package(tmp_path, "range(400).select(concat('stamp ', str($), ' of a state "
                                 "too large for the disk'))")
    command = _deploy_command(tmp_path)
    stopped = subprocess.run(command, capture_output=True, text=True, timeout=120,
                             preexec_fn=_small_disk, cwd=tmp_path)  # noqa: PLW1509
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert stopped.stderr.splitlines()[-1] == (
        f"error: could not write the state file {tmp_path / 'state.json'}: File too large; "
        f"what the run did is kept in {tmp_path / 'state.json.journal'}. Run the same "
        "command to carry on.")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "model.json", "packages", "state.json.journal"]  # no half-written file

    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resuming the run interrupted earlier" in done.stdout
    stamps = json.loads((tmp_path / "state.json").read_text())[
        "Objects"]["applications"][0]["stamps"]
    assert stamps == [f"stamp {n} of a state too large for the disk" for n in range(400)]
    assert not (tmp_path / "state.json.journal").exists()


def test_a_deploy_whose_journal_cannot_be_written_stops_saying_why_and_resumes(tmp_path):
    # A file size limit stands for a full disk: the run stops at the step it cannot
    # record, says so, and the same command carries it on once there is room.
    _one_class_package(tmp_path, "range(300).select(randomName())")
    command = _deploy_command(tmp_path)
    stopped = subprocess.run(command, capture_output=True, text=True, timeout=120,
                             preexec_fn=_small_disk, cwd=tmp_path)  # noqa: PLW1509
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert re.search(r"^error: the journal could not record step \S*\|name\|\|\d+: ",
                     stopped.stderr, re.MULTILINE), stopped.stderr
    assert "Run the same command to carry on" in stopped.stderr
    assert not (tmp_path / "state.json").exists()

    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resuming the run interrupted earlier" in done.stdout
    replayed = re.search(r"(\d+) step\(s\) came from the journal", done.stdout)
    assert replayed and int(replayed[1]) >= 100, done.stdout  # recorded before the stop
    state = json.loads((tmp_path / "state.json").read_text())
    stamps = state["Objects"]["applications"][0]["stamps"]
    assert len(set(stamps)) == 300


def test_destroy_names_the_queues_it_could_not_delete_when_the_broker_is_away(tmp_path):
    from murano_engine.cli.deploy import Resources
    from murano_engine.engine.config import load_config
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = load_config(environ={"MURANO_RABBITMQ_URL": f"amqp://guest:guest@127.0.0.1:{port}//"})
    resources = Resources({"queues": ["e1-h1", "e1-h2"]})
    started = time.monotonic()
    problems = resources.remove_queues(config)
    assert time.monotonic() - started < 2  # one try, not kombu's retries (6 s)
    assert len(problems) == 1
    assert problems[0].startswith(f"queues e1-h1, e1-h2 on the broker at "
                                  f"amqp://guest:**@127.0.0.1:{port}//: "), problems
    assert "guest:guest" not in problems[0]  # no password in a message


def test_a_model_too_deep_for_a_state_file_is_not_written_and_destroy_removes_the_run(
        tmp_path):
    # A value nested 300 levels (a value may nest 500) made a state file that every
    # later command refused (a state nests at most 200 levels): nothing could destroy it.
    _one_class_package(tmp_path, "range(300).aggregate([$1], 1)")
    stopped = subprocess.run(_deploy_command(tmp_path), capture_output=True, text=True,
                             timeout=120, cwd=tmp_path)
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    state, journal = tmp_path / "state.json", tmp_path / "state.json.journal"
    assert stopped.stderr.splitlines()[-1] == (
        f"error: the state file {state} is not written: the model after the run nests "
        f"304 levels deep (a state file holds at most 200); what the run did is kept in "
        f"{journal}: `murano-engine destroy --state {state}` removes what it made")
    assert not state.exists() and journal.exists()

    destroyed = subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", "destroy", "--state", str(state)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    assert "destroy finished; state removed" in destroyed.stdout
    assert not state.exists() and not journal.exists()
