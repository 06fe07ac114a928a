"""The application catalog: safe uploads, validation, search and updates (engine runs
load its packages through :mod:`murano_engine.backend.package_loader`)."""

from __future__ import annotations

import functools
import hashlib
import io
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import and_, delete, func, insert, or_, select
from sqlalchemy.orm import Session as DbSession

from murano_engine.api import quotas
from murano_engine.api.auth import Context
from murano_engine.api.errors import BadRequest, Conflict, Forbidden, NotFound, TooLarge
from murano_engine.api.storable import NUL, nul_at
from murano_engine.backend import db
from murano_engine.backend.package_loader import PackageMissing, cached_archive, visible_to
from murano_engine.backend.settings import Settings
from murano_engine.dsl import errors as dsl_errors
from murano_engine.dsl.interpreter import Interpreter
from murano_engine.dsl.packages import (
    ZipSource,
    check_not_reserved,
    core_package_names,
    declared_classes,
    generated_ui,
    parse_version,
    read_manifest,
    unsafe_members,
    version_matches,
    zip_read_errors,
)
from murano_engine.dsl.validation import validate_package

SEP = "\x1f"
ORDER_KEYS = {"fqn": db.Package.fully_qualified_name, "name": db.Package.name,
              "created": db.Package.created}


# -- archives --------------------------------------------------------------------

def check_archive(data: bytes, settings: Settings) -> zipfile.ZipFile:
    """Open an uploaded zip, refusing oversized, escaping, linked or bomb-like content."""
    if len(data) > settings.package_size_limit:
        raise TooLarge(f"the package is {len(data)} bytes; the limit is "
                       f"{settings.package_size_limit} bytes")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise BadRequest(f"the package is not a valid zip file: {exc}") from None
    if len(members) > settings.package_max_files:
        raise BadRequest(f"the package has {len(members)} files; at most "
                         f"{settings.package_max_files} are allowed")
    unsafe = unsafe_members(members)
    if unsafe is not None:
        raise BadRequest(unsafe)
    total = sum(member.file_size for member in members)
    if total > settings.package_unpacked_limit:
        raise TooLarge(f"the package unpacks to {total} bytes; the limit is "
                       f"{settings.package_unpacked_limit} bytes")
    for member in members:  # each read whole (as declared, within the limits above)
        try:
            with archive.open(member) as stream:
                while stream.read(1 << 20):
                    pass
        except zip_read_errors() as exc:
            raise BadRequest(f"the package's file {member.filename!r} cannot be read: "
                             f"{exc}") from None
    return archive


