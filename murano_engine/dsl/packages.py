"""Packages: manifests, folder and zip sources, versions and class lookup.

A package is a folder (or a zip of one) with ``manifest.yaml``, ``Classes/``,
``Resources/`` and ``UI/``; a HOT package (``Format: Heat.HOT/1.0``) has
``template.yaml`` instead of classes, and one generated class
(:mod:`murano_engine.dsl.hot`). The :class:`PackageLoader` indexes every
package found in its search folders; classes are read lazily, each class file
parsed once.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat
import sys
from collections.abc import Iterable

from murano_engine.dsl import document_cache, errors, hot
from murano_engine.dsl.classes import MuranoClass, NamespaceResolver, build_class
from murano_engine.dsl.errors import LoadError, Position
from murano_engine.dsl.expressions import try_parse
from murano_engine.dsl.files import read_bytes
from murano_engine.dsl.natives import attach_native
from murano_engine.dsl.yaml_loader import (
    SourceMap,
    field_position,
    load_documents,
    load_plain,
    position_of,
)

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    import semantic_version

    from murano_engine.dsl.interpreter import Interpreter

    #: a file system path as callers hold it (paths are kept as strings: pathlib's
    #: import and its objects cost start-up and every class read)
    PathLike = str | os.PathLike[str]

CORE_PACKAGE = "io.murano"


def _core_library_dir() -> str:
    """``meta/`` beside the source tree, or where ``pip install .`` put it."""
    here = os.path.realpath(__file__)
    source_tree = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(here))), "meta")
    if os.path.isdir(source_tree):
        return source_tree
    return os.path.join(sys.prefix, "share", "murano-engine", "meta")


def _join(folder: str, relpath: str) -> str:
    return os.path.normpath(os.path.join(folder, relpath))


def _within(path: str, folder: str) -> bool:
    """Whether resolved ``path`` is resolved ``folder`` or inside it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


META_DIR = _core_library_dir()
FORMATS = {(1, 0), (1, 1), (1, 2), (1, 3), (1, 4)}
#: the MuranoPL format a HOT package's generated class is written in
HOT_CLASS_FORMAT = (1, 4)
_FULL_NAME = re.compile(r"^\w+(\.\w+)*$")
_TYPES = ("Application", "Library")
#: the prefix of plugin classes, which may be found without it
_EXTENSIONS = "io.murano.extensions."


# -- sources -------------------------------------------------------------------

class PackageSource:
    """Read access to a package's files, wherever they are."""

    def __init__(self, location: PathLike) -> None:
        self.location = os.path.normpath(os.fspath(location))

    def read(self, relpath: str) -> bytes:
        raise NotImplementedError

    def exists(self, relpath: str) -> bool:
        raise NotImplementedError

    def names(self) -> list[str]:
        raise NotImplementedError

    def display(self, relpath: str) -> str:
        return _join(self.location, relpath)

    def resolved_location(self) -> str:
        """The location with every symlink resolved."""
        return os.path.realpath(self.location)


class FolderSource(PackageSource):
    def __init__(self, location: PathLike, resolve: Resolver | None = None) -> None:
        super().__init__(location)
        self._resolve = resolve or os.path.realpath
        self._folders: dict[str, bool] = {}

    @functools.cached_property
    def _resolved(self) -> str:
        return self._resolve(self.location)

    def read(self, relpath: str) -> bytes:
        path = _join(self.location, _safe_relpath(relpath, self.location))
        folder = os.path.dirname(path)
        inside = self._folders.get(folder)
        if inside is None:
            inside = self._folders[folder] = self._folder_inside(folder)
        if inside:
            try:
                return read_bytes(path, follow_symlinks=False)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
            inside = _within(os.path.realpath(path), self._resolved)  # a symlink
        if not inside:
            raise LoadError(f"path {relpath!r} leaves the package", file=self.location)
        return read_bytes(path)

    def _folder_inside(self, folder: str) -> bool:
        """Whether ``folder`` (the location or below it, with no ``..``) resolves inside:
        with no symlink among its components below the location it does; with one, it
        is resolved whole."""
        current = self.location
        below = folder[len(current) + 1:] if folder != current else ""
        for part in below.split(os.sep) if below else ():
            current = os.path.join(current, part)
            if os.path.islink(current):
                return _within(os.path.realpath(folder), self._resolved)
        return True

    def resolved_location(self) -> str:
        return self._resolved

    def exists(self, relpath: str) -> bool:
        return os.path.isfile(_join(self.location, relpath))

    def names(self) -> list[str]:
        found = []
        for folder, _, files in os.walk(self.location):
            for name in files:
                path = os.path.join(folder, name)
                if os.path.isfile(path):
                    found.append(os.path.relpath(path, self.location).replace(os.sep, "/"))
        return sorted(found)


