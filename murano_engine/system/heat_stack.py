"""io.murano.system.HeatStack: one region's stack, edited in memory and pushed to the cloud.

The template accumulates what instances, networks and volumes add with
``updateTemplate``; the cloud sees it only at ``push``. ``push`` creates the
stack, updates it, or deletes it once no resources are left, through
:func:`murano_engine.clouds.push_stack` on the executor's ``cloud`` service.
Every call to the cloud goes through the run's journal (``executor.outside``):
a resumed run reads what the stack was and skips pushes that completed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from murano_common.plain import copy_tree
from murano_engine.dsl import boundary, reports, values
from murano_engine.dsl.natives import NativeCall, method, native_class

if TYPE_CHECKING:
    # Imported where a stack is pushed or deleted: loading the class (every package
    # that uses instances does) should not import the clouds, dataclasses and logging.
    from murano_engine.clouds import StackService

HOT_VERSION = "2013-05-23"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class HeatStackError(Exception):
    """A template change HeatStack refuses (an unsupported template version)."""


def stack_name(name: str) -> str:
    """``name`` made valid for Heat: letters, digits, ``_.-``, starting with a letter."""
    safe = _UNSAFE.sub("-", name).strip("-") or "stack"
    return safe if safe[0].isalpha() else f"s-{safe}"


def merge(base: Any, patch: Any) -> Any:
    """Deep merge: maps merge key by key, lists join without repeats, anything else is replaced."""
    if isinstance(base, Mapping) and isinstance(patch, Mapping):
        merged = dict(base)
        for key, value in patch.items():
            merged[key] = merge(base[key], value) if key in base else value
        return merged
    if isinstance(base, list) and isinstance(patch, list):
        return base + [item for item in patch if item not in base]
    return patch


def _cloud(call: NativeCall) -> StackService | None:
    """The executor's cloud; None where none is configured (as in package tests)."""
    return call.executor.services.get("cloud")


def _require_cloud(call: NativeCall) -> StackService:
    service = _cloud(call)
    if service is None:
        raise RuntimeError("no cloud is configured for this engine (services['cloud'])")
    return service


class _State:
    """What one HeatStack object holds between calls."""

    def __init__(self, name: str, description: str | None, region: str | None) -> None:
        self.name = stack_name(name)
        self.description = description
        self.region = region
        self._template: dict[str, Any] | None = None
        self._frozen: Any = None
        self.parameters: dict[str, Any] = {}
        self.files: dict[str, Any] = {}
        self.environment: dict[str, Any] = {}
        self.applied = True
        #: the outputs last read and their MuranoPL value
        self._outputs: tuple[dict[str, Any], Any] | None = None

    # The template has two forms, each made from the other when first asked for: plain
    # data (edited here, pushed) and the frozen value MuranoPL reads and sets. Code that
    # reads it, edits it and sets it back for each server of a big stack then copies
    # what it changed, not the whole template each time.
    @property
    def template(self) -> dict[str, Any] | None:
        """The template as it will be pushed (None: not read from the cloud yet)."""
        if self._template is None and self._frozen is not None:
            self._template = values.thaw(self._frozen) or {}
        return self._template

    @template.setter
    def template(self, template: dict[str, Any] | None) -> None:
        self._template, self._frozen = template, None

    def set_frozen(self, template: Mapping) -> None:
        """Set the template from a MuranoPL value."""
        self._template, self._frozen = None, values.freeze(template)

    def frozen(self, call: NativeCall) -> Any:
        """The template as a MuranoPL value (read from the cloud the first time)."""
        if self._frozen is None:
            self._frozen = values.freeze(self.load(call))
        return self._frozen

    def frozen_outputs(self, outputs: dict[str, Any]) -> Any:
        """``outputs`` as a MuranoPL value: the one made last time when they are the same
        (each server of a big stack reads the outputs of all of them)."""
        last = self._outputs
        if last is None or last[0] != outputs:
            last = self._outputs = (outputs, values.freeze(outputs))
        return last[1]

    def load(self, call: NativeCall) -> dict[str, Any]:
        """The template, read from the cloud the first time (``{}`` for no stack or cloud).

        A stack whose last operation failed does not hold its template yet: the next
        ``push`` sends it again (as Heat retries the failed resources), even unchanged.
        """
        if self.template is None:
            found = _read(call, self.name)
            if found is None:
                self.template, self.parameters = {}, {}
            else:
                self.template = copy_tree(found["template"] or {})
                self.parameters = {k: v for k, v in found["parameters"].items()
                                   if not k.startswith("OS::")}
            # a journal written before "failed" was read holds none: taken as not failed
            self.applied = not (found or {}).get("failed", False)
        return self.template


