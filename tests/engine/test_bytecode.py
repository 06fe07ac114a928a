"""The set-up writes the project's bytecode ahead, so that a start with
PYTHONDONTWRITEBYTECODE=1 (set on some machines) compiles none of it.

Python reports each module it compiles from its source as ``# code object from
<file>.py`` under ``-v`` (one read from its cached bytecode names the ``.pyc``):
after ``make install`` no module of the project, nor of the libraries in its
virtualenv, is compiled by ``murano-engine run`` or by the agent's command.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.skipif(shutil.which("make") is None, reason="needs make"),
    pytest.mark.skipif(Path(sys.prefix) != REPO / ".venv",
                       reason="the set-up writes the bytecode of the project's own .venv"),
]


def _compiled_from_source(*command: str, env: dict[str, str]) -> list[str]:
    """The project's and the virtualenv's source files ``python -v COMMAND`` compiled."""
    done = subprocess.run([sys.executable, "-v", *command], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    ours = (str(REPO), sys.prefix)
    compiled = []
    for line in done.stderr.splitlines():
        if line.startswith("# code object from "):
            path = line.removeprefix("# code object from ").strip("'")
            if path.endswith(".py") and path.startswith(ours):
                compiled.append(path)
    return compiled


@pytest.fixture(scope="module")
def installed() -> None:
    """``make install`` after a module the engine imports and one the agent imports
    lost their bytecode (their sources changed since, a new checkout)."""
    for name in ("murano_engine.dsl.values", "murano_agent.service"):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.cached is not None
        Path(spec.cached).unlink(missing_ok=True)
    done = subprocess.run(["make", "-s", "install"], capture_output=True, text=True,
                          cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_a_run_compiles_nothing_of_the_project(installed: None, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", XDG_CACHE_HOME=str(tmp_path))
    command = ["-m", "murano_engine.cli.main", "run", "bench.workloads.Fib.fib",
               "--arg", "n=5", "-l", str(REPO / "benchmarks" / "workloads")]
    assert _compiled_from_source(*command, env=env) == []


def test_the_agents_command_compiles_nothing(installed: None) -> None:
    """As a sandbox starts it (``-S``, its code and libraries on PYTHONPATH, read-only)."""
    sites = [p for p in sys.path if Path(p).name == "site-packages"]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(REPO), *sites]))
    command = ["-S", "-c", "import murano_agent.cli, murano_agent.service, murano_agent.runner"]
    assert _compiled_from_source(*command, env=env) == []
