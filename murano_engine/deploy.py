"""``murano-engine deploy``, ``destroy`` and ``action``: environments from the command line.

The state file is the model after the last run (``Objects``, ``ObjectsCopy``,
``Attributes``). Deploying again with a changed model redeploys
incrementally: objects that left the model are destroyed, the others keep
their Out properties and attributes. A failed run still writes what had been
done, so the next deploy continues from it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from murano_engine.dsl.errors import LoadError
from murano_engine.dsl.json_loader import load_json

if TYPE_CHECKING:
    from murano_common.options import Values
    from murano_engine.dsl.runtime import Interpreter

DEFAULT_STATE = "murano-state.json"


class ProgressPrinter:
    """Prints each status report as it happens: time, applications done, level, object."""

    def __init__(self, applications: int = 0, stream: TextIO = sys.stdout) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self.count = 0
        self.applications = applications
        self.deployed: set[str] = set()

    def __call__(self, report: Mapping[str, Any]) -> None:
        self.count += 1
        if report.get("event") == "application-deployed":
            self.deployed.add(str(report.get("id")))
        level = str(report.get("level") or "info")
        elapsed = time.monotonic() - self.started
        entity = str(report.get("id") or "-")[:8]
        done = f"{len(self.deployed)}/{self.applications} apps" if self.applications else ""
        print(f"[{elapsed:7.1f}s {done:>9}] {level:<7} {entity:<8} {report.get('text')}",
              file=self.stream, flush=True)


def read_json(path: str | Path, what: str) -> Any:
    try:
        return load_json(Path(path).read_bytes(), str(path))
    except FileNotFoundError:
        raise SystemExit(f"error: {what} {path} does not exist") from None
    except LoadError as exc:
        raise SystemExit(f"error: {what} {exc}") from None


def incoming_model(model: Any, previous: Mapping[str, Any] | None) -> dict[str, Any]:
    """The user's model merged with the previous state.

    The user's file may be a whole model (``Objects`` ...) or just the
    environment object. Values the last run wrote (Out properties) are kept
    for objects still present, and the previous ``Objects`` become
    ``ObjectsCopy`` so removed objects get destroyed.
    """
    if not isinstance(model, Mapping):
        raise SystemExit("error: the model must be a JSON object")
    objects = model["Objects"] if "Objects" in model else model
    if not isinstance(objects, Mapping) or "?" not in objects:
        raise SystemExit("error: the model's root must be an object with a '?' header "
                         "(an io.murano.Environment)")
    result: dict[str, Any] = {"Objects": objects, "Attributes": [], "ObjectsCopy": None}
    if previous:
        from murano_engine.dsl.model import index_objects
        before: dict[str, Mapping] = {}
        index_objects(previous.get("Objects"), before)
        result["Objects"] = _merge(objects, before)
        result["ObjectsCopy"] = previous.get("Objects")
        result["Attributes"] = previous.get("Attributes") or []
        for key in ("SystemData", "project_id", "user_id"):
            if key in previous:
                result[key] = previous[key]
    return result



def _merge(value: Any, before: Mapping[str, Mapping]) -> Any:
    if isinstance(value, Mapping):
        header = value.get("?")
        merged = {k: _merge(v, before) for k, v in value.items()}
        if isinstance(header, Mapping) and str(header.get("id")) in before:
            old = before[str(header["id"])]
            for key, item in old.items():
                if key not in merged:
                    merged[key] = item
            merged["?"] = {**old.get("?", {}), **header}
        return merged
    if isinstance(value, list):
        return [_merge(v, before) for v in value]
    return value


def print_outputs(given: Mapping[str, Any], deployed: Mapping[str, Any],
                  stream: TextIO = sys.stdout) -> None:
    """Each application's outputs: the plain values the deployment set."""
    given_apps = {str((a.get("?") or {}).get("id")): a for a in given.get("applications") or ()
                  if isinstance(a, Mapping)}
    for app in deployed.get("applications") or ():
        header = app.get("?") or {}
        before = given_apps.get(str(header.get("id")), {})
        outputs = {k: v for k, v in app.items()
                   if k != "?" and k not in before and isinstance(v, (str, int, float, bool))}
        name = app.get("name") or header.get("id")
        kind = str(header.get("type", "")).split("/")[0]
        print(f"{name} ({kind})", file=stream)
        for key, value in sorted(outputs.items()):
            print(f"  {key}: {value}", file=stream)


def write_state(path: Path, model: Mapping[str, Any]) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(json.dumps(model, indent=2, sort_keys=True, default=str) + "\n",
                         encoding="utf-8")
    temporary.replace(path)


