"""Importing yaql and semantic_version without their start-up costs, when first imported.

Both libraries look their own version up when imported: yaql through
``pbr.version``, semantic_version through ``importlib.metadata.version``. Each
lookup imports ``importlib.metadata`` (and with it the ``email`` package) and
searches every ``sys.path`` entry for the library's metadata: together about a
quarter of the CPU time a ``murano-engine run`` start-up took. Each is
imported with a stand-in for the module it asks that answers from the name of
the ``<library>-<version>.dist-info`` folder installed beside the library,
then the stand-in is removed (later imports get the real module). A library
without such a folder (run from a source tree), or whose lookup module is
already imported, is imported as it is.

yaql's package module imports its whole standard library (and with it
``dateutil``'s parser, ``decimal``, ...), which the interpreter needs only when
an expression calls a function yaql resolves: ``yaql`` is a package whose own
module runs on first use of a name it defines (``yaql.create_context``,
``yaql.__version__`` when no folder names it); its submodules (``yaql.language.*``)
import as usual in the meantime, and dateutil's ``tz``, which
``yaql.language.yaqltypes`` imports, and ``inspect``, which
``yaql.language.specs`` imports, on their first use too.

:func:`import_libraries` does none of this itself: it puts a finder on
``sys.meta_path`` that does each when its module is first imported, so a
command that never evaluates an expression (loading a package set's classes)
imports neither library.
"""

from __future__ import annotations

import _thread  # threading.RLock is its RLock; importing threading costs start-up
import importlib
import os
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from importlib.machinery import PathFinder

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec
    from typing import Any


def installed_version(library: str) -> str | None:
    """``library``'s version as its ``.dist-info`` folder names it (None without one)."""
    spec = PathFinder.find_spec(library)
    if spec is None or spec.origin is None:
        return None
    return _version_beside(spec, library)


def _version_beside(spec: ModuleSpec, library: str) -> str | None:
    folder = os.path.dirname(os.path.dirname(spec.origin or ""))
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    prefix = f"{library}-"
    found = [n for n in names if n.startswith(prefix) and n.endswith(".dist-info")]
    if len(found) != 1:
        return None
    return found[0][len(prefix):-len(".dist-info")]


class _KnownVersion:
    """What yaql asks of ``pbr.version.VersionInfo``."""

    def __init__(self, version: str) -> None:
        self._version = version

    def version_string(self) -> str:
        return self._version


@contextmanager
def _standing_in(name: str, parent: types.ModuleType | None, module: types.ModuleType
                 ) -> Iterator[None]:
    """``module`` as the module ``name`` (a submodule of ``parent``, if given) for as
    long as this lasts."""
    attribute = name.rpartition(".")[2]
    sys.modules[name] = module
    if parent is not None:
        setattr(parent, attribute, module)
    try:
        yield
    finally:
        del sys.modules[name]
        if parent is not None:
            delattr(parent, attribute)


def _run_yaql_module(module: types.ModuleType, loader: Loader, version: str | None) -> None:
    """Run yaql's own package module in ``module`` (its version from ``version``)."""
    if version is None or "pbr.version" in sys.modules:
        loader.exec_module(module)
        return
    import pbr
    stand_in = types.ModuleType("pbr.version")
    stand_in.VersionInfo = lambda name: _KnownVersion(version)  # type: ignore[attr-defined]
    with _standing_in("pbr.version", pbr, stand_in):
        loader.exec_module(module)


def _defer_yaql(module: types.ModuleType, loader: Loader) -> None:
    """``yaql``'s package module, to be run on first use of its names."""
    spec = module.__spec__
    assert spec is not None and spec.submodule_search_locations is not None
    version = _version_beside(spec, "yaql")
    # One thread runs it; the others wait for it. The lock is made at first use, not here:
    # a lock made before eventlet patches threads is a real one it cannot green (and says so).
    locks: dict[str, Any] = {}
    ran = False

    def first_use(name: str) -> Any:
        nonlocal ran
        if _is_submodule(spec, name):  # ``from yaql import legacy``: imported, not run
            raise AttributeError(f"module 'yaql' has no attribute {name!r}")
        with locks.setdefault("run", _thread.RLock()):  # setdefault: one lock, even in a race
            if not ran:
                ran = True
                try:
                    _run_yaql_module(module, loader, version)
                finally:
                    del module.__getattr__  # type: ignore[attr-defined]
        try:  # (a name asked for while the module runs is not there yet)
            return module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module 'yaql' has no attribute {name!r}") from None

    module.__getattr__ = first_use  # type: ignore[attr-defined]
    if version is not None:
        module.__version__ = version  # type: ignore[attr-defined]


def _is_submodule(spec: ModuleSpec, name: str) -> bool:
    """Whether ``name`` is a module or package inside the package ``spec`` finds."""
    return any(os.path.exists(os.path.join(folder, name + ".py"))
               or os.path.isdir(os.path.join(folder, name))
               for folder in spec.submodule_search_locations or ())


def _import_semantic_version(module: types.ModuleType, loader: Loader) -> None:
    """semantic_version, its version from the folder beside it."""
    version = _version_beside(module.__spec__, "semantic_version")  # type: ignore[arg-type]
    if version is None or "importlib.metadata" in sys.modules:
        loader.exec_module(module)
        return
    stand_in = types.ModuleType("importlib.metadata")
    stand_in.version = lambda name: version  # type: ignore[attr-defined]
    with _standing_in("importlib.metadata", importlib, stand_in):
        loader.exec_module(module)


