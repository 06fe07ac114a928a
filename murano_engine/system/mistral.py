"""io.murano.system.MistralClient: Mistral workflows, through python-mistralclient.

Mistral is ``[mistral] url``, else the keystone catalog's ``[mistral]
service_type`` endpoint (with ``[heat] auth_url``); requests carry the
``[heat]`` keystone token when there is one. Without a Mistral every call is a
``MistralError`` saying how to configure one. python-mistralclient is imported
on first use (it takes a few tenths of a second).

Calls go through the run's journal: an upload, the id of a started execution,
and its outcome, so a resumed run neither uploads nor starts twice, and waits
for the execution it started. Errors reach MuranoPL under Murano's name,
``murano.engine.system.workflowclient.MistralError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from murano_engine.dsl import boundary, values
from murano_engine.dsl.errors import MuranoPlException
from murano_engine.dsl.natives import NativeCall, method, native_class
from murano_engine.dsl.objects import MuranoObject, real_object
from murano_engine.system import openstack

#: The name MuranoPL code catches Mistral failures by (Murano's).
MISTRAL_ERROR = "murano.engine.system.workflowclient.MistralError"
#: Keys of an execution's output that describe the run, not the workflow's result.
_BOOKKEEPING = ("openstack", "__execution", "task")


class MistralError(Exception):
    """Mistral is not configured, not reachable, or a workflow failed or timed out."""


def _environment_region(obj: MuranoObject | None) -> str | None:
    """The ``region`` of the Environment owning ``obj``."""
    current = obj
    while current is not None:
        if any(c.name == "io.murano.Environment" for c in current.murano_class.ancestors()):
            region = current.props.get("region")
            return str(region) if region else None
        current = current.owner
    return None


def _client(call: NativeCall, region: str | None) -> Any:
    """A mistralclient v2 client for the configured Mistral."""
    settings = openstack.settings(call, "mistral")
    keystone = openstack.session(call, insecure=bool(settings.get("insecure")),
                                 cafile=str(settings.get("cafile") or ""))
    try:
        url = openstack.endpoint(call, "mistral", str(settings.get("service_type")
                                                      or "workflowv2"), region, keystone)
    except LookupError as exc:
        raise MistralError(str(exc)) from None
    if url is None:
        raise MistralError("no Mistral is configured: set [mistral] url in the engine's "
                           "configuration (or [heat] auth_url, to find Mistral in the "
                           "keystone catalog)")
    try:
        from mistralclient.api import client as mistral_client
    except ImportError as exc:
        raise MistralError(f"python-mistralclient cannot be imported: {exc}") from None
    return mistral_client.client(mistral_url=url, session=keystone,
                                 insecure=bool(settings.get("insecure")),
                                 cacert=settings.get("cafile") or None)


def _reached(what: str, action: Any) -> Any:
    """``action()``, its failures (HTTP, connection, API errors) as MistralError."""
    try:
        return action()
    except MistralError:
        raise
    except Exception as exc:  # noqa: BLE001 - mistralclient raises many kinds
        raise MistralError(f"Mistral {what} failed: {exc}") from None


def _output(execution_id: str, state: str, output: Any) -> dict[str, Any]:
    """The workflow's output of a finished execution (its bookkeeping keys dropped)."""
    if state == "ERROR":
        raise MistralError(f"Mistral execution {execution_id} ended in ERROR; "
                           f"output: {output}")
    try:
        data = json.loads(output) if isinstance(output, str) else (output or {})
    except ValueError:
        raise MistralError(f"Mistral execution {execution_id}: its output is not "
                           f"JSON: {output!r}") from None
    if not isinstance(data, Mapping):
        raise MistralError(f"Mistral execution {execution_id}: its output is not an "
                           f"object: {output!r}")
    return {k: v for k, v in data.items() if k not in _BOOKKEEPING}


@native_class("io.murano.system.MistralClient")
class MistralClient:
    def __init__(self, call: NativeCall, regionName: str | None = None) -> None:  # noqa: N803
        self.region = regionName or _environment_region(real_object(call.receiver))
        self._client: Any = None

    def client(self, call: NativeCall) -> Any:
        if self._client is None:
            self._client = _client(call, self.region)
        return self._client

    @staticmethod
    def _failed(call: NativeCall, exc: MistralError) -> MuranoPlException:
        return MuranoPlException([MISTRAL_ERROR], str(exc), call.frame.stack(), native=exc)

    @method
    def upload(call: NativeCall, definition: str) -> None:
        """Register the workflows ``definition`` (Mistral's YAML) declares."""
        native: MistralClient = call.native

        def create() -> list[str]:
            created = _reached("workflow upload", lambda: native.client(call).workflows.create(
                str(definition)))
            return [str(getattr(w, "name", "")) for w in created or []]

        try:
            call.executor.outside.value("mistral.upload", "", create)
        except MistralError as exc:
            raise MistralClient._failed(call, exc) from exc

    @method
    def run(call: NativeCall, name: str, timeout: Any = 600, inputs: Any = None,
            params: Any = None) -> Any:
        """Start workflow ``name`` and return its output; ``timeout`` 0: its execution id."""
        native: MistralClient = call.native
        outside = call.executor.outside
        seconds = float(600 if timeout is None else timeout)
        workflow_input = values.thaw(inputs) or {}
        options = values.thaw(params) or {}

        def start() -> str:
            execution = _reached(f"start of workflow {name}", lambda: native.client(
                call).executions.create(str(name), workflow_input=workflow_input, **options))
            return str(execution.id)

        def finish(execution_id: str) -> dict[str, Any]:
            client = native.client(call)
            interval = float(openstack.settings(call, "mistral").get("poll_interval") or 2.0)
            clock = boundary.outside()  # live (and stoppable): waits are not journaled
            deadline = clock.monotonic() + seconds
            while True:
                execution = _reached(f"read of execution {execution_id}",
                                     lambda: client.executions.get(execution_id))
                if execution.state in ("SUCCESS", "ERROR"):
                    return {"state": execution.state, "output": execution.output}
                if clock.monotonic() >= deadline:
                    raise MistralError(f"Mistral execution {execution_id} of workflow "
                                       f"{name} did not finish within {seconds:g} s "
                                       f"(state {execution.state})")
                clock.sleep(interval)

        try:
            execution_id = outside.value("mistral.start", str(name), start)
            if seconds == 0:
                return execution_id
            done = outside.value("mistral.wait", execution_id, lambda: finish(execution_id))
            return values.freeze(_output(execution_id, done["state"], done["output"]))
        except MistralError as exc:
            raise MistralClient._failed(call, exc) from exc