#: how many times its compressed size a zip member over a MiB may expand to (more is
#: a zip bomb: 3 MB unpacking to 3 GB)
MAX_RATIO = 200


def unsafe_members(members: list[Any]) -> str | None:
    """Why zip members (``zipfile.ZipInfo``) may not be a package: a path that leaves it,
    a symbolic link, a name held twice (which copy is read would depend on the reader)
    or a member expanding more than MAX_RATIO times; None when they may."""
    seen: set[str] = set()
    for member in members:
        name = member.filename
        if member.file_size > 1024 * 1024 and \
                member.file_size > MAX_RATIO * max(member.compress_size, 1):
            return (f"{name!r} expands {member.file_size // max(member.compress_size, 1)} "
                    f"times; the package looks like a zip bomb")
        parts = name.replace("\\", "/").split("/")
        if name.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
            return f"the package has a path outside the package: {name!r}"
        if stat.S_ISLNK(member.external_attr >> 16):
            return f"the package has a symbolic link: {name!r}"
        if name in seen:
            return f"the package holds {name!r} twice"
        seen.add(name)
    return None


def zip_read_errors() -> tuple[type[BaseException], ...]:
    """What reading a zip member's damaged data raises: a bad CRC or deflate data, a
    truncated or encrypted member, an unknown method (for ``except``: evaluated only
    when one is raised)."""
    import zipfile  # here: folders need none of it
    import zlib
    return (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError,
            NotImplementedError)


class ZipSource(PackageSource):
    def __init__(self, location: PathLike) -> None:
        import zipfile  # here: folders need none of it
        super().__init__(location)
        if not os.path.exists(self.location):
            raise LoadError("no such package folder or zip", file=self.location)
        try:
            self._zip = zipfile.ZipFile(self.location)
            members = self._zip.infolist()
        except (zipfile.BadZipFile, OSError) as exc:
            raise LoadError(f"broken package zip: {exc}", file=self.location) from None
        unsafe = unsafe_members(members)
        if unsafe is not None:
            raise LoadError(f"broken package zip: {unsafe}", file=self.location)
        self._names = {member.filename for member in members}
        self._prefix = _zip_root(self._names)

    def read(self, relpath: str) -> bytes:
        """The member's bytes: FileNotFoundError when it is missing, OSError naming it
        when its data is damaged (a bad CRC or deflate data, truncated, encrypted)."""
        _safe_relpath(relpath, self.location)
        try:
            return self._zip.read(self._prefix + relpath)
        except KeyError as exc:
            raise FileNotFoundError(f"{self.display(relpath)}: {exc}") from None
        except zip_read_errors() as exc:
            raise OSError(f"{self.display(relpath)}: damaged in the zip: {exc}") from None

    def exists(self, relpath: str) -> bool:
        return self._prefix + relpath in self._names

    def names(self) -> list[str]:
        n = len(self._prefix)
        return sorted(name[n:] for name in self._names
                      if name.startswith(self._prefix) and not name.endswith("/"))

    def display(self, relpath: str) -> str:
        return f"{self.location}!{relpath}"


