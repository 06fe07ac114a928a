"""``murano-engine deploy`` under ``[quotas]``: its project is the local cloud's, ``local``,
and a stack push that would take its servers past that project's servers quota is
refused whole, naming the quota and its value, with no stack or server made."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from murano_engine.engine.quotas import LOCAL_PROJECT

PACKAGE = Path(__file__).resolve().parents[1] / "api" / "packages" / "hot-servers"
ENVIRONMENT_ID = "0a1b2c3d4e5f40718293a4b5c6d7e8f9"
MODEL = {"?": {"id": ENVIRONMENT_ID, "type": "io.murano.Environment"}, "name": "quota",
         "applications": [{"?": {"id": "0a1b2c3d4e5f40718293a4b5c6d7e8fa",
                                 "type": "io.example.quota.TwoServers"}, "name": "pair"}]}


def _engine(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", *args, "-l", str(tmp / "packages"),
         "--state", str(tmp / "state.json"), "--config", str(tmp / "engine.ini")],
        capture_output=True, text=True, timeout=120, cwd=tmp)


def _made(cloud: Path) -> list[str]:
    """The stacks and servers the local cloud holds."""
    return [f"{kind} {p.name}" for kind in ("stacks", "servers")
            for p in sorted((cloud / kind).iterdir()) if (cloud / kind).is_dir()]


def test_a_deploy_past_the_local_projects_servers_quota_makes_nothing(tmp_path: Path) -> None:
    shutil.copytree(PACKAGE, tmp_path / "packages" / "hot-servers")
    cloud = tmp_path / "cloud"
    # The default would let the two servers in; the local project's own quota does not.
    (tmp_path / "engine.ini").write_text(
        f"[local_cloud]\nstate_dir = {cloud}\n"
        f"[quotas]\nservers = 5\noverrides =\n    other: servers=0\n"
        f"    {LOCAL_PROJECT}: servers=1, environments=3\n")
    (tmp_path / "model.json").write_text(json.dumps(MODEL))
    try:
        done = _engine(tmp_path, "deploy", str(tmp_path / "model.json"))
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Quota exceeded: the servers quota is 1" in done.stdout + done.stderr
        assert "would take the project's servers to 2" in done.stdout + done.stderr
        assert _made(cloud) == []
    finally:
        if (tmp_path / "state.json").exists():  # (made by a deploy that was let through)
            _engine(tmp_path, "destroy")


def test_a_bad_quota_override_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "packages").mkdir()
    (tmp_path / "engine.ini").write_text("[quotas]\noverrides = local: servers=two\n")
    (tmp_path / "model.json").write_text(json.dumps(MODEL))
    done = _engine(tmp_path, "deploy", str(tmp_path / "model.json"))
    assert done.returncode != 0
    assert "[quotas] overrides: entry 'local: servers=two': 'two' is not a whole number" in \
        done.stderr, done.stderr
