"""A cloud that records instead of making: what ``murano-engine plan`` deploys to.

:class:`RecordingCloud` answers the engine as a cloud would, but a stack push, update
or delete only records the change as a template diff (resources added, changed with
the properties that change, removed) and makes the new template the stack's in the
plan: nothing reaches the real cloud but reads. The real cloud's stacks are read
(through a :class:`CurrentStacks`) so that a redeploy diffs against what exists:
the local cloud's state folder is read as it is on disk, without taking a stack
(its lock, its servers' agents); Heat is asked for its stacks.

A pushed stack's outputs are the real ones where the output and the resources it
names were there before the plan; else they are placeholders, ``(known after
apply: ...)``, shaped as the attribute they stand for (a server's ``addresses`` are
a list of ``{addr: ...}`` per network), as Terraform's "known after apply".
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from murano_engine.clouds.base import Stack, StackNotFound, StackService

#: Heat's type of a server.
SERVER = "OS::Nova::Server"

#: Called with each recorded stack change.
OnChange = Callable[[dict[str, Any]], None]
#: Checks a template as the real cloud would before a push (raises TemplateError).
Check = Callable[[str, dict[str, Any], dict[str, Any], dict[str, str], dict[str, Any]], None]


def known_after(what: str) -> str:
    """The placeholder of a value the cloud gives only once the plan is applied."""
    return f"(known after apply: {what})"


def is_placeholder(value: Any) -> bool:
    """Whether ``value`` is (or holds, in its text) a :func:`known_after` placeholder."""
    return isinstance(value, str) and "(known after apply: " in value


class CurrentStacks(Protocol):
    """What the real cloud holds now, read only."""

    def get(self, name: str) -> Stack | None:
        """The stack with its template, parameters and outputs; None when absent."""

    def records(self, *types: str) -> list[tuple[str, str, Any]]:
        """``(stack, resource, record)`` of every live resource of ``types`` (records
        have ``id`` and ``data``); [] where the cloud keeps none (Heat)."""


class NoStacks:
    """A cloud with nothing in it (a plan from nothing)."""

    def get(self, name: str) -> Stack | None:
        return None

    def records(self, *types: str) -> list[tuple[str, str, Any]]:
        return []


class HeatCurrent(NoStacks):
    """Heat's stacks, read through a :class:`~murano_engine.clouds.heat.HeatStacks`."""

    def __init__(self, heat: StackService) -> None:
        self._heat = heat

    def get(self, name: str) -> Stack | None:
        return self._heat.get(name)


class LocalCurrent:
    """The stacks of a local cloud's state folder as they are on disk, read without
    taking them: no lock is taken, no agent started, no folder made."""

    def __init__(self, state_dir: str | Path) -> None:
        self._folder = Path(state_dir).expanduser() / "stacks"
        self._lock = threading.RLock()
        self._stacks: dict[str, Any] | None = None
        self._read: dict[str, Stack | None] = {}

    def _all(self) -> dict[str, Any]:
        """Every stack of the folder, read once (a stack its process deletes meanwhile is
        left out)."""
        from murano_engine.clouds.local.stack import StackFiles
        with self._lock:
            if self._stacks is None:
                self._stacks = {}
                if self._folder.is_dir():  # StackFiles makes its folder: not here
                    files = StackFiles(self._folder, self._lock)
                    for header in sorted(self._folder.glob("*/stack.json")):
                        try:
                            stack = files.load(header.parent.name)
                        except FileNotFoundError:
                            continue
                        if stack is not None:
                            self._stacks[stack.name] = stack
            return self._stacks

    def get(self, name: str) -> Stack | None:
        with self._lock:
            if name not in self._read:
                self._read[name] = self._snapshot(name)
            return self._read[name]

    def _snapshot(self, name: str) -> Stack | None:
        stack = self._all().get(name)
        if stack is None:
            return None
        from murano_engine.clouds.base import TemplateError
        from murano_engine.clouds.local.operations import outputs
        from murano_engine.clouds.local.stack import plain
        from murano_engine.clouds.local.template import Template
        try:
            checked = Template(stack.template, stack.parameters, stack.files, stack.environment)
        except TemplateError:
            values: dict[str, Any] = {}
            parameters = dict(stack.parameters)
        else:
            values = outputs(_ReadOnly(self), stack, checked)
            parameters = dict(checked.parameters)
        return Stack(name=stack.name, id=stack.id, status=stack.status,
                     status_reason=stack.reason, outputs=values, parameters=parameters,
                     template=plain(stack.template), created=stack.created,
                     updated=stack.updated)

    def records(self, *types: str) -> list[tuple[str, str, Any]]:
        return [(stack.name, key, record) for stack in self._all().values()
                for section in (stack.resources, stack.replaced)
                for key, record in section.items() if record.type in types and record.id]

    def servers_by_stack(self) -> dict[str, int]:
        """The servers of each stack: those its template defines or those it has,
        whichever are more (as the local cloud counts them against its quota)."""
        from murano_engine.clouds.local.template import server_count
        return {stack.name: max(sum(1 for r in stack.records() if r.type == SERVER and r.id),
                                server_count(stack.template))
                for stack in self._all().values()}


