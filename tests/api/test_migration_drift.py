"""The migrations build exactly the schema the SQLAlchemy models describe."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from pprint import pformat

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from murano_engine.backend import db
from tests.api.conftest import throwaway_pg_database


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty database on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/drift.sqlite"
    else:
        with throwaway_pg_database() as url:
            yield url


def test_migrated_schema_matches_the_models(empty_database: str) -> None:
    store = db.Store(empty_database)
    try:
        db.upgrade(store.engine)
        with store.engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={
                "compare_type": True, "compare_server_default": True})
            differences = compare_metadata(context, db.Base.metadata)
    finally:
        store.engine.dispose()
    assert not differences, "the models and the migrations differ:\n" + pformat(differences)