def pack_folder(folder: Path) -> bytes:
    """A package folder as zip bytes (``manifest.yaml`` at the root)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


# -- visibility and rights -------------------------------------------------------

def _check_admin(context: Context, what: str) -> None:
    """Murano's admin-only catalog operations: publishing packages, adding and
    deleting categories."""
    if not context.is_admin:
        raise Forbidden(f"{what} needs the admin role")


def visible(context: Context) -> Any:
    """Packages a tenant may see: its own and public ones (all for admins)."""
    return visible_to(context.project_id, context.is_admin)


def get_package(session: DbSession, context: Context, package_id: str,
                *, owned: bool = False) -> db.Package:
    row = session.get(db.Package, package_id)
    if row is None or not (context.is_admin or row.is_public
                           or row.owner_id == context.project_id):
        raise NotFound(f"package {package_id} is not found")
    if owned and not context.is_admin and row.owner_id != context.project_id:
        raise Forbidden(f"package {package_id} belongs to another project")
    return row


# -- upload ----------------------------------------------------------------------

@dataclass
class Upload:
    """What an accepted upload puts into the catalog."""

    manifest: dict
    classes: list[str]
    logo: bytes | None
    supplier_logo: bytes | None
    ui_definition: str | None


def _required(session: DbSession, context: Context, manifest: Mapping) -> tuple[list, list]:
    """Rows of the packages ``manifest`` requires (transitively), and what is missing."""
    found: dict[str, tuple[str, str]] = {}
    missing: list[str] = []
    queue = list((manifest.get("Require") or {}).items())
    while queue:
        name, spec = queue.pop()
        name = str(name)
        if name in core_package_names() or name in found:  # the engine's own meta/
            continue
        rows = session.execute(
            select(db.Package.id, db.Package.version, db.Package.archive_hash)
            .where(db.Package.fully_qualified_name == name, visible(context))).all()
        match = next((r for r in rows if version_matches(parse_version(r.version), spec)), None)
        if match is None:
            missing.append(f"required package {name} (version {spec or '0'}) is not in the "
                           f"catalog")
            continue
        found[name] = (match.id, match.archive_hash)
    return list(found.values()), missing


def inspect_upload(store: db.Store, settings: Settings, interpreter: Interpreter,
                   context: Context, data: bytes,
                   ui_problems: Callable[[bytes, str], list[str]] | None = None) -> Upload:
    """Check an upload like ``murano-engine validate``, with requirements from the catalog
    (and its UI definition with ``ui_problems``, the web pages' check, when given)."""
    archive = check_archive(data, settings)
    settings.packages_cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=settings.packages_cache) as tmp:
        work = Path(tmp)
        candidate = work / "upload.zip"
        candidate.write_bytes(data)
        try:
            manifest = read_manifest(ZipSource(candidate))
        except dsl_errors.LoadErrors as exc:
            raise BadRequest("the package is invalid", problems=[
                _strip(str(p), tmp) for p in exc.problems]) from None
        except dsl_errors.LoadError as exc:
            raise BadRequest("the package is invalid", problems=[_strip(str(exc), tmp)]) from None
        where = nul_at(manifest)
        if where is not None:
            raise BadRequest("the package is invalid", problems=[
                f"manifest.yaml has a NUL character at {where}; no text here can hold one"])
        try:
            check_not_reserved(manifest, "manifest.yaml")
        except dsl_errors.LoadError as exc:
            raise Conflict(exc.message) from None
        with store.read() as session:
            required, missing = _required(session, context, manifest)
        deps = work / "deps"
        deps.mkdir()
        for package_id, archive_hash in required:
            try:
                source = cached_archive(store, settings.packages_cache, package_id,
                                        archive_hash)
            except PackageMissing as exc:
                raise NotFound(str(exc)) from None
            (deps / source.name).symlink_to(source)
        source = ZipSource(candidate)
        ui_name = "UI/" + str(manifest.get("UI") or "ui.yaml")
        ui = _optional(source, ui_name)
        try:
            problems = missing + validate_package(candidate, interpreter, [deps])
            if ui is not None and ui_problems is not None:
                problems += ui_problems(ui, ui_name)
        except Exception as exc:  # noqa: BLE001 - any failure of the checker is a problem
            problems = missing + [f"{type(exc).__name__}: {exc}"]
        if problems:
            raise BadRequest("the package is invalid",
                             problems=[_strip(p, tmp) for p in problems])
        logo = _optional(source, str(manifest.get("Logo") or "logo.png"))
        supplier = manifest.get("Supplier") if isinstance(manifest.get("Supplier"), dict) else {}
        supplier_logo = _optional(source, str(supplier.get("Logo") or "")) if supplier else None
        ui_text = ui.decode("utf-8", "replace") if ui is not None else generated_ui(
            source, manifest)
        if ui_text is not None and NUL in ui_text:
            raise BadRequest("the package is invalid", problems=[
                "its UI definition has a NUL character; no text here can hold one"])
    del archive
    return Upload(manifest=dict(manifest), classes=sorted(declared_classes(manifest)),
                  logo=logo, supplier_logo=supplier_logo, ui_definition=ui_text)


def _strip(problem: str, folder: str) -> str:
    return problem.replace(folder + "/upload.zip!", "").replace(folder + "/", "")


def _optional(source: ZipSource, relpath: str) -> bytes | None:
    if not relpath or not source.exists(relpath):
        return None
    return source.read(relpath)


