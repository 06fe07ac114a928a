"""HOT templates checked up front, so that a bad one gives one clear error and
changes nothing: version, sections, parameters, resource types and properties,
function calls, dependencies (``depends_on`` plus every reference) and cycles.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from murano_common.jsontext import nesting_depth
from murano_engine.clouds.base import TemplateError
from murano_engine.clouds.local.catalog import RESOURCE_TYPES
from murano_engine.clouds.local.compute import SERVER
from murano_engine.clouds.local.functions import check
from murano_engine.clouds.local.resource import ResourceType
from murano_engine.dsl.yaml_loader import MAX_DEPTH

HOT_VERSIONS = frozenset(
    {
        "2013-05-23",
        "2014-10-16",
        "2015-04-30",
        "2015-10-15",
        "2016-04-08",
        "2016-10-14",
        "2017-02-24",
        "2017-09-01",
        "2018-03-02",
        "2018-08-31",
        "2021-04-16",
        "newton",
        "ocata",
        "pike",
        "queens",
        "rocky",
        "wallaby",
    }
)
SECTIONS = frozenset(
    {
        "heat_template_version",
        "description",
        "parameter_groups",
        "parameters",
        "resources",
        "outputs",
        "conditions",
    }
)
RESOURCE_KEYS = frozenset(
    {"type", "properties", "depends_on", "metadata", "update_policy", "deletion_policy"}
)
ENVIRONMENT_KEYS = frozenset({"parameters", "parameter_defaults"})


@dataclass(frozen=True)
class Definition:
    """One resource as the template defines it."""

    name: str
    type: str
    kind: ResourceType
    properties: dict[str, Any]
    requires: frozenset[str]


class Template:
    """A validated template with its parameter values."""

    def __init__(
        self,
        raw: Any,
        parameters: Mapping[str, Any] | None = None,
        files: Mapping[str, str] | None = None,
        environment: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(raw, dict):
            raise TemplateError("the template must be a map")
        self.raw = raw
        self.files = dict(files or {})
        self._check_sections(raw)
        self._declared = self._declarations(raw.get("parameters") or {})
        self.parameters = self._parameter_values(parameters or {}, environment or {})
        resources = raw.get("resources") or {}
        if not isinstance(resources, dict):
            raise TemplateError("resources must be a map")
        for name, body in resources.items():
            self._check_resource(str(name), body)
        self.resources = {str(n): self._definition(str(n), b) for n, b in resources.items()}
        self.outputs = self._outputs(raw.get("outputs") or {})
        self._check_cycles()

    @property
    def servers(self) -> int:
        """How many servers the template defines."""
        return server_count(self.raw)

    # --- functions.Names ---------------------------------------------------
    def has_parameter(self, name: str) -> bool:
        return name in self._declared

    def attributes_of(self, resource: str) -> frozenset[str] | None:
        body = self.raw["resources"].get(resource)
        return None if body is None else RESOURCE_TYPES[body["type"]].attributes

    # --- checks --------------------------------------------------------------
    @staticmethod
    def _check_sections(raw: dict[str, Any]) -> None:
        version = raw.get("heat_template_version")
        if version is None:
            raise TemplateError("heat_template_version is missing")
        if str(version) not in HOT_VERSIONS:
            raise TemplateError(f"heat_template_version {version!s} is not a known HOT version")
        unknown = sorted(set(raw) - SECTIONS)
        if unknown:
            raise TemplateError(f"unknown template section(s): {', '.join(map(str, unknown))}")
        if raw.get("conditions"):
            raise TemplateError("the local cloud does not support template conditions")

    @staticmethod
    def _declarations(section: Any) -> dict[str, dict[str, Any]]:
        if not isinstance(section, dict):
            raise TemplateError("parameters must be a map")
        for name, declaration in section.items():
            if not isinstance(declaration, dict) or declaration.get("type") not in _CONVERTERS:
                raise TemplateError(
                    f"parameter {name!r}: type must be one of {', '.join(_CONVERTERS)}"
                )
        return section

    def _parameter_values(
        self, given: Mapping[str, Any], environment: Mapping[str, Any]
    ) -> dict[str, Any]:
        unsupported = sorted(k for k, v in environment.items() if v and k not in ENVIRONMENT_KEYS)
        if unsupported:
            raise TemplateError(
                f"the local cloud does not support environment section(s) {', '.join(unsupported)}"
            )
        merged = {
            **(environment.get("parameter_defaults") or {}),
            **(environment.get("parameters") or {}),
            **given,
        }
        values: dict[str, Any] = {}
        for name in merged:
            if name not in self._declared and name not in environment.get("parameter_defaults", {}):
                raise TemplateError(f"parameter {name!r} is not declared in the template")
        for name, declaration in self._declared.items():
            if name in merged:
                value = merged[name]
            elif "default" in declaration:
                value = declaration["default"]
            else:
                raise TemplateError(f"parameter {name!r} has no value and no default")
            try:
                values[name] = _CONVERTERS[declaration["type"]](value)
            except (TypeError, ValueError) as exc:
                raise TemplateError(
                    f"parameter {name!r}: {value!r} is not a valid {declaration['type']} ({exc})"
                ) from None
        return values

    @staticmethod
    def _check_resource(name: str, body: Any) -> None:
        where = f"resource {name!r}"
        if not isinstance(body, dict) or "type" not in body:
            raise TemplateError(f"{where} must be a map with a type")
        unknown = sorted(set(body) - RESOURCE_KEYS)
        if unknown:
            raise TemplateError(f"{where}: unsupported key(s) {', '.join(unknown)}")
        kind = RESOURCE_TYPES.get(body["type"])
        if kind is None:
            raise TemplateError(f"{where}: unknown resource type {body['type']!r}")
        if body.get("deletion_policy", "Delete") != "Delete":
            raise TemplateError(
                f"{where}: deletion_policy {body['deletion_policy']!r} is not supported "
                "(the local cloud leaves nothing behind)"
            )
        properties = body.get("properties") or {}
        if not isinstance(properties, dict):
            raise TemplateError(f"{where}: properties must be a map")
        unknown = sorted(set(properties) - kind.properties)
        if unknown:
            raise TemplateError(
                f"{where} ({body['type']}): unknown property {', '.join(map(repr, unknown))}"
            )
        for group in kind.required:
            if not any(properties.get(option) is not None for option in group):
                wanted = " or ".join(repr(option) for option in group)
                raise TemplateError(f"{where} ({body['type']}): property {wanted} is required")

    def _definition(self, name: str, body: dict[str, Any]) -> Definition:
        where = f"resource {name!r}"
        depends = body.get("depends_on") or []
        if isinstance(depends, str):
            depends = [depends]
        if not isinstance(depends, list):
            raise TemplateError(f"{where}: depends_on must be a name or a list of names")
        for other in depends:
            if other not in self.raw["resources"]:
                raise TemplateError(f"{where}: depends_on names unknown resource {other!r}")
        properties = body.get("properties") or {}
        requires = set(depends)
        requires |= check(properties, f"{where} properties", self)
        requires |= check(body.get("metadata") or {}, f"{where} metadata", self)
        if name in requires:
            raise TemplateError(f"{where} depends on itself")
        return Definition(
            name=name,
            type=body["type"],
            kind=RESOURCE_TYPES[body["type"]],
            properties=properties,
            requires=frozenset(requires),
        )

    def _outputs(self, section: Any) -> dict[str, Any]:
        if not isinstance(section, dict):
            raise TemplateError("outputs must be a map")
        outputs = {}
        for name, body in section.items():
            if not isinstance(body, dict) or "value" not in body:
                raise TemplateError(f"output {name!r} must be a map with a value")
            check(body["value"], f"output {name!r}", self)
            outputs[str(name)] = body["value"]
        return outputs

    def _check_cycles(self) -> None:
        state: dict[str, str] = {}

        def visit(name: str, path: list[str]) -> None:
            if state.get(name) == "done":
                return
            if state.get(name) == "open":
                loop = path[path.index(name) :] + [name]
                raise TemplateError(f"circular dependency between resources: {' -> '.join(loop)}")
            state[name] = "open"
            for other in sorted(self.resources[name].requires):
                visit(other, path + [name])
            state[name] = "done"

        for name in sorted(self.resources):
            visit(name, [])


def server_count(raw: Any) -> int:
    """How many servers template ``raw`` defines (a stack's saved template included)."""
    resources = raw.get("resources") if isinstance(raw, dict) else None
    if not isinstance(resources, dict):
        return 0
    return sum(1 for body in resources.values()
               if isinstance(body, dict) and body.get("type") == SERVER)


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1", "t", "y"):
        return True
    if text in ("false", "no", "off", "0", "f", "n"):
        return False
    raise ValueError("not a boolean")


def _number(value: Any) -> int | float:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    if isinstance(value, int | float):
        return value
    text = str(value).strip()
    return int(text) if text.lstrip("-").isdigit() else float(text)


def _json(value: Any) -> Any:
    if isinstance(value, str):
        if nesting_depth(value) > MAX_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
        return json.loads(value)
    if not isinstance(value, dict | list):
        raise ValueError("not a map or list")
    return value


def _delimited(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(item) for item in value]
    text = str(value)
    return [item.strip() for item in text.split(",")] if text else []


def _string(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value)
    return value if isinstance(value, str) else str(value)


_CONVERTERS = {
    "string": _string,
    "number": _number,
    "json": _json,
    "comma_delimited_list": _delimited,
    "boolean": _boolean,
}
