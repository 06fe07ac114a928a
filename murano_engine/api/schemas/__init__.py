"""JSON schemas of the API's request bodies, kept as data in ``requests.json``.

The same schemas validate requests and are the OpenAPI document's
``components/schemas``; they refer to each other as ``#/components/schemas/<name>``.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

from murano_common.schema_errors import first_problem
from murano_engine.api.errors import BadRequest

SCHEMAS: dict[str, Any] = json.loads(
    resources.files(__package__).joinpath("requests.json").read_text("utf-8"))


@cache
def _validator(name: str) -> Draft202012Validator:
    if name not in SCHEMAS:
        raise KeyError(f"no request schema {name!r}")
    return Draft202012Validator({"components": {"schemas": SCHEMAS},
                                 "$ref": f"#/components/schemas/{name}"})


def accepts(name: str, value: Any) -> bool:
    """Whether ``value`` is valid against the schema ``name``."""
    return _validator(name).is_valid(value)


def check(name: str, value: Any, field: str = "") -> None:
    """Raise BadRequest naming the field where ``value`` fails the schema ``name``.

    ``field`` prefixes the path when ``value`` is a field of the request, not its body.
    """
    problem = first_problem(_validator(name), value)
    if problem is None:
        return
    where, why = problem
    where = f"{field}.{where}" if field and where and not where.startswith("[") \
        else field + where
    raise BadRequest(f"'{where}': {why}" if where else f"the body {why}")
