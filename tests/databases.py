"""Throwaway databases on the machine's PostgreSQL, for tests and benchmarks."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


@contextmanager
def throwaway_pg_database(prefix: str = "murano_api_test") -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database, dropped on exit."""
    from sqlalchemy import create_engine, text

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with admin.connect() as connection:
            connection.execute(text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"),
                {"n": name})
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()


@contextmanager
def database_away(url: str) -> Iterator[None]:
    """The PostgreSQL database of ``url`` refuses connections and ends those it has, as a
    database server gone away does, until the block ends."""
    from sqlalchemy import create_engine, text

    name = url.rsplit("/", 1)[1]
    admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'))
            connection.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                    "WHERE datname = :n"), {"n": name})
        yield
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))
        admin.dispose()
