"""Importing yaql and semantic_version without their start-up costs.

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
an expression calls a function yaql resolves. :func:`import_libraries` makes
``yaql`` a package whose own module runs on first use of a name it defines
(``yaql.create_context``, ``yaql.__version__`` when no folder names it); its
submodules (``yaql.language.*``) import as usual in the meantime, and dateutil's
``tz``, which ``yaql.language.yaqltypes`` imports, on its first use too.
"""

from __future__ import annotations

import _thread  # threading.RLock is its RLock; importing threading costs start-up
import importlib
import importlib.util
import os
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec


def installed_version(library: str) -> str | None:
    """``library``'s version as its ``.dist-info`` folder names it (None without one)."""
    spec = importlib.util.find_spec(library)
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


def _run_yaql_module(module: types.ModuleType, version: str | None) -> None:
    """Run yaql's own package module in ``module`` (its version from ``version``)."""
    loader = module.__spec__.loader  # type: ignore[union-attr]
    if version is None or "pbr.version" in sys.modules:
        loader.exec_module(module)
        return
    import pbr
    stand_in = types.ModuleType("pbr.version")
    stand_in.VersionInfo = lambda name: _KnownVersion(version)  # type: ignore[attr-defined]
    with _standing_in("pbr.version", pbr, stand_in):
        loader.exec_module(module)


def _defer_yaql() -> None:
    """``yaql`` in ``sys.modules``, its package module run on first use of its names."""
    spec = importlib.util.find_spec("yaql")
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        importlib.import_module("yaql")  # not where it can be deferred: as it is
        return
    version = _version_beside(spec, "yaql")
    module = importlib.util.module_from_spec(spec)
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
                    _run_yaql_module(module, version)
                finally:
                    del module.__getattr__  # type: ignore[attr-defined]
        try:  # (a name asked for while the module runs is not there yet)
            return module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module 'yaql' has no attribute {name!r}") from None

    module.__getattr__ = first_use  # type: ignore[attr-defined]
    if version is not None:
        module.__version__ = version  # type: ignore[attr-defined]
    sys.modules["yaql"] = module


def _is_submodule(spec: ModuleSpec, name: str) -> bool:
    """Whether ``name`` is a module or package inside the package ``spec`` finds."""
    return any(os.path.exists(os.path.join(folder, name + ".py"))
               or os.path.isdir(os.path.join(folder, name))
               for folder in spec.submodule_search_locations or ())


def _import_semantic_version() -> None:
    version = installed_version("semantic_version")
    if version is None or "importlib.metadata" in sys.modules:
        importlib.import_module("semantic_version")
        return
    stand_in = types.ModuleType("importlib.metadata")
    stand_in.version = lambda name: version  # type: ignore[attr-defined]
    with _standing_in("importlib.metadata", importlib, stand_in):
        importlib.import_module("semantic_version")


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


def _import_yaqltypes() -> None:
    """``yaql.language.yaqltypes`` (which every yaql context imports) with dateutil's
    ``tz`` imported on first use: its import (zoneinfo, sysconfig, importlib.resources,
    ctypes) is about a tenth of a ``murano-engine run`` start-up, and only yaql's
    date functions use it. yaqltypes asks for ``tz.tzutc()`` as it is imported; a
    stand-in answers then, and the class attribute it set answers dateutil's own UTC
    once read."""
    import dateutil
    stand_in = types.ModuleType("dateutil.tz")
    stand_in.tzutc = lambda: None  # type: ignore[attr-defined]
    with _standing_in("dateutil.tz", dateutil, stand_in):
        from yaql.language import yaqltypes
    yaqltypes.DateTime.utctz = _UtcOnFirstUse()
    del yaqltypes.tz
    yaqltypes.__getattr__ = _dateutil_tz  # type: ignore[attr-defined]


class _InspectOnFirstUse(types.ModuleType):
    """``yaql.language.specs.inspect`` until first used: then the real module, there too."""

    def __getattr__(self, name: str) -> Any:
        real = importlib.import_module("inspect")
        sys.modules["yaql.language.specs"].inspect = real
        return getattr(real, name)


def _import_specs() -> None:
    """``yaql.language.specs`` (which every yaql context imports) with ``inspect`` imported
    when a yaql function is first defined: it reads their signatures with it, and its
    import (ast, dis, tokenize) is about a twentieth of a start-up that defines none
    (a model loaded and written back, a run calling no yaql function)."""
    with _standing_in("inspect", None, _InspectOnFirstUse("inspect")):
        from yaql.language import specs  # noqa: F401


def import_libraries() -> None:
    """Import yaql (deferred, dateutil's ``tz`` and specs' ``inspect`` too) and
    semantic_version (once each), versions from their folder names."""
    import collections.abc  # noqa: F401 - yaql uses collections.abc without importing it
    if "yaql" not in sys.modules:
        _defer_yaql()
    if "yaql.language.yaqltypes" not in sys.modules and "dateutil.tz" not in sys.modules:
        _import_yaqltypes()
    if "yaql.language.specs" not in sys.modules and "inspect" not in sys.modules:
        _import_specs()
    if "semantic_version" not in sys.modules:
        _import_semantic_version()
