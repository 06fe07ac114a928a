"""One environment, one state file: the same model deployed with a second state file
(two folders, each with the default murano-state.json) is refused while the first holds
what it made, since its servers' queues and broker logins are named by the model's ids."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from murano_engine.clouds.local.sandbox import missing_for_namespaces

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "linux-cluster.json"
pytestmark = pytest.mark.skipif(bool(missing_for_namespaces()), reason="no namespaces here")


def _engine(folder: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    """A command in ``folder`` on its default state file (murano-state.json)."""
    return subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", *args, "-l",
         str(REPO / "dsl_packages"), "--config", str(config)],
        capture_output=True, text=True, timeout=300, cwd=folder)


def test_a_model_deployed_from_a_second_folder_is_refused_until_the_first_is_destroyed(
        tmp_path: Path) -> None:
    config = tmp_path / "engine.ini"
    config.write_text(f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\n")
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    model = json.loads(EXAMPLE.read_text())
    environment = model.get("Objects", model)["?"]["id"]
    try:
        done = _engine(first, config, "deploy", str(EXAMPLE))
        assert done.returncode == 0, done.stdout + done.stderr
        refused = _engine(second, config, "deploy", str(EXAMPLE))
        assert refused.returncode == 1
        held = first / "murano-state.json"
        assert refused.stderr.strip() == (
            f"error: environment {environment} is deployed with the state file {held}; "
            f"deploying it again with murano-state.json would take its servers' queues and "
            f"broker logins. Deploy it with --state {held}, remove it first with "
            f"`murano-engine destroy --state {held}`, or give this model's objects ids of "
            f"their own")
        assert list(second.iterdir()) == []  # nothing run, nothing written
        again = _engine(first, config, "deploy", str(EXAMPLE))  # its own file: a redeploy
        assert again.returncode == 0, again.stdout + again.stderr

        destroyed = _engine(first, config, "destroy")
        assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
        moved = _engine(second, config, "deploy", str(EXAMPLE))
        assert moved.returncode == 0, moved.stdout + moved.stderr
    finally:
        for folder in (first, second):
            if (folder / "murano-state.json").exists():
                _engine(folder, config, "destroy")
