"""The agent as a real process on the real RabbitMQ, driven by the engine client."""

from __future__ import annotations

import hashlib
import http.server
import json
import shutil
import subprocess
import time
import uuid

import pytest
from agent_harness import close_broker_connections, publish_raw
from powershell_syntax import syntax_errors

from murano_engine.messaging import AgentError
from tests.loopback_http import serving


def resources(**files: bytes):
    return lambda name: files[name]


def script_plan(body: str = "return run().stdout", fmt: str = "2.1.0", **script) -> dict:
    script.setdefault("Type", "Application")
    script.setdefault("EntryPoint", "run.sh")
    return {"FormatVersion": fmt, "Body": body, "Scripts": {"run": script}}


def variant(plan: dict, **changes) -> dict:
    """A deep copy of ``plan`` under a new ID (a repeated ID is answered from storage)."""
    copy = json.loads(json.dumps(plan))
    copy.update(changes, ID=uuid.uuid4().hex)
    return copy


def call_script(client, agent, text: str, timeout: float = 10, **plan_args):
    plan = client.build_plan(script_plan(**plan_args), resources(**{"run.sh": text.encode()}))
    return client.call(agent.queue, plan, timeout)


@pytest.fixture
def http_file():
    """A one-file HTTP server on loopback, for Downloadable plan files."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            payload = b"downloaded content"
            self.send_response(200 if self.path == "/remote.txt" else 404)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    with serving(Handler) as url:
        yield f"{url}/remote.txt"


def test_v2_plan_with_text_binary_and_downloaded_files(client, make_agent, http_file):
    agent = make_agent(client)
    blob = bytes(range(256)) * 3
    template = {
        "FormatVersion": "2.1.0",
        "Parameters": {"word": "hello"},
        "Body": "r = deploy(args.word)\nreturn {'out': r.stdout, 'code': r.exitCode}",
        "Scripts": {
            "deploy": {
                "Type": "Application",
                "EntryPoint": "deploy.sh",
                "Files": ["conf/helper.txt", "<blob.bin>", {"remote.txt": http_file}],
                "Options": {"captureStderr": False},
            }
        },
    }
    script = (
        b'#!/bin/sh\necho "$1|$(cat conf/helper.txt)|$(cat remote.txt)|'
        b'$(md5sum < blob.bin | cut -c1-32)"\n'
    )
    read = resources(**{"deploy.sh": script, "conf/helper.txt": b"a\r\nb", "blob.bin": blob})
    result = client.call(agent.queue, client.build_plan(template, read), 10)
    expected = f"hello|a\nb|downloaded content|{hashlib.md5(blob).hexdigest()}"
    assert result == {"out": expected, "code": 0}


def test_failing_script_error_carries_exit_code_and_output(client, make_agent):
    agent = make_agent(client)
    with pytest.raises(AgentError) as caught:
        call_script(client, agent, "#!/bin/sh\necho partial\necho broken >&2\nexit 3\n")
    assert caught.value.error_code == 100
    assert caught.value.details == {"exitCode": 3, "stdout": "partial", "stderr": "broken"}
    assert "exited with code 3" in str(caught.value)
    # verifyExitcode: false turns the same exit into a normal result
    result = call_script(
        client,
        agent,
        "#!/bin/sh\nexit 3\n",
        body="return run().exitCode",
        Options={"verifyExitcode": False},
    )
    assert result == 3


def test_a_script_s_output_past_its_limit_keeps_its_end_and_the_plan_s_result_is_read(
        client, make_agent):
    # 30 MiB of an install log: the result would be past the 16 MiB the engine reads, and
    # the plan would wait out its timeout; it carries the log's last 4 MiB instead.
    from murano_agent.process import OUTPUT_LIMIT
    agent = make_agent(client)
    out = call_script(client, agent, "#!/bin/sh\nhead -c 31457280 /dev/zero | tr '\\0' a\n"
                      "echo\necho the install finished\n", timeout=60)
    first, rest = out.split("\n", 1)
    assert first == (f"[the first {31457281 + 21 - OUTPUT_LIMIT} bytes of this output were "
                     f"cut: its last {OUTPUT_LIMIT} follow]")
    assert rest.endswith("a\nthe install finished")
    assert len(rest) == OUTPUT_LIMIT - 1  # stripped of its last newline


def test_a_script_is_the_first_the_kernel_kills_for_memory(client, make_agent):
    agent = make_agent(client)
    assert call_script(client, agent, "#!/bin/sh\ncat /proc/self/oom_score_adj\n"
                       "cat /proc/$PPID/oom_score_adj\n") == "500\n500"
    assert (open(f"/proc/{agent.proc.pid}/oom_score_adj").read().strip()
            == open("/proc/self/oom_score_adj").read().strip())  # the agent's own: as it was


def test_bad_plans_each_get_an_error_and_the_agent_keeps_serving(client, make_agent, tmp_path):
    agent = make_agent(client, extra="plan_timeout = 1")
    marker = tmp_path / "escaped"

    def expect_error(plan: dict, code: int, text: str) -> None:
        with pytest.raises(AgentError) as caught:
            client.call(agent.queue, plan, 10)
        assert caught.value.error_code == code, caught.value.info
        assert text in caught.value.message, caught.value.info

    run_sh = resources(**{"run.sh": b"#!/bin/sh\necho ok\n"})
    base = client.build_plan(script_plan(), run_sh)
    expect_error(variant(base, FormatVersion="3.0.0"), 9, "unsupported FormatVersion 3.0.0")
    expect_error(variant(base, FormatVersion="2.x"), 9, "not a version number")
    missing = variant(base)
    missing["Scripts"]["run"]["EntryPoint"] = "nope"
    expect_error(missing, 2, "EntryPoint 'nope' is not in Files")
    expect_error(variant(base, Body="return deploy()"), 2, "'deploy', which is not a script")
    for name in ("../../escaped", str(marker), "sub/../../../x"):
        escaping = variant(base)
        next(iter(escaping["Files"].values()))["Name"] = name
        expect_error(escaping, 2, "escapes the agent's work folder")
    assert not marker.exists()
    started = time.monotonic()
    hang = f"sleep 37.{uuid.uuid4().int % 10**9:09d}"  # only this test's script matches it
    expect_error(
        client.build_plan(script_plan(), resources(**{"run.sh": f"#!/bin/sh\n{hang}\n".encode()})),
        100,
        "timed out",
    )
    assert time.monotonic() - started < 5
    leftover = subprocess.run(["pgrep", "-f", hang], capture_output=True)
    assert leftover.returncode == 1, "the hanging script's process was not killed"
    chef = client.build_plan(
        script_plan(body="return run({})", Type="Chef", EntryPoint="cook::book"), run_sh
    )
    expect_error(chef, 2, "Chef scripts are not supported")
    puppet = client.build_plan(
        script_plan(body="return run()", Type="Puppet", EntryPoint="mod::cls"), run_sh
    )
    expect_error(puppet, 2, "Puppet scripts are not supported")
    expect_error(variant(base, Body="return 1 +"), 2, "not valid Python")
    expect_error(variant(base, Body="raise ValueError('from body')"), 1, "from body")
    assert client.call(agent.queue, base, 10) == "ok"


def test_non_json_message_gets_an_error_result(make_agent, reader):
    agent = make_agent(result_queue=reader.queue)
    agent.wait_log("connected; consuming")
    publish_raw(agent.queue, b"\xff{not json", message_id="m-not-json")
    publish_raw(agent.queue, json.dumps({"FormatVersion": "2.0.0"}), message_id="m-no-files")
    publish_raw(agent.queue, "[1, 2]", message_id="m-list")
    results = [reader.get() for _ in range(3)]
    assert [mid for mid, _ in results] == ["m-not-json", "m-no-files", "m-list"]
    (_, first), (_, second), (_, third) = results
    assert first["SourceID"] == "m-not-json" and first["ErrorCode"] == 2
    assert "not JSON" in first["Body"]["Message"]
    assert second["ErrorCode"] == 2 and "Scripts: is required" in second["Body"]["Message"]
    assert third["ErrorCode"] == 2 and "not a JSON object" in third["Body"]["Message"]


def test_v1_plan_without_powershell_gets_a_clear_error(client, make_agent):
    agent = make_agent(client, extra="powershell = no-such-powershell")
    plan = client.build_plan(
        {"Scripts": ["a.ps1"], "Commands": [{"Name": "Do-It", "Arguments": {"X": 1}}]},
        resources(**{"a.ps1": b"function Do-It($X) { $X + 1 }"}),
    )
    assert "ID" not in plan  # v1 results are correlated by the AMQP message id
    with pytest.raises(AgentError) as caught:
        client.call(agent.queue, plan, 10)
    assert caught.value.info["source"] == "execution_plan"
    assert "'no-such-powershell' was not found" in caught.value.message
    assert client.is_ready(agent.queue, 10)


#: the PowerShell a v1 plan of these tests loads
V1_LIBRARY = b"function Add-Two([int]$X) { $X + 2 }\nfunction Fail-Now { throw 'nope' }\n"


def test_v1_plan_powershell_parses():
    """Checked where no PowerShell runs it (the test below needs an executable)."""
    assert syntax_errors(V1_LIBRARY, "lib.ps1") == []


@pytest.mark.skipif(
    not (shutil.which("pwsh") or shutil.which("powershell")),
    reason="no pwsh/powershell executable on this host: v1 PowerShell plans cannot run here",
)
def test_v1_plan_runs_commands_in_powershell(client, make_agent):
    executable = shutil.which("pwsh") or shutil.which("powershell")
    agent = make_agent(client, extra=f"powershell = {executable}")
    plan = client.build_plan(
        {"Scripts": ["lib.ps1"], "Commands": [{"Name": "Add-Two", "Arguments": {"X": 40}}]},
        resources(**{"lib.ps1": V1_LIBRARY}),
    )
    assert client.call(agent.queue, plan, 60) == [42]
    failing = dict(
        plan, Commands=[{"Name": "Add-Two", "Arguments": {"X": 1}}, {"Name": "Fail-Now"}]
    )
    with pytest.raises(AgentError) as caught:
        client.call(agent.queue, failing, 60)
    assert caught.value.info["source"] == "command" and "nope" in caught.value.message


def test_repeated_plan_id_is_answered_from_the_stored_result(client, make_agent, tmp_path):
    agent = make_agent(client)
    counter = tmp_path / "runs"
    plan = client.build_plan(
        script_plan(body="return run().stdout"),
        resources(**{"run.sh": f"#!/bin/sh\necho x >> {counter}\nwc -l < {counter}\n".encode()}),
    )
    assert client.call(agent.queue, plan, 10) == "1"
    assert client.call(agent.queue, plan, 10) == "1"
    agent.kill()
    agent.start()
    assert client.call(agent.queue, plan, 20) == "1"
    assert counter.read_text() == "x\n"
    assert "already ran; answering with its stored result" in agent.log()


def test_result_kept_through_a_broker_outage_is_sent_first_after_restart(make_agent, reader):
    agent = make_agent(result_queue=reader.queue, extra="")
    good_config = agent.config.read_text()
    agent.stop()
    agent.config.write_text(
        good_config.replace("[rabbitmq]\n", "[rabbitmq]\nresult_exchange = nonexistent-x\n")
    )
    agent.start()
    agent.wait_log("connected; consuming")
    plan = {
        "FormatVersion": "2.0.0",
        "ID": "pending-1",
        "Body": "return 'kept'",
        "Scripts": {},
        "Files": {},
    }
    publish_raw(agent.queue, json.dumps(plan), message_id="pending-1")
    agent.wait_log("plan pending-1 finished")
    agent.wait_log("broker connection lost or refused")  # the result could not be published
    agent.kill()
    agent.config.write_text(good_config)
    agent.start()
    ping = dict(plan, ID="after-restart", Body="return 'new'")
    publish_raw(agent.queue, json.dumps(ping), message_id="after-restart")
    first, second = reader.get(), reader.get()
    assert first[1]["SourceID"] == "pending-1" and first[1]["Body"] == "kept"
    assert second[1]["SourceID"] == "after-restart"


def test_agent_reconnects_after_the_broker_drops_its_connection(client, make_agent):
    agent = make_agent(client)
    plan = client.build_plan(
        script_plan(), resources(**{"run.sh": b"#!/bin/sh\nsleep 0.5\necho survived\n"})
    )
    client.send(agent.queue, plan)
    agent.wait_log(f"running plan {plan['ID']}")
    assert close_broker_connections(agent.queue) == 1
    agent.wait_log("broker connection lost or refused")
    # the plan in progress still answers once the agent is back; so does a new one
    assert client.call(agent.queue, plan, 20) == "survived"
    assert client.is_ready(agent.queue, 20)


def test_reboot_action_answers_after_the_restart(make_agent, reader):
    agent = make_agent(result_queue=reader.queue, extra="reboot_command = kill -9 $PPID")
    agent.wait_log("connected; consuming")
    plan = {
        "FormatVersion": "2.0.0",
        "ID": "reboot-1",
        "Action": "Reboot",
        "Body": "return 'before reboot'",
        "Scripts": {},
        "Files": {},
    }
    publish_raw(agent.queue, json.dumps(plan), message_id="reboot-1")
    assert agent.proc.wait(10) == -9  # the "machine" went down
    assert reader.empty(0.5), "the result must wait for the reboot"
    agent.start()
    message_id, result = reader.get(20)
    assert message_id == "reboot-1" and result["Body"] == "before reboot"


def test_failed_reboot_still_answers(make_agent, reader):
    agent = make_agent(result_queue=reader.queue, extra="reboot_command = exit 4")
    agent.wait_log("connected; consuming")
    plan = {
        "FormatVersion": "2.0.0",
        "ID": "reboot-2",
        "Action": "Reboot",
        "Body": "return 5",
        "Scripts": {},
        "Files": {},
    }
    publish_raw(agent.queue, json.dumps(plan), message_id="reboot-2")
    assert reader.get(10)[1]["Body"] == 5
    assert "reboot for plan reboot-2 did not happen (exit code 4" in agent.log()


def test_direct_runs_match_the_shell_and_each_plan_sees_only_its_files(client, make_agent):
    agent = make_agent(client)
    # no "#!" line: cannot be executed directly, so it runs through the shell
    assert call_script(client, agent, "echo no shebang; ls\n") == "no shebang\nrun.sh"
    # a script killed by a signal reads as the shell reports it (128 + 9)
    killed = call_script(
        client,
        agent,
        "#!/bin/sh\nkill -9 $$\n",
        body="return run().exitCode",
        Options={"verifyExitcode": False},
    )
    assert killed == 137
    # what a plan leaves in the shared work folder is gone before the next plan runs
    call_script(client, agent, "#!/bin/sh\ntouch left-over\nmkdir -p d && ln -s /etc d/link\n")
    assert call_script(client, agent, "#!/bin/sh\nfind . | sort\n") == ".\n./run.sh"
    assert call_script(client, agent, "#!/bin/sh\nfind . | sort\n") == ".\n./run.sh"
