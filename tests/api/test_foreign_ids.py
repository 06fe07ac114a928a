"""The API refuses a model that claims another environment's objects: an environment's
id, or an id from another environment's model or open session, whoever's it is, in a
service added, replaced or patched in. The engine never takes a model's ids as identity
(tests/system/test_tenant_identity.py); this keeps models from claiming them at all."""

from __future__ import annotations

import uuid

import pytest

SESSION = "X-Configuration-Session"
CLASS = "io.murano.apps.Anything"


def _environment(api, token: str, name: str) -> tuple[str, str]:
    env = api.ok("POST", "/v1/environments", token, json={"name": name})
    sid = api.ok("POST", f"/v1/environments/{env['id']}/configure", token)["id"]
    return env["id"], sid


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_model_cannot_claim_another_environments_ids(start_api, database, request):
    url = request.getfixturevalue("pg_database") if database == "postgresql" else None
    api = start_api(database=url)
    b_env, b_sid = _environment(api, "tok-b", f"b-{uuid.uuid4().hex[:6]}")
    b_instance = uuid.uuid4().hex
    api.ok("POST", f"/v1/environments/{b_env}/services", "tok-b",
           headers={SESSION: b_sid},
           json={"?": {"id": uuid.uuid4().hex, "type": CLASS}, "name": "b-app",
                 "instance": {"?": {"id": b_instance, "type": "io.murano.resources.Instance"},
                              "name": "b-vm"}})

    a_env, a_sid = _environment(api, "tok-a", f"a-{uuid.uuid4().hex[:6]}")
    services = f"/v1/environments/{a_env}/services"
    claims = {
        "B's environment id": {"?": {"id": b_env, "type": CLASS}},
        "B's instance id, nested": {"?": {"id": uuid.uuid4().hex, "type": CLASS},
                                    "fake": {"?": {"id": b_instance, "type": CLASS}}},
    }
    for what, service in claims.items():
        for method in ("POST", "PUT"):
            body = service if method == "POST" else [service]
            response = api.request(method, services, "tok-a", headers={SESSION: a_sid},
                                   json=body)
            assert response.status_code == 403, (what, method, response.text)
            claimed = b_env if what.startswith("B's environment") else b_instance
            assert f"object id {claimed!r} belongs to another environment" in response.text
    # nor through a model patch adding an object to the environment
    own = uuid.uuid4().hex
    api.ok("POST", services, "tok-a", headers={SESSION: a_sid},
           json={"?": {"id": own, "type": CLASS}, "name": "a-app"})
    response = api.request(
        "PATCH", f"/v1/environments/{a_env}/model/", "tok-a", headers={
            SESSION: a_sid, "Content-Type": "application/env-model-json-patch"},
        json=[{"op": "add", "path": "/extra",
               "value": {"?": {"id": b_instance, "type": CLASS}}}])
    assert response.status_code == 403, response.text
    assert repr(b_instance) in response.text

    # A's own new objects, and B's own edits, are fine; nothing of A's refused calls stayed
    listed = api.ok("GET", services, "tok-a", headers={SESSION: a_sid})
    assert [s["?"]["id"] for s in listed] == [own]
    api.ok("POST", f"/v1/environments/{b_env}/services", "tok-b", headers={SESSION: b_sid},
           json={"?": {"id": uuid.uuid4().hex, "type": CLASS}, "name": "b-two"})