def _zip_root(names: set[str]) -> str:
    if "manifest.yaml" in names:
        return ""
    roots = {n.split("/", 1)[0] + "/" for n in names if "/" in n}
    for root in roots:
        if root + "manifest.yaml" in names:
            return root
    return ""


def _safe_relpath(relpath: str, location: str) -> str:
    if os.path.isabs(relpath) or ".." in relpath.replace(os.sep, "/").split("/"):
        raise LoadError(f"path {relpath!r} leaves the package", file=location)
    return relpath


def open_source(path: PathLike, resolve: Resolver | None = None) -> PackageSource:
    """The package at ``path``: a folder (its symlinks resolved by ``resolve``, if
    given) or a zip."""
    if os.path.isdir(path):
        return FolderSource(path, resolve)
    return ZipSource(path)


class Resolver:
    """``os.path.realpath`` of folders, each parent folder resolved once: the packages of
    one search folder share all but their last component. Made per loader, so a
    symlink changed later is seen by the next loader."""

    def __init__(self) -> None:
        self._known: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        path = os.path.abspath(path)
        known = self._known.get(path)
        if known is None:
            parent, name = os.path.split(path)
            if not name or os.path.islink(path):
                known = os.path.realpath(path)
            else:
                known = os.path.join(self(parent), name)
            self._known[path] = known
        return known


# -- versions --------------------------------------------------------------------

def parse_version(text: Any) -> semantic_version.Version:
    import semantic_version  # here: a plain version's key needs none of it
    return semantic_version.Version.coerce(str(text if text is not None else "0.0.0"))


VersionKey = tuple[int, int, int]


def version_key(text: Any) -> VersionKey:
    """(major, minor, patch) of a manifest's Version, as :func:`parse_version` reads it;
    plain numbers ("2", "1.0", "1.2.3", the usual forms) are read without
    semantic_version, whose import is a tenth of loading a package set. Raises
    ValueError as :func:`parse_version` does."""
    text = str(text if text is not None else "0.0.0")
    key = _plain_key(text)
    if key is None:
        version = parse_version(text)
        key = (version.major, version.minor, version.patch)
    return key


def _plain_key(text: str) -> VersionKey | None:
    """``text`` as (major, minor, patch) when it is one to three dot-separated decimal
    numbers (as semantic_version coerces them: missing parts are 0); None otherwise."""
    parts = text.split(".")
    if len(parts) > 3 or not all(part.isdigit() and part.isascii() for part in parts):
        return None
    numbers = [int(part) for part in parts]
    numbers += [0] * (3 - len(numbers))
    return numbers[0], numbers[1], numbers[2]


def version_matches(version: semantic_version.Version, spec: Any) -> bool:
    """Murano's version specs: ``''`` means 0.x, ``1`` means 1.x, ``*`` means any."""
    return key_matches((version.major, version.minor, version.patch), spec)


#: a version spec clause's operators, longest first (``>=`` before ``>``)
_OPERATORS = ("==", ">=", "<=", "!=", ">", "<", "=")


def key_matches(key: VersionKey, spec: Any) -> bool:
    """:func:`version_matches` for a version's (major, minor, patch)."""
    text = "".join(str(spec if spec is not None else "").split())
    if text in ("*", "any"):
        return True
    if not text:
        text = "0"
    return all(_clause_matches(key, clause) for clause in text.split(","))


def _clause_matches(key: VersionKey, clause: str) -> bool:
    op = next((o for o in _OPERATORS if clause.startswith(o)), "")
    text = clause[len(op):]
    parts = text.split(".")
    try:
        numbers = [int(p) for p in parts[:3]] if len(parts) < 3 else None
        target = _plain_key(text)
        if target is None:  # checked (and read) as semantic_version reads it
            full = parse_version(text)
            target = (full.major, full.minor, full.patch)
    except ValueError:
        raise LoadError(f"invalid version spec {clause!r}") from None
    if numbers is None:
        return {"": key == target, "=": key == target, "==": key == target,
                "!=": key != target, ">": key > target, ">=": key >= target,
                "<": key < target, "<=": key <= target}[op]
    depth = len(numbers)
    head = tuple(key[:depth])
    prefix = tuple(numbers)
    return {"": head == prefix, "=": head == prefix, "==": head == prefix,
            "!=": head != prefix, ">": head > prefix, ">=": head >= prefix,
            "<": head < prefix, "<=": head <= prefix}[op]


