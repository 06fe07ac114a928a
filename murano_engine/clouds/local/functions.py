"""HOT intrinsic functions: checking their use in a template, and resolving them.

Supported: ``get_param``, ``get_resource``, ``get_attr``, ``str_replace``,
``list_join``, ``get_file``, and the CFN forms ``Ref``, ``Fn::GetAtt``,
``Fn::Join``. A map with exactly one key naming a function is a call; any
other map is data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from murano_engine.clouds.base import TemplateError

PSEUDO_PARAMETERS = frozenset(
    {"OS::stack_name", "OS::stack_id", "OS::project_id", "AWS::StackName", "AWS::StackId"}
)
FUNCTIONS = frozenset(
    {
        "get_param",
        "get_resource",
        "get_attr",
        "str_replace",
        "list_join",
        "get_file",
        "Ref",
        "Fn::GetAtt",
        "Fn::Join",
    }
)


class Names(Protocol):
    """What checking needs to know about the template."""

    files: Mapping[str, str]

    def has_parameter(self, name: str) -> bool: ...

    def attributes_of(self, resource: str) -> frozenset[str] | None:
        """The resource's attribute names; None when there is no such resource."""


class Scope(Protocol):
    """What resolving needs: parameter values, resources' ids and attributes, files."""

    def parameter(self, name: str) -> Any: ...

    def reference(self, resource: str) -> Any: ...

    def attribute(self, resource: str, name: str) -> Any: ...

    def file(self, key: str) -> str: ...


def call_of(value: Any) -> tuple[str, Any] | None:
    """``(function, argument)`` when ``value`` is a function call."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, argument),) = value.items()
        if key in FUNCTIONS:
            return key, argument
    return None


def check(value: Any, where: str, names: Names) -> set[str]:
    """Validate every call inside ``value``; return the resources it refers to."""
    call = call_of(value)
    if call is None:
        found: set[str] = set()
        if isinstance(value, dict):
            for key, item in value.items():
                found |= check(item, f"{where}.{key}", names)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                found |= check(item, f"{where}[{index}]", names)
        return found
    function, argument = call
    here = f"{where}: {function}"
    return _CHECKS[function](argument, here, names)


def _check_param(argument: Any, here: str, names: Names) -> set[str]:
    path = argument if isinstance(argument, list) else [argument]
    if not path or not isinstance(path[0], str):
        raise TemplateError(f"{here} needs a parameter name")
    if path[0] not in PSEUDO_PARAMETERS and not names.has_parameter(path[0]):
        raise TemplateError(f"{here} refers to undeclared parameter {path[0]!r}")
    return check(path[1:], here, names)


def _check_resource(argument: Any, here: str, names: Names) -> set[str]:
    if not isinstance(argument, str):
        raise TemplateError(f"{here} needs a resource name")
    if names.attributes_of(argument) is None:
        raise TemplateError(f"{here} refers to unknown resource {argument!r}")
    return {argument}


def _check_attr(argument: Any, here: str, names: Names) -> set[str]:
    if not isinstance(argument, list) or len(argument) < 2 or not isinstance(argument[0], str):
        raise TemplateError(f"{here} needs [resource, attribute, path...]")
    attributes = names.attributes_of(argument[0])
    if attributes is None:
        raise TemplateError(f"{here} refers to unknown resource {argument[0]!r}")
    attribute = argument[1]
    if isinstance(attribute, str) and attribute not in attributes:
        known = ", ".join(sorted(attributes)) or "none"
        raise TemplateError(
            f"{here}: resource {argument[0]!r} has no attribute {attribute!r} (it has: {known})"
        )
    return {argument[0]} | check(argument[1:], here, names)


def _check_replace(argument: Any, here: str, names: Names) -> set[str]:
    if not isinstance(argument, dict) or "template" not in argument:
        raise TemplateError(f"{here} needs a map with template and params")
    params = argument.get("params", {})
    if not isinstance(params, dict) and call_of(params) is None:
        raise TemplateError(f"{here}: params must be a map")
    return check(argument["template"], here, names) | check(params, here, names)


def _check_join(argument: Any, here: str, names: Names) -> set[str]:
    if not isinstance(argument, list) or len(argument) < 2 or not isinstance(argument[0], str):
        raise TemplateError(f"{here} needs [delimiter, list...]")
    return check(argument[1:], here, names)


def _check_file(argument: Any, here: str, names: Names) -> set[str]:
    if not isinstance(argument, str):
        raise TemplateError(f"{here} needs a file name")
    if argument not in names.files:
        raise TemplateError(f"{here}: file {argument!r} was not sent with the template")
    return set()


def _check_ref(argument: Any, here: str, names: Names) -> set[str]:
    if isinstance(argument, str) and (
        argument in PSEUDO_PARAMETERS or names.has_parameter(argument)
    ):
        return set()
    return _check_resource(argument, here, names)


_CHECKS = {
    "get_param": _check_param,
    "get_resource": _check_resource,
    "get_attr": _check_attr,
    "Fn::GetAtt": _check_attr,
    "str_replace": _check_replace,
    "list_join": _check_join,
    "Fn::Join": _check_join,
    "get_file": _check_file,
    "Ref": _check_ref,
}


def resolve(value: Any, scope: Scope) -> Any:
    """``value`` with every function call replaced by its result."""
    call = call_of(value)
    if call is not None:
        function, argument = call
        return _RESOLVERS[function](argument, scope)
    if isinstance(value, dict):
        return {key: resolve(item, scope) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve(item, scope) for item in value]
    return value


def _follow(value: Any, path: list[Any]) -> Any:
    """Walk keys and indexes into a value; a missing step gives None."""
    for step in path:
        if isinstance(value, dict):
            value = value.get(step)
        elif isinstance(value, list):
            try:
                value = value[int(step)]
            except (ValueError, IndexError):
                return None
        else:
            return None
    return value


def as_text(value: Any) -> str:
    """How Heat writes a value into a string: JSON for maps and lists."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def _param(argument: Any, scope: Scope) -> Any:
    path = resolve(argument if isinstance(argument, list) else [argument], scope)
    return _follow(scope.parameter(path[0]), path[1:])


