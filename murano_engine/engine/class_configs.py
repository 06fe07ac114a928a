"""Class configs: property values for classes from files (``[engine] class_configs``).

A folder holds one JSON or YAML mapping per class, named
``<class name>-<version>.json|yaml``; the engine uses its values for the
class's ``Config`` properties and as defaults of the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from murano_engine.dsl import errors, values
from murano_engine.dsl.classes import MuranoClass
from murano_engine.dsl.json_loader import load_json
from murano_engine.dsl.yaml_loader import load_plain


class ClassConfigFiles:
    """The ``class_configs`` service: a class's configured values, from its files and its
    parents'."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).expanduser()

    def __call__(self, cls: MuranoClass) -> Mapping[str, Any]:
        found: dict[str, Any] = {}
        for spec in cls.init_order():
            found.update(self.read(spec))
        return found

    def read(self, cls: MuranoClass) -> Mapping[str, Any]:
        """``<FQN>-<major.minor.patch>``, then ``-<major.minor>``, ``-<major>``, then
        unversioned (the last only for major version 0); JSON before YAML."""
        version = cls.version
        stems = [f"{cls.name}-{version.major}.{version.minor}.{version.patch}",
                 f"{cls.name}-{version.major}.{version.minor}", f"{cls.name}-{version.major}"]
        if version.major == 0:
            stems.append(cls.name)
        for stem in stems:
            for suffix, parse in ((".json", load_json), (".yaml", load_plain)):
                path = self.folder / (stem + suffix)
                if path.is_file():
                    data = parse(path.read_bytes(), str(path))
                    if not isinstance(data, dict):
                        raise errors.LoadError("a class config must be a mapping",
                                               file=str(path))
                    return values.freeze(data)
        return {}
