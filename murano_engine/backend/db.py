"""Database tables (Murano's layout) and the engine/session factory."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    event,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import DeclarativeBase, Mapped, deferred, mapped_column, sessionmaker
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal

from murano_engine.engine.quotas import QuotaTable

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def new_id() -> str:
    """Murano's ids: 32 hex digits."""
    return uuid.uuid4().hex


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Timestamped:
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=now)
    updated: Mapped[dt.datetime] = mapped_column(DateTime, default=now, onupdate=now)


class Environment(Timestamped, Base):
    __tablename__ = "environment"
    __table_args__ = (UniqueConstraint("tenant_id", "name"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(255))
    tenant_id: Mapped[str] = mapped_column(String(64), index=True)
    version: Mapped[int] = mapped_column(Integer, default=0)
    description: Mapped[dict[str, Any]] = mapped_column(JSON)
    description_text: Mapped[str] = mapped_column(Text, default="")
    acquired_by: Mapped[str | None] = mapped_column(String(36), nullable=True)


class Session(Timestamped, Base):
    __tablename__ = "session"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    environment_id: Mapped[str] = mapped_column(
        ForeignKey("environment.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(36), default="opened")
    version: Mapped[int] = mapped_column(Integer)
    description: Mapped[dict[str, Any]] = mapped_column(JSON)


class Task(Timestamped, Base):
    __tablename__ = "task"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    environment_id: Mapped[str] = mapped_column(
        ForeignKey("environment.id", ondelete="CASCADE"), index=True)
    session_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    started: Mapped[dt.datetime] = mapped_column(DateTime, default=now)
    finished: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    description: Mapped[dict[str, Any] | None] = deferred(mapped_column(JSON, nullable=True))
    action: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The engine worker that took the task last (``host:pid:token``), named if it never
    # finishes.
    worker: Mapped[str | None] = mapped_column(String(255), nullable=True)
    # Until when ``worker``, a murano-api running tasks in its own process, holds the task
    # (it renews the lease while it runs it; another takes over a lease run out).
    lease_until: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class Status(Timestamped, Base):
    __tablename__ = "status"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    task_id: Mapped[str] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"), index=True)
    entity_id: Mapped[str | None] = mapped_column(String(255), nullable=True)
    entity: Mapped[str | None] = mapped_column(String(32), nullable=True)
    text: Mapped[str] = mapped_column(Text)
    level: Mapped[str] = mapped_column(String(32))
    details: Mapped[str | None] = mapped_column(Text, nullable=True)
    timestamp: Mapped[str | None] = mapped_column(String(64), nullable=True)


class JournalEntry(Base):
    """One entry of a running task's deployment journal (:mod:`murano_engine.engine.journal`),
    numbered from 0 in the order it was appended; deleted with the task's result."""

    __tablename__ = "journal_entry"
    task_id: Mapped[str] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"),
                                         primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    entry: Mapped[dict[str, Any]] = mapped_column(JSON)


class EnvironmentTemplate(Timestamped, Base):
    __tablename__ = "environment-template"
    __table_args__ = (UniqueConstraint("tenant_id", "name"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(255))
    tenant_id: Mapped[str] = mapped_column(String(64), index=True)
    version: Mapped[int] = mapped_column(Integer, default=0)
    description: Mapped[dict[str, Any]] = mapped_column(JSON)
    description_text: Mapped[str] = mapped_column(Text, default="")
    is_public: Mapped[bool] = mapped_column(Boolean, default=False)


package_to_category = Table(
    "package_to_category", Base.metadata,
    Column("package_id", ForeignKey("package.id", ondelete="CASCADE"), primary_key=True),
    Column("category_id", ForeignKey("category.id", ondelete="RESTRICT"), primary_key=True,
           index=True))

package_to_tag = Table(
    "package_to_tag", Base.metadata,
    Column("package_id", ForeignKey("package.id", ondelete="CASCADE"), primary_key=True),
    Column("tag_id", ForeignKey("tag.id", ondelete="CASCADE"), primary_key=True, index=True))


class Package(Timestamped, Base):
    __tablename__ = "package"
    __table_args__ = (UniqueConstraint("fully_qualified_name", "version", "owner_id"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    fully_qualified_name: Mapped[str] = mapped_column(String(128), index=True)
    name: Mapped[str] = mapped_column(String(80))
    version: Mapped[str] = mapped_column(String(64), default="0.0.0")
    type: Mapped[str] = mapped_column(String(20))
    author: Mapped[str | None] = mapped_column(String(80), nullable=True)
    supplier: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    description: Mapped[str] = mapped_column(Text, default="")
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    is_public: Mapped[bool] = mapped_column(Boolean, default=False)
    owner_id: Mapped[str] = mapped_column(String(64), index=True)
    archive_hash: Mapped[str] = mapped_column(String(64))
    archive: Mapped[bytes] = deferred(mapped_column(LargeBinary, nullable=False))
    logo: Mapped[bytes | None] = deferred(mapped_column(LargeBinary, nullable=True))
    supplier_logo: Mapped[bytes | None] = deferred(mapped_column(LargeBinary, nullable=True))
    ui_definition: Mapped[str | None] = deferred(mapped_column(Text, nullable=True))


class Category(Timestamped, Base):
    __tablename__ = "category"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(80), unique=True)


class Tag(Timestamped, Base):
    __tablename__ = "tag"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(80), unique=True)


class ClassDefinition(Timestamped, Base):
    __tablename__ = "class_definition"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(128), index=True)
    package_id: Mapped[str] = mapped_column(
        ForeignKey("package.id", ondelete="CASCADE"), index=True)


#: a pooled connection idle this long (seconds) is checked before it is used again
PING_AFTER_IDLE = 5.0


class AmongFew(ColumnElement[bool]):
    """``column IN (query)`` for a query that selects few rows of a big table.

    PostgreSQL gets ``column = ANY(ARRAY(query))``: the query runs first, once, and
    the column's index finds its few rows (a plain ``IN`` is planned as a semi-join
    over a scan of the whole table, about five times slower for a tag of 1,000
    packages). Other databases get the plain ``IN``.
    """

    inherit_cache = True
    type = Boolean()
    _traverse_internals = [("column", InternalTraversal.dp_clauseelement),
                           ("query", InternalTraversal.dp_clauseelement)]

    def __init__(self, column: Any, query: Any) -> None:
        self.column = column
        self.query = query.scalar_subquery()


@compiles(AmongFew)
def _among_few(element: AmongFew, compiler: Any, **kw: Any) -> str:
    return f"{compiler.process(element.column, **kw)} IN {compiler.process(element.query, **kw)}"


@compiles(AmongFew, "postgresql")
def _among_few_postgresql(element: AmongFew, compiler: Any, **kw: Any) -> str:
    return (f"{compiler.process(element.column, **kw)} = "
            f"ANY(ARRAY{compiler.process(element.query, **kw)})")


def make_engine(url: str) -> Engine:
    """An engine; SQLite files get WAL, a busy timeout, foreign keys and explicit BEGINs."""
    if not url.startswith("sqlite"):
        return _pinging(create_engine(url, pool_size=10, max_overflow=20))
    engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        immediate = connection.get_execution_options().get("immediate")
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
    return engine


def _pinging(engine: Engine) -> Engine:
    """``engine`` checking that a connection still works when it leaves the pool after
    sitting idle (the server may have restarted meanwhile; a dead one is replaced).

    A connection handed from request to request under load is not pinged: the round
    trip would cost as much as the request's own query.
    """

    @event.listens_for(engine, "connect")
    def _fresh(dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkin")
    def _idle(dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        since = record.info.get("idle_since")
        if since is not None and time.monotonic() - since < PING_AFTER_IDLE:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # noqa: BLE001 - any failure means a dead connection
            raise DisconnectionError(f"a pooled connection is gone: {exc}") from exc

    return engine


#: execution options that make a read transaction read-only, where the dialect has one
_READ_ONLY = {"postgresql": {"postgresql_readonly": True}}


class Store:
    """Database access: ``read()`` sessions, each on one snapshot of the database, and
    ``write()`` transactions; ``quotas``, the projects' quotas the API checks against what
    the database holds (none unless given).

    On SQLite a write transaction takes the write lock when it starts, so a
    read-then-write never fails on a snapshot another writer moved on.
    """

    def __init__(self, url: str, quotas: QuotaTable | None = None) -> None:
        self.quotas = quotas if quotas is not None else QuotaTable()
        self.engine = make_engine(url)
        # A read sees one moment: all its statements run on one snapshot. Under READ
        # COMMITTED (or autocommit) each statement takes its own, and a read of an
        # environment's row, then of its sessions, could meet a deployment's end half
        # way (a failed deployment still holding its environment). SQLite's deferred
        # BEGIN in WAL mode keeps one snapshot from the first read already.
        reader = self.engine if url.startswith("sqlite") else \
            self.engine.execution_options(isolation_level="REPEATABLE READ",
                                          **_READ_ONLY.get(self.engine.dialect.name, {}))
        self.read = sessionmaker(reader, expire_on_commit=False)
        writer = self.engine.execution_options(immediate=True) \
            if url.startswith("sqlite") else self.engine
        self._write = sessionmaker(writer, expire_on_commit=False)

    def write(self) -> AbstractContextManager[DbSession]:
        return self._write.begin()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` with Alembic."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def downgrade(engine: Engine, revision: str) -> None:
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def take_task(store: Store, task_id: str, worker: str, again: bool = False) -> bool:
    """Note that ``worker`` runs the task (its journal then records for that worker only,
    see :class:`murano_engine.backend.journal_store.DbJournalStore`); False when there is
    nothing to run: its result is stored already, its environment was deleted or (taken
    ``again`` by the worker that took it last time) another worker took it since."""
    with store.write() as session:
        task = session.get(Task, task_id, with_for_update=True)
        if task is None or task.finished is not None:
            return False
        if again and task.worker not in (None, worker):
            return False
        task.worker = worker
        return True