def create_package(store: db.Store, settings: Settings, interpreter: Interpreter,
                   context: Context, data: bytes, metadata: Mapping[str, Any],
                   ui_problems: Callable[[bytes, str], list[str]] | None = None
                   ) -> dict[str, Any]:
    """Validate an upload (with ``interpreter``'s native classes) and add it to the catalog.

    Packages taking a name of the core library are refused; only admins publish; a
    project past its ``packages`` quota is refused before its upload is looked at.
    """
    is_public = _flag(metadata.get("is_public", False))
    if is_public:
        _check_admin(context, "publishing a package (is_public)")
    with store.read() as session:  # (checked again, counting, as the package is added)
        quotas.check_packages(session, store.quotas, context.project_id, held=False)
    upload = inspect_upload(store, settings, interpreter, context, data, ui_problems)
    manifest = upload.manifest
    fqn = str(manifest["FullName"])
    version = str(parse_version(manifest.get("Version")))
    for what, text, most in (("FullName", fqn, _LONGEST_NAME), ("Version", version, 64),
                             *(("class", name, _LONGEST_NAME) for name in upload.classes)):
        if len(text) > most:
            raise BadRequest(f"manifest.yaml: {what} {text[:40]!r}... is longer than "
                             f"{most} characters, which the catalog keeps")
    with store.write() as session:
        clash = select(db.Package.id).where(
            db.Package.fully_qualified_name == fqn, db.Package.version == version,
            or_(db.Package.owner_id == context.project_id,
                and_(db.Package.is_public.is_(True), is_public)))
        if session.scalar(clash) is not None:
            raise Conflict(f"package {fqn} version {version} is already in the catalog")
        quotas.check_packages(session, store.quotas, context.project_id)
        supplier = manifest.get("Supplier")
        row = db.Package(
            fully_qualified_name=fqn, version=version,
            name=str(metadata.get("name") or manifest.get("Name") or fqn)[:80],
            type=str(manifest.get("Type", "Application")),
            author=str(manifest["Author"])[:80] if manifest.get("Author") else None,
            supplier=supplier if isinstance(supplier, dict) else None,
            description=str(metadata.get("description") or manifest.get("Description") or ""),
            enabled=_flag(metadata.get("enabled", True)), is_public=is_public,
            owner_id=context.project_id, archive=data,
            archive_hash=hashlib.sha256(data).hexdigest(), logo=upload.logo,
            supplier_logo=upload.supplier_logo, ui_definition=upload.ui_definition)
        session.add(row)
        session.flush()
        tags = [str(t) for t in (manifest.get("Tags") or [])] + _names(metadata.get("tags"))
        _set_tags(session, row.id, tags)
        _set_categories(session, row.id, _names(metadata.get("categories")))
        if upload.classes:  # (an empty list would insert one row of nulls)
            session.execute(insert(db.ClassDefinition), [
                {"id": db.new_id(), "name": name, "package_id": row.id}
                for name in upload.classes])
        package_id = row.id
    return show_package(store, context, package_id)


#: the longest package and class name the catalog's database keeps
_LONGEST_NAME = 128


def _flag(value: bool | str) -> bool:
    """A value valid against the ``Flag`` schema as a bool."""
    return value if isinstance(value, bool) else value.lower() == "true"


