"""The most relevant way a document fails its JSON schema: where, and why in words.

A schema may say why in its own terms with the ``x-error`` keyword (a
sentence; ``{value}`` stands for the failing value's repr), which then
replaces the generic reason for any of that schema's failures.
"""

from __future__ import annotations

from collections.abc import Iterable

from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

_TYPES = {"object": "an object", "array": "a list", "string": "a string",
          "integer": "an integer", "number": "a number", "boolean": "true or false",
          "null": "null"}


def first_problem(validator: Validator, instance: Any) -> tuple[str, str] | None:
    """``(where, why)`` for the best match among ``instance``'s errors, None if it is valid.

    ``where`` is a path such as ``Files.f.Body`` or ``categories[2]`` (empty for
    the document itself); ``why`` is a phrase such as ``must be a string``.
    """
    error = best_match(validator.iter_errors(instance))
    if error is None:
        return None
    path: list[Any] = list(error.absolute_path)
    if error.validator == "required":
        path.append(next(p for p in error.validator_value if p not in error.instance))
    return _where(path), _why(error)


def _where(path: Iterable[Any]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def _why(error: ValidationError) -> str:
    failing: ValidationError | None = error
    while failing is not None:
        if isinstance(failing.schema, dict) and "x-error" in failing.schema:
            return str(failing.schema["x-error"]).replace("{value}", repr(failing.instance))
        failing = failing.parent
    keyword, expected, value = error.validator, error.validator_value, error.instance
    if keyword == "type":
        names = [_TYPES.get(t, t) for t in ([expected] if isinstance(expected, str) else expected)]
        return "must be " + (" or ".join(names) if len(names) < 3
                             else ", ".join(names[:-1]) + " or " + names[-1])
    if keyword == "required":
        return "is required"
    if keyword == "enum":
        return f"{value!r} is not one of {expected!r}"
    if keyword == "const":
        return f"must be {expected!r}"
    if keyword == "minLength":
        return "must not be empty" if expected == 1 else f"must have at least {expected} characters"
    if keyword == "maxLength":
        return f"must have at most {expected} characters"
    if keyword == "pattern":
        return f"{value!r} does not match {expected!r}"
    return error.message
