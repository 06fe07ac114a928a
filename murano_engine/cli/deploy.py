"""``murano-engine deploy``, ``destroy`` and ``action``: environments from the command line.

The state file is the model after the last run (``Objects``, ``ObjectsCopy``,
``Attributes``) plus ``Resources``: every stack and broker queue the
environment's runs have made, which ``destroy`` removes whatever the model
says, and ``Run``: the package folders and the configuration file the
deployment used, so that ``destroy`` and ``action`` need only ``--state``
(``-l`` adds folders, ``--config`` replaces the file). Deploying again with a
changed model redeploys incrementally: objects that left the model are
destroyed, the others keep their Out properties and attributes. A failed run
still writes what had been done, so the next deploy continues from it.

While a command runs, its journal (``<state>.journal``, see
:mod:`murano_engine.engine.journal`) records every call that leaves the engine. A
command that was killed or stopped (Ctrl-C) is resumed by running it again:
what the journal holds is replayed, not done again. ``destroy`` after an
interrupted command removes what that command made too.

A state file is one environment's: a deploy of another environment onto it is
refused, and so is a second command while another process holds the file
(:mod:`murano_engine.cli.state_lock`). A journal that was tampered with, or that
records a deploy of another model than the one given, is refused too; one
whose run recorded nothing (it failed before it began) is removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from murano_engine import early_stop
from murano_engine.dsl.errors import LoadError
from murano_engine.dsl.json_loader import load_json
from murano_engine.dsl.reports import is_step
from murano_engine.engine.journal import (
    Cancelled,
    EmptyJournal,
    FileJournal,
    Journal,
    JournalError,
    RecordingFailed,
    journal_key,
)
from murano_engine.engine.services import close_services, engine_services, signing_keys

if TYPE_CHECKING:
    from murano_common.options import Values
    from murano_engine.dsl.interpreter import Interpreter

DEFAULT_STATE = "murano-state.json"


class ProgressPrinter:
    """Prints each status report as it happens: time, applications done, level, object."""

    def __init__(self, applications: int = 0, stream: TextIO | None = None) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self.count = 0
        self.applications = applications
        self.deployed: set[str] = set()
        self.last_error: str | None = None
        self.steps: list[dict[str, Any]] = []  # for the picture (--report)
        self.reports: list[dict[str, Any]] = []

    def __call__(self, report: Mapping[str, Any]) -> None:
        if is_step(report):
            self.steps.append({**report["step"], "timestamp": report.get("timestamp")})
            return
        self.reports.append(dict(report))
        self.count += 1
        if report.get("event") == "application-deployed":
            self.deployed.add(str(report.get("id")))
        level = str(report.get("level") or "info")
        if level == "error":
            if str(report.get("text")) == self.last_error:
                return  # the task's failure, which the application just reported itself
            self.last_error = str(report.get("text"))
        elapsed = time.monotonic() - self.started
        entity = str(report.get("id") or "-")[:8]
        done = f"{len(self.deployed)}/{self.applications} apps" if self.applications else ""
        print(f"[{elapsed:7.1f}s {done:>9}] {level:<7} {entity:<8} {report.get('text')}",
              file=self.stream or sys.stdout, flush=True)


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
                  stream: TextIO | None = None) -> None:
    """Each application's outputs: the plain values (and lists of them) the deployment
    set, and those of a mapping it set (a HOT application's ``templateOutputs``) as
    ``key.name``."""
    stream = stream or sys.stdout  # looked up now: a caller may have replaced it
    given_apps = {str((a.get("?") or {}).get("id")): a for a in given.get("applications") or ()
                  if isinstance(a, Mapping)}
    for app in deployed.get("applications") or ():
        if not isinstance(app, Mapping):
            continue  # an object written out elsewhere, named by its id
        header = app.get("?") or {}
        before = given_apps.get(str(header.get("id")), {})
        outputs = {}
        for key, value in app.items():
            if key == "?" or key in before:
                continue
            if isinstance(value, Mapping):
                outputs.update({f"{key}.{k}": v for k, v in value.items() if _plain(v)})
            elif _plain(value):
                outputs[key] = value
        name = object_name(app) or header.get("id")
        kind = str(header.get("type", "")).split("/")[0]
        print(f"{name} ({kind})", file=stream)
        for key, value in sorted(outputs.items()):
            shown = ", ".join(map(str, value)) if isinstance(value, list) else value
            print(f"  {key}: {shown}", file=stream)


def _plain(value: Any) -> bool:
    scalars = (str, int, float, bool)
    return isinstance(value, scalars) or (
        isinstance(value, list) and bool(value) and all(isinstance(v, scalars) for v in value))


class StateNotWritten(Exception):
    """The state file could not be written (a full disk, say); the journal of the run is
    kept, so the same command carries it on."""


def write_state(path: Path, model: Mapping[str, Any]) -> None:
    """Write the state file whole, or raise :class:`StateNotWritten` leaving it as it was
    (and no temporary file behind)."""
    text = json.dumps(model, indent=2, sort_keys=True, default=str) + "\n"
    unreadable = _unreadable_state(text)
    if unreadable:
        raise StateNotWritten(
            f"the state file {path} is not written: {unreadable}; what the run did is kept "
            f"in {journal_path(path)}: `murano-engine destroy --state {path}` removes what "
            f"it made")
    temporary = path.with_suffix(path.suffix + ".tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise StateNotWritten(
            f"could not write the state file {path}: {exc.strerror or exc}; what the run "
            f"did is kept in {journal_path(path)}. Run the same command to carry on.") from None


def _unreadable_state(text: str) -> str:
    """Why :func:`read_json` would refuse ``text`` as a state file ('' if it would not):
    a package can build a model deeper or larger than a state file may hold."""
    from murano_common.jsontext import nesting_depth
    from murano_engine.dsl.yaml_loader import MAX_BYTES, MAX_DEPTH
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        return (f"the model after the run is {size} bytes (a state file holds at most "
                f"{MAX_BYTES})")
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        return (f"the model after the run nests {depth} levels deep (a state file holds at "
                f"most {MAX_DEPTH})")
    return ""


def journal_path(state_path: Path) -> Path:
    """Where the journal of a command on ``state_path`` is kept."""
    return state_path.with_name(state_path.name + ".journal")


def _digest(state_path: Path) -> str:
    """What the state file holds now (a journal remembers it to know if its run ended)."""
    try:
        return hashlib.sha256(state_path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return ""


def open_interrupted(state_path: Path, key: bytes | None) -> FileJournal | None:
    """The journal of a command on ``state_path`` that was cut short, if there is one.

    A journal whose run did end (its state was written, the process died before
    removing the journal), or that recorded nothing (the run failed before it
    began), is removed. One that does not check out with ``key`` is refused.
    """
    path = journal_path(state_path)
    if not path.exists():
        return None
    try:
        journal = FileJournal.open(path, key)
    except EmptyJournal:  # its header torn by a crash: its run recorded nothing
        path.unlink(missing_ok=True)
        return None
    except JournalError as exc:
        raise SystemExit(
            f"error: {exc}. Nothing was run from it. `murano-engine destroy --state "
            f"{state_path}` removes all the environment made without acting on it; or, to "
            f"deploy afresh, move it away (mv {path} {path}.untrusted) and deploy again "
            f"with --adopt, which removes what the environment made first") from None
    if journal.header.get("base") != _digest(state_path) or not journal.load():
        journal.remove()
        return None
    return journal


class Resources:
    """What an environment's runs made outside the engine: stacks, broker queues, and
    servers' broker identities (by their input queue)."""

    def __init__(self, saved: Mapping[str, Any] | None = None) -> None:
        saved = saved or {}
        self.stacks: set[str] = set(saved.get("stacks") or ())
        self.queues: set[str] = set(saved.get("queues") or ())
        self.identities: set[str] = set(saved.get("identities") or ())

    def add(self, touched: Mapping[str, set[str]]) -> None:
        self.stacks |= touched["stacks"]
        self.queues |= touched["queues"]
        self.identities |= touched.get("identities", set())

    def as_dict(self) -> dict[str, list[str]]:
        return {"stacks": sorted(self.stacks), "queues": sorted(self.queues),
                "identities": sorted(self.identities)}

    def remove_stacks(self, services: Mapping[str, Any]) -> list[str]:
        """Delete every stack still there; returns what could not be removed."""
        from murano_engine.clouds import CloudError, remove_stack
        problems = []
        cloud = services.get("cloud")
        for name in sorted(self.stacks) if cloud is not None else ():
            try:
                remove_stack(cloud, name)
            except CloudError as exc:
                problems.append(f"stack {name}: {exc}")
        return problems

    def remove_queues(self, config: Values) -> list[str]:
        """Delete every queue still there (once nothing consumes them any more)."""
        from kombu.exceptions import KombuError

        from murano_common import amqp
        from murano_engine.engine.config import broker_ssl, broker_url
        if not self.queues:
            return []
        conn = amqp.connection(broker_url(config), "engine destroy", ssl=broker_ssl(config))
        try:
            with conn:
                conn.ensure_connection(max_retries=0)  # one try; the state keeps the names
                channel = conn.default_channel
                for name in sorted(self.queues):
                    channel.queue_delete(name)
        except (OSError, KombuError, *conn.connection_errors, *conn.channel_errors) as exc:
            return [f"queues {', '.join(sorted(self.queues))} on the broker at "
                    f"{conn.as_uri()}: {exc}"]
        return []

    def remove_identities(self, config: Values) -> list[str]:
        """Revoke every server's broker user still there and delete the result exchanges
        of the results queues."""
        from murano_common import amqp
        from murano_engine.messaging.identities import BrokerIdentities
        from murano_engine.messaging.management import ManagementError
        identities = BrokerIdentities.from_config(config)
        results = [q for q in sorted(self.queues) if q.startswith(amqp.result_queue_name(""))]
        if identities is None or not (self.identities or results):
            return []
        try:
            for queue in sorted(self.identities):
                identities.revoke(queue)
            for queue in results:
                identities.remove_exchange(queue)
        except ManagementError as exc:
            return [f"broker users of {', '.join(sorted(self.identities))} and result "
                    f"exchanges: {exc}"]
        return []

    def remove_all(self, services: Mapping[str, Any], config: Values) -> list[str]:
        """Delete the stacks, close ``services``, then delete the queues and the servers'
        broker users; returns what could not be removed."""
        try:
            problems = self.remove_stacks(services)
        finally:
            close_services(services)
        return (problems + self.remove_queues(config)
                + self.remove_identities(config))


def journal_steps(entries: list[dict[str, Any]]) -> tuple[int, int]:
    """(finished, started but unanswered) steps of a journal's entries: a step is one
    end entry, and an effect's begin entry until its end comes."""
    ended = {e.get("k") for e in entries if e.get("t") != "begin"}
    begun = {e.get("k") for e in entries if e.get("t") == "begin"}
    return len(ended), len(begun - ended)


@contextlib.contextmanager
def stop_on_signals(journal: Journal, stream: TextIO = sys.stderr) -> Iterator[None]:
    """The first Ctrl-C (or SIGTERM) asks the run to stop at its next step; a second
    one ends the process at once (the journal is on disk entry by entry)."""
    def handle(signum: int, _frame: Any) -> None:
        if journal.cancelled:
            os._exit(128 + signum)
        journal.cancel()
        print("\nstopping: no new steps start; waiting briefly for the ones in flight "
              "(press Ctrl-C again to quit at once)", file=stream, flush=True)

    try:
        previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: signals are not ours to take
        previous = {}
    if early_stop.requested():  # pressed before the run began: it stops at its first step
        journal.cancel()
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _task_for(action: str, options: Any, previous: Mapping[str, Any] | None) -> dict[str, Any]:
    if action == "deploy":
        model = incoming_model(_given_model(options), previous)
    else:
        if previous is None:
            raise SystemExit(f"error: state file {options.state or DEFAULT_STATE} does not "
                             "exist")
        model = {k: v for k, v in previous.items() if k not in ("Resources", "Run")}
    objects = model.get("Objects") or {}
    environment_id = str((objects.get("?") or {}).get("id") or "")
    if action == "deploy":
        task_action: dict[str, Any] | None = {"object_id": environment_id,
                                              "method": "deploy", "args": {}}
    elif action == "destroy":
        task_action = None
    else:
        options.object_id = object_id_of(model, options.object_id)
        task_action = {"object_id": options.object_id, "method": options.method,
                       "args": dict(options.args)}
    return {"id": environment_id, "action": task_action, "model": model}


def _given_model(options: Any) -> Any:
    """The model file given to ``deploy``, read; an object id written twice is refused
    (the first would be deployed for both, the second dropped without a word)."""
    if not getattr(options, "model", None):
        raise SystemExit("error: deploy takes MODEL (only an interrupted deploy is carried "
                         "on with --state alone)")
    model = read_json(options.model, "model")
    twice = _twice_defined(model, set())
    if twice is not None:
        raise SystemExit(f"error: {options.model}: object id {twice!r} is defined twice; "
                         f"give each object an id of its own")
    return model


def _twice_defined(value: Any, seen: set[str]) -> str | None:
    """The first object id (a ``?`` header's) ``value`` defines twice, or None."""
    if isinstance(value, Mapping):
        header = value.get("?")
        if isinstance(header, Mapping) and "id" in header and "type" in header:
            key = str(header["id"])
            if key in seen:
                return key
            seen.add(key)
        items: Any = value.values()
    elif isinstance(value, list):
        items = value
    else:
        return None
    for item in items:
        found = _twice_defined(item, seen)
        if found is not None:
            return found
    return None


def _environment_of(objects: Any) -> tuple[str, str]:
    """The id and name of the environment object ``objects`` (empty when none)."""
    if not isinstance(objects, Mapping):
        return "", ""
    name = objects.get("name")
    return str((objects.get("?") or {}).get("id") or ""), name if isinstance(name, str) else ""


def _shown(environment: tuple[str, str]) -> str:
    return f"{environment[0]} ({environment[1]})" if environment[1] else environment[0]


def check_same_environment(state_path: Path, previous: Mapping[str, Any] | None,
                           options: Any, config: Any = None) -> None:
    """Refuse to deploy another environment onto the state file of one (which would
    destroy it to deploy the new one), naming both and a state file to use: the one
    that holds the given environment when one does (``config`` says where that is
    noted), else a new one named after the model."""
    held = _environment_of((previous or {}).get("Objects"))
    given = _given_model(options)
    wanted = _environment_of(given.get("Objects", given) if isinstance(given, Mapping) else None)
    if not held[0] or not wanted[0] or held[0] == wanted[0]:
        return
    holder = _holder_of(config, wanted[0])
    if holder is not None:
        use = f"deploy it with --state {holder}, which holds it"
    else:
        use = f"deploy it with --state {Path(options.model).with_suffix('.state.json').name}"
    raise SystemExit(
        f"error: {state_path} holds environment {_shown(held)}; {options.model} is "
        f"environment {_shown(wanted)}. Each environment has its own state file: {use}, "
        f"or first remove the other with `murano-engine destroy --state {state_path}`")


def _holder_of(config: Any, environment_id: str) -> Path | None:
    """The state file that holds ``environment_id`` with something made (None when none
    does, or where that is noted is unknown)."""
    from murano_engine.cli import held_environments
    if config is None:
        return None
    holder = held_environments.holder(config, environment_id)
    if holder is None or not held_environments.still_holds(holder, environment_id):
        return None
    return holder


def _read_state(state_path: Path) -> dict[str, Any] | None:
    """What the state file holds (None when there is none yet); a file that is no state
    file (a model given as ``--state`` by mistake) is refused, never overwritten nor
    removed."""
    if state_path.is_dir():
        raise SystemExit(f"error: {state_path}: the state file is a folder")
    if not state_path.exists():
        return None
    previous = read_json(state_path, "state file")
    if not isinstance(previous, dict) or not ({"Run", "Resources"} & previous.keys()):
        raise SystemExit(
            f"error: {state_path} is not a state file of murano-engine (it has no Run nor "
            f"Resources): give --state a file a deploy wrote, or one that does not exist yet")
    return previous


def remembered_run(options: Any, previous: Mapping[str, Any] | None) -> dict[str, Any]:
    """The package folders (absolute; ``-l`` ones first) and the configuration file of a
    command: what it was given, else what the state file remembers."""
    saved = (previous or {}).get("Run") or {}
    given = [str(Path(d).resolve()) for d in options.load_packages_from]
    folders = given + [d for d in saved.get("packages") or () if d not in given]
    for folder in folders[len(given):]:
        if not Path(folder).is_dir():
            print(f"warning: the package folder {folder} the state file remembers is gone",
                  file=sys.stderr)
    config = str(Path(options.config).resolve()) if options.config else saved.get("config")
    return {"packages": folders, "config": config}


def check_action(loader: Any, model: Mapping[str, Any], object_id: str, method_name: str,
                 args: Mapping[str, Any]) -> None:
    """Refuse an action on an unknown object, an unknown method or unknown arguments,
    naming what there is."""
    from murano_engine.dsl.model import index_objects
    index: dict[str, Mapping] = {}
    index_objects(model.get("Objects"), index)
    if object_id not in index:
        known = "; ".join(f"{oid} ({_type_of(obj)}{_name_of(obj)})" for oid, obj in index.items())
        raise SystemExit(f"error: no object {object_id} in the state; its objects: {known}")
    cls = loader.find_class(_type_of(index[object_id]))
    method = cls.find_method(method_name)
    if method is None or method.scope != "Public":
        public = sorted({m for c in cls.ancestors() for m, spec in c.methods.items()
                         if spec.scope == "Public" and not m.startswith(".")})
        what = (f"{cls.name} has no method {method_name}" if method is None else
                f"MethodNotExposed: {cls.name}.{method_name} is not public")
        raise SystemExit(f"error: {what}; its public methods: {', '.join(public) or 'none'}")
    if any(a.usage in ("VarArgs", "KwArgs") for a in method.arguments):
        return
    known_args = [a.name for a in method.arguments]
    unknown = sorted(set(args) - set(known_args))
    if unknown:
        raise SystemExit(f"error: {cls.name}.{method_name} takes no argument "
                         f"{', '.join(unknown)}; its arguments: {', '.join(known_args) or 'none'}")


def _type_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("?") or {}).get("type", "")).split("/")[0]