# -- packages --------------------------------------------------------------------

class Package:
    """One package: its manifest and its lazily loaded classes."""

    def __init__(self, source: PackageSource, manifest: dict, loader: PackageLoader) -> None:
        self.source = source
        self.loader = loader
        self.manifest = manifest
        #: loaded from the engine's own ``meta/`` folder: the core library, which alone
        #: may use privileged functions such as ``config()``
        self.trusted = _within(source.resolved_location(), _resolved_meta_dir())
        manifest_file = source.display("manifest.yaml")
        self.format = _parse_format(manifest.get("Format"), manifest_file)
        self.name = str(manifest["FullName"])
        self.display_name = manifest.get("Name") or self.name
        self.type = manifest.get("Type", "Application")
        self._version_text = manifest.get("Version")
        plain = _plain_key(str(self._version_text if self._version_text is not None
                               else "0.0.0"))
        #: a plain version ("1.2") orders and compares by its key alone
        self._plain_version = plain is not None
        #: (major, minor, patch): what requirements are matched against
        self.version_key = plain or version_key(self._version_text)
        self.description = manifest.get("Description")
        self.author = manifest.get("Author")
        self.tags = manifest.get("Tags") or []
        self.ui = manifest.get("UI", "ui.yaml")
        self.logo = manifest.get("Logo", "logo.png")
        self.meta = manifest.get("Meta")
        self.class_files: dict[str, str] = {str(k): str(v)
                                            for k, v in (manifest.get("Classes") or {}).items()}
        self.requirements: dict[str, Any] = {str(k): v
                                             for k, v in (manifest.get("Require") or {}).items()}
        if self.name != CORE_PACKAGE:
            self.requirements.setdefault(CORE_PACKAGE, "0")
        self.global_fallback = self.format == (1, 0) and not manifest.get("Require")
        self.root_context: Any = None
        self._classes: dict[str, MuranoClass] = {}
        self._loading: set[str] = set()
        self._documents: dict[str, list[Any]] = {}

    @functools.cached_property
    def version(self) -> semantic_version.Version:
        return parse_version(self._version_text)

    @functools.cached_property
    def version_string(self) -> str:
        """``str(version)``: for a plain version, written from its key."""
        if self._plain_version:
            return ".".join(map(str, self.version_key))
        return str(self.version)

    def same_version(self, other: Package) -> bool:
        if self.version_key != other.version_key:
            return False
        return (self._plain_version and other._plain_version) or self.version == other.version

    def __repr__(self) -> str:
        return f"<package {self.name}/{self.version_string}>"

    @property
    def legacy(self) -> bool:
        """Formats 1.0 and 1.1 evaluate with yaql's legacy context."""
        return self.format <= (1, 1)

    def read_resource(self, name: str) -> bytes:
        return self.source.read(f"Resources/{name}")

    # -- classes -----------------------------------------------------------
    def find_class(self, name: str, searched: list[Package] | None = None) -> MuranoClass:
        """A class visible from this package: its own, then its requirements'; a plugin's
        ``io.murano.extensions.NAME`` may be found as ``NAME`` (an older naming scheme)."""
        seen = searched if searched is not None else []
        if self not in seen:
            seen.append(self)
        holder = self._holder_of(name)
        if holder is not None:
            return holder.load_class(name)
        if name.startswith(_EXTENSIONS):
            short = name[len(_EXTENSIONS):]
            holder = self._holder_of(short)
            if holder is not None:
                return holder.load_class(short)
        shown = [f"{p.name}/{p.version_string}" for p in seen] + [str(r) for r in self.requirements]
        raise errors.NoClassFound(f"class {name} is not found in {', '.join(shown)}")

    def _holder_of(self, name: str) -> Package | None:
        """The package of the class ``name`` as seen from this one (None: none holds it)."""
        if name in self.class_files:
            return self
        for requirement, spec in self.requirements.items():
            package = self.loader.find_package(requirement, spec, required_by=self)
            if name in package.class_files:
                return package
        if self.global_fallback:
            return self.loader.package_with_class(name)
        return None

    def load_class(self, name: str) -> MuranoClass:
        cls = self._classes.get(name)
        if cls is not None:
            return cls
        if name in self._loading:
            raise LoadError(f"inheritance cycle through class {name}",
                            file=self.source.display(f"Classes/{self.class_files[name]}"))
        self._loading.add(name)
        try:
            doc, resolver = self._class_document(name)
            try:
                cls = build_class(name, doc, self, resolver, self._resolve_parent)
            except errors.LoadErrors as exc:
                raise errors.LoadErrors([self._placed(p, doc, name) for p in exc.problems]) \
                    from None
            except LoadError as exc:
                placed = self._placed(exc, doc, name)
                if placed is exc:
                    raise
                raise placed from None
            attach_native(cls, self.loader.interpreter.natives)
        finally:
            self._loading.discard(name)
        self._classes[name] = cls
        return cls

    def _resolve_parent(self, name: str, position: Position | None) -> MuranoClass:
        try:
            return self.find_class(name)
        except errors.NoClassFound as exc:
            raise LoadError(str(exc), position) from None

    def _placed(self, error: LoadError, doc: dict, name: str) -> LoadError:
        """``error`` at its field's line when it names only its document's."""
        if not error.field or error.position != position_of(doc):
            return error
        return self._at_field(error, "Classes/" + self.class_files[name])

    def _at_field(self, error: LoadError, relpath: str) -> LoadError:
        """``error`` at the line of its field, found in the file read again."""
        display = self.source.display(relpath)
        try:
            text = self.source.read(relpath)
        except OSError:
            return error
        found = field_position(text, display, error.field, error.position)
        return LoadError(error.message, found or error.position, file=display)

    def _class_document(self, name: str) -> tuple[dict, NamespaceResolver]:
        relpath = "Classes/" + self.class_files[name]
        documents = self._parse(relpath)
        unnamed: list[tuple[dict, NamespaceResolver]] = []
        for doc, resolver in documents:
            declared = doc.get("Name")
            if declared is None:
                unnamed.append((doc, resolver))
            elif resolver.resolve(str(declared)) == name:
                return doc, resolver
        if len(unnamed) == 1:
            return unnamed[0]
        if len(unnamed) > 1:
            raise LoadError("more than one class without a Name in one file",
                            file=self.source.display(relpath))
        raise LoadError(f"class {name} is not defined in this file",
                        file=self.source.display(relpath))

    def _parse(self, relpath: str) -> list[Any]:
        cached = self._documents.get(relpath)
        if cached is not None:
            return cached
        display = self.source.display(relpath)
        try:
            text = self.source.read(relpath)
        except OSError as exc:  # (the reason without the file, which the error names)
            raise LoadError(f"cannot read class file: "
                            f"{str(exc).removeprefix(display + ': ')}", file=display) from None
        documents = []
        namespaces: Any = None
        parsed = document_cache.cached(
            "class", text, display,
            lambda: _bodies_deferred(load_documents(text, display, try_parse)))
        for doc in parsed:
            if doc is None:
                continue
            if not isinstance(doc, dict):
                raise LoadError("a class document must be a mapping", file=display)
            if "Namespaces" in doc:
                namespaces = NamespaceResolver(doc.get("Namespaces"), position_of(doc))
                if set(doc) == {"Namespaces"}:
                    continue
            resolver = namespaces or NamespaceResolver(None, position_of(doc))
            documents.append((doc, resolver))
        self._documents[relpath] = documents
        return documents

    def classes(self) -> list[MuranoClass]:
        return [self.load_class(name) for name in self.class_files]


