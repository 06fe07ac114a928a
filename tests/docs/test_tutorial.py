"""docs/tutorial.md runs as written.

Its files (code blocks captioned with a path) are written and its commands (the ``$``
lines of its ``console`` blocks) run, in the page's order, in one shell, in a scratch
folder: the servers are sandboxes on the local cloud, the agents and murano-api talk to
the machine's RabbitMQ, and murano-api keeps its database on the machine's PostgreSQL
(when it answers). Nothing is left behind: the tutorial destroys what it deploys, and after
a failure the test removes what is left.
"""

from __future__ import annotations

import base64
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from murano_engine.clouds.local.sandbox import missing_for_namespaces

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = REPO / "docs" / "tutorial.md"
#: murano-api's port in the tutorial (its default)
API_PORT = 8082
#: a fenced block: ```console, or ```{code-block} LANG with :option: lines
FENCE = re.compile(r"^```(console|\{code-block\} \S+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def console_commands(block: str) -> list[str]:
    """The commands of a console block: its ``$ `` lines, each with the lines that a
    trailing backslash continues; the other lines are what the commands print."""
    commands: list[str] = []
    continued = False
    for line in block.splitlines():
        if continued:
            commands[-1] += "\n" + line
        elif line.startswith("$ "):
            commands.append(line[2:])
        else:
            continue
        continued = line.endswith("\\")
    return commands


def tutorial_steps(text: str) -> list[tuple[str, ...]]:
    """``("file", path, content)`` and ``("run", command)``, in the page's order."""
    steps: list[tuple[str, ...]] = []
    for match in FENCE.finditer(text):
        kind, body = match.groups()
        if kind == "console":
            steps += [("run", command) for command in console_commands(body)]
            continue
        lines = body.splitlines(keepends=True)
        options = []
        while lines and lines[0].startswith(":"):
            options.append(lines.pop(0))
        if lines and not lines[0].strip():
            lines.pop(0)
        caption = [o.split(None, 1)[1].strip() for o in options if o.startswith(":caption:")]
        if caption:
            steps.append(("file", caption[0], "".join(lines)))
    return steps


def tutorial_script(steps: list[tuple[str, ...]]) -> str:
    """One bash script: each file written, each command echoed then run; a failure stops
    it, and murano-api (the tutorial's background job) is stopped whatever happens."""
    lines = ["set -eu", "trap 'kill %1 2>/dev/null || true' EXIT"]
    for step in steps:
        if step[0] == "file":
            path, content = step[1], step[2]
            encoded = base64.b64encode(content.encode()).decode()
            lines += [f"echo {shlex.quote('# writes ' + path)}",
                      f"mkdir -p -- \"$(dirname -- {shlex.quote(path)})\"",
                      f"echo {encoded} | base64 -d > {shlex.quote(path)}"]
        else:
            lines += [f"echo {shlex.quote('$ ' + step[1])}", step[1]]
    return "\n".join(lines) + "\n"


def test_the_tutorials_steps_are_found():
    steps = tutorial_steps(TUTORIAL.read_text(encoding="utf-8"))
    files = [s[1] for s in steps if s[0] == "file"]
    commands = [s[1] for s in steps if s[0] == "run"]
    assert {"greeter/manifest.yaml", "greeter/Classes/Greeter.yaml",
            "greeter/Classes/tests/GreeterTest.yaml", "greeter/UI/ui.yaml",
            "greeter/Resources/Greet.template", "greeter/Resources/scripts/greet.sh",
            "greeter-env.json", "answers.json", "tokens.yaml"} <= set(files)
    for wanted in ("murano-engine validate", "murano-test-runner", "murano-engine deploy",
                   "murano-engine destroy", "murano package-import",
                   "murano environment-deploy", "murano environment-delete"):
        assert any(c.startswith(wanted) for c in commands), wanted
    assert commands[0] == "mkdir greeter-tutorial"
    assert commands[-1] == "kill %1"  # murano-api, started by the tutorial


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def _wait_for_free_port(port: int, seconds: float) -> bool:
    """Another test (tests/api/test_readme_flow.py) may hold the tutorial's port a while."""
    deadline = time.monotonic() + seconds
    while not _port_free(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(1)
    return True


def _postgresql() -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", 5432)) == 0


def _remove_what_is_left(work: Path, cloud: Path, env: dict[str, str]) -> None:
    """After a failed run only: the local deploy's environment, and the stacks the
    catalog's environment left in its project's cloud."""
    if (work / "murano-state.json").exists():
        subprocess.run(["murano-engine", "destroy"], cwd=work, env=env, capture_output=True,
                       timeout=300)
    project = cloud / "projects" / "tutorial"
    if not (project / "stacks").is_dir() or not any((project / "stacks").iterdir()):
        return
    from murano_engine.clouds.base import remove_stack
    from murano_engine.clouds.local import LocalCloud
    local = LocalCloud(project, broker_url="amqp://guest:guest@127.0.0.1:5672//")
    try:
        for name in [p.name for p in (project / "stacks").iterdir()]:
            remove_stack(local, name)
    finally:
        local.close()


def _servers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if not p.name.startswith(".")] \
        if folder.is_dir() else []


@pytest.mark.skipif(bool(missing_for_namespaces()), reason="the servers are sandboxes")
def test_the_tutorial_runs_as_written(tmp_path):
    if not _wait_for_free_port(API_PORT, 120):
        pytest.skip(f"something else listens on 127.0.0.1:{API_PORT}, the tutorial's port")
    steps = tutorial_steps(TUTORIAL.read_text(encoding="utf-8"))
    (tmp_path / "tutorial.sh").write_text(tutorial_script(steps))
    cloud = tmp_path / "cloud"
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MURANO_", "OS_"))}  # the user's own would change the run
    env.update(HOME=str(tmp_path / "home"), TMPDIR=str(tmp_path),
               PATH=f"{bin_dir}:{os.environ['PATH']}",
               MURANO_LOCAL_CLOUD_STATE_DIR=str(cloud))
    work = tmp_path / "greeter-tutorial"
    with ExitStack() as stack:
        if _postgresql():
            from tests.databases import throwaway_pg_database
            env["MURANO_DATABASE_CONNECTION"] = stack.enter_context(
                throwaway_pg_database("murano_tutorial_test"))
        shell = subprocess.Popen(["bash", str(tmp_path / "tutorial.sh")], cwd=tmp_path,
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, start_new_session=True)
        try:
            output, _ = shell.communicate(timeout=540)
        except subprocess.TimeoutExpired:
            os.killpg(shell.pid, signal.SIGKILL)
            output, _ = shell.communicate()
            output += "\n(the tutorial timed out)"
        finally:
            if shell.poll() is None:
                os.killpg(shell.pid, signal.SIGKILL)
                shell.wait()
            if shell.returncode != 0:
                _remove_what_is_left(work, cloud, env)
    assert shell.returncode == 0, output
    assert "greeter: OK" in output, output
    assert "1 passed, 0 failed" in output, output
    assert 'The server answered "Hello from greeter-1"' in output, output
    assert "answer: Hello from greeter-1" in output, output
    assert re.search(r"\| [0-9a-f]{32} \| success ", output), output
    assert '"Good morning from greeter-1"' in output, output
    # nothing left: the local deploy destroyed, the catalog's environment deleted
    assert not (work / "murano-state.json").exists()
    assert not _servers(cloud / "servers"), output
    assert not _servers(cloud / "projects" / "tutorial" / "servers"), output