def _name_of(obj: Mapping[str, Any]) -> str:
    name = object_name(obj)
    return f" {name}" if name else ""


def object_name(obj: Mapping[str, Any]) -> str:
    """What names a model's object: its ``name`` property, else its object name
    (``?.name``, the name the web pages and ``name($this)`` give it); '' when neither."""
    for name in (obj.get("name"), (obj.get("?") or {}).get("name")):
        if isinstance(name, str) and name:
            return name
    return ""


def object_id_of(model: Mapping[str, Any], wanted: str) -> str:
    """The id of the object ``wanted`` names in ``model``: an object id as it is, else
    the one object of that name (see :func:`object_name`); a name that several objects
    have is refused, listing them. An unknown word comes back as it is (the action's
    check says what there is)."""
    from murano_engine.dsl.model import index_objects
    index: dict[str, Mapping] = {}
    index_objects(model.get("Objects"), index)
    if wanted in index:
        return wanted
    named = [oid for oid, obj in index.items() if object_name(obj) == wanted]
    if len(named) > 1:
        raise SystemExit(f"error: {len(named)} objects are named {wanted}: "
                         + "; ".join(f"{oid} ({_type_of(index[oid])})" for oid in named)
                         + "; give the id of the one to act on")
    return named[0] if named else wanted


