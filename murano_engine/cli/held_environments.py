"""Which state file holds each environment the engine's commands deployed from here.

An environment's servers are named by its objects' ids (their queues
``e<environment>-h<instance>`` and broker logins, its stacks): the same model
deployed with a second state file (two folders, each with the default
``murano-state.json``) would take the first deployment's queues and logins,
and its plans would run on the second's servers. So a deploy with a new state
file is refused while another state file still holds the environment with
something made (stacks or queues); which file holds it is the local cloud's register's
record of it (:mod:`murano_engine.clouds.local.registry`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from murano_engine.clouds.local.registry import MADE, Registry, new_record


def _registry(config: Any) -> Registry:
    return Registry.from_config(config)


def holder(config: Any, environment_id: str) -> Path | None:
    """The state file the local cloud's register names as holding ``environment_id``
    (None when it holds no such environment)."""
    record = _registry(config).read(environment_id)
    return Path(record["state_file"]) if record and record.get("state_file") else None


def still_holds(state_path: Path, environment_id: str) -> bool:
    """Whether ``state_path`` holds ``environment_id`` with something made (a state file
    removed, holding another environment or nothing made holds it no more)."""
    try:
        state = json.loads(state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(state, Mapping):
        return False
    objects = state.get("Objects")
    held = (objects.get("?") or {}).get("id") if isinstance(objects, Mapping) else None
    made = state.get("Resources") or {}
    return held == environment_id and isinstance(made, Mapping) and \
        bool(made.get("stacks") or made.get("queues"))


def check_not_held_elsewhere(config: Any, state_path: Path, environment_id: str) -> None:
    """Refuse (SystemExit) to deploy ``environment_id`` with ``state_path`` while another
    state file holds it."""
    other = holder(config, environment_id)
    if other is None or other == state_path.resolve() or not still_holds(other,
                                                                         environment_id):
        return
    raise SystemExit(
        f"error: environment {environment_id} is deployed with the state file {other}; "
        f"deploying it again with {state_path} would take its servers' queues and broker "
        f"logins. Deploy it with --state {other}, remove it first with `murano-engine "
        f"destroy --state {other}`, or give this model's objects ids of their own")


def hold(config: Any, state_path: Path, environment_id: str) -> None:
    """Note in the register that ``state_path`` holds ``environment_id``."""
    registry = _registry(config)
    record = registry.read(environment_id)
    if record is not None and record.get("state_file") == str(state_path.resolve()):
        return
    registry.write({**(record or {}), **new_record(environment_id, state_path),
                    **{kind: (record or {}).get(kind) or [] for kind in MADE}})


def let_go(config: Any, state_path: Path, environment_id: str) -> None:
    """Nothing: the register forgets an environment once its command removed all it
    made (:mod:`murano_engine.cli.environments`), not when its state file goes."""
