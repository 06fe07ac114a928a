"""Stack operations of the local cloud: converge a stack on a template, or take it down.

Converging walks the template in dependency order (independent resources in
parallel): a new resource is created; an unchanged one is kept; one whose
changed properties are all updatable is updated in place; anything else is
replaced (a new one created, the old one deleted at the end, except for types
that must not run twice, which are deleted first). Resources the template no
longer has are deleted last, dependents before what they depend on.
"""

from __future__ import annotations

import logging
from typing import Any

from murano_engine.clouds.base import CloudError
from murano_engine.clouds.local.catalog import RESOURCE_TYPES
from murano_engine.clouds.local.functions import PSEUDO_PARAMETERS, resolve
from murano_engine.clouds.local.resource import (
    Context,
    ResourceFailure,
    ResourceRecord,
    Services,
)
from murano_engine.clouds.local.scheduler import reverse, run_ordered
from murano_engine.clouds.local.stack import StackFiles, StackState
from murano_engine.clouds.local.template import Definition, Template

LOG = logging.getLogger(__name__)

#: Types whose old instance goes before the new one is made (a guest agent
#: must never consume its queue twice).
DELETE_BEFORE_REPLACE = frozenset({"OS::Nova::Server"})


class OperationFailed(CloudError):
    """A stack operation stopped at a resource; the message is Heat's status reason."""


class StackScope:
    """Resolves functions against one stack's parameters, resources and files."""

    def __init__(self, services: Services, stack: StackState, template: Template) -> None:
        self._services = services
        self._stack = stack
        self._template = template

    def parameter(self, name: str) -> Any:
        if name in PSEUDO_PARAMETERS:
            return {
                "OS::stack_name": self._stack.name,
                "AWS::StackName": self._stack.name,
                "OS::stack_id": self._stack.id,
                "AWS::StackId": self._stack.id,
                "OS::project_id": "local",
            }[name]
        return self._template.parameters[name]

    def _record(self, resource: str) -> ResourceRecord:
        record = self._stack.resources.get(resource)
        if record is None or not record.exists:
            raise ResourceFailure(f"resource {resource!r} has not been created")
        return record

    def reference(self, resource: str) -> Any:
        record = self._record(resource)
        return RESOURCE_TYPES[record.type].reference(record)

    def attribute(self, resource: str, name: str) -> Any:
        record = self._record(resource)
        ctx = Context(self._services, self._stack.name, resource)
        return RESOURCE_TYPES[record.type].attribute(ctx, record, name)

    def file(self, key: str) -> str:
        return self._template.files[key]


class _OneRead:
    """The cloud's services for one read of a stack's outputs, made under the cloud's lock
    (nothing changes meanwhile): each kind of record is listed once, not once per output
    (a stack of N servers has N outputs that each look through every port)."""

    def __init__(self, services: Services) -> None:
        self._services = services
        self._listed: dict[tuple[str, ...], list[ResourceRecord]] = {}
        self._by_id: dict[tuple[str, ...], dict[str, ResourceRecord]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._services, name)

    def records(self, *types: str) -> list[ResourceRecord]:
        listed = self._listed.get(types)
        if listed is None:
            listed = self._listed[types] = self._services.records(*types)
        return listed

    def find(self, physical_id: str, *types: str) -> ResourceRecord | None:
        by_id = self._by_id.get(types)
        if by_id is None:
            by_id = self._by_id[types] = {}
            for record in self.records(*types):
                by_id.setdefault(record.id, record)
        found = by_id.get(physical_id)
        if found is None:
            found = next((r for r in self.records(*types) if r.data.get("name") == physical_id),
                         None)
        return found


def outputs(services: Services, stack: StackState, template: Template) -> dict[str, Any]:
    """The template's outputs now (None where a resource is missing); call it holding the
    cloud's lock."""
    scope = StackScope(_OneRead(services), stack, template)
    values = {}
    for name, value in template.outputs.items():
        try:
            values[name] = resolve(value, scope)
        except CloudError as exc:
            LOG.debug("Output %s of stack %s is unavailable: %s", name, stack.name, exc)
            values[name] = None
    return values