def _bodies_deferred(documents: list[Any]) -> list[Any]:
    """``documents`` with each method's Body a :class:`~document_cache.Deferred`: read
    back from the cache only when the method is first compiled."""
    for doc in documents:
        if not isinstance(doc, dict):
            continue
        for key in ("Methods", "Workflow"):
            methods = doc.get(key)
            if not isinstance(methods, dict):
                continue
            for decl in methods.values():
                if isinstance(decl, dict) and decl.get("Body"):
                    decl["Body"] = document_cache.Deferred(decl["Body"])
    return documents


class HotPackage(Package):
    """A HOT package: one class, named as the package, generated from ``template.yaml``."""

    def __init__(self, source: PackageSource, manifest: dict, loader: PackageLoader) -> None:
        super().__init__(source, manifest, loader)
        self.class_files = {self.name: hot.TEMPLATE}
        self.requirements = {CORE_PACKAGE: "0"}
        self.global_fallback = False

    @property
    def checks_parameters(self) -> bool:
        """Whether the class checks the template's parameters: not when environment
        files, which may supply them, come with the package (as in Murano)."""
        return not any(n.startswith(hot.HOT_ENVIRONMENTS) for n in self.source.names())

    def hot_files(self) -> list[str]:
        """The files of ``Resources/HotFiles/``, named within it."""
        return [n[len(hot.HOT_FILES):] for n in self.source.names()
                if n.startswith(hot.HOT_FILES)]

    def template(self) -> dict:
        """``template.yaml``, checked, its ``get_file``s among the package's files too
        (LoadErrors name its lines)."""
        where = self.source.display(hot.TEMPLATE)
        template = hot.read_template(self.source.read(hot.TEMPLATE), where,
                                     self.checks_parameters)
        problems = hot.missing_files(template, self.hot_files(), where)
        if problems:
            raise errors.LoadErrors(problems)
        return template

    def read_resource(self, name: str) -> bytes:
        """Resources, and the template as the resource named as the class (Murano's)."""
        if name == self.name:
            return self.source.read(hot.TEMPLATE)
        return super().read_resource(name)

    def _class_document(self, name: str) -> tuple[dict, NamespaceResolver]:
        doc = hot.class_document(name, self.template(), self.hot_files(),
                                 self.checks_parameters,
                                 self.source.display(hot.TEMPLATE))
        return doc, NamespaceResolver(doc.get("Namespaces"), position_of(doc))

    def _parse(self, relpath: str) -> list[Any]:
        return [self._class_document(self.name)]


