"""Turning an authored plan template plus package resources into a wire execution plan."""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from typing import Any

from murano_common.plain import copy_tree
from murano_engine.dsl import boundary
from murano_engine.messaging.errors import PlanBuildError

#: Reads a resource file named as in the template (e.g. ``deploy.sh`` of Resources/scripts).
ReadResource = Callable[[str], bytes]

#: The template key declaring what the plan returns in a dry run (``murano-engine
#: plan``, docs/plan.md); never sent to an agent.
DRY_RUN_RESULT = "DryRunResult"


class StampClock:
    """Plan ``Stamp`` values: ``int(now * 10000)``, strictly increasing."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._last = max(int(boundary.outside().now() * 10000), self._last + 1)
            return self._last


def _read(read_resource: ReadResource, name: str, where: str) -> bytes:
    try:
        return read_resource(name)
    except (OSError, KeyError, LookupError) as exc:
        raise PlanBuildError(f"{where}: resource file {name!r} cannot be read: {exc}") from None


def is_v1(template: dict[str, Any]) -> bool:
    """True for the v1 (PowerShell) format: no ``FormatVersion`` or ``1.x``."""
    return str(template.get("FormatVersion", "1.0.0")).startswith("1.")


def _build_v1(plan: dict[str, Any], read_resource: ReadResource) -> None:
    scripts = plan.get("Scripts", [])
    if not isinstance(scripts, list):
        raise PlanBuildError("Scripts of a v1 template must be a list of file names")
    plan["Scripts"] = [
        base64.b64encode(_read(read_resource, name, f"Scripts[{i}]")).decode("ascii")
        for i, name in enumerate(scripts)
    ]


class _V2Files:
    """The top-level ``Files`` of a v2 plan, filled as script references are replaced."""

    def __init__(self, files: dict[str, Any], read_resource: ReadResource) -> None:
        self.files = files
        self._read = read_resource
        self._by_name = {
            entry.get("Name"): file_id
            for file_id, entry in files.items()
            if isinstance(entry, dict)
        }

    def reference(self, ref: Any, where: str) -> str:
        """The file id for one template reference (name, ``<name>``, URL, ``{name: url}``)."""
        if isinstance(ref, dict) and len(ref) == 1:
            ((name, url),) = ref.items()
        elif isinstance(ref, str) and "://" in ref:
            name, url = ref.rstrip("/").rsplit("/", 1)[-1], ref
        elif isinstance(ref, str) and ref:
            name, url = ref.removeprefix("<").removesuffix(">"), None
        else:
            raise PlanBuildError(f"{where}: file reference {ref!r} is not a name, URL or mapping")
        if name in self._by_name:
            return self._by_name[name]
        if url is not None:
            entry = {"Name": name, "URL": url, "Type": "Downloadable"}
        elif ref.startswith("<"):
            data = base64.b64encode(_read(self._read, name, where)).decode("ascii") + "\n"
            entry = {"Name": name, "BodyType": "Base64", "Body": data}
        else:
            try:
                text = _read(self._read, name, where).decode("utf-8")
            except UnicodeDecodeError:
                raise PlanBuildError(
                    f"{where}: {name!r} is not UTF-8 text; write it as <{name}> to send base64"
                ) from None
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            entry = {"Name": name, "BodyType": "Text", "Body": text}
        file_id = boundary.outside().new_id()
        self.files[file_id] = entry
        self._by_name[name] = file_id
        return file_id


def _build_v2(plan: dict[str, Any], read_resource: ReadResource) -> None:
    plan["ID"] = boundary.outside().new_id()
    plan.setdefault("Action", "Execute")
    files = plan.setdefault("Files", {})
    scripts = plan.get("Scripts", {})
    if not isinstance(files, dict) or not isinstance(scripts, dict):
        raise PlanBuildError("Scripts and Files of a v2 template must be mappings")
    table = _V2Files(files, read_resource)
    for name, script in scripts.items():
        if not isinstance(script, dict):
            raise PlanBuildError(f"Scripts.{name} must be a mapping")
        if script.get("Type", "Application") == "Application":
            script["EntryPoint"] = table.reference(
                script.get("EntryPoint"), f"Scripts.{name}.EntryPoint"
            )
        if "Files" in script:  # as in Murano: a script without Files gets none
            script["Files"] = [
                table.reference(ref, f"Scripts.{name}.Files[{i}]")
                for i, ref in enumerate(script["Files"] or [])
            ]


def build_plan(template: dict[str, Any], read_resource: ReadResource, stamp: int) -> dict[str, Any]:
    """A wire plan from ``template`` (left unchanged): v1 scripts inlined as base64;
    v2 gets ``ID``, ``Action`` and ``Files`` with every script file reference inlined
    (a script's own ``Files`` list only where the template has one). The template's
    :data:`DRY_RUN_RESULT` is left out."""
    if not isinstance(template, dict):
        raise PlanBuildError(f"an execution plan template must be a mapping, not {template!r}")
    plan = copy_tree(template)
    plan.pop(DRY_RUN_RESULT, None)
    if is_v1(plan):
        _build_v1(plan, read_resource)
    else:
        _build_v2(plan, read_resource)
    plan["Stamp"] = stamp
    return plan
