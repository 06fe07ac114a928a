"""The register of environments on the command line: ``deploy``, ``destroy`` and
``action`` under it, ``murano-engine environments`` and ``destroy --environment ID``.

Every command on an environment holds its lock in the local cloud's register
(:mod:`murano_engine.clouds.local.registry`) for its whole life, whatever state file it
was given, and keeps the environment's record: what the run is about to make is noted
there before it is made, and the record goes once a destroy removed everything. So:

* a deploy of an environment the register holds under another state file, or under
  this one once it is lost with its journal, is refused naming the holder and the ways
  out (``--state HOLDER``, ``destroy --environment ID``, ``--adopt``);
* ``destroy`` acts on no journal that fails verification (it is moved aside) and
  removes whatever the record names, with or without a state file;
* ``destroy --environment ID`` removes what the record names with no file at all.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from murano_engine import early_stop
from murano_engine.clouds.local.registry import (
    CURRENT,
    MADE,
    EnvironmentBusy,
    Holding,
    Registry,
    names_made,
    new_record,
    servers_of,
)

if TYPE_CHECKING:
    from murano_engine.engine.interpreter import Interpreter


def run_registered(options: Any, action: str, state_path: Path,
                   body: Callable[[], int]) -> int:
    """Run ``body`` (the command on ``state_path``) holding its environment in the
    register; refusals and the removals the register calls for happen here."""
    from murano_engine.cli.deploy import _read_state
    from murano_engine.engine.config import load_config
    previous = _read_state(state_path)
    config = load_config(_config_file(options, previous))
    registry = Registry.from_config(config)
    environment_id = _environment_id(action, options, previous, state_path, registry)
    if not environment_id:
        return body()  # nothing to hold: the command says what it lacks
    try:
        with registry.locked(environment_id):
            return _run_locked(options, action, state_path, body, config, registry,
                               environment_id, previous)
    except EnvironmentBusy as exc:
        raise SystemExit(f"error: {exc}") from None


def _run_locked(options: Any, action: str, state_path: Path, body: Callable[[], int],
                config: Any, registry: Registry, environment_id: str,
                previous: Mapping[str, Any] | None) -> int:
    from murano_engine.cli.deploy import check_same_environment, journal_path
    journal = journal_path(state_path)
    if action == "deploy" and getattr(options, "model", None):
        check_same_environment(state_path, previous, options, config)
    record = registry.read(environment_id)
    if record is not None and record.get("state_file") != str(state_path.resolve()):
        _check_other_holder(options, action, state_path, config, environment_id, record)
    elif record is not None and previous is None and not journal.exists() \
            and names_made(record) and action == "deploy" \
            and not getattr(options, "adopt", False):
        raise SystemExit(_lost(environment_id, state_path, record))
    if action == "destroy":
        _move_aside_if_untrusted(journal, config)
    if action == "deploy" and getattr(options, "adopt", False) and record is not None \
            and names_made(record):
        print(f"deploy: taking environment {environment_id} over: removing what "
              f"{record.get('state_file')} held of it first", flush=True)
        if _remove_named(config, record) != 0:
            return 1
        record = None
    name = _name_of(options, previous) or (record or {}).get("name") or ""
    holding = Holding(registry, {**(record or {}),
                                 **new_record(environment_id, state_path, name),
                                 **{k: (record or {}).get(k) or [] for k in MADE}})
    holding.add_made((previous or {}).get("Resources") or {})
    keys = _key_file(config, environment_id)
    started = time.time()
    holding.note(keys=[keys] if keys else [],
                 last={"command": action, "pid": os.getpid(), "started": started,
                       "outcome": "running"})
    if action == "destroy" and previous is None and not journal.exists():
        code = _remove_named(config, holding.record)
        return code  # (the record goes with what it named)
    CURRENT["holding"] = holding
    code = 1
    try:
        code = body()
    finally:
        CURRENT.pop("holding", None)
        _finish(config, action, state_path, holding, code, previous)
    return code


def _finish(config: Any, action: str, state_path: Path, holding: Holding, code: int,
            previous: Mapping[str, Any] | None) -> None:
    """Keep the record of how the command ended, or, once nothing of the environment
    is left, forget it (a destroy that ended well removes what only the register
    knew of first)."""
    from murano_engine.cli.deploy import journal_path
    left = state_path.exists() or journal_path(state_path).exists()
    if action == "destroy" and code == 0 and not state_path.exists():
        removed = (previous or {}).get("Resources") or {}
        rest = {kind: [n for n in holding.record.get(kind) or () if n not in
                       (removed.get(kind) or ())] for kind in MADE}
        _remove_named(config, {**holding.record, **rest}, quiet=True)
        return
    if not left and not names_made(holding.record):
        holding.registry.remove(holding.record["id"])  # it made nothing
        return
    outcome = {0: "finished", 130: "stopped"}.get(code, "failed")
    holding.note(last={**(holding.record.get("last") or {}), "outcome": outcome,
                       "ended": time.time()})


def _check_other_holder(options: Any, action: str, state_path: Path, config: Any,
                        environment_id: str, record: Mapping[str, Any]) -> None:
    """Refuse a command on ``environment_id`` through ``state_path`` while the register
    holds it under another state file (that file, or its journal, still there), unless
    a deploy takes it over (``--adopt``)."""
    from murano_engine.cli import held_environments
    from murano_engine.cli.deploy import journal_path
    holder = Path(str(record.get("state_file")))
    if action == "deploy" and getattr(options, "adopt", False):
        return
    if action == "deploy" and held_environments.still_holds(holder, environment_id):
        held_environments.check_not_held_elsewhere(config, state_path, environment_id)
    if not names_made(record):
        return  # its holder made nothing (yet): nothing of it can be orphaned
    if holder.exists():
        why = f"is held by the state file {holder}"
    elif journal_path(holder).exists():
        why = (f"is being deployed with the state file {holder}, which its interrupted "
               f"run did not write yet ({journal_path(holder)} holds what it did)")
    else:
        why = f"is held by the state file {holder}, which is gone"
    ways = [f"run the {action} with --state {holder}"] if \
        holder.exists() or journal_path(holder).exists() else []
    ways.append(f"remove all it made with `murano-engine destroy --environment "
                f"{environment_id}`")
    if action == "deploy":
        ways.append("or take it over with this state file: deploy again with --adopt "
                    "(what it made is removed first, then the model is deployed afresh)")
    raise SystemExit(f"error: environment {environment_id} {why}; nothing was run. To go "
                     "on: " + "; ".join(ways))


def _lost(environment_id: str, state_path: Path, record: Mapping[str, Any]) -> str:
    """The refusal of a deploy whose state file and journal are both gone while the
    register names what the environment made (deploying would make a second copy)."""
    return (f"error: environment {environment_id} was deployed with {state_path}, which is "
            f"gone with its journal, and the local cloud still holds what it made "
            f"({_made_summary(record)}); deploying it again would make a second copy, so "
            f"nothing was run. Remove it with `murano-engine destroy --environment "
            f"{environment_id}` (or `destroy --state {state_path}`), or take it over with "
            f"--adopt (what it made is removed first, then the model is deployed afresh)")


def _made_summary(record: Mapping[str, Any]) -> str:
    return ", ".join(f"{len(record.get(kind) or ())} {kind}" for kind in MADE)


def _move_aside_if_untrusted(journal: Path, config: Any) -> None:
    """Move a journal that fails verification to ``<journal>.untrusted`` (a destroy
    acts on nothing in it: the register names what its run made)."""
    from murano_engine.engine.journal import EmptyJournal, FileJournal, JournalError, journal_key
    if not journal.exists():
        return
    try:
        key = journal_key(config["engine"]["journal_key_file"])
        FileJournal.open(journal, key).close()
    except EmptyJournal:
        return  # nothing recorded: the command removes it
    except JournalError as exc:
        aside = journal.with_name(journal.name + ".untrusted")
        os.replace(journal, aside)
        print(f"warning: {exc}; nothing is run from it (moved to {aside}): destroy "
              "removes what the local cloud's register names of the environment",
              file=sys.stderr, flush=True)


def _remove_named(config: Any, record: Mapping[str, Any], quiet: bool = False) -> int:
    """Remove every stack, queue and broker identity ``record`` names, the environment's
    signing key, then the state file and journal that hold it and the record itself;
    1 (saying what is left) when something could not be removed."""
    from murano_engine.cli.deploy import Resources, journal_path
    from murano_engine.engine.services import engine_services, signing_keys
    environment_id = str(record["id"])
    resources = Resources({kind: record.get(kind) or () for kind in MADE})
    problems = resources.remove_all(engine_services(config), config) \
        if names_made(record) else []
    for problem in problems:
        print(f"error: could not remove {problem}", file=sys.stderr)
    if problems:
        print(f"Run `murano-engine destroy --environment {environment_id}` again to remove "
              "what is left.", file=sys.stderr)
        return 1
    keys = signing_keys(config)
    if keys is not None:
        keys.remove(environment_id)
    state = Path(str(record.get("state_file") or ""))
    if record.get("state_file") and _holds(state, environment_id):
        state.unlink(missing_ok=True)
    if record.get("state_file"):
        journal_path(state).unlink(missing_ok=True)
    Registry.from_config(config).remove(environment_id)
    if not quiet:
        print(f"destroy finished: environment {environment_id} is removed "
              f"({_made_summary(record)})", flush=True)
    return 0


def _holds(state_path: Path, environment_id: str) -> bool:
    """Whether the state file at ``state_path`` is environment ``environment_id``'s."""
    try:
        state = json.loads(state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    objects = state.get("Objects") if isinstance(state, dict) else None
    return isinstance(objects, dict) and (objects.get("?") or {}).get("id") == environment_id


def _environment_id(action: str, options: Any, previous: Mapping[str, Any] | None,
                    state_path: Path, registry: Registry) -> str:
    """The environment a command acts on: the model's (a deploy given one), the state
    file's, the one the register holds under ``state_path``, else the one an interrupted
    run's journal names (read, not trusted: only looked up in the register)."""
    from murano_engine.cli.deploy import _environment_of, _given_model, journal_path
    if action == "deploy" and getattr(options, "model", None):
        given = _given_model(options)
        return _environment_of(given.get("Objects", given) if isinstance(given, Mapping)
                               else None)[0]
    held = _environment_of((previous or {}).get("Objects"))[0]
    if held:
        return held
    records = registry.held_by(state_path)
    if len(records) == 1:
        return str(records[0]["id"])
    return _journal_environment(journal_path(state_path))


def _journal_environment(journal: Path) -> str:
    try:
        with open(journal, "rb") as stream:
            header = json.loads(stream.readline()).get("header") or {}
        return str((header.get("task") or {}).get("id") or "")
    except (OSError, ValueError, AttributeError):
        return ""


def _config_file(options: Any, previous: Mapping[str, Any] | None) -> str | None:
    if getattr(options, "config", None):
        return str(Path(options.config).resolve())
    return ((previous or {}).get("Run") or {}).get("config")


def _name_of(options: Any, previous: Mapping[str, Any] | None) -> str:
    from murano_engine.cli.deploy import _environment_of, _given_model
    if getattr(options, "model", None):
        given = _given_model(options)
        return _environment_of(given.get("Objects", given) if isinstance(given, Mapping)
                               else None)[1]
    return _environment_of((previous or {}).get("Objects"))[1]


def _key_file(config: Any, environment_id: str) -> str:
    from murano_engine.engine.services import signing_keys
    keys = signing_keys(config)
    return str(keys.key_file(environment_id)) if keys is not None else ""


# -- the commands --------------------------------------------------------------------

def destroy_environment(options: Any) -> int:
    """``murano-engine destroy --environment ID``: remove what the register names."""
    from murano_engine.engine.config import load_config
    config = load_config(str(Path(options.config).resolve()) if options.config else None)
    registry = Registry.from_config(config)
    environment_id = options.environment
    try:
        with registry.locked(environment_id):
            record = registry.read(environment_id)
            if record is None:
                raise SystemExit(f"error: the local cloud's register ({registry.folder}) "
                                 f"holds no environment {environment_id}: "
                                 "`murano-engine environments` lists those it holds")
            if early_stop.requested():
                print("destroy stopped before it began: nothing was removed. Run the same "
                      "command to remove the environment", file=sys.stderr)
                return 130
            print(f"destroy: environment {environment_id}"
                  + (f" ({record['name']})" if record.get("name") else "")
                  + f", held by {record.get('state_file')}", flush=True)
            return _remove_named(config, record)
    except EnvironmentBusy as exc:
        raise SystemExit(f"error: {exc}") from None


def list_environments(options: Any, stream: Any = None) -> int:
    """``murano-engine environments``: what the local cloud's register holds."""
    from murano_engine.engine.config import load_config
    stream = stream or sys.stdout
    config = load_config(str(Path(options.config).resolve()) if options.config else None)
    registry = Registry.from_config(config)
    records = registry.records()
    if not records:
        print(f"no environments in {registry.folder}", file=stream)
        return 0
    state_dir = registry.folder.parent
    for record in records:
        print(f"{record['id']}" + (f" {record['name']}" if record.get("name") else ""),
              file=stream)
        print(f"  state file: {record.get('state_file')}{_file_note(record)}", file=stream)
        for server in servers_of(state_dir, list(record.get("stacks") or ())):
            print(f"  server {server.name} ({server.id}): {server.status}", file=stream)
        print(f"  {_made_summary(record)}", file=stream)
        print(f"  last command: {_last(registry, record)}", file=stream)
    return 0


def _file_note(record: Mapping[str, Any]) -> str:
    from murano_engine.cli.deploy import journal_path
    state = Path(str(record.get("state_file")))
    journal = journal_path(state).exists()
    if state.exists():
        return " (with the journal of an interrupted run)" if journal else ""
    return " (missing; its interrupted run's journal is there)" if journal else " (missing)"


def _last(registry: Registry, record: Mapping[str, Any]) -> str:
    last = record.get("last") or {}
    if not last:
        return "none recorded"
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(last.get("started", 0))))
    outcome = last.get("outcome")
    if outcome == "running":
        holder = registry.busy(str(record["id"]))
        outcome = f"running (pid {holder})" if holder else \
            f"interrupted (pid {last.get('pid')} ended before it did)"
    return f"{last.get('command')} at {when}: {outcome}"


def run_command(options: Any, action: str, interpreter: Interpreter | None = None) -> int:
    """Run deploy, destroy or an action; print reports; save the state.

    The packages run with ``interpreter`` (by default the engine's own). A
    command interrupted earlier is resumed from its journal first. The state
    file (``options.state``, else :data:`DEFAULT_STATE`) is held by this process
    meanwhile: a command another process runs on it is refused.

    The command line calls :func:`murano_engine.dsl.concurrency.setup` first, so
    that sockets and subprocesses are cooperative before kombu is imported.
    """
    from murano_engine.cli.deploy import DEFAULT_STATE, run_held
    from murano_engine.cli.state_lock import StateBusy, holding
    state_path = Path(options.state or DEFAULT_STATE)
    if not state_path.parent.is_dir():
        raise SystemExit(f"error: {state_path}: the state file's folder "
                         f"{state_path.parent} does not exist")
    try:
        with holding(state_path):
            return run_registered(options, action, state_path,
                                  lambda: run_held(options, action, interpreter))
    except StateBusy as exc:
        raise SystemExit(f"error: {exc}") from None
