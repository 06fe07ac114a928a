"""Request bodies are checked against the schemas in schemas/requests.json."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from murano_engine.api import schemas
from murano_engine.api.app import ROUTES, openapi_document
from murano_engine.api.errors import BadRequest


@pytest.mark.parametrize(("schema", "body", "message"), [
    ("Environment", {"name": " "}, "'name': must be a non-blank string of at most 255"),
    ("Environment", {"name": "x" * 256}, "'name': must be a non-blank string of at most 255"),
    ("Environment", {}, "'name': is required"),
    ("Environment", [], "the body must be an object"),
    ("Named", {"name": 5}, "'name': must be a non-blank string"),
    ("Category", {"name": "x" * 81}, "'name': must be a non-blank string of at most 80"),
    ("ServiceOrServices", {"no": "header"}, "'?': is required"),
    ("ServiceOrServices", [{"?": {"type": "a"}}, {"?": {}}], "'[1].?.type': is required"),
    ("Services", {"?": {"type": "a"}}, "the body must be a list"),
    ("Service", {"?": {"type": ""}}, "'?.type': must not be empty"),
    ("TemplateChanges", {"services": {}}, "'services': must be a list or null"),
    ("ModelPatch", [{"op": "move", "path": "/x"}], "'[0].op': 'move' is not one of"),
    ("PackagePatch", {"op": "add"}, "the body must be a list"),
    ("PackagePatch", [{"path": "/tags"}], "'[0].op': is required"),
    ("PackagePatch", [{"op": "add", "path": "/is_public", "value": True}],
     "'[0].op': must be replace for /is_public"),
    ("PackagePatch", [{"op": "replace", "path": "/owner"}], "'[0].path': must be one of"),
    ("PackagePatch", [{"op": "replace", "path": "/enabled", "value": "yes"}],
     "'[0].value': must be true or false"),
    ("PackagePatch", [{"op": "add", "path": "/categories", "value": ["a", "b", 3]}],
     "'[0].value[2]': must be a string"),
    ("PackagePatch", [{"op": "replace", "path": "/name", "value": "  "}],
     "'[0].value': must be a non-blank string"),
    ("StaticAction", {"className": "a"}, "'methodName': is required"),
    ("StaticAction", {"className": "a", "methodName": "m", "parameters": [1]},
     "'parameters': must be an object or null"),
    ("ActionArguments", [1], "the body must be an object or null"),
])
def test_errors_name_the_field(schema: str, body: Any, message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        schemas.check(schema, body)
    assert caught.value.message.startswith(message), caught.value.message


def test_a_field_of_the_request_prefixes_the_path() -> None:
    with pytest.raises(BadRequest, match=r"^'__metadata__\.categories\[1\]': must be a string"):
        schemas.check("PackageMetadata", {"categories": ["a", 1]}, "__metadata__")
    with pytest.raises(BadRequest, match=r"^'__metadata__': must be an object"):
        schemas.check("PackageMetadata", [], "__metadata__")


@pytest.mark.parametrize(("schema", "body"), [
    ("Environment", {"name": "e", "region": "r", "defaultNetworks": None}),
    ("ServiceOrServices", {"?": {"type": "a.B", "id": "1"}, "name": "x"}),
    ("ServiceOrServices", []),
    ("PackagePatch", [{"op": "replace", "path": "/is_public", "value": "TRUE"},
                      {"op": "remove", "path": "/tags/"},
                      {"op": "replace", "path": "/description", "value": ""}]),
    ("PackageMetadata", {"tags": "one", "categories": None, "enabled": False}),
    ("ActionArguments", None),
])
def test_valid_bodies_pass(schema: str, body: Any) -> None:
    schemas.check(schema, body)


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if "$ref" in node else []
        return own + [r for v in node.values() for r in _refs(v)]
    return [r for v in node for r in _refs(v)] if isinstance(node, list) else []


def test_the_schemas_are_well_formed_and_refer_to_each_other() -> None:
    for schema in schemas.SCHEMAS.values():
        Draft202012Validator.check_schema(schema)
    prefix = "#/components/schemas/"
    for ref in _refs(schemas.SCHEMAS):
        assert ref.startswith(prefix) and ref[len(prefix):] in schemas.SCHEMAS, ref


def test_openapi_request_bodies_come_from_the_schemas() -> None:
    document = openapi_document()
    assert document["components"]["schemas"] is schemas.SCHEMAS
    bodies = {(route.path, method): route.body for route in ROUTES for method in route.methods
              if route.body}
    assert bodies[("/v1/environments", "POST")] == "Environment"
    operation = document["paths"]["/v1/catalog/packages/{package_id}"]["patch"]
    assert operation["requestBody"] == {"required": True, "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/PackagePatch"}}}}
    action = document["paths"]["/v1/environments/{env_id}/actions/{action_id}"]["post"]
    assert action["requestBody"]["required"] is False
    assert all(name in schemas.SCHEMAS for name in bodies.values())


def test_the_openapi_document_is_valid() -> None:
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(openapi_document())
