"""The agent's fork server: scripts and agents started by forking, over its pipe protocol."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = '''
import json, os

def main(args, start_agent, name_process):
    name_process(b"probe-setup")
    with open(args["report"], "w") as report:
        json.dump({"args": args, "env": dict(os.environ),
                   "comm": open("/proc/self/comm").read().strip(),
                   "sid_is_pid": os.getsid(0) == os.getpid()}, report)
    agent = start_agent(["--config-file", args["missing"]])
    _, status = os.waitpid(agent, 0)
    with open(args["agent"], "w") as done:
        done.write(str(os.waitstatus_to_exitcode(status)))
    print("setup done", flush=True)
'''


@pytest.fixture
def server():
    process = subprocess.Popen(
        [sys.executable, "-S", "-m", "murano_agent.forkserver"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        env={"PYTHONPATH": os.pathsep.join([str(ROOT), *[p for p in sys.path
                                                         if p.endswith("site-packages")]])})
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


def _ask(process: subprocess.Popen, request: dict | bytes) -> dict:
    line = request if isinstance(request, bytes) else json.dumps(request).encode()
    process.stdin.write(line + b"\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())


def _wait_for(path: Path, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path} was not written"
        time.sleep(0.02)
    return path.read_text()


def test_a_script_runs_in_a_fork_and_starts_a_forked_agent(server, tmp_path):
    script = tmp_path / "setup.py"
    script.write_text(SCRIPT)
    args = {"report": str(tmp_path / "report.json"), "agent": str(tmp_path / "agent.txt"),
            "missing": str(tmp_path / "no-such.conf")}
    answer = _ask(server, {"script": str(script), "args": args, "env": {"ONLY": "this"},
                           "output": str(tmp_path / "out.log")})
    assert isinstance(answer["pid"], int)
    report = json.loads(_wait_for(tmp_path / "report.json"))
    assert report["args"] == args
    assert report["env"] == {"ONLY": "this"}  # the server's environment stays behind
    assert report["comm"] == "probe-setup" and report["sid_is_pid"]
    # The agent, a fork with its modules imported, ran murano-agent's command line.
    assert _wait_for(tmp_path / "agent.txt") == "2"
    output = _wait_for(tmp_path / "out.log")
    assert "murano-agent: cannot read agent config" in output and "no-such.conf" in output


@pytest.mark.parametrize("request_line", [
    b"not json",
    b'{"script": 1, "args": [], "env": {}, "output": "/tmp/x"}',
    b'{"args": [], "env": {}, "output": "/tmp/x"}',
    b'["a", "list"]',
])
def test_a_malformed_request_is_refused_and_the_server_goes_on(server, tmp_path, request_line):
    assert "a request must be" in _ask(server, request_line)["error"]
    script = tmp_path / "setup.py"
    script.write_text("def main(args, start_agent, name_process):\n    print('ran')\n")
    assert "pid" in _ask(server, {"script": str(script), "args": None, "env": {},
                                  "output": str(tmp_path / "out.log")})
    assert _wait_for(tmp_path / "out.log") == "ran\n"


def test_the_server_ends_with_its_input_and_reaps_its_children(server, tmp_path):
    script = tmp_path / "setup.py"
    script.write_text("def main(args, start_agent, name_process):\n    pass\n")
    pid = _ask(server, {"script": str(script), "args": None, "env": {},
                        "output": str(tmp_path / "out.log")})["pid"]
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists():  # collected, not left a zombie
        assert time.monotonic() < deadline, "the child was not reaped"
        time.sleep(0.05)
    server.stdin.close()
    assert server.wait(5) == 0