def _names(value: list[str] | str | None) -> list[str]:
    """A value valid against the ``Names`` schema as a list."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else value


def _set_tags(session: DbSession, package_id: str, names: Iterable[str]) -> None:
    session.execute(delete(db.package_to_tag).where(db.package_to_tag.c.package_id == package_id))
    wanted = sorted({n.strip()[:80] for n in names if n.strip()})
    if not wanted:
        return
    existing = dict(session.execute(select(db.Tag.name, db.Tag.id)
                                    .where(db.Tag.name.in_(wanted))).all())
    for name in wanted:
        if name not in existing:
            tag = db.Tag(name=name)
            session.add(tag)
            session.flush()
            existing[name] = tag.id
    session.execute(insert(db.package_to_tag), [
        {"package_id": package_id, "tag_id": existing[n]} for n in wanted])


def _set_categories(session: DbSession, package_id: str, names: Iterable[str]) -> None:
    wanted = sorted(set(names))
    existing = dict(session.execute(select(db.Category.name, db.Category.id)
                                    .where(db.Category.name.in_(wanted))).all())
    unknown = [n for n in wanted if n not in existing]
    if unknown:
        raise BadRequest(f"unknown categories: {', '.join(unknown)}")
    session.execute(delete(db.package_to_category)
                    .where(db.package_to_category.c.package_id == package_id))
    if wanted:
        session.execute(insert(db.package_to_category), [
            {"package_id": package_id, "category_id": existing[n]} for n in wanted])


# -- reading ---------------------------------------------------------------------

def _aggregate(column: Any, table: Any, join: Any) -> Any:
    return (select(func.aggregate_strings(column, SEP)).select_from(table).where(join)
            .correlate(db.Package).scalar_subquery())


TAGS = _aggregate(db.Tag.name, db.Tag.__table__.join(db.package_to_tag),
                  db.package_to_tag.c.package_id == db.Package.id)
CATEGORIES = _aggregate(db.Category.name, db.Category.__table__.join(db.package_to_category),
                        db.package_to_category.c.package_id == db.Package.id)
CLASSES = _aggregate(db.ClassDefinition.name, db.ClassDefinition.__table__,
                     db.ClassDefinition.package_id == db.Package.id)
COLUMNS = (db.Package.id, db.Package.name, db.Package.fully_qualified_name, db.Package.version,
           db.Package.type, db.Package.author, db.Package.supplier, db.Package.description,
           db.Package.enabled, db.Package.is_public, db.Package.owner_id, db.Package.created,
           db.Package.updated, TAGS.label("tags"), CATEGORIES.label("categories"),
           CLASSES.label("class_definitions"))


def _split(text: str | None) -> list[str]:
    return sorted(text.split(SEP)) if text else []


def package_json(row: Any) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "fully_qualified_name": row.fully_qualified_name,
            "version": row.version, "type": row.type, "author": row.author,
            "supplier": row.supplier or {}, "description": row.description,
            "enabled": row.enabled, "is_public": row.is_public, "owner_id": row.owner_id,
            "created": row.created.isoformat(), "updated": row.updated.isoformat(),
            "tags": _split(row.tags), "categories": _split(row.categories),
            "class_definitions": _split(row.class_definitions)}


def show_package(store: db.Store, context: Context, package_id: str) -> dict[str, Any]:
    with store.read() as session:
        row = session.execute(select(*COLUMNS).where(db.Package.id == package_id,
                                                     visible(context))).first()
    if row is None:
        raise NotFound(f"package {package_id} is not found")
    return package_json(row)


def _values(params: Mapping[str, list[str]], key: str) -> list[str]:
    out: list[str] = []
    for value in params.get(key, []):
        if value.startswith("in:"):
            out.extend(v for v in value[3:].split(",") if v)
        elif value:
            out.append(value)
    return out


def _bool_param(params: Mapping[str, list[str]], key: str) -> bool:
    values = params.get(key)
    if not values:
        return False
    text = values[-1].lower()
    if text not in ("true", "false", "1", "0", "yes", "no"):
        raise BadRequest(f"{key} must be true or false")
    return text in ("true", "1", "yes")


#: the query parameters that filter the listing (the rest order and page it)
_FILTERS = ("id", "fqn", "name", "version", "type", "class_name", "category", "tag", "search")


def list_packages(store: db.Store, settings: Settings, context: Context,
                  params: Mapping[str, list[str]]) -> dict[str, Any]:
    """Search the catalog with Murano's filters, one page at a time."""
    limit = _limit(params, settings)
    order_key = (params.get("order_by") or ["fqn"])[-1]
    if order_key not in ORDER_KEYS:
        raise BadRequest(f"order_by must be one of {', '.join(ORDER_KEYS)}")
    sort_dir = (params.get("sort_dir") or ["asc"])[-1]
    if sort_dir not in ("asc", "desc"):
        raise BadRequest("sort_dir must be asc or desc")
    shape = (context.project_id, context.is_admin, _bool_param(params, "include_disabled"),
             _bool_param(params, "owned"),
             tuple((key, tuple(params[key])) for key in _FILTERS if params.get(key)))
    order = ORDER_KEYS[order_key]
    marker = (params.get("marker") or [None])[-1]
    with store.read() as session:
        if marker:
            anchor = session.execute(select(order, db.Package.id)
                                     .where(db.Package.id == marker)).first()
            if anchor is None:
                raise BadRequest(f"marker {marker} is not a package")
            after = (order > anchor[0]) | ((order == anchor[0]) & (db.Package.id > anchor[1]))
            before = (order < anchor[0]) | ((order == anchor[0]) & (db.Package.id < anchor[1]))
            query = _ordered(_filtered(*shape).where(after if sort_dir == "asc" else before),
                             order_key, sort_dir, limit)
        else:
            query = _first_page(shape, order_key, sort_dir, limit)
        # columns, not objects: the connection runs it without the ORM's layer
        rows = session.connection().execute(query).all()
    body: dict[str, Any] = {"packages": [package_json(r) for r in rows[:limit]]}
    if len(rows) > limit:
        body["next_marker"] = rows[limit - 1].id
    return body


