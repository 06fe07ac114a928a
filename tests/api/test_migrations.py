"""Alembic migrations go up and down on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect

from murano_engine.backend import db


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_upgrade_downgrade_upgrade(request, tmp_path, backend):
    url = request.getfixturevalue("pg_database") if backend == "postgresql" \
        else f"sqlite:///{tmp_path}/m.sqlite"
    store = db.Store(url)
    try:
        db.upgrade(store.engine)
        tables = set(inspect(store.engine).get_table_names())
        assert {"environment", "session", "task", "status", "package", "category"} <= tables
        db.downgrade(store.engine, "base")
        assert set(inspect(store.engine).get_table_names()) <= {"alembic_version"}
        db.upgrade(store.engine)
    finally:
        store.engine.dispose()