def run_held(options: Any, action: str, interpreter: Interpreter | None) -> int:
    from murano_engine.cli import held_environments
    from murano_engine.clouds.local.registry import announcer
    from murano_engine.dsl import boundary
    from murano_engine.dsl.budget import Budget
    from murano_engine.dsl.packages import PackageLoader
    from murano_engine.engine.config import load_config
    from murano_engine.engine.interpreter import build_interpreter
    from murano_engine.engine.tasks import run_task

    state_path = Path(options.state or DEFAULT_STATE)
    previous = _read_state(state_path)
    run = remembered_run(options, previous)
    config = load_config(run["config"])
    key = _journal_key(config, state_path)
    resources = Resources((previous or {}).get("Resources"))
    interrupted = open_interrupted(state_path, key)
    command = interrupted.header.get("command") if interrupted is not None else None
    if interrupted is not None and action == "destroy" and command != "destroy":
        return _destroy_after_interrupt(options, interrupted, previous, resources, config,
                                        interpreter)
    if action == "deploy" and (interrupted is None or getattr(options, "model", None)):
        try:
            check_same_environment(state_path, previous, options, config)
        except SystemExit:
            if interrupted is not None:
                interrupted.close()
            raise
    loader = PackageLoader(run["packages"], interpreter or build_interpreter())
    for problem in loader.problems:
        print(f"warning: {problem}", file=sys.stderr)
    resuming_deploy = interrupted is not None and action == "deploy" == command
    wanted = None if resuming_deploy and not options.model else \
        _task_for(action, options, previous)
    if action == "deploy" and wanted is not None and interrupted is None and wanted["id"]:
        if previous is None:  # a new state file: not one another state file holds
            held_environments.check_not_held_elsewhere(config, state_path, wanted["id"])
        held_environments.hold(config, state_path, wanted["id"])
    resumed: int | None = None  # the finished steps of the interrupted run's journal
    if interrupted is not None:
        task = interrupted.header["task"]
        if command != action or (action == "action" and wanted["action"] != task["action"]):
            what = command if command != "action" else \
                f"action {task['action']['method']} on {task['action']['object_id']}"
            interrupted.close()
            raise SystemExit(
                f"error: a {what} of this environment was interrupted "
                f"({journal_path(state_path)}); run it again to finish it, or "
                "`murano-engine destroy` to remove what it made")
        if wanted is not None and wanted != task:
            interrupted.close()
            raise SystemExit(
                f"error: a deploy of another model ({interrupted.header.get('given')}) was "
                f"interrupted on {state_path}; {options.model} differs from it, so nothing was "
                f"run. Carry the interrupted deploy on with `murano-engine deploy --state "
                f"{state_path}` (no model), then deploy the new model; or move "
                f"{journal_path(state_path)} away to start afresh (what it recorded is then "
                f"done again, and what it made is not in {state_path})")
        resumed, started = journal_steps(interrupted.load())
        print(f"{action}: resuming the run interrupted earlier: its journal holds {resumed} "
              f"finished step(s), which are not done again"
              + (f", and {started} started but unanswered, which are carried on"
                 if started else ""), flush=True)
        store = interrupted
    else:
        if action == "action":
            check_action(loader, wanted["model"], options.object_id, options.method,
                         dict(options.args))
        task = wanted
        header = {"command": action, "task": task, "base": _digest(state_path),
                  "started": time.time()}
        if action == "deploy":
            header["given"] = str(options.model)  # and what it held, for the outputs
            header["given_model"] = _given_model(options)
        try:
            store = FileJournal.create(journal_path(state_path), header, key)
        except OSError as exc:
            raise SystemExit(f"error: could not write the journal {journal_path(state_path)}: "
                             f"{exc.strerror or exc}; nothing was done. Free some space (or "
                             f"fix the cause) and run the same command again") from None
    objects = task["model"].get("Objects") or {}
    environment_id = task["id"]
    applications = objects.get("applications") if action == "deploy" else None
    printer = ProgressPrinter(len(applications) if isinstance(applications, list) else 0)
    journal = Journal(store)
    journal.announce = announcer()  # the register notes what the run makes, first
    try:
        services = engine_services(config)
    except BaseException:
        _close_journal(store, journal)
        raise
    try:
        print(f"{action}: environment {environment_id or '(none)'}", flush=True)
        with stop_on_signals(journal), boundary.use(journal.stoppable()):
            result = run_task(task, loader, reporter=printer, services=services,
                              budget=Budget.from_config(config), outside=journal)
    except Cancelled as exc:
        store.close()
        _close_quickly(services)
        if isinstance(exc, RecordingFailed):
            print(f"error: {exc}", file=sys.stderr)
        print(f"{action} stopped after {time.monotonic() - printer.started:.1f} s; what it did "
              f"is in {journal_path(state_path)}. Run the same command to carry on, or "
              f"`murano-engine destroy --state {state_path}` to remove what it made.",
              file=sys.stderr, flush=True)
        return 1 if isinstance(exc, RecordingFailed) else 130
    except BaseException:
        close_services(services)
        _close_journal(store, journal)
        raise
    resources.add(journal.touched())
    outcome = result["action"]
    if getattr(options, "report", None):
        write_picture(Path(options.report), f"{action} of environment {environment_id}",
                      printer, result)
    elapsed = time.monotonic() - printer.started
    if action == "destroy" and not outcome["isException"]:
        problems = resources.remove_all(services, config)
        if problems:
            write_state(state_path, {**result["model"], "Resources": resources.as_dict(),
                                      "Run": run})
            store.remove()
            for problem in problems:
                print(f"error: could not remove {problem}", file=sys.stderr)
            return 1
        state_path.unlink(missing_ok=True)
        held_environments.let_go(config, state_path, environment_id)
    elif outcome["isException"] and not _worth_keeping(options, previous, resources,
                                                       result.get("loaded", True)):
        close_services(services)
    else:
        close_services(services)
        write_state(state_path, {**result["model"], "Resources": resources.as_dict(),
                                      "Run": run})
    store.remove()
    if journal.replayed:
        print(f"{journal.replayed} step(s) came from the journal of the interrupted run"
              + (f" (of its {resumed} finished: the run went another way after the others)"
                 if resumed is not None and resumed != journal.replayed else ""),
              flush=True)
    if outcome["isException"]:
        failure = outcome["result"]
        if failure["message"] != printer.last_error:  # else the report line just said it
            print(f"error: {failure['message']}", file=sys.stderr)
        if failure.get("details"):
            print(failure["details"], file=sys.stderr)
        if failure.get("traceback"):
            print("MuranoPL stack (most recent call last):\n" + failure["traceback"],
                  file=sys.stderr)
        saved = f"state saved to {state_path}" if state_path.exists() else \
            "it made nothing, so no state file was written"
        print(f"{action} failed after {elapsed:.1f} s ({', '.join(failure['names'])}); "
              f"{saved}\n{next_steps(action, options, state_path)}", file=sys.stderr)
        return 1
    if action == "deploy":
        # Outputs are what the run set beyond the user's own model (the merged model
        # already carries an earlier run's outputs).
        given = read_json(options.model, "model") if options.model else \
            store.header.get("given_model")
        given = given.get("Objects", given) if isinstance(given, Mapping) else {}
        print_outputs(given or {}, result["model"].get("Objects") or {})
    elif action != "destroy":
        print(json.dumps(outcome["result"], indent=2, sort_keys=True, default=str))
    done = f"state saved to {state_path}" if state_path.exists() else "state removed"
    print(f"{action} finished in {elapsed:.1f} s with {printer.count} report(s); {done}")
    return 0


