"""``GET /v1/schemas``: JSON schemas from a class's contracts, as ``murano class-schema``."""

from __future__ import annotations

import json

from murano_engine.api.catalog import pack_folder
from murano_engine.api.class_schema import translate
from tests.api.conftest import PACKAGES


def test_contracts_become_json_schema_types():
    assert translate("$.string().notNull()") == ({"type": "string"}, True)
    assert translate("$.int()") == ({"type": ["integer", "null"]}, False)
    assert translate("$.class(res:Network)")[0]["muranoType"] == "res:Network"
    assert translate(["$.string()", 1, 3]) == (
        {"type": "array", "items": {"type": ["string", "null"]}, "minItems": 1,
         "maxItems": 3}, False)
    assert translate({"name": "$.string().notNull()", "$.string()": "$.int()"}) == (
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
         "additionalProperties": {"type": ["integer", "null"]}}, False)


def test_class_schema_through_the_api_and_the_client(start_api):
    api = start_api()
    api.ok("POST", "/v1/catalog/packages",
           files={"p": ("p.zip", pack_folder(PACKAGES / "apitest"))})
    schema = api.ok("GET", "/v1/schemas/com.example.apitest.Echo/add")
    assert schema["add"]["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    assert schema["add"]["required"] == ["a", "b"] and "" in schema
    shown = api.murano("class-schema", "com.example.apitest.Echo", "add").stdout
    assert json.loads(shown[shown.index("{"):])["add"]["required"] == ["a", "b"]
    assert api.request("GET", "/v1/schemas/com.example.apitest.Echo/nosuch").status_code == 404
    assert api.request("GET", "/v1/schemas/no.such.Class").status_code == 404
