"""``make demo`` and ``make demo-destroy`` on a machine whose RabbitMQ runs without its
management plugin, as a new machine's does: the set-up enables the plugin.

These tests TURN THE PLUGIN OFF on this machine's broker (marked
``management_plugin_off``) for as short a time as they can (a few seconds: what
``rabbitmq-plugins`` takes, the failing deploy, and the set-up enabling it again), and
always turn it back on before they end; meanwhile, another test on this machine that
makes a server fails, unable to mint its broker user. One of them runs at a time on the
machine (a lock file). Skipped where RabbitMQ is not local with the plugin on.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MANAGEMENT = 15672
LOCK = Path("/tmp/murano-engine-management-plugin.lock")


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
        return True
    return False


pytestmark = [
    pytest.mark.management_plugin_off,
    pytest.mark.skipif(shutil.which("rabbitmq-plugins") is None or shutil.which("make") is None,
                       reason="needs rabbitmq-plugins and make"),
    pytest.mark.skipif(not (_listening(5672) and _listening(MANAGEMENT)),
                       reason="needs RabbitMQ on 127.0.0.1 with its management plugin on"),
    pytest.mark.skipif(Path(sys.prefix) != REPO / ".venv",
                       reason="make demo runs in the project's own .venv"),
]


def _plugins(action: str) -> None:
    subprocess.run(["rabbitmq-plugins", action, "--online", "rabbitmq_management"],
                   capture_output=True, timeout=120, check=True)


@contextlib.contextmanager
def plugin_off() -> Iterator[None]:
    """The management plugin off for the block, on again after it, whatever happened."""
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _plugins("disable")
        try:
            assert not _listening(MANAGEMENT)
            yield
        finally:
            if not _listening(MANAGEMENT):
                _plugins("enable")
            deadline = time.monotonic() + 60
            while not _listening(MANAGEMENT) and time.monotonic() < deadline:
                time.sleep(0.2)


def _make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=600)


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "engine.ini"
    config.write_text(f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\n")
    (tmp_path / "state").mkdir()
    return config, tmp_path / "state" / "demo.json"


def test_a_deploy_that_failed_for_the_plugin_is_destroyed_by_make_demo_destroy(
        tmp_path: Path) -> None:
    config, state = _setup(tmp_path)
    with plugin_off():
        failed = subprocess.run(
            [sys.executable, "-m", "murano_engine.cli.main", "deploy",
             str(REPO / "examples" / "linux-cluster.json"), "-l", str(REPO / "dsl_packages"),
             "--config", str(config), "--state", str(state)],
            capture_output=True, text=True, cwd=REPO, timeout=300)
        assert failed.returncode != 0
        assert "rabbitmq_management" in failed.stdout + failed.stderr
        destroyed = _make("demo-destroy", f"STATE={state}")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    assert "enabling RabbitMQ's management plugin" in destroyed.stdout
    assert not state.exists()


def test_make_demo_enables_the_plugin(tmp_path: Path) -> None:
    config, state = _setup(tmp_path)
    try:
        with plugin_off():
            demo = _make("demo", f"STATE={state}", f"CONFIG={config}")
        assert demo.returncode == 0, demo.stdout + demo.stderr
        assert "enabling RabbitMQ's management plugin" in demo.stdout
        app = json.loads(state.read_text())["Objects"]["applications"][0]
        assert app["masterNode"] == "kv-1"
    finally:
        if state.exists():
            destroyed = _make("demo-destroy", f"STATE={state}")
            assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
