"""Which state file holds each environment the engine's commands deployed from here.

An environment's servers are named by its objects' ids (their queues
``e<environment>-h<instance>`` and broker logins, its stacks): the same model
deployed with a second state file (two folders, each with the default
``murano-state.json``) would take the first deployment's queues and logins,
and its plans would run on the second's servers. So a deploy with a new state
file is refused while another state file still holds the environment with
something made (stacks or queues); the note of which file holds it is kept in
``<[local_cloud] state_dir>/environments/``, beside the clouds' own records.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _note(config: Any, environment_id: str) -> Path:
    folder = Path(config["local_cloud"]["state_dir"]).expanduser() / "environments"
    return folder / hashlib.sha256(environment_id.encode("utf-8")).hexdigest()[:32]


def holder(config: Any, environment_id: str) -> Path | None:
    """The state file noted as holding ``environment_id`` (None when none is)."""
    try:
        return Path(_note(config, environment_id).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


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
    """Note that ``state_path`` holds ``environment_id`` (written whole, then renamed)."""
    note = _note(config, environment_id)
    note.parent.mkdir(parents=True, exist_ok=True)
    temporary = note.with_name(f".{note.name}.{os.getpid()}.tmp")
    temporary.write_text(f"{state_path.resolve()}\n", encoding="utf-8")
    temporary.replace(note)


def let_go(config: Any, state_path: Path, environment_id: str) -> None:
    """Forget that ``state_path`` holds ``environment_id`` (destroyed), if it is noted."""
    if holder(config, environment_id) == state_path.resolve():
        _note(config, environment_id).unlink(missing_ok=True)
