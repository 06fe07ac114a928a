"""Execution plans as received: decoding, format version and structural checks.

Formats: v1 (no ``FormatVersion`` or ``1.x``: ``Scripts`` are base64 PowerShell,
``Commands`` are called in order) and v2.0-2.2 (``Body`` plus named ``Scripts``
that reference entries of ``Files``).
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath
from typing import Any

#: Result error codes, as Murano's agent sends them.
ERROR_UNEXPECTED = 1
ERROR_INVALID = 2
ERROR_VERSION = 9
ERROR_SCRIPT = 100

_COMMAND_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")
_ARGUMENT_NAME = re.compile(r"^[A-Za-z_]\w*$")
_V2_TYPES = {(2, 0): {"Application"}}
_V2_TYPES_LATER = {"Application", "Chef", "Puppet"}


class PlanError(Exception):
    """A plan that cannot be run; becomes an error result with ``code``."""

    def __init__(self, code: int, message: str, info: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.info = info


def decode(body: bytes) -> dict[str, Any]:
    """The plan dict in a message body."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise PlanError(ERROR_INVALID, f"message body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise PlanError(ERROR_INVALID, "message body is not a JSON object (execution plan)")
    return data


def format_version(plan: dict[str, Any]) -> tuple[int, int, int]:
    """``FormatVersion`` as a triple (1.0.0 when absent); only 1.x and 2.0-2.2 pass."""
    raw = plan.get("FormatVersion", "1.0.0")
    parts = str(raw).split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise PlanError(ERROR_VERSION, f"FormatVersion {raw!r} is not a version number")
    major, minor, patch = (int(p) for p in parts + ["0"] * (3 - len(parts)))
    if major != 1 and not (major == 2 and minor <= 2):
        raise PlanError(
            ERROR_VERSION, f"unsupported FormatVersion {raw}: this agent runs 1.x and 2.0-2.2"
        )
    return major, minor, patch


def safe_relative_path(name: object, where: str) -> PurePosixPath:
    """``name`` as a relative path that stays inside its folder, else a PlanError."""
    if not isinstance(name, str) or not name.strip() or "\0" in name:
        raise PlanError(ERROR_INVALID, f"{where}: file name {name!r} is not a valid path")
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or re.match(r"^[A-Za-z]:", name) or ".." in path.parts:
        raise PlanError(
            ERROR_INVALID, f"{where}: file name {name!r} escapes the agent's work folder"
        )
    return path


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise PlanError(ERROR_INVALID, message)


def validate_v1(plan: dict[str, Any]) -> None:
    """Structure of a v1 (PowerShell) plan."""
    scripts = plan.get("Scripts", [])
    _require(
        isinstance(scripts, list) and all(isinstance(s, str) for s in scripts),
        "Scripts must be a list of base64 strings",
    )
    commands = plan.get("Commands", [])
    _require(isinstance(commands, list), "Commands must be a list")
    for index, command in enumerate(commands):
        where = f"Commands[{index}]"
        _require(isinstance(command, dict), f"{where} must be an object")
        name = command.get("Name")
        _require(
            isinstance(name, str) and bool(_COMMAND_NAME.match(name)),
            f"{where}.Name {name!r} is not a command name",
        )
        arguments = command.get("Arguments", {})
        _require(isinstance(arguments, dict), f"{where}.Arguments must be an object")
        for key in arguments:
            _require(bool(_ARGUMENT_NAME.match(key)), f"{where}.Arguments: {key!r} is not a name")
    reboot = plan.get("RebootOnCompletion", 0)
    _require(
        isinstance(reboot, int) and not isinstance(reboot, bool),
        "RebootOnCompletion must be an integer",
    )


def _validate_file(file_id: str, entry: object, version: tuple[int, int, int]) -> None:
    where = f"Files.{file_id}"
    if not isinstance(entry, dict):
        raise PlanError(ERROR_INVALID, f"{where} must be an object")
    if "Type" in entry or "URL" in entry:
        _require(version >= (2, 1, 0), f"{where}: downloadable files need FormatVersion 2.1.0")
        _require(entry.get("Type") == "Downloadable", f"{where}: Type must be Downloadable")
        _require(isinstance(entry.get("URL"), str), f"{where}: URL must be a string")
    else:
        _require(
            entry.get("BodyType") in ("Text", "Base64"), f"{where}: BodyType must be Text or Base64"
        )
        _require(isinstance(entry.get("Body"), str), f"{where}: Body must be a string")
    safe_relative_path(entry.get("Name"), where)


def script_file_ids(script: dict[str, Any]) -> list[str]:
    """The Files ids a script references (plain ids or ``{name: id}`` items)."""
    ids = []
    for item in script.get("Files", []):
        ids.extend(item.values() if isinstance(item, dict) else [item])
    return ids


def validate_v2(plan: dict[str, Any], version: tuple[int, int, int]) -> None:
    """Structure of a v2.0-2.2 plan, with Murano's rules per version."""
    scripts, files = plan.get("Scripts"), plan.get("Files")
    _require(isinstance(scripts, dict), "Scripts must be an object")
    _require(isinstance(files, dict), "Files must be an object")
    _require(isinstance(plan.get("Options", {}), dict), "Options must be an object")
    _require(isinstance(plan.get("Body", ""), str | None), "Body must be a string")
    _require(isinstance(plan.get("Parameters", {}), dict | None), "Parameters must be an object")
    for file_id, entry in files.items():
        _validate_file(file_id, entry, version)
    allowed = _V2_TYPES.get(version[:2], _V2_TYPES_LATER)
    for name, script in scripts.items():
        where = f"Scripts.{name}"
        _require(isinstance(script, dict), f"{where} must be an object")
        kind, entry = script.get("Type"), script.get("EntryPoint")
        _require(kind in allowed, f"{where}: Type {kind!r} is not one of {sorted(allowed)}")
        _require(isinstance(entry, str), f"{where}: EntryPoint must be a string")
        if kind == "Application":
            _require(entry in files, f"{where}: EntryPoint {entry!r} is not in Files")
        else:
            _require("::" in entry, f"{where}: EntryPoint {entry!r} must be module::recipe")
        options = script.get("Options", {})
        _require(isinstance(options, dict), f"{where}: Options must be an object")
        if "useBerkshelf" in options or "berksfilePath" in options:
            _require(
                kind == "Chef" and version >= (2, 2, 0),
                f"{where}: Berkshelf options need a Chef script and FormatVersion 2.2.0",
            )
        _require(isinstance(script.get("Files", []), list), f"{where}: Files must be a list")
        for file_id in script_file_ids(script):
            _require(file_id in files, f"{where}: file {file_id!r} is not in Files")