# Statements are built once per shape of request (who asks, which filters): building
# one costs more than running it. The statements hold the values as bound parameters
# and are never changed, so sharing them between requests and threads is safe.
@functools.lru_cache(maxsize=256)
def _filtered(project_id: str, is_admin: bool, include_disabled: bool, owned: bool,
              filters: tuple[tuple[str, tuple[str, ...]], ...]) -> Any:
    """The listing's statement for one caller and set of filters (unordered)."""
    params = dict(filters)
    query = select(*COLUMNS).where(
        db.Package.id.is_not(None) if is_admin else
        or_(db.Package.owner_id == project_id, db.Package.is_public.is_(True)))
    if not include_disabled:
        query = query.where(db.Package.enabled.is_(True))
    if owned:
        query = query.where(db.Package.owner_id == project_id)
    for key, column in (("id", db.Package.id), ("fqn", db.Package.fully_qualified_name),
                        ("name", db.Package.name), ("version", db.Package.version)):
        wanted = _values(params, key)
        if wanted:
            query = query.where(column.in_(wanted))
    types = [t.capitalize() for t in _values(params, "type")]
    if types:
        query = query.where(db.Package.type.in_(types))
    for name in _values(params, "class_name"):
        query = query.where(db.AmongFew(db.Package.id, select(
            db.ClassDefinition.package_id).where(db.ClassDefinition.name == name)))
    for name in _values(params, "category"):
        query = query.where(db.AmongFew(db.Package.id, select(
            db.package_to_category.c.package_id).join(db.Category)
            .where(db.Category.name == name)))
    for name in _values(params, "tag"):
        query = query.where(db.AmongFew(db.Package.id, select(
            db.package_to_tag.c.package_id).join(db.Tag).where(db.Tag.name == name)))
    words = " ".join(params.get("search", ())).split()
    if words:
        matches = []
        for word in words:
            like = f"%{word.lower()}%"
            matches += [func.lower(db.Package.name).like(like),
                        func.lower(db.Package.fully_qualified_name).like(like),
                        func.lower(db.Package.description).like(like),
                        func.lower(db.Package.author).like(like),
                        db.Package.id.in_(select(db.package_to_tag.c.package_id)
                                          .join(db.Tag)
                                          .where(func.lower(db.Tag.name).like(like)))]
        query = query.where(or_(*matches))
    return query


@functools.lru_cache(maxsize=256)
def _first_page(shape: tuple, order_key: str, sort_dir: str, limit: int) -> Any:
    return _ordered(_filtered(*shape), order_key, sort_dir, limit)


def _ordered(query: Any, order_key: str, sort_dir: str, limit: int) -> Any:
    """``query`` in the listing's order, one page (and one row more, to know of a next)."""
    order = ORDER_KEYS[order_key]
    keys = (order.asc(), db.Package.id.asc()) if sort_dir == "asc" else (
        order.desc(), db.Package.id.desc())
    return query.order_by(*keys).limit(limit + 1)


def _limit(params: Mapping[str, list[str]], settings: Settings) -> int:
    text = (params.get("limit") or [str(settings.limit_param_default)])[-1]
    try:
        limit = int(text)
    except ValueError:
        raise BadRequest("limit must be an integer") from None
    if limit < 1:
        raise BadRequest("limit must be positive")
    return min(limit, settings.api_limit_max)


def package_blob(store: db.Store, context: Context, package_id: str,
                 column: str) -> bytes | str:
    with store.read() as session:
        row = get_package(session, context, package_id)
        data = getattr(row, column)
    if data is None:
        raise NotFound(f"package {package_id} has no {column.replace('_', ' ')}")
    return data


# -- changes ---------------------------------------------------------------------