def engine_services(config: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The outside services a run uses: the cloud, the agents' broker, class configs."""
    from murano_engine.class_configs import ClassConfigFiles
    from murano_engine.clouds import open_cloud
    from murano_engine.config import broker_ssl, broker_url
    from murano_engine.messaging import AgentClient
    key = config["engine"].get("signing_key") or None
    signing_key = Path(key).read_text() if key else None
    services = {"cloud": open_cloud(config),
                "agents": AgentClient(broker_url(config), signing_key_pem=signing_key,
                                      ssl=broker_ssl(config)),
                "config": config}
    folder = config["engine"].get("class_configs")
    if folder:
        services["class_configs"] = ClassConfigFiles(folder)
    return services


def project_config(config: Values, project_id: str) -> Values:
    """``config`` for one project's tasks: on the local cloud, a state folder of its own
    (``<state_dir>/projects/<project>``); a Heat cloud scopes projects itself."""
    from murano_engine.clouds.heat import heat_configured
    if heat_configured(config["heat"]):
        return config
    scoped = copy.deepcopy(config)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", project_id) or "_"
    if safe != project_id or safe in (".", ".."):
        safe = f"{safe[:40]}-{hashlib.sha256(project_id.encode()).hexdigest()[:12]}"
    base = Path(str(config["local_cloud"]["state_dir"])).expanduser()
    scoped["local_cloud"]["state_dir"] = str(base / "projects" / safe)
    return scoped


def close_services(services: Mapping[str, Any]) -> None:
    for name in ("agents", "cloud"):
        service = services.get(name)
        if service is not None and hasattr(service, "close"):
            service.close()


def run_command(options: Any, action: str, interpreter: Interpreter | None = None) -> int:
    """Run deploy, destroy or an action; print reports; save the state.

    The packages run with ``interpreter`` (by default the engine's own).

    The command line calls :func:`murano_engine.concurrency.setup` first, so
    that sockets and subprocesses are cooperative before kombu is imported.
    """
    from murano_engine.config import load_config
    from murano_engine.dsl.budget import Budget
    from murano_engine.dsl.packages import PackageLoader
    from murano_engine.interpreter import build_interpreter
    from murano_engine.tasks import run_task

    config = load_config(options.config)
    state_path = Path(options.state)
    previous = read_json(state_path, "state file") if state_path.exists() else None
    if action == "deploy":
        model = incoming_model(read_json(options.model, "model"), previous)
    else:
        if previous is None:
            raise SystemExit(f"error: state file {state_path} does not exist")
        model = previous
    objects = model.get("Objects") or {}
    environment_id = str((objects.get("?") or {}).get("id") or "")
    if action == "deploy":
        task_action: dict[str, Any] | None = {"object_id": environment_id,
                                              "method": "deploy", "args": {}}
    elif action == "destroy":
        task_action = None
    else:
        task_action = {"object_id": options.object_id, "method": options.method,
                       "args": dict(options.args)}
    loader = PackageLoader(options.load_packages_from, interpreter or build_interpreter())
    for problem in loader.problems:
        print(f"warning: {problem}", file=sys.stderr)
    applications = objects.get("applications") if action == "deploy" else None
    printer = ProgressPrinter(len(applications) if isinstance(applications, list) else 0)
    services = engine_services(config)
    try:
        print(f"{action}: environment {environment_id or '(none)'}", flush=True)
        result = run_task({"id": environment_id, "action": task_action, "model": model},
                          loader, reporter=printer, services=services,
                          budget=Budget.from_config(config))
    finally:
        close_services(services)
    new_model = result["model"]
    if action == "destroy" and not result["action"]["isException"]:
        state_path.unlink(missing_ok=True)
    else:
        write_state(state_path, new_model)
    outcome = result["action"]
    elapsed = time.monotonic() - printer.started
    if outcome["isException"]:
        failure = outcome["result"]
        print(f"error: {', '.join(failure['names'])}: {failure['message']}", file=sys.stderr)
        if failure.get("traceback"):
            print("MuranoPL stack (most recent call last):\n" + failure["traceback"],
                  file=sys.stderr)
        print(f"{action} failed after {elapsed:.1f} s; state saved to {state_path}",
              file=sys.stderr)
        return 1
    if action == "deploy":
        print_outputs(model.get("Objects") or {}, new_model.get("Objects") or {})
    elif action != "destroy":
        print(json.dumps(outcome["result"], indent=2, sort_keys=True, default=str))
    done = f"state saved to {state_path}" if state_path.exists() else "state removed"
    print(f"{action} finished in {elapsed:.1f} s with {printer.count} report(s); {done}")
    return 0
