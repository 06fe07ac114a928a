"""Execution plans as received: decoding, format version and structural checks.

Formats: v1 (no ``FormatVersion`` or ``1.x``: ``Scripts`` are base64 PowerShell,
``Commands`` are called in order) and v2.0-2.2 (``Body`` plus named ``Scripts``
that reference entries of ``Files``). Their structure is described by the JSON
schemas in ``schemas/plan.json``.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from pathlib import PurePosixPath
from typing import Any

from jsonschema import Draft202012Validator

from murano_common import jsontext
from murano_common.schema_errors import first_problem

#: Result error codes, as Murano's agent sends them.
ERROR_UNEXPECTED = 1
ERROR_INVALID = 2
ERROR_VERSION = 9
ERROR_SCRIPT = 100

#: How deep lists and objects may nest in a message (and in what a Body returns); far
#: below the interpreter's recursion limit, so checking and storing a plan cannot recurse
#: out of the stack.
MAX_DEPTH = 100

#: Longest plan ID or ReplyTo, in UTF-8 bytes: results carry them as AMQP short strings.
MAX_NAME_BYTES = 255

#: Plan structure per format, as JSON schemas (shipped with the package).
_SCHEMA = json.loads(resources.files(__package__).joinpath("schemas/plan.json").read_text("utf-8"))


class PlanError(Exception):
    """A plan that cannot be run; becomes an error result with ``code``."""

    def __init__(self, code: int, message: str, info: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.info = info


def nesting_depth(value: Any) -> int:
    """How deep lists and dicts nest in ``value`` (0 for a scalar), without recursing."""
    if not isinstance(value, dict | list):
        return 0
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def check_depth(value: Any, what: str) -> None:
    """A PlanError when ``value`` nests deeper than :data:`MAX_DEPTH`."""
    if nesting_depth(value) > MAX_DEPTH:
        raise PlanError(ERROR_INVALID, f"{what} nests deeper than {MAX_DEPTH} levels")


def decode(body: bytes, max_bytes: int) -> dict[str, Any]:
    """The plan dict in a message body of at most ``max_bytes`` bytes, nesting at most
    :data:`MAX_DEPTH` levels (measured on the text, before it is decoded)."""
    if len(body) > max_bytes:
        raise PlanError(
            ERROR_INVALID,
            f"message body is {len(body)} bytes, more than the {max_bytes} allowed "
            "(agent setting [DEFAULT] max_message_bytes)",
        )
    if jsontext.nesting_depth(body) > MAX_DEPTH:
        raise PlanError(ERROR_INVALID, f"message body nests deeper than {MAX_DEPTH} levels")
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise PlanError(ERROR_INVALID, f"message body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise PlanError(ERROR_INVALID, "message body is not a JSON object (execution plan)")
    return data


def short_string(plan: dict[str, Any], field: str) -> str | None:
    """``plan[field]`` (``ID`` or ``ReplyTo``) as a str a result can carry (None when
    absent or empty), else a PlanError."""
    value = plan.get(field)
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    try:
        fits = isinstance(value, str) and len(value.encode("utf-8")) <= MAX_NAME_BYTES
    except UnicodeEncodeError:  # a lone surrogate
        fits = False
    if not fits:
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise PlanError(
            ERROR_INVALID, f"plan {field} {shown} is not a string of at most {MAX_NAME_BYTES} bytes"
        )
    return value


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


def safe_relative_path(name: object, where: str, kind: str = "file name") -> PurePosixPath:
    """``name`` as a relative path that stays inside its folder, else a PlanError."""
    if not isinstance(name, str) or not name.strip() or "\0" in name:
        raise PlanError(ERROR_INVALID, f"{where}: {kind} {name!r} is not a valid path")
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or re.match(r"^[A-Za-z]:", name) or ".." in path.parts:
        raise PlanError(
            ERROR_INVALID, f"{where}: {kind} {name!r} escapes the agent's work folder"
        )
    return path


def safe_script_name(name: str) -> None:
    """A PlanError unless the Scripts key ``name`` is one folder name (its files go there)."""
    where = f"Scripts.{name}"
    if len(safe_relative_path(name, where, "script name").parts) != 1:
        raise PlanError(ERROR_INVALID, f"{where}: script name {name!r} is not a single folder name")


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise PlanError(ERROR_INVALID, message)


@cache
def _validator(form: str) -> Draft202012Validator:
    """The validator of the ``$defs`` entry ``form`` (v1, v2.0, ...) in schemas/plan.json."""
    return Draft202012Validator({**_SCHEMA, "$ref": f"#/$defs/{form}"})


def _check(plan: dict[str, Any], form: str) -> None:
    problem = first_problem(_validator(form), plan)
    if problem is not None:
        where, why = problem
        raise PlanError(ERROR_INVALID, f"{where}: {why}" if where else f"the plan {why}")


def validate_v1(plan: dict[str, Any]) -> None:
    """Structure of a v1 (PowerShell) plan."""
    _check(plan, "v1")


def script_file_ids(script: dict[str, Any]) -> list[str]:
    """The Files ids a script references (plain ids or ``{name: id}`` items)."""
    ids = []
    for item in script.get("Files", []):
        ids.extend(item.values() if isinstance(item, dict) else [item])
    return ids


def validate_v2(plan: dict[str, Any], version: tuple[int, int, int]) -> None:
    """Structure of a v2.0-2.2 plan, with Murano's rules per version.

    The schema of the version checks the shapes; the file names and the
    references from scripts to ``Files`` are checked here.
    """
    _check(plan, f"v2.{version[1]}")
    scripts, files = plan["Scripts"], plan["Files"]
    for file_id, entry in files.items():
        safe_relative_path(entry.get("Name"), f"Files.{file_id}")
    for name, script in scripts.items():
        safe_script_name(name)
        where, entry = f"Scripts.{name}", script["EntryPoint"]
        if script["Type"] == "Application":
            _require(entry in files, f"{where}: EntryPoint {entry!r} is not in Files")
        for file_id in script_file_ids(script):
            _require(file_id in files, f"{where}: file {file_id!r} is not in Files")