class _UtcOnFirstUse:
    """``yaqltypes.DateTime.utctz``: dateutil's UTC, imported when first asked for."""

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        from dateutil import tz
        from yaql.language import yaqltypes
        yaqltypes.DateTime.utctz = utc = tz.tzutc()
        return utc


def _dateutil_tz(name: str) -> Any:
    """``yaqltypes.tz``, imported when first asked for."""
    if name != "tz":
        raise AttributeError(f"module 'yaql.language.yaqltypes' has no attribute {name!r}")
    from dateutil import tz
    return tz


def _import_yaqltypes(module: types.ModuleType, loader: Loader) -> None:
    """``yaql.language.yaqltypes`` (which every yaql context imports) with dateutil's
    ``tz`` imported on first use: its import (zoneinfo, sysconfig, importlib.resources,
    ctypes) is about a tenth of a ``murano-engine run`` start-up, and only yaql's
    date functions use it. yaqltypes asks for ``tz.tzutc()`` as it is imported; a
    stand-in answers then, and the class attribute it set answers dateutil's own UTC
    once read. ``datetime``, which it names only in its ``DateTime`` type's methods,
    is imported when one of them first runs (a C extension, some 5M instructions)."""
    if "dateutil.tz" in sys.modules:
        _run_with_on_first_use(module, loader, "datetime")
        return
    import dateutil
    stand_in = types.ModuleType("dateutil.tz")
    stand_in.tzutc = lambda: None  # type: ignore[attr-defined]
    with _standing_in("dateutil.tz", dateutil, stand_in):
        _run_with_on_first_use(module, loader, "datetime")
    module.DateTime.utctz = _UtcOnFirstUse()  # type: ignore[attr-defined]
    del module.tz  # type: ignore[attr-defined]
    module.__getattr__ = _dateutil_tz  # type: ignore[attr-defined]


class _OnFirstUse(types.ModuleType):
    """A module as a library module that imports it (``holder``) has it, until first
    used: then the real module, imported, in ``holder`` too."""

    def __init__(self, name: str, holder: str) -> None:
        super().__init__(name)
        self._holder = holder

    def __getattr__(self, name: str) -> Any:
        real = importlib.import_module(self.__name__)
        setattr(sys.modules[self._holder], self.__name__, real)
        return getattr(real, name)


def _run_with_on_first_use(module: types.ModuleType, loader: Loader, name: str) -> None:
    """Run ``module`` with the module ``name``, unless already imported, imported when
    ``module`` first uses it (:class:`_OnFirstUse`)."""
    if name in sys.modules:
        loader.exec_module(module)
        return
    with _standing_in(name, None, _OnFirstUse(name, module.__name__)):
        loader.exec_module(module)


def _import_specs(module: types.ModuleType, loader: Loader) -> None:
    """``yaql.language.specs`` (which every yaql context imports) with ``inspect`` imported
    when a yaql function is first defined: it reads their signatures with it, and its
    import (ast, dis, tokenize) is about a twentieth of a start-up that defines none
    (a model loaded and written back, a run calling no yaql function)."""
    _run_with_on_first_use(module, loader, "inspect")


def _import_eventlet_patcher(module: types.ModuleType, loader: Loader) -> None:
    """``eventlet.patcher`` with ``asyncio`` imported on first use: it names it only to
    un-patch asyncio's modules for eventlet's asyncio hub, which the engine does not
    use, and its import (ssl, concurrent.futures, some twenty modules) is half of
    eventlet's, which every run with a ``pselect()`` imports."""
    _run_with_on_first_use(module, loader, "asyncio")


#: how each library module is imported, when it is first imported
_ARRANGEMENTS: dict[str, Callable[[types.ModuleType, Loader], None]] = {
    "yaql": _defer_yaql,
    "yaql.language.yaqltypes": _import_yaqltypes,
    "yaql.language.specs": _import_specs,
    "semantic_version": _import_semantic_version,
    "eventlet.patcher": _import_eventlet_patcher,
}


class _Arranged:
    """A module's own loader, its module run as an arrangement says."""

    def __init__(self, loader: Loader, arrange: Callable[[types.ModuleType, Loader], None]
                 ) -> None:
        self._loader = loader
        self._arrange = arrange

    def create_module(self, spec: ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._arrange(module, self._loader)


class _ArrangedImports:
    """On ``sys.meta_path`` until each module of ``_ARRANGEMENTS`` has been imported: finds
    it as Python would and hands its loader to the arrangement."""

    def __init__(self, names: Iterable[str]) -> None:
        self._pending = set(names)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name not in self._pending:
            return None
        self._pending.discard(name)
        if not self._pending and self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None or (
                name == "yaql" and spec.submodule_search_locations is None):
            return spec  # not where it can be arranged: as it is
        spec.loader = _Arranged(spec.loader, _ARRANGEMENTS[name])
        return spec


def import_libraries() -> None:
    """Arrange that yaql (deferred, dateutil's ``tz`` and specs' ``inspect`` too) and
    semantic_version are imported, when first imported, with their versions from their
    folder names: importing neither costs nothing until then."""
    import collections.abc  # noqa: F401 - yaql uses collections.abc without importing it
    pending = [name for name in _ARRANGEMENTS if name not in sys.modules]
    if pending and not any(isinstance(f, _ArrangedImports) for f in sys.meta_path):
        sys.meta_path.insert(0, _ArrangedImports(pending))