def generated_ui(source: PackageSource, manifest: dict) -> str | None:
    """The dynamic UI generated for a HOT package's class (None for a MuranoPL package)."""
    if not hot.is_hot_format(manifest.get("Format")):
        return None
    template = hot.read_template(source.read(hot.TEMPLATE), source.display(hot.TEMPLATE),
                                 validate=False)
    return hot.ui_definition(str(manifest["FullName"]), str(parse_version(manifest.get(
        "Version"))), manifest.get("Description"), template)


def make_package(source: PackageSource, manifest: dict, loader: PackageLoader) -> Package:
    """A MuranoPL or HOT package for a checked manifest."""
    kind = HotPackage if hot.is_hot_format(manifest.get("Format")) else Package
    return kind(source, manifest, loader)


def _parse_format(value: Any, where: str) -> tuple[int, int]:
    """The MuranoPL format the package's classes are written in."""
    text = str(value if value is not None else "MuranoPL/1.0")
    if hot.is_hot_format(text):
        if text != hot.FORMAT:
            raise LoadError(f"unsupported package format {value!r} ({hot.FORMAT} is "
                            f"supported)", file=where)
        return HOT_CLASS_FORMAT
    if "/" in text:
        kind, _, text = text.partition("/")
        if kind != "MuranoPL":
            raise LoadError(f"unsupported package format {value!r}", file=where)
    try:
        major, minor = (int(p) for p in text.split(".")[:2])
    except ValueError:
        raise LoadError(f"invalid Format {value!r}", file=where) from None
    if (major, minor) not in FORMATS:
        raise LoadError(f"unsupported MuranoPL format {major}.{minor} (1.0 to 1.4 are)",
                        file=where)
    return major, minor