def write_picture(path: Path, title: str, printer: ProgressPrinter,
                  result: Mapping[str, Any]) -> None:
    """The deployment picture of this run as one HTML file."""
    from murano_engine.web.picture import document

    outcome = result.get("action") or {}
    failure = outcome.get("result") if outcome.get("isException") else None
    objects = (result.get("model") or {}).get("Objects")
    path.write_text(document(title, printer.steps, printer.reports, objects, failure),
                    encoding="utf-8")
    print(f"deployment picture written to {path}", flush=True)


def _journal_key(config: Values, state_path: Path) -> bytes | None:
    """The journal key the configuration names; a warning when it is kept beside the
    state file (whoever may edit the journal could then read the key)."""
    key_file = config["engine"]["journal_key_file"]
    try:
        key = journal_key(key_file)
    except JournalError as exc:
        raise SystemExit(f"error: {exc}") from None
    if key_file and Path(key_file).expanduser().resolve().parent == \
            state_path.resolve().parent:
        print(f"warning: the journal key {key_file} is in the state file's folder; keep it "
              "elsewhere ([engine] journal_key_file), or a journal can be forged by whoever "
              "may write there", file=sys.stderr)
    return key


def _worth_keeping(options: Any, previous: Mapping[str, Any] | None,
                   resources: Resources, loaded: bool) -> bool:
    """Whether a failed command's state is saved: when there was one, or the run made
    something (a stack, a queue); with ``--state`` also when the model was ``loaded``
    (what ran is kept). A model that could not even be loaded (an unknown class, a
    value its contracts refuse) ran nothing: no state file to carry on from."""
    return previous is not None or bool(resources.stacks or resources.queues) or \
        (bool(options.state) and loaded)


