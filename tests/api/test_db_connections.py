"""Pooled PostgreSQL connections: checked after sitting idle, not between busy requests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, select, text

from murano_engine.backend import db
from tests.databases import PG_ADMIN, database_away, throwaway_pg_database


@pytest.fixture
def store() -> Iterator[db.Store]:
    with throwaway_pg_database() as url:
        store = db.Store(url)
        db.upgrade(store.engine)
        yield store
        store.engine.dispose()


def _pings(store: db.Store) -> list[int]:
    count = [0]
    ping = store.engine.dialect.do_ping

    def counted(connection: object) -> bool:
        count[0] += 1
        return ping(connection)

    store.engine.dialect.do_ping = counted  # type: ignore[method-assign]
    return count


def _read(store: db.Store) -> int:
    with store.read() as session:
        return len(session.execute(select(db.Environment.id)).all())


def test_a_connection_handed_on_at_once_is_not_pinged(store: db.Store) -> None:
    _read(store)
    pings = _pings(store)
    for _ in range(20):
        assert _read(store) == 0
    assert pings[0] == 0


def test_an_idle_connection_the_server_dropped_is_replaced(
        store: db.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    _read(store)
    name = store.engine.url.database
    admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:  # as a server restart would
        connection.execute(text(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"),
            {"n": name})
    admin.dispose()
    pings = _pings(store)
    monkeypatch.setattr(db, "PING_AFTER_IDLE", 0.0)  # the connection counts as idle
    assert _read(store) == 0  # no error: the dead connection was found and replaced
    assert pings[0] >= 1


def test_the_api_answers_503_while_the_database_is_away_and_at_once_after(start_api):
    # The first read after an outage meets a pooled connection the server dropped (a
    # busy one: not pinged); it is asked again on a new connection, not answered 500.
    with throwaway_pg_database() as url:
        api = start_api(url)
        created = api.ok("POST", "/v1/environments", json={"name": "kept"})
        for _ in range(3):
            api.ok("GET", "/v1/environments")
        with database_away(url):
            response = api.request("GET", "/v1/environments", "tok-a")
            assert response.status_code == 503, response.text
            assert response.json()["error"]["message"] == \
                "the database does not answer; try again later"
            refused = api.request("POST", "/v1/environments", "tok-a", json={"name": "no"})
            assert refused.status_code == 503, refused.text
        listed = api.ok("GET", "/v1/environments")["environments"]
        assert [env["id"] for env in listed] == [created["id"]]