def read_manifest(source: PackageSource) -> dict:
    """Read and check a manifest; every problem names the manifest file."""
    where = source.display("manifest.yaml")
    if not source.exists("manifest.yaml"):
        raise LoadError("no manifest.yaml", file=source.location)
    text = source.read("manifest.yaml")
    manifest = document_cache.cached("manifest", text, where, lambda: load_plain(text, where))
    if not isinstance(manifest, dict):
        raise LoadError("manifest must be a mapping", file=where)
    problems: list[tuple[str, tuple[Any, ...]]] = []  # (the problem, its field)
    full_name = manifest.get("FullName")
    if not full_name:
        problems.append(("FullName is required", ()))
    elif not isinstance(full_name, str) or not _FULL_NAME.match(full_name):
        problems.append((f"FullName {full_name!r} must be dotted words", ("FullName",)))
    if manifest.get("Type", "Application") not in _TYPES:
        problems.append((f"Type must be Application or Library, not {manifest.get('Type')!r}",
                         ("Type",)))
    for key in ("Classes", "Require"):
        if manifest.get(key) is not None and not isinstance(manifest[key], dict):
            problems.append((f"{key} must be a mapping", (key,)))
    if manifest.get("Tags") is not None and not isinstance(manifest["Tags"], list):
        problems.append(("Tags must be a list", ("Tags",)))
    try:
        version_key(manifest.get("Version"))
    except ValueError as exc:
        problems.append((f"invalid Version {manifest.get('Version')!r}: {exc}", ("Version",)))
    if isinstance(manifest.get("Require"), dict):
        for name, spec in manifest["Require"].items():
            try:
                key_matches((0, 0, 0), spec)
            except LoadError as exc:
                problems.append((f"Require {name}: {exc.message}", ("Require", name)))
    if str(manifest.get("Format")) == hot.FORMAT and not source.exists(hot.TEMPLATE):
        problems.append((f"a {hot.FORMAT_NAME} package needs {hot.TEMPLATE} beside its "
                         f"manifest", ("Format",)))
    if problems:
        position = manifest.position if isinstance(manifest, SourceMap) else None
        raise errors.LoadErrors([
            LoadError(problem, field and field_position(text, where, field) or position,
                      file=where) for problem, field in problems])
    try:
        _parse_format(manifest.get("Format"), where)
    except LoadError as exc:
        raise LoadError(exc.message, field_position(text, where, ("Format",)),
                        file=where) from None
    return manifest


def declared_classes(manifest: dict) -> list[str]:
    """The classes a (checked) manifest's package defines: a HOT package's one is named
    as the package."""
    if hot.is_hot_format(manifest.get("Format")):
        return [str(manifest["FullName"])]
    return [str(c) for c in manifest.get("Classes") or {}]


# -- the core library ------------------------------------------------------------

@functools.cache
def _resolved_meta_dir() -> str:
    return os.path.realpath(META_DIR)


def _package_paths(folder: str) -> list[str]:
    """The package folders (with a ``manifest.yaml``) and zips in ``folder``, by name."""
    paths = (os.path.join(folder, name) for name in sorted(os.listdir(folder)))
    return [path for path in paths if path.endswith(".zip") or (
        os.path.isdir(path) and os.path.isfile(os.path.join(path, "manifest.yaml")))]


@functools.cache
def _core_manifests() -> tuple[dict, ...]:
    if not os.path.isdir(META_DIR):
        return ()
    return tuple(read_manifest(open_source(path)) for path in _package_paths(META_DIR))


@functools.cache
def core_package_names() -> frozenset[str]:
    """Names of the packages in ``meta/``: reserved for the engine's core library."""
    return frozenset(str(m["FullName"]) for m in _core_manifests())


@functools.cache
def core_class_names() -> frozenset[str]:
    """Names of the classes the core library defines: no other package may define them."""
    return frozenset(c for m in _core_manifests() for c in declared_classes(m))