def update_package(store: db.Store, context: Context, package_id: str,
                   patch: list[dict[str, Any]]) -> dict[str, Any]:
    """Apply Murano's JSON-patch subset (valid against the ``PackagePatch`` schema)."""
    with store.write() as session:
        row = get_package(session, context, package_id, owned=True)
        publishes = any(c["path"].strip("/") == "is_public" and _flag(c.get("value", False))
                        for c in patch)
        if publishes and not row.is_public:
            _check_admin(context, "publishing a package (is_public)")
        tags = set(_split(session.scalar(select(TAGS).where(db.Package.id == package_id))))
        categories = set(_split(session.scalar(select(CATEGORIES)
                                               .where(db.Package.id == package_id))))
        for change in patch:
            op, key, value = change["op"], change["path"].strip("/"), change.get("value")
            if key in ("tags", "categories"):
                current = tags if key == "tags" else categories
                names = set(_names(value))
                if op == "replace":
                    current.clear()
                if op == "remove":
                    current.difference_update(names)
                else:
                    current.update(names)
            elif key in ("is_public", "enabled"):
                setattr(row, key, _flag(value))
            else:
                setattr(row, key, value[:80] if key == "name" else value)
        if row.is_public and session.scalar(select(db.Package.id).where(
                db.Package.fully_qualified_name == row.fully_qualified_name,
                db.Package.version == row.version, db.Package.is_public.is_(True),
                db.Package.id != row.id)) is not None:
            raise Conflict(f"a public package {row.fully_qualified_name} {row.version} exists")
        _set_tags(session, package_id, tags)
        _set_categories(session, package_id, categories)
        row.updated = db.now()
    return show_package(store, context, package_id)


def delete_package(store: db.Store, context: Context, package_id: str) -> None:
    with store.write() as session:
        row = get_package(session, context, package_id, owned=True)
        session.delete(row)


# -- categories ------------------------------------------------------------------

def category_json(row: Any, count: int) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "package_count": count,
            "created": row.created.isoformat(), "updated": row.updated.isoformat()}


def _count_query(context: Context) -> Any:
    """A category's packages the caller sees (another project's private ones uncounted)."""
    return (select(func.count()).select_from(db.package_to_category)
            .join(db.Package, db.Package.id == db.package_to_category.c.package_id)
            .where(db.package_to_category.c.category_id == db.Category.id, visible(context))
            .correlate(db.Category).scalar_subquery())


def list_categories(store: db.Store, settings: Settings, context: Context,
                    params: Mapping[str, list[str]]) -> dict[str, Any]:
    limit = _limit(params, settings) if params.get("limit") else None
    key = (params.get("sort_keys") or ["name"])[-1]
    if key not in ("name", "created", "id"):
        raise BadRequest("sort_keys must be name, created or id")
    column = getattr(db.Category, key)
    descending = (params.get("sort_dir") or ["asc"])[-1] == "desc"
    query = select(db.Category, _count_query(context)).order_by(
        column.desc() if descending else column.asc())
    marker = (params.get("marker") or [None])[-1]
    with store.read() as session:
        if marker:
            anchor = session.get(db.Category, marker)
            if anchor is None:
                raise BadRequest(f"marker {marker} is not a category")
            value = getattr(anchor, key)
            query = query.where(column < value if descending else column > value)
        if limit:
            query = query.limit(limit)
        rows = session.execute(query).all()
    return {"categories": [category_json(c, n) for c, n in rows]}


def show_category(store: db.Store, context: Context, category_id: str) -> dict[str, Any]:
    with store.read() as session:
        row = session.get(db.Category, category_id)
        if row is None:
            raise NotFound(f"category {category_id} is not found")
        packages = session.execute(
            select(db.Package.id, db.Package.name, db.Package.fully_qualified_name)
            .join(db.package_to_category)
            .where(db.package_to_category.c.category_id == category_id, visible(context))
            .order_by(db.Package.fully_qualified_name)).all()
    body = category_json(row, len(packages))
    body["packages"] = [{"id": p.id, "name": p.name, "fully_qualified_name":
                         p.fully_qualified_name} for p in packages]
    return body


def create_category(store: db.Store, context: Context,
                    body: Mapping[str, Any]) -> dict[str, Any]:
    """A new category (admins only) from a body valid against the ``Category`` schema."""
    _check_admin(context, "creating a category")
    name = body["name"]
    with store.write() as session:
        if session.scalar(select(db.Category.id).where(db.Category.name == name)):
            raise Conflict(f"category {name!r} already exists")
        row = db.Category(name=name)
        session.add(row)
        session.flush()
        return category_json(row, 0)


def delete_category(store: db.Store, context: Context, category_id: str) -> None:
    _check_admin(context, "deleting a category")
    with store.write() as session:
        row = session.get(db.Category, category_id)
        if row is None:
            raise NotFound(f"category {category_id} is not found")
        used = session.scalar(select(func.count()).select_from(db.package_to_category)
                              .where(db.package_to_category.c.category_id == category_id))
        if used:
            raise Forbidden(f"category {row.name!r} is used by {used} package(s)")
        session.delete(row)
