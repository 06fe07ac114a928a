"""Importing yaql and semantic_version without their installed-metadata lookups.

Both libraries look their own version up when imported: yaql through
``pbr.version``, semantic_version through ``importlib.metadata.version``. Each
lookup imports ``importlib.metadata`` (and with it the ``email`` package) and
searches every ``sys.path`` entry for the library's metadata: together about a
quarter of the CPU time a ``murano-engine run`` start-up took.
:func:`import_libraries` imports each with a stand-in for the module it asks
that answers from the name of the ``<library>-<version>.dist-info`` folder
installed beside the library, then removes the stand-in (later imports get
the real module). A library without such a folder (run from a source tree), or
whose lookup module is already imported, is imported as it is.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def installed_version(library: str) -> str | None:
    """``library``'s version as its ``.dist-info`` folder names it (None without one)."""
    spec = importlib.util.find_spec(library)
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.parent.glob(f"{library}-*.dist-info"))
    if len(found) != 1:
        return None
    return found[0].name[len(library) + 1:-len(".dist-info")]


class _KnownVersion:
    """What yaql asks of ``pbr.version.VersionInfo``."""

    def __init__(self, version: str) -> None:
        self._version = version

    def version_string(self) -> str:
        return self._version


@contextmanager
def _standing_in(name: str, parent: types.ModuleType, module: types.ModuleType
                 ) -> Iterator[None]:
    """``module`` as the submodule ``name`` of ``parent`` for as long as this lasts."""
    attribute = name.rpartition(".")[2]
    sys.modules[name] = module
    setattr(parent, attribute, module)
    try:
        yield
    finally:
        del sys.modules[name]
        delattr(parent, attribute)


def _import_yaql() -> None:
    version = installed_version("yaql")
    if version is None or "pbr.version" in sys.modules:
        importlib.import_module("yaql")
        return
    import pbr
    stand_in = types.ModuleType("pbr.version")
    stand_in.VersionInfo = lambda name: _KnownVersion(version)  # type: ignore[attr-defined]
    with _standing_in("pbr.version", pbr, stand_in):
        importlib.import_module("yaql")


def _import_semantic_version() -> None:
    version = installed_version("semantic_version")
    if version is None or "importlib.metadata" in sys.modules:
        importlib.import_module("semantic_version")
        return
    stand_in = types.ModuleType("importlib.metadata")
    stand_in.version = lambda name: version  # type: ignore[attr-defined]
    with _standing_in("importlib.metadata", importlib, stand_in):
        importlib.import_module("semantic_version")


def import_libraries() -> None:
    """Import yaql and semantic_version (once each), versions from their folder names."""
    import collections.abc  # noqa: F401 - yaql uses collections.abc without importing it
    if "yaql" not in sys.modules:
        _import_yaql()
    if "semantic_version" not in sys.modules:
        _import_semantic_version()