def _attr(argument: Any, scope: Scope) -> Any:
    resource, *path = argument
    name, *rest = resolve(path, scope)
    return _follow(scope.attribute(resource, name), rest)


def _replace(argument: Any, scope: Scope) -> str:
    template = resolve(argument["template"], scope)
    params = resolve(argument.get("params", {}), scope)
    if not isinstance(template, str) or not isinstance(params, dict):
        raise TemplateError("str_replace needs a string template and a map of params")
    for key in sorted(params, key=len, reverse=True):
        old, new = str(key), as_text(params[key])
        if len(new) > len(old) and old:
            _check_text(len(template) + template.count(old) * (len(new) - len(old)),
                        "str_replace")
        template = template.replace(old, new)
    return template


def _join(argument: Any, scope: Scope) -> str:
    delimiter, *lists = resolve(argument, scope)
    items: list[Any] = []
    for part in lists:
        if not isinstance(part, list):
            raise TemplateError(f"list_join can only join lists, not {part!r}")
        items.extend(part)
    texts = [as_text(item) for item in items]
    _check_text(sum(map(len, texts)) + len(str(delimiter)) * max(len(texts) - 1, 0),
                "list_join")
    return delimiter.join(texts)


#: the longest text a function may make (characters): Heat refuses templates past
#: half a megabyte, and a value resolved from one grows only by nesting functions
#: (seven nested str_replace, each ten times the last, made 550 MB)
MAX_TEXT = 1024 * 1024


def _check_text(size: int, function: str) -> None:
    if size > MAX_TEXT:
        raise TemplateError(f"{function} would make a text of {size} characters, more "
                            f"than {MAX_TEXT}")


def _ref(argument: Any, scope: Scope) -> Any:
    try:
        return scope.parameter(argument)
    except KeyError:
        return scope.reference(argument)


_RESOLVERS = {
    "get_param": _param,
    "get_resource": lambda argument, scope: scope.reference(argument),
    "get_attr": _attr,
    "Fn::GetAtt": _attr,
    "str_replace": _replace,
    "list_join": _join,
    "Fn::Join": _join,
    "get_file": lambda argument, scope: scope.file(argument),
    "Ref": _ref,
}