class _ReadOnly:
    """The local cloud's services as resource attributes read them (records only)."""

    def __init__(self, current: LocalCurrent) -> None:
        self._current = current
        self.lock = current._lock

    def records(self, *types: str) -> list[Any]:
        return [record for _, _, record in self._current.records(*types)]

    def find(self, physical_id: str, *types: str) -> Any:
        candidates = self.records(*types)
        return next((r for r in candidates if r.id == physical_id), None) or next(
            (r for r in candidates if r.data.get("name") == physical_id), None)


# -- diffs ---------------------------------------------------------------------------

def _resources(template: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    found = (template or {}).get("resources") if isinstance(template, Mapping) else None
    return {str(k): v for k, v in found.items() if isinstance(v, Mapping)} \
        if isinstance(found, Mapping) else {}


def template_diff(before: Mapping[str, Any] | None,
                  after: Mapping[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    """What changes from template ``before`` to ``after`` (None: no stack): resources
    ``added`` and ``removed`` (name, type) and ``changed`` (name, type, the properties
    that change and any other part of the resource that does: ``type``, ``depends_on``
    ...), each sorted by name."""
    old, new = _resources(before), _resources(after)
    changed = []
    for name in sorted(set(old) & set(new)):
        if old[name] == new[name]:
            continue
        props_old = old[name].get("properties") or {}
        props_new = new[name].get("properties") or {}
        changed.append({
            "name": name, "type": str(new[name].get("type")),
            "properties": sorted(str(k) for k in set(props_old) | set(props_new)
                                 if props_old.get(k) != props_new.get(k)),
            "other": sorted(str(k) for k in set(old[name]) | set(new[name])
                            if k != "properties" and old[name].get(k) != new[name].get(k))})
    return {"added": [{"name": n, "type": str(new[n].get("type"))}
                      for n in sorted(set(new) - set(old))],
            "changed": changed,
            "removed": [{"name": n, "type": str(old[n].get("type"))}
                        for n in sorted(set(old) - set(new))]}


# -- outputs of a planned stack -------------------------------------------------------

class _Keyed(dict):
    """An attribute keyed by names the plan cannot list (a server's addresses per
    network): every key has a value, made by ``make``."""

    def __init__(self, make: Callable[[Any], Any]) -> None:
        super().__init__()
        self._make = make

    def get(self, key: Any, default: Any = None) -> Any:
        return self._make(key)


def _placeholder_attribute(kind: str | None, resource: str, name: str) -> Any:
    """A placeholder shaped as attribute ``name`` of a resource of type ``kind``."""
    if kind == SERVER:
        if name == "addresses":
            return _Keyed(lambda net: [{"addr": known_after(f"address of {resource} on {net}"),
                                        "version": 4, "OS-EXT-IPS:type": "fixed"}])
        if name == "networks":
            return _Keyed(lambda net: [known_after(f"address of {resource} on {net}")])
        if name in ("first_address", "accessIPv4"):
            return known_after(f"address of {resource}")
    if kind == "OS::Neutron::Port" and name == "fixed_ips":
        return [{"ip_address": known_after(f"address of port {resource}"),
                 "subnet_id": known_after(f"subnet of port {resource}")}]
    if kind == "OS::Neutron::FloatingIP" and name == "floating_ip_address":
        return known_after(f"floating address of {resource}")
    return known_after(f"{name} of {resource}")


class _PlannedScope:
    """Resolves a planned stack's outputs: parameters as given, resources and their
    attributes as placeholders (:class:`murano_engine.clouds.local.functions.Scope`)."""

    def __init__(self, stack: str, template: Mapping[str, Any], parameters: Mapping[str, Any],
                 files: Mapping[str, str]) -> None:
        self._stack = stack
        self._types = {name: str(body.get("type")) for name, body in
                       _resources(template).items()}
        declared = template.get("parameters") if isinstance(template.get("parameters"),
                                                             Mapping) else {}
        self._parameters = {str(k): v.get("default") for k, v in declared.items()
                            if isinstance(v, Mapping)}
        self._parameters.update(parameters)
        self._files = files

    def parameter(self, name: str) -> Any:
        if name in ("OS::stack_name", "AWS::StackName"):
            return self._stack
        if name in ("OS::stack_id", "AWS::StackId"):
            return known_after(f"id of stack {self._stack}")
        if name == "OS::project_id":
            return known_after("project id")
        if name not in self._parameters:
            raise KeyError(name)
        return self._parameters[name]

    def reference(self, resource: str) -> Any:
        return known_after(f"id of {resource}")

    def attribute(self, resource: str, name: str) -> Any:
        return _placeholder_attribute(self._types.get(resource), resource, name)

    def file(self, key: str) -> str:
        return str(self._files.get(key, ""))


def _named_resources(value: Any) -> set[str]:
    """The resources an output's value names (``get_resource``, ``get_attr`` ...)."""
    from murano_engine.clouds.local.functions import call_of
    call = call_of(value)
    if call is not None:
        function, argument = call
        if function in ("get_resource", "Ref") and isinstance(argument, str):
            return {argument}
        if function in ("get_attr", "Fn::GetAtt") and isinstance(argument, list) and argument:
            return {str(argument[0])} | _named_resources(argument[1:])
        return _named_resources(argument)
    if isinstance(value, Mapping):
        return set().union(*(_named_resources(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_named_resources(v) for v in value))
    return set()


def planned_outputs(stack: str, template: Mapping[str, Any], parameters: Mapping[str, Any],
                    files: Mapping[str, str], current: Stack | None) -> dict[str, Any]:
    """The outputs of ``stack`` once ``template`` is applied: the current value of an
    output defined as before whose resources were all there before, else a value
    resolved with placeholders for what the cloud makes."""
    from murano_engine.clouds.base import CloudError
    from murano_engine.clouds.local.functions import resolve
    declared = template.get("outputs") if isinstance(template.get("outputs"), Mapping) else {}
    before = current.template if current is not None and current.template else {}
    old_outputs = before.get("outputs") if isinstance(before.get("outputs"), Mapping) else {}
    old_resources = _resources(before)
    scope = _PlannedScope(stack, template, parameters, files)
    values: dict[str, Any] = {}
    for name, body in declared.items():
        definition = body.get("value") if isinstance(body, Mapping) else None
        kept = (current is not None and old_outputs.get(name) == body
                and _named_resources(definition) <= set(old_resources)
                and current.outputs.get(name) is not None)
        if kept:
            values[name] = current.outputs[name]
            continue
        try:
            values[name] = resolve(definition, scope)
        except (CloudError, KeyError, TypeError, ValueError):
            values[name] = known_after(f"output {name}")
    return values


# -- the cloud -------------------------------------------------------------------------

@dataclass
class _Planned:
    """A stack as the plan leaves it."""

    template: dict[str, Any]
    parameters: dict[str, Any]
    outputs: dict[str, Any]
    status: str
    stamp: int
    id: str = ""


class RecordingCloud(StackService):
    """Stacks whose pushes are recorded, over what ``current`` holds (see the module's
    doc). ``check`` validates a template as the real cloud would; ``on_change`` gets
    each change as ``{stack, action, added, changed, removed, servers}``."""

    def __init__(self, current: CurrentStacks, on_change: OnChange,
                 check: Check | None = None, server_quota: int = -1) -> None:
        super().__init__(timeout=1.0, poll_interval=0.0)
        self.current = current
        self._on_change = on_change
        self._check = check
        self.server_quota = server_quota
        self._lock = threading.RLock()
        self._planned: dict[str, _Planned | None] = {}  # None: deleted in the plan
        self._stamps = itertools.count(1)

    # -- reads -----------------------------------------------------------------------
    def _before(self, name: str) -> Stack | None:
        """The stack as it is before the plan's change now being made."""
        with self._lock:
            if name in self._planned:
                planned = self._planned[name]
                return None if planned is None else self._snapshot(name, planned, True)
        return self.current.get(name)

    @staticmethod
    def _snapshot(name: str, planned: _Planned, template: bool) -> Stack:
        return Stack(name=name, id=planned.id or f"planned-{name}", status=planned.status,
                     status_reason="planned, not made", outputs=dict(planned.outputs),
                     parameters=dict(planned.parameters),
                     template=planned.template if template else None,
                     created="plan", updated=str(planned.stamp))

    def get(self, name: str, template: bool = True) -> Stack | None:
        return self._before(name) if template else _without_template(self._before(name))

    def wait(self, name: str, timeout: float | None = None, *, since: Stack | None = None,
             raise_on_failure: bool = True, template: bool = True) -> Stack | None:
        """A planned stack is settled at once."""
        return self.get(name, template)

    # -- changes ---------------------------------------------------------------------
    def create(self, name: str, template: dict[str, Any],
               parameters: dict[str, Any] | None = None, files: dict[str, str] | None = None,
               environment: dict[str, Any] | None = None) -> None:
        self._push(name, "create", template, parameters, files, environment)

    def update(self, name: str, template: dict[str, Any],
               parameters: dict[str, Any] | None = None, files: dict[str, str] | None = None,
               environment: dict[str, Any] | None = None) -> None:
        if self._before(name) is None:
            raise StackNotFound(f"The Stack ({name}) could not be found.")
        self._push(name, "update", template, parameters, files, environment)

    def delete(self, name: str) -> None:
        before = self._before(name)
        if before is None:
            raise StackNotFound(f"The Stack ({name}) could not be found.")
        with self._lock:
            self._planned[name] = None
        self._record(name, "delete", before, None)

    def _push(self, name: str, action: str, template: dict[str, Any],
              parameters: dict[str, Any] | None, files: dict[str, str] | None,
              environment: dict[str, Any] | None) -> None:
        from murano_engine.clouds.local.stack import plain
        raw = plain(template)
        given = plain(parameters or {})
        if self._check is not None:
            self._check(name, raw, given, dict(files or {}), plain(environment or {}))
        before = self._before(name)
        self._check_quota(name, raw)
        current = self.current.get(name)
        outputs = planned_outputs(name, raw, given, dict(files or {}), current)
        with self._lock:
            self._planned[name] = _Planned(
                raw, given, outputs, f"{action.upper()}_COMPLETE", next(self._stamps),
                current.id if current is not None else "")
        self._record(name, action, before, raw)

    def _check_quota(self, name: str, template: dict[str, Any]) -> None:
        """Refuse, as the local cloud would, a push past the servers quota."""
        counts = getattr(self.current, "servers_by_stack", None)
        if self.server_quota < 0 or counts is None:
            return
        from murano_engine.clouds.local.quota import check_server_quota
        from murano_engine.clouds.local.template import server_count
        by_stack = counts()
        with self._lock:
            for stack, planned in self._planned.items():
                by_stack[stack] = 0 if planned is None else server_count(planned.template)
        check_server_quota(self.server_quota, name, by_stack, server_count(template))

    def _record(self, name: str, action: str, before: Stack | None,
                after: dict[str, Any] | None) -> None:
        old = before.template if before is not None else None
        diff = template_diff(old, after)
        self._on_change({"stack": name, "action": action, **diff,
                         "servers": self._servers(name, old, after, diff)})

    def _servers(self, name: str, old: Mapping[str, Any] | None,
                 new: Mapping[str, Any] | None,
                 diff: Mapping[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
        """The servers ``diff`` makes and deletes (name, flavor, image; the physical id
        of one the cloud has) and those it changes, with the properties that change."""
        made = []
        for entry in diff["added"]:
            if entry["type"] == SERVER:
                props = _resources(new)[entry["name"]].get("properties") or {}
                made.append({"name": entry["name"], "flavor": props.get("flavor"),
                             "image": props.get("image")})
        ids = {resource: record for stack, resource, record in self.current.records(SERVER)
               if stack == name}
        deleted = [{"name": e["name"], "id": getattr(ids.get(e["name"]), "id", None)}
                   for e in diff["removed"] if e["type"] == SERVER]
        changed = [{"name": e["name"], "properties": e["properties"]}
                   for e in diff["changed"] if e["type"] == SERVER]
        return {"made": made, "deleted": deleted, "changed": changed}

    def planned(self) -> dict[str, dict[str, Any] | None]:
        """The template of every stack the plan changed (None: deleted)."""
        with self._lock:
            return {name: None if p is None else p.template
                    for name, p in self._planned.items()}

    # -- what the engine calls besides ----------------------------------------------
    def close(self) -> None:
        """Nothing to release: the plan held nothing."""


class LocalRecordingCloud(RecordingCloud):
    """A :class:`RecordingCloud` over the local cloud, which also lists its records (the
    network explorer picks subnets among them) with the plan's changes applied."""

    def records(self, *types: str) -> list[Any]:
        planned = self.planned()
        found = [record for stack, resource, record in self.current.records(*types)
                 if stack not in planned
                 or resource in _resources(planned[stack])]
        for stack, template in planned.items():
            before = self.current.get(stack)
            existing = _resources(before.template if before is not None else None)
            for resource, body in _resources(template).items():
                if body.get("type") in types and resource not in existing:
                    found.append(_PlannedRecord(known_after(f"id of {resource}"),
                                                dict(body.get("properties") or {})))
        return found


@dataclass(frozen=True)
class _PlannedRecord:
    """A resource the plan makes, as a record: its properties stand for its data."""

    id: str
    data: dict[str, Any]


def _without_template(stack: Stack | None) -> Stack | None:
    if stack is None or stack.template is None:
        return stack
    return Stack(name=stack.name, id=stack.id, status=stack.status,
                 status_reason=stack.status_reason, outputs=stack.outputs,
                 parameters=stack.parameters, template=None, created=stack.created,
                 updated=stack.updated)
