"""Text PostgreSQL cannot keep (a NUL character): refused where a user sends it, with the
field named; kept with the NUL shown where the engine reports it. Also on PostgreSQL: a
name taken by another request, earlier or at the same time, is a conflict, not an
internal error."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import select

from murano_engine.api import environments
from murano_engine.api.storable import nul_at
from murano_engine.backend import db
from tests.api.conftest import PACKAGES, ApiServer
from tests.api.test_journal_store import new_task
from tests.api.test_web_pages import login
from tests.databases import throwaway_pg_database


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with throwaway_pg_database() as url:
        server = ApiServer(tmp_path_factory.mktemp("api"), url, False)
        yield server
        server.stop()


def _refused(response, status: int, *words: str) -> None:
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"] + " ".join(
        response.json()["error"].get("problems") or [])
    assert all(word in message for word in words), message


def test_nul_in_a_body_is_refused_naming_its_field(api):
    _refused(api.request("POST", "/v1/environments", json={"name": "x\x00y"}), 400,
             "NUL", "at name")
    env = api.ok("POST", "/v1/environments", json={"name": "plain"})
    _refused(api.request("PUT", f"/v1/environments/{env['id']}", json={"name": "a\x00b"}),
             400, "at name")
    _refused(api.request("POST", "/v1/templates",
                         json={"name": "t", "services": [{"name": "s\x00"}]}),
             400, "at services[0].name")
    _refused(api.request("POST", "/v1/catalog/categories", token="tok-admin",
                         json={"name": "c\x00"}), 400, "at name")
    assert api.ok("GET", f"/v1/environments/{env['id']}")["name"] == "plain"


@pytest.mark.parametrize(("body", "words"), [
    (b'{"name": "\\ud800"}', ("lone UTF-16 surrogate", "at name")),
    (b'{"name": "x", "region": 1e999}', ("not valid JSON", "1e999 is too large")),
    (b'{"name": "x", "region": NaN}', ("not valid JSON", "NaN is not a JSON number")),
    (b'{"name": "x", "region": -Infinity}', ("-Infinity is not a JSON number",)),
])
def test_text_and_numbers_no_database_keeps_are_refused(api, body, words):
    """A lone surrogate is no UTF-8, NaN and Infinity are no JSON (Python reads them)."""
    before = api.ok("GET", "/v1/environments")["environments"]
    _refused(api.request("POST", "/v1/environments", data=body,
                         headers={"Content-Type": "application/json"}), 400, *words)
    assert api.ok("GET", "/v1/environments")["environments"] == before
    made = api.ok("POST", "/v1/environments", data='{"name": "\\ud83d\\ude00 smile"}',
                  headers={"Content-Type": "application/json"})  # a pair: one character
    assert made["name"] == "\U0001f600 smile"
    api.ok("DELETE", f"/v1/environments/{made['id']}")


def test_nul_in_a_web_form_is_refused(api):
    browser = login(api)
    refused = browser.post(api.url + "/ui/environments", data={"name": "a\x00b"}, timeout=30)
    assert refused.status_code == 400 and "a form field has a NUL character" in refused.text
    assert "a\x00b" not in [e["name"] for e in api.ok("GET", "/v1/environments")["environments"]]


def test_nul_in_a_path_or_a_query_finds_nothing(api):
    _refused(api.request("GET", "/v1/environments/a%00b"), 404, "NUL")
    _refused(api.request("GET", "/v1/catalog/packages?search=a%00b"), 400, "'search'")


@pytest.mark.parametrize(("line", "field"), [
    ('Name: "Hello\\0x"', "at Name"), ('Tags: [test, "a\\0b"]', "at Tags[1]"),
    ('Description: "Odd\\0text"', "at Description")])
def test_nul_in_a_manifest_is_refused_naming_its_field(api, line, field):
    buffer = io.BytesIO()
    source = PACKAGES / "apitest"
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            text = path.read_bytes()
            if path.name == "manifest.yaml":  # the field's line replaced
                key = line.split(":")[0].encode()
                text = b"\n".join(line.encode() if old.startswith(key + b":") else old
                                  for old in text.split(b"\n"))
            archive.writestr(path.relative_to(source).as_posix(), text)
    response = api.request("POST", "/v1/catalog/packages",
                           files={"p": ("p.zip", buffer.getvalue())})
    _refused(response, 400, "manifest.yaml", "NUL", field)


def test_nul_in_a_ui_definition_is_refused(api):
    archive = _zip_of(PACKAGES / "apitest", {"UI/ui.yaml": b"Version: 2\nForms: []\x00\n"})
    response = api.request("POST", "/v1/catalog/packages", files={"p": ("p.zip", archive)})
    _refused(response, 400, "UI/ui.yaml:2:10: malformed YAML: control characters")


def _zip_of(folder: Path, extra: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            archive.writestr(path.relative_to(folder).as_posix(), path.read_bytes())
        for name, data in extra.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_renaming_a_template_to_a_name_in_use_is_a_conflict(api):
    first = api.ok("POST", "/v1/templates", json={"name": "first"})
    api.ok("POST", "/v1/templates", json={"name": "second"})
    _refused(api.request("PUT", f"/v1/templates/{first['id']}", json={"name": "second"}),
             409, "'second' already exists")
    assert api.ok("GET", f"/v1/templates/{first['id']}")["name"] == "first"


def test_a_report_with_nul_characters_is_kept_with_them_shown(tmp_path: Path):
    with throwaway_pg_database() as url:
        store = db.Store(url)
        db.upgrade(store.engine)
        try:
            task_id = new_task(store)
            environments.store_report(store, task_id, {
                "id": "obj\x00", "text": "script failed\x00", "level": "error",
                "details": "binary \x00 output", "timestamp": "1"})
            with store.read() as session:
                row = session.scalars(select(db.Status).where(
                    db.Status.task_id == task_id)).one()
            assert (row.text, row.details, row.entity_id) == (
                "script failed\ufffd", "binary \ufffd output", "obj\ufffd")
        finally:
            store.engine.dispose()


def test_where_a_nul_is_found():
    assert nul_at({"a": [{"b": "ok"}, {"c": "x\x00"}]}) == "a[1].c"
    assert nul_at({"k\x00": 1}) == "k\\u0000"
    assert nul_at({"a": ("ok", 1, None)}) is None


def test_names_taken_at_the_same_time_make_one_environment_and_conflicts(api):
    with ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(lambda _: api.request(
            "POST", "/v1/environments", json={"name": "raced"}).status_code, range(8)))
    assert statuses == [200] + [409] * 7  # the unique name decides, never a 500
