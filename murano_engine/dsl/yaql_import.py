"""Importing yaql without asking pbr for its version.

yaql's ``__init__`` sets ``yaql.__version__`` through ``pbr.version``, which
imports ``importlib.metadata`` (and with it the ``email`` package) and searches
every ``sys.path`` entry for yaql's metadata: about a quarter of the CPU time a
``murano-engine run`` start-up took. :func:`import_yaql` imports yaql with a
stand-in for ``pbr.version`` that reads the version from the name of the
``yaql-<version>.dist-info`` folder installed beside yaql, then puts pbr back as
it was. Where there is no such folder (yaql run from a source tree) yaql is
imported as it is.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path


def installed_version() -> str | None:
    """yaql's version as its ``.dist-info`` folder names it (None when there is none)."""
    spec = importlib.util.find_spec("yaql")
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.parent.glob("yaql-*.dist-info"))
    if len(found) != 1:
        return None
    return found[0].name[len("yaql-"):-len(".dist-info")]


class _KnownVersion:
    """What yaql asks of ``pbr.version.VersionInfo``."""

    def __init__(self, version: str) -> None:
        self._version = version

    def version_string(self) -> str:
        return self._version


def import_yaql() -> None:
    """Import yaql (once), its version taken from its installed metadata's folder name."""
    if "yaql" in sys.modules:
        return
    import collections.abc  # noqa: F401 - yaql uses collections.abc without importing it
    version = installed_version()
    if version is None or "pbr.version" in sys.modules:
        import yaql  # noqa: F401
        return
    import pbr
    stand_in = types.ModuleType("pbr.version")
    stand_in.VersionInfo = lambda name: _KnownVersion(version)  # type: ignore[attr-defined]
    sys.modules["pbr.version"] = stand_in
    pbr.version = stand_in  # type: ignore[attr-defined]
    try:
        import yaql  # noqa: F401
    finally:
        del sys.modules["pbr.version"]
        del pbr.version  # type: ignore[attr-defined]