def next_steps(action: str, options: Any, state_path: Path) -> str:
    """What to do after a failed ``action`` on ``state_path``: run it again once the cause
    is fixed (it carries on from what was done), or remove what it made."""
    state = f"--state {state_path}"
    if not state_path.exists():
        return f"Fix the cause, then run the same {action} again."
    destroy = f"`murano-engine destroy {state}`"
    if action == "deploy":
        model = f"{options.model} " if getattr(options, "model", None) else ""
        return (f"Fix the cause (the model, or a package), then run `murano-engine deploy "
                f"{model}{state}` again: it carries on from what this run did, making "
                f"nothing twice. Or remove the environment with {destroy}.")
    if action == "destroy":
        return f"Run {destroy} again to remove what is left."
    return (f"The environment stays as {state_path} holds it. Run the action again once the "
            f"cause is fixed, or remove the environment with {destroy}.")


def _close_journal(store: FileJournal, journal: Journal) -> None:
    """Close the journal of a command that ended in an error: removed when nothing was
    recorded in it (the run never began, so there is nothing to carry on)."""
    if journal.recorded or journal.resuming:
        store.close()
    else:
        store.remove()


def _destroy_after_interrupt(options: Any, interrupted: FileJournal,
                             previous: Mapping[str, Any] | None, resources: Resources,
                             config: Values, interpreter: Interpreter | None) -> int:
    """``destroy`` while a deploy (or action) was cut short: destroy what the state file
    holds (if any), then remove every stack and queue the interrupted run made."""
    resources.add(Journal(interrupted).touched())
    interrupted.close()
    print(f"destroy: the {interrupted.header.get('command')} interrupted earlier is "
          "abandoned; removing what it made too", flush=True)
    state_path = Path(options.state or DEFAULT_STATE)
    if previous is not None:
        write_state(state_path, {**previous, "Resources": resources.as_dict()})
    else:
        write_state(state_path, {"Objects": None, "Resources": resources.as_dict()})
    interrupted.remove()
    if previous is not None and (previous.get("Objects") or None) is not None:
        return run_held(options, "destroy", interpreter)
    problems = resources.remove_all(engine_services(config), config)
    for problem in problems:
        print(f"error: could not remove {problem}", file=sys.stderr)
    if problems:
        return 1
    keys = signing_keys(config)
    environment_id = str((interrupted.header.get("task") or {}).get("id") or "")
    if keys is not None and environment_id:
        keys.remove(environment_id)
    state_path.unlink(missing_ok=True)
    print("destroy finished; state removed")
    return 0


def _close_quickly(services: Mapping[str, Any], seconds: float = 1.0) -> None:
    """Close the services, giving up after ``seconds`` (a stopping command must end)."""
    closer = threading.Thread(target=close_services, args=(services,), daemon=True)
    closer.start()
    closer.join(seconds)
