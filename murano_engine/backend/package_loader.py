"""Packages from the catalog's database, for engine runs: :class:`CatalogLoader`
fetches a project's packages as the interpreter asks for them, through a cache
folder of their archives."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy import or_, select

from murano_engine.backend import db
from murano_engine.dsl.interpreter import Interpreter
from murano_engine.dsl.packages import Package, PackageLoader, core_package_names


class PackageMissing(LookupError):
    """A package the catalog listed is gone from the database."""


def visible_to(project_id: str, is_admin: bool = False) -> Any:
    """The packages a project may see (a query condition): its own and public ones
    (all for admins)."""
    if is_admin:
        return db.Package.id.is_not(None)
    return or_(db.Package.owner_id == project_id, db.Package.is_public.is_(True))


def cached_archive(store: db.Store, cache_dir: Path, package_id: str,
                   archive_hash: str) -> Path:
    """The package's zip in the cache folder, written from the database when missing."""
    path = cache_dir / f"{package_id}-{archive_hash[:16]}.zip"
    if not path.is_file():
        with store.read() as session:
            data = session.scalar(select(db.Package.archive).where(db.Package.id == package_id))
        if data is None:
            raise PackageMissing(f"package {package_id} is not in the catalog")
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".part")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    return path


class CatalogLoader(PackageLoader):
    """A :class:`PackageLoader` that fetches packages from the catalog as they are asked for.

    Only packages the project may see are used; its own come before public
    ones of the same name and version. Packages named like the core library
    are never taken from the catalog: the engine's own ``meta/`` has them.
    Archives are cached in ``cache_dir``.
    """

    def __init__(self, store: db.Store, cache_dir: Path, project_id: str,
                 interpreter: Interpreter) -> None:
        self._store = store
        self._cache_dir = cache_dir
        self._project_id = project_id
        self._asked: set[tuple[str, str]] = set()
        super().__init__((), interpreter)

    def _pull(self, kind: str, name: str) -> None:
        if (kind, name) in self._asked:
            return
        self._asked.add((kind, name))
        query = select(db.Package.id, db.Package.archive_hash).where(
            visible_to(self._project_id),
            db.Package.fully_qualified_name.not_in(sorted(core_package_names())))
        if kind == "fqn":
            query = query.where(db.Package.fully_qualified_name == name)
        else:
            query = query.join(db.ClassDefinition).where(db.ClassDefinition.name == name)
        query = query.order_by((db.Package.owner_id == self._project_id).desc())
        with self._store.read() as session:
            rows = session.execute(query).all()
        for package_id, archive_hash in rows:
            self.add(cached_archive(self._store, self._cache_dir, package_id, archive_hash))

    def find_package(self, name: str, spec: Any = "*",
                     required_by: Package | None = None) -> Package:
        self._pull("fqn", name)
        return super().find_package(name, spec, required_by)

    def package_with_class(self, class_name: str) -> Package | None:
        found = super().package_with_class(class_name)
        if found is None:
            self._pull("class", class_name)
            found = super().package_with_class(class_name)
        return found