def check_not_reserved(manifest: dict, where: str) -> None:
    """Refuse a package from outside ``meta/`` that takes a core package's or class's name."""
    name = str(manifest.get("FullName"))
    if name in core_package_names():
        raise LoadError(f"package name {name} is reserved for the engine's core library",
                        file=where)
    taken = sorted(core_class_names().intersection(declared_classes(manifest)))
    if taken:
        raise LoadError(f"package {name} defines {', '.join(taken)}, reserved for the "
                        f"engine's core library", file=where)


class PackageLoader:
    """Finds packages in search folders (the core library always included).

    Only the packages in ``meta/`` may carry the core library's package and
    class names; others that do are refused, so they never shadow it.

    Its classes are built for ``interpreter``: they get its native classes,
    and every executor of this loader runs with its runtime.
    """

    def __init__(self, search_dirs: Iterable[PathLike], interpreter: Interpreter) -> None:
        self.interpreter = interpreter
        self.search_dirs = [os.path.normpath(os.fspath(d)) for d in search_dirs]
        if META_DIR not in self.search_dirs:
            self.search_dirs.append(META_DIR)
        self.packages: dict[str, list[Package]] = {}
        self.problems: list[LoadError] = []
        self._resolve = Resolver()
        for directory in self.search_dirs:
            self._scan(directory)

    def scan(self, directory: PathLike) -> None:
        """Add the packages of one more search folder (or the package it is); a folder
        that does not exist is an error, a package that does not load a problem."""
        directory = os.path.normpath(os.fspath(directory))
        if directory not in self.search_dirs:
            self.search_dirs.append(directory)
        self._scan(directory)

    def _scan(self, directory: str) -> None:
        if not os.path.isdir(directory):
            raise LoadError("package folder does not exist", file=directory)
        candidates = [directory] if os.path.isfile(os.path.join(directory, "manifest.yaml")) \
            else _package_paths(directory)
        for path in candidates:
            try:
                self.add(path)
            except LoadError as exc:
                self.problems.append(exc)

    def add(self, path: PathLike) -> Package:
        """The package at ``path``, added; an earlier one of the same name and version
        is kept instead (a problem then says where this one is)."""
        source = open_source(path, self._resolve)
        package = make_package(source, read_manifest(source), self)
        if not package.trusted:
            check_not_reserved(package.manifest, source.display("manifest.yaml"))
        versions = self.packages.setdefault(package.name, [])
        for known in versions:
            if known.same_version(package):
                if known.source.resolved_location() != source.resolved_location():
                    self.problems.append(LoadError(
                        f"package {package.name} {package.version_string} is also at "
                        f"{known.source.location}, which is the one used",
                        file=source.location))
                return known
        versions.append(package)
        if all(p._plain_version for p in versions):  # (the order of their full versions)
            versions.sort(key=lambda p: p.version_key, reverse=True)
        else:
            versions.sort(key=lambda p: p.version, reverse=True)
        return package

    def find_package(self, name: str, spec: Any = "*",
                     required_by: Package | None = None) -> Package:
        for package in self.packages.get(name, []):
            if key_matches(package.version_key, spec):
                return package
        known = ", ".join(f"{p.version}" for p in self.packages.get(name, [])) or "none"
        who = f" (required by {required_by.name})" if required_by else ""
        raise errors.NoPackageFound(
            f"package {name} matching version {spec or '0'!r} not found{who}; "
            f"versions present: {known}")

    def package_with_class(self, class_name: str) -> Package | None:
        for versions in self.packages.values():
            for package in versions:
                if class_name in package.class_files:
                    return package
        return None

    def find_class(self, name: str) -> MuranoClass:
        """A class by full name from any package (for model loading)."""
        package = self.package_with_class(name)
        if package is None:
            raise errors.NoClassFound(f"class {name} is not found in any package")
        return package.load_class(name)

    def core(self) -> Package:
        return self.find_package(CORE_PACKAGE)