def _read(call: NativeCall, name: str) -> dict[str, Any] | None:
    """The stack's template and parameters as the cloud has them (None: no stack)."""
    service = _cloud(call)
    if service is None:
        return None

    def read() -> dict[str, Any] | None:
        stack = service.get(name)
        if stack is None:
            return None
        return {"template": stack.template, "parameters": dict(stack.parameters),
                "failed": stack.failed}

    return call.executor.outside.value("stack.get", name, read)


@native_class("io.murano.system.HeatStack")
class HeatStack:
    def __init__(self, call: NativeCall, name: str, description: str | None = None,
                 regionName: str | None = None) -> None:  # noqa: N803
        self.state = _State(str(name), description, regionName)

    @method
    def name(call: NativeCall) -> str:
        return call.native.state.name

    @method
    def current(call: NativeCall) -> Any:
        return call.native.state.frozen(call)

    @method
    def parameters(call: NativeCall) -> Any:
        state = call.native.state
        state.load(call)
        return values.freeze(state.parameters)

    @method
    def reload(call: NativeCall) -> Any:
        state = call.native.state
        state.template, state.parameters = None, {}
        return state.frozen(call)

    @method
    def setTemplate(call: NativeCall, template: Any) -> None:  # noqa: N802
        state = call.native.state
        if isinstance(template, Mapping):
            state.set_frozen(template)
        else:
            state.template = values.thaw(template) or {}
        state.parameters = {}
        state.applied = False

    @method
    def updateTemplate(call: NativeCall, template: Any) -> None:  # noqa: N802
        patch = values.thaw(template) or {}
        version = patch.get("heat_template_version")
        if version is not None and str(version) != HOT_VERSION:
            raise HeatStackError(
                f"updateTemplate accepts heat_template_version {HOT_VERSION} only, not {version}")
        state = call.native.state
        current = state.load(call)
        merged = merge(current, patch)
        state.applied = state.applied and merged == current
        state.template = merged

    @method
    def setParameters(call: NativeCall, parameters: Any) -> None:  # noqa: N802
        state = call.native.state
        state.parameters = values.thaw(parameters) or {}
        state.applied = False

    @method
    def setFiles(call: NativeCall, files: Any) -> None:  # noqa: N802
        state = call.native.state
        state.files = values.thaw(files) or {}
        state.applied = False

    @method
    def setHotEnvironment(call: NativeCall, hotEnvironment: Any) -> None:  # noqa: N802, N803
        state = call.native.state
        state.environment = values.thaw(hotEnvironment) or {}
        state.applied = False

    @method
    def output(call: NativeCall) -> Any:
        state = call.native.state
        service = _require_cloud(call)

        def read() -> dict[str, Any]:
            stack = service.wait(state.name, raise_on_failure=False, template=False)
            return dict(stack.outputs) if stack is not None else {}

        return state.frozen_outputs(call.executor.outside.value("stack.output", state.name, read))

    @method
    def push(call: NativeCall, isAsync: bool = False) -> None:  # noqa: N803
        """Send the template to the cloud; ``isAsync`` pushes are made at once too."""
        state = call.native.state
        if state.applied or state.template is None:
            return
        pushed = copy_tree(state.template)
        template = copy_tree(pushed)
        template.setdefault("heat_template_version", HOT_VERSION)
        template.setdefault("description", state.description or f"Stack {state.name}")
        from murano_engine.clouds import push_stack

        service = _require_cloud(call)
        reporter = call.executor.services.get("reporter")
        started = boundary.outside().now() if reporter is not None else None
        call.executor.outside.effect(
            "stack.push", state.name, dict,
            lambda _: push_stack(service, state.name, template, state.parameters, state.files,
                                 state.environment))
        state.applied = state.template == pushed
        reports.step(reporter, call.executor.services.get("environment_id"), kind="stack",
                     phase="pushed", lane="stack", name=state.name, started=started,
                     resources=sorted(template.get("resources") or {})[:40])

    @method
    def delete(call: NativeCall) -> None:
        state = call.native.state
        service = _cloud(call)
        if service is not None and (state.load(call) or _read(call, state.name) is not None):
            from murano_engine.clouds import remove_stack

            call.executor.outside.effect("stack.delete", state.name, dict,
                                         lambda _: remove_stack(service, state.name))
        state.template, state.applied = {}, True
