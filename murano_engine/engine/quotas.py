"""Quotas per project, as Nova's: how many servers, environments, packages and running
deployments one project may have at once.

The operator's defaults are ``[quotas]`` ``servers``, ``environments``, ``packages`` and
``deployments`` (:data:`UNLIMITED`, -1, for no limit); ``[quotas] overrides`` gives some
projects other values, one entry a line (or entries separated by ``;``)::

    [quotas]
    servers = 20
    overrides =
        demo: servers=5, environments=2
        8d4e1b0c9f2a4c1e: servers=-1

murano-api counts environments, packages and deployments in its database
(:mod:`murano_engine.api.quotas`); a project's local cloud counts its servers before
a stack push makes any. ``murano-engine deploy`` deploys as project :data:`LOCAL_PROJECT`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from murano_common.options import ConfigError

TYPE_CHECKING = False  # typing's own flag: `murano-engine run` reads the quotas at start
if TYPE_CHECKING:
    from typing import Any

__all__ = ["LOCAL_PROJECT", "NAMES", "UNLIMITED", "QuotaTable", "Quotas", "parse_overrides",
           "quota_table", "scope", "servers_quota"]

#: The quotas, in the order messages and samples list them.
NAMES = ("servers", "environments", "packages", "deployments")
#: A quota of no limit.
UNLIMITED = -1
#: The project of the command line's runs (``io.murano.Project`` without keystone).
LOCAL_PROJECT = "local"

_SEPARATOR = re.compile(r"[;\n]")
_PAIRS = re.compile(r"[,\s]+")


class Quotas:
    """One project's quotas (by attribute: ``servers`` ...); :data:`UNLIMITED` is no limit.

    Written by hand rather than as a dataclass: ``dataclasses`` imports ``inspect``,
    5 ms of every command's start."""

    __slots__ = NAMES

    def __init__(self, servers: int = UNLIMITED, environments: int = UNLIMITED,
                 packages: int = UNLIMITED, deployments: int = UNLIMITED) -> None:
        self.servers = servers
        self.environments = environments
        self.packages = packages
        self.deployments = deployments

    def limit(self, name: str) -> int | None:
        """Quota ``name``'s value, None when it is unlimited."""
        value = int(getattr(self, name))
        return None if value == UNLIMITED else value

    def with_values(self, values: Mapping[str, int]) -> Quotas:
        """These quotas with ``values`` (by name) instead."""
        return Quotas(**{name: values.get(name, getattr(self, name)) for name in NAMES})

    def _values(self) -> tuple[int, ...]:
        return tuple(getattr(self, name) for name in NAMES)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quotas) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return "Quotas(" + ", ".join(f"{n}={getattr(self, n)}" for n in NAMES) + ")"


class QuotaTable:
    """The operator's defaults and each overridden project's own quotas."""

    __slots__ = ("defaults", "overrides")

    def __init__(self, defaults: Quotas | None = None,
                 overrides: Mapping[str, Mapping[str, int]] | None = None) -> None:
        self.defaults = defaults if defaults is not None else Quotas()
        self.overrides = dict(overrides or {})

    def of(self, project: str) -> Quotas:
        """The quotas of ``project``: its overrides over the defaults."""
        own = self.overrides.get(project)
        return self.defaults.with_values(own) if own else self.defaults

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QuotaTable) and \
            (self.defaults, self.overrides) == (other.defaults, other.overrides)

    __hash__ = None  # type: ignore[assignment] - its overrides change with the config

    def __repr__(self) -> str:
        return f"QuotaTable({self.defaults!r}, {self.overrides!r})"


def _value(text: str, where: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{where}: {text!r} is not a whole number") from None
    if value < UNLIMITED:
        raise ValueError(f"{where}: {value} is below -1 (-1 is no limit)")
    return value


def parse_overrides(text: str) -> dict[str, dict[str, int]]:
    """The projects' quotas ``[quotas] overrides`` gives: entries ``PROJECT: NAME=VALUE,
    ...`` separated by new lines or ``;``. ValueError naming the first bad entry."""
    table: dict[str, dict[str, int]] = {}
    for entry in filter(None, (part.strip() for part in _SEPARATOR.split(text))):
        project, colon, pairs = entry.rpartition(":")
        project = project.strip()
        if not colon or not project:
            raise ValueError(f"entry {entry!r} is not 'PROJECT: NAME=VALUE, ...'")
        if project in table:
            raise ValueError(f"project {project!r} has two entries")
        own: dict[str, int] = {}
        for pair in filter(None, _PAIRS.split(pairs.strip())):
            name, equals, value = pair.partition("=")
            if not equals or name not in NAMES:
                raise ValueError(f"entry {entry!r}: {pair!r} is not NAME=VALUE with NAME one "
                                 f"of {', '.join(NAMES)}")
            own[name] = _value(value, f"entry {entry!r}")
        if not own:
            raise ValueError(f"entry {entry!r} names no quota")
        table[project] = own
    return table


def quota_table(config: Mapping[str, Mapping[str, Any]], source: str = "the configuration"
                ) -> QuotaTable:
    """The quotas ``config``'s ``[quotas]`` section gives (ConfigError naming ``source``
    and the option when one is wrong)."""
    section = config.get("quotas") or {}
    problems = []
    defaults: dict[str, int] = {}
    for name in NAMES:
        try:
            defaults[name] = _value(str(section.get(name, UNLIMITED)), name)
        except ValueError as exc:
            problems.append(f"{source} [quotas]: {exc}")
    try:
        overrides = parse_overrides(str(section.get("overrides") or ""))
    except ValueError as exc:
        problems.append(f"{source} [quotas] overrides: {exc}")
    if problems:
        raise ConfigError(*problems)
    return QuotaTable(Quotas(**defaults), overrides)


def scope(config: Any, project: str) -> None:
    """Make ``config`` (engine configuration values, a project's own copy) hold
    ``project``'s quotas as its defaults, with no overrides left."""
    own = quota_table(config, getattr(config, "source", "the configuration")).of(project)
    section = config["quotas"]
    for name in NAMES:
        section[name] = getattr(own, name)
    section["overrides"] = ""


def servers_quota(config: Mapping[str, Mapping[str, Any]]) -> int:
    """The servers quota a run of ``config`` deploys under: the command line's project's
    (:data:`LOCAL_PROJECT`), or a project's own in a configuration :func:`scope` made."""
    return quota_table(config, str(getattr(config, "source", "the configuration"))
                       ).of(LOCAL_PROJECT).servers
