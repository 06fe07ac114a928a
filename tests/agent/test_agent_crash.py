"""An agent killed while a plan's script runs, then restarted on the same storage:
every script runs once, the restarted agent waits for (or ends) what the killed one
left running, and the engine side gets exactly one result per plan."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path

from agent_harness import publish_raw


def shell_plan(body: str, **scripts: str) -> dict:
    """A v2 plan with one shell entry point per script (exit codes not checked)."""
    return {
        "FormatVersion": "2.0.0",
        "ID": uuid.uuid4().hex,
        "Body": body,
        "Scripts": {
            name: {
                "Type": "Application",
                "EntryPoint": f"{name}.sh",
                "Options": {"verifyExitcode": False},
            }
            for name in scripts
        },
        "Files": {
            f"{name}.sh": {"Name": f"{name}.sh", "BodyType": "Text", "Body": text}
            for name, text in scripts.items()
        },
    }


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def wait_lines(path: Path, count: int, timeout: float = 10) -> list[str]:
    """The lines of ``path`` once it has at least ``count``."""
    deadline = time.monotonic() + timeout
    while len(found := lines(path)) < count:
        assert time.monotonic() < deadline, f"{path} has {found}, waited for {count} lines"
        time.sleep(0.02)
    return found


def running(pid: int) -> bool:
    """Whether ``pid`` lives (a zombie, never reaped here, has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone, or going as it is read
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def start_plan(agent, plan: dict) -> None:
    agent.wait_log("connected; consuming")
    publish_raw(agent.queue, json.dumps(plan), message_id=plan["ID"])


def one_result(reader, plan: dict, timeout: float = 20) -> dict:
    """The plan's result, after checking that it is the only message on the result queue."""
    message_id, result = reader.get(timeout)
    assert message_id == plan["ID"] and result["SourceID"] == plan["ID"]
    assert reader.empty(1.0), "a second result arrived"
    return result


def run_files(agent) -> list[str]:
    return os.listdir(agent.folder / "storage" / "runs")


def test_script_left_running_is_waited_for_not_run_again(make_agent, reader, tmp_path):
    agent = make_agent(result_queue=reader.queue, extra="plan_timeout = 30")
    log = tmp_path / "log"
    script = f'#!/bin/sh\necho "$$" >> {log}\nsleep 3\necho "finished $$"\nexit 3\n'
    plan = shell_plan("r = run()\nreturn {'code': r.exitCode, 'out': r.stdout}", run=script)
    start_plan(agent, plan)
    [pid] = wait_lines(log, 1)
    time.sleep(1)
    agent.kill()
    assert running(int(pid)), "the script ended with the agent"
    agent.start()
    result = one_result(reader, plan)
    assert result["ErrorCode"] == 0, result
    assert result["Body"] == {"code": 3, "out": f"finished {pid}"}
    assert lines(log) == [pid]  # one run, by one process
    assert f"running plan {plan['ID']} (attempt 2)" in agent.log()
    assert "script call 0 (run): exit code 3" in agent.log()
    assert run_files(agent) == []


def test_script_that_ended_while_no_agent_ran_answers_with_its_exit_code(
    make_agent, reader, tmp_path
):
    agent = make_agent(result_queue=reader.queue, extra="plan_timeout = 30")
    log = tmp_path / "log"
    script = f'#!/bin/sh\necho "$$" >> {log}\nsleep 1\necho "done $$" >> {log}\necho out\nexit 4\n'
    plan = shell_plan("r = run()\nreturn [r.exitCode, r.stdout]", run=script)
    start_plan(agent, plan)
    [pid] = wait_lines(log, 1)
    agent.kill()
    wait_lines(log, 2)
    deadline = time.monotonic() + 5
    while running(int(pid)):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    agent.start()
    assert one_result(reader, plan)["Body"] == [4, "out"]
    assert lines(log) == [pid, f"done {pid}"]


def test_finished_call_is_not_run_again_and_the_running_one_is_waited_for(
    make_agent, reader, tmp_path
):
    agent = make_agent(result_queue=reader.queue, extra="plan_timeout = 30")
    log = tmp_path / "log"
    first = f'#!/bin/sh\necho "first $$" >> {log}\necho one\n'
    second = f'#!/bin/sh\necho "second $$" >> {log}\nsleep 2.5\necho two\nexit 5\n'
    body = "a = first()\nb = second()\nreturn [a.stdout, b.stdout, b.exitCode]"
    plan = shell_plan(body, first=first, second=second)
    start_plan(agent, plan)
    wait_lines(log, 2)
    time.sleep(0.5)
    agent.kill()
    agent.start()
    result = one_result(reader, plan)
    assert result["Body"] == ["one", "two", 5], result
    assert [line.split()[0] for line in lines(log)] == ["first", "second"]
    assert "script call 1 (second): exit code 5" in agent.log()
    assert "script call 0" not in agent.log()  # journaled as finished: nothing to settle
    assert run_files(agent) == []


def test_call_that_vanished_without_an_exit_code_is_reported_interrupted(
    make_agent, reader, tmp_path
):
    agent = make_agent(result_queue=reader.queue, extra="plan_timeout = 30")
    log = tmp_path / "log"
    script = f'#!/bin/sh\necho "$$" >> {log}\necho partial\nsleep 30\n'
    plan = shell_plan("return run().stdout", run=script)
    start_plan(agent, plan)
    [pid] = wait_lines(log, 1)
    agent.kill()
    os.killpg(os.getpgid(int(pid)), signal.SIGKILL)  # as a power cut would: nothing is left
    deadline = time.monotonic() + 5
    while running(int(pid)):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    agent.start()
    result = one_result(reader, plan)
    assert result["ErrorCode"] == 100
    assert result["Body"]["Message"].startswith("script 'run' was interrupted")
    assert result["Body"]["AdditionalInfo"] == {
        "exitCode": None,
        "stdout": "partial",
        "stderr": None,
    }
    assert lines(log) == [pid]


def test_script_left_running_is_killed_at_the_plan_time_limit(make_agent, reader, tmp_path):
    agent = make_agent(result_queue=reader.queue, extra="plan_timeout = 3")
    log = tmp_path / "log"
    script = f'#!/bin/sh\necho "$$" >> {log}\nsleep 30 &\necho "$!" >> {log}\nwait\n'
    plan = shell_plan("return run().stdout", run=script)
    start_plan(agent, plan)
    started = time.monotonic()
    pid, child = wait_lines(log, 2)
    agent.kill()
    agent.start()
    result = one_result(reader, plan)
    assert time.monotonic() - started < 6  # the limit counts from the script's start
    assert result["ErrorCode"] == 100 and "timed out" in result["Body"]["Message"]
    assert not running(int(pid)) and not running(int(child))  # its whole group is killed
    assert lines(log) == [pid, child]
