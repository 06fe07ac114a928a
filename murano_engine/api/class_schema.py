"""JSON schemas of a class's input properties and its methods' arguments (``/v1/schemas``).

What ``murano class-schema CLASS [METHOD,...]`` shows: under ``""`` the schema of
the properties a model sets (usage In and InOut), under each method name the
schema of its arguments. Contracts become JSON-schema types (``$.string()``
a string, ``$.int()`` an integer, ``$.bool()`` a boolean, ``$.class(...)`` and
``$.template(...)`` an object, ``[...]`` an array with its item count, a map an
object with its keys); ``notNull()`` without a Default makes the value required;
a Default is the schema's default. Checks (``check(...)``) are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from murano_engine.dsl import values
from murano_engine.dsl.classes import Declaration, MuranoClass

SCHEMA_URI = "http://json-schema.org/draft-04/schema#"
_TYPES = {"string": "string", "int": "integer", "integer": "integer", "bool": "boolean",
          "number": "number", "class": "object", "template": "object"}
_CALL = re.compile(r"\.(\w+)\(")
_CLASS = re.compile(r"\.(?:class|template)\(\s*([\w.:]+)")


def class_schema(cls: MuranoClass, method_names: Iterable[str] = ()) -> dict[str, Any]:
    """``{"": properties, METHOD: arguments, ...}``; KeyError names an unknown method."""
    inputs = {name: specs[0] for name, specs in cls.all_properties().items()
              if specs[0].usage in ("In", "InOut")}
    result = {"": _object(inputs)}
    for name in method_names:
        method = cls.find_method(name)
        if method is None:
            raise KeyError(f"method {name} is not found in {cls.name}")
        result[name] = _object({a.name: a for a in method.arguments})
    return result


def _object(declarations: Mapping[str, Declaration]) -> dict[str, Any]:
    properties, required = {}, []
    for name, decl in declarations.items():
        schema, not_null = translate(decl.contract)
        if decl.has_default:
            schema["default"] = values.thaw(decl.default)
        elif not_null:
            required.append(name)
        properties[name] = schema
    return {"$schema": SCHEMA_URI, "type": "object", "properties": properties,
            "required": sorted(required)}


def translate(contract: Any) -> tuple[dict[str, Any], bool]:
    """A contract as a JSON schema, and whether it refuses null."""
    if contract is None:
        return {}, False
    if isinstance(contract, Mapping):
        properties, required, extra = {}, [], None
        for key, value in contract.items():
            schema, not_null = translate(value)
            if isinstance(key, str) and not key.lstrip().startswith("$"):
                properties[key] = schema
                if not_null:
                    required.append(key)
            else:
                extra = schema
        result: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            result["required"] = required
        if extra is not None:
            result["additionalProperties"] = extra
        return result, False
    if isinstance(contract, (list, tuple)):
        items = [translate(c)[0] for c in contract if not isinstance(c, int)]
        counts = [c for c in contract if isinstance(c, int) and not isinstance(c, bool)]
        result = {"type": "array"}
        if items:
            result["items"] = items[0]
        if counts:
            result["minItems"] = counts[0]
        if len(counts) > 1:
            result["maxItems"] = counts[1]
        return result, False
    text = str(contract)
    calls = _CALL.findall(text)
    schema: dict[str, Any] = {}
    kind = next((_TYPES[c] for c in calls if c in _TYPES), None)
    named = _CLASS.search(text)
    if named:
        schema["muranoType"] = named.group(1)
    not_null = "notNull" in calls
    if kind is not None:
        schema["type"] = kind if not_null else [kind, "null"]
    return schema, not_null