class Operation:
    """One create, update or delete of a stack; each resource step saves its record."""

    def __init__(
        self,
        services: Services,
        stack: StackState,
        template: Template,
        files: StackFiles,
        *,
        parallel: int,
    ) -> None:
        self.services = services
        self.stack = stack
        self.template = template
        self._files = files
        self._parallel = parallel
        self._scope = StackScope(services, stack, template)

    def converge(self, action: str) -> None:
        """Make the stack's resources match the template (CREATE or UPDATE)."""
        definitions = self.template.resources
        failures = run_ordered(
            definitions,
            {name: d.requires for name, d in definitions.items()},
            lambda name: self._converge_one(definitions[name]),
            limit=self._parallel,
        )
        if failures:
            self._raise(action, failures)
        for name in [n for n in self.stack.resources if n not in definitions]:
            self._set_aside(name)
        self._take_down(action)

    def delete(self) -> None:
        """Delete every resource of the stack, dependents first; the stack is deleted
        once its servers are released, those whose release failed before included
        (while one fails, so does the delete)."""
        for name in list(self.stack.resources):
            self._set_aside(name)
        self._take_down("DELETE")
        try:
            self.services.guests.settle(self.stack.name)
        except CloudError as exc:
            raise OperationFailed(f"DELETE: {exc}") from None

    def _take_down(self, action: str) -> None:
        """Delete the records set aside in ``stack.replaced``, dependents first."""
        records = dict(self.stack.replaced)
        by_name: dict[str, set[str]] = {}
        for key, record in records.items():
            by_name.setdefault(record.name, set()).add(key)
        requires = {
            key: {k for name in record.requires for k in by_name.get(name, ())}
            for key, record in records.items()
        }
        failures = run_ordered(records, reverse(requires), self._delete_one, limit=self._parallel)
        if failures:
            self._raise(action, failures)

    def _raise(self, action: str, failures: dict[str, BaseException]) -> None:
        key = sorted(failures)[0]
        error = failures[key]
        raise OperationFailed(
            f"Resource {action} failed: resources.{key.partition('~')[0]}: {error}"
        ) from error

    def _context(self, name: str) -> Context:
        return Context(self.services, self.stack.name, name)

    def _set(
        self, record: ResourceRecord, section: str, key: str, status: str, reason: str = ""
    ) -> None:
        with self.services.lock:
            record.status, record.reason = status, reason
        self._files.save_record(self.stack, section, key)

    def _set_aside(self, name: str) -> str:
        with self.services.lock:
            key = self.stack.set_aside(name)
        self._files.save_record(self.stack, "replaced", key)
        self._files.save_record(self.stack, "resources", name)
        return key

    def _converge_one(self, definition: Definition) -> None:
        name, kind = definition.name, definition.kind
        try:
            resolved = resolve(definition.properties, self._scope)
        except (CloudError, KeyError, TypeError) as exc:
            raise ResourceFailure(f"cannot resolve properties: {exc}") from exc
        props = {key: value for key, value in resolved.items() if value is not None}
        old = self.stack.resources.get(name)
        if old is not None and old.exists and old.type == definition.type:
            if not old.status.endswith("_FAILED"):
                changed = {
                    k
                    for k in set(props) | set(old.properties)
                    if props.get(k) != old.properties.get(k)
                }
                if not changed:
                    with self.services.lock:
                        old.requires = sorted(definition.requires)
                    self._files.save_record(self.stack, "resources", name)
                    return
                if changed <= kind.updatable:
                    self._update_one(old, definition, props)
                    return
            key = self._set_aside(name)
            if old.type in DELETE_BEFORE_REPLACE:
                self._delete_one(key)
        self._create_one(definition, props)

    def _update_one(self, record: ResourceRecord, definition: Definition, props: dict) -> None:
        name = record.name
        self._set(record, "resources", name, "UPDATE_IN_PROGRESS")
        try:
            data = definition.kind.update(self._context(name), record, props)
        except Exception as exc:
            self._set(record, "resources", name, "UPDATE_FAILED", str(exc))
            raise
        with self.services.lock:
            record.data, record.properties = data, props
            record.requires = sorted(definition.requires)
        self._set(record, "resources", name, "UPDATE_COMPLETE")

    def _create_one(self, definition: Definition, props: dict[str, Any]) -> None:
        name = definition.name
        record = ResourceRecord(
            name=name, type=definition.type, requires=sorted(definition.requires)
        )
        with self.services.lock:
            self.stack.resources[name] = record
        self._set(record, "resources", name, "CREATE_IN_PROGRESS")

        def claim(physical_id: str) -> None:
            with self.services.lock:
                record.id = physical_id
            self._files.save_record(self.stack, "resources", name)

        try:
            physical_id, data = definition.kind.create(
                Context(self.services, self.stack.name, name, claim), props)
        except Exception as exc:
            with self.services.lock:
                record.id = ""  # a failing create undoes its own work
            self._set(record, "resources", name, "CREATE_FAILED", str(exc))
            raise
        with self.services.lock:
            record.id, record.data, record.properties = physical_id, data, props
        self._set(record, "resources", name, "CREATE_COMPLETE")

    def _delete_one(self, key: str) -> None:
        record = self.stack.replaced[key]
        self._set(record, "replaced", key, "DELETE_IN_PROGRESS")
        if record.exists:
            try:
                RESOURCE_TYPES[record.type].delete(self._context(record.name), record)
            except Exception as exc:
                self._set(record, "replaced", key, "DELETE_FAILED", str(exc))
                raise
        with self.services.lock:
            del self.stack.replaced[key]
        self._files.save_record(self.stack, "replaced", key)
