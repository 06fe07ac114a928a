"""A HOT package (examples/hot-store) deployed with ``murano-engine deploy`` on the local
cloud: a stack of the application's own, its outputs on the object, parameters checked
by the generated contracts, an environment file, updates and ``destroy``.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "hot-store"
MODEL = json.loads((REPO / "examples" / "hot-store.json").read_text())


def _engine(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", *args, "-l", str(tmp / "packages"),
         "--state", str(tmp / "state.json"), "--config", str(tmp / "engine.ini")],
        capture_output=True, text=True, timeout=120, cwd=tmp)


def _setup(tmp: Path) -> Path:
    shutil.copytree(EXAMPLE, tmp / "packages" / "hot-store")
    (tmp / "engine.ini").write_text(f"[local_cloud]\nstate_dir = {tmp / 'cloud'}\n")
    return tmp / "cloud"


def _deploy(tmp: Path, model: dict, name: str = "model.json") -> subprocess.CompletedProcess:
    (tmp / name).write_text(json.dumps(model))
    return _engine(tmp, "deploy", str(tmp / name))


def _model(**app: object) -> dict:
    model = copy.deepcopy(MODEL)
    model["applications"][0].update(app)
    return model


def _app(tmp: Path) -> dict:
    return json.loads((tmp / "state.json").read_text())["Objects"]["applications"][0]


def _stacks(cloud: Path) -> set[str]:
    folder = cloud / "stacks"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def test_deploy_update_and_destroy(tmp_path: Path) -> None:
    cloud = _setup(tmp_path)
    done = _deploy(tmp_path, MODEL)
    assert done.returncode == 0, done.stdout + done.stderr
    app = _app(tmp_path)
    stack = app["generatedHeatStackName"]
    assert stack.endswith("_" + MODEL["?"]["id"])
    assert _stacks(cloud) == {stack}, "a stack of the application's own"
    outputs = app["templateOutputs"]
    assert outputs["subnet_cidr"] == "10.42.0.0/24"  # the template's default
    assert outputs["volume_size"] == 4
    assert outputs["welcome"] == "Welcome, ops: a standard volume is yours."  # a HotFile
    assert len(outputs["network_id"]) == 36
    assert "  templateOutputs.volume_size: 4\n" in done.stdout
    assert "1/1 apps" in done.stdout

    # a new deployment updates the same stack
    done = _deploy(tmp_path, _model(templateParameters={"volume_size": 6, "tier": "fast"}))
    assert done.returncode == 0, done.stdout + done.stderr
    app = _app(tmp_path)
    assert app["generatedHeatStackName"] == stack and _stacks(cloud) == {stack}
    assert app["templateOutputs"]["volume_size"] == 6
    assert app["templateOutputs"]["welcome"] == "Welcome, nobody: a fast volume is yours."
    assert app["templateOutputs"]["network_id"] == outputs["network_id"]

    done = _engine(tmp_path, "destroy")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _stacks(cloud) == set()


def test_parameters_are_checked_before_any_stack(tmp_path: Path) -> None:
    cloud = _setup(tmp_path)
    cases = {
        "missing": ({"owner": "ops"}, "[io.example.hot.Store.templateParameters[volume_size]] "
                                      "null value violates notNull()"),
        "range": ({"volume_size": 17}, "volume_size: the value must be at least 1 and at "
                                       "most 16"),
        "values": ({"volume_size": 1, "tier": "slow"}, "tier must be one of standard, fast"),
        "pattern": ({"volume_size": 1, "cidr": "10.0.0.0/24\n"},
                    "an IPv4 network in CIDR notation"),
        "length": ({"volume_size": 1, "owner": ""}, "owner: the length must be at least 1"),
        "type": ({"volume_size": "big"}, "value 'big' is not an integer"),
    }
    for name, (parameters, message) in cases.items():
        done = _deploy(tmp_path, _model(templateParameters=parameters), f"{name}.json")
        assert done.returncode == 1, name
        said = done.stdout + done.stderr  # the message once (a report line), its names after
        assert "ContractViolationException" in done.stderr and said.count(message) == 1, (
            name, said)
        assert _stacks(cloud) == set(), name
        # the model did not even load: nothing ran, so no state file is written
        assert not (tmp_path / "state.json").exists(), name


def test_an_environment_file_supplies_parameters(tmp_path: Path) -> None:
    cloud = _setup(tmp_path)
    environments = tmp_path / "packages" / "hot-store" / "Resources" / "HotEnvironments"
    environments.mkdir()
    (environments / "small.yaml").write_text(
        "parameters:\n  volume_size: 2\n  owner: env\n")
    done = _deploy(tmp_path, _model(templateParameters={}, hotEnvironment="small.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    outputs = _app(tmp_path)["templateOutputs"]
    assert outputs["volume_size"] == 2
    assert outputs["welcome"] == "Welcome, env: a standard volume is yours."
    assert _engine(tmp_path, "destroy").returncode == 0
    assert _stacks(cloud) == set()
