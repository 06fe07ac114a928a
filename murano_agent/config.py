"""Agent configuration: the INI options a Murano agent reads, plus a few of our own.

``[DEFAULT]``: ``storage``, ``engine_key`` (PEM, continuation lines indented),
``work_folder``, ``log_file``, ``debug``, ``plan_timeout``, ``powershell``,
``reboot_command``, ``reboot_wait``, ``enable_dynamic_result_queue``.
``[rabbitmq]``: ``url`` (overrides the parts below when set, e.g. ``memory://``),
``host``, ``port``, ``login``, ``password``, ``virtual_host``, ``ssl``,
``ssl_version``, ``ca_certs``, ``insecure``, ``input_queue``, ``result_exchange``,
``result_routing_key``, ``heartbeat``, ``reconnect_delay``, ``reconnect_max_delay``.
Unknown options (``verbose``, oslo.log settings ...) are ignored.
"""

from __future__ import annotations

import configparser
import dataclasses
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """An option has a value that cannot be used; the message names it."""


def _default_powershell() -> str:
    return "powershell.exe" if sys.platform == "win32" else "pwsh"


def _default_reboot_command() -> str:
    return "shutdown /r /t 5" if sys.platform == "win32" else "shutdown -r now"


@dataclasses.dataclass(frozen=True)
class RabbitConfig:
    """The ``[rabbitmq]`` section."""

    url: str = ""
    host: str = "localhost"
    port: int = 5672
    login: str = "guest"
    password: str = "guest"
    virtual_host: str = "/"
    ssl: bool = False
    ssl_version: str = ""
    ca_certs: str = ""
    insecure: bool = False
    input_queue: str = ""
    result_exchange: str = ""
    result_routing_key: str = ""
    heartbeat: int = 0
    reconnect_delay: float = 1.0
    reconnect_max_delay: float = 60.0


@dataclasses.dataclass(frozen=True)
class AgentConfig:
    """The whole agent configuration; ``source`` names where it came from."""

    rabbitmq: RabbitConfig
    storage: str = "/var/murano/plans"
    engine_key: str = ""
    work_folder: str = ""
    log_file: str = ""
    debug: bool = False
    plan_timeout: float = 3600.0
    powershell: str = dataclasses.field(default_factory=_default_powershell)
    reboot_command: str = dataclasses.field(default_factory=_default_reboot_command)
    reboot_wait: float = 300.0
    enable_dynamic_result_queue: bool = False
    source: str = "<defaults>"

    @property
    def files_root(self) -> Path:
        """Where plans may write their files (``work_folder`` or ``<storage>/files``)."""
        return Path(self.work_folder or os.path.join(self.storage, "files"))


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{text!r} is not a boolean")


_PARSERS: dict[Any, Callable[[str], Any]] = {
    "bool": _parse_bool,
    "int": int,
    "float": float,
    "str": str,
}


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _convert(cls: type, values: Mapping[str, str], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name not in values or field.name in ("rabbitmq", "source"):
            continue
        raw = _unquote(values[field.name])
        try:
            out[field.name] = _PARSERS[field.type](raw)
        except ValueError as exc:
            raise ConfigError(
                f"{where}: option {field.name!r} = {raw!r} is not a valid {field.type}: {exc}"
            ) from None
    return out


def _read_ini(text: str, where: str) -> tuple[dict[str, str], dict[str, str]]:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text, source=where)
    except configparser.Error as exc:
        raise ConfigError(f"{where}: not a valid INI file: {exc}") from None
    defaults = dict(parser.defaults())
    rabbit = {}
    if parser.has_section("rabbitmq"):
        rabbit = {k: v for k, v in parser.items("rabbitmq") if k not in defaults}
    return defaults, rabbit


def load_config(
    text_or_path: str | os.PathLike[str], overrides: Mapping[str, Any] | None = None
) -> AgentConfig:
    """Read agent configuration from INI text or from a file path.

    A ``str`` holding a newline or starting with ``[`` is INI text; anything else
    is a path. ``overrides`` maps ``option`` (``[DEFAULT]``) or ``rabbitmq.option``
    to values that win over the file, e.g. ``{"storage": d, "rabbitmq.url": "memory://"}``.
    """
    text = os.fspath(text_or_path)
    if isinstance(text_or_path, str) and ("\n" in text or text.lstrip().startswith("[")):
        where = "<agent config text>"
    else:
        where = text
        try:
            text = Path(text).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read agent config {where}: {exc.strerror}") from None
    defaults, rabbit = _read_ini(text, where)
    for key, value in (overrides or {}).items():
        section, _, name = key.rpartition(".")
        target = {"": defaults, "rabbitmq": rabbit}.get(section)
        if target is None:
            raise ConfigError(f"override {key!r}: unknown section {section!r}")
        target[name] = str(value)
    rabbit_cfg = RabbitConfig(**_convert(RabbitConfig, rabbit, f"{where} [rabbitmq]"))
    return AgentConfig(
        rabbitmq=rabbit_cfg, source=where, **_convert(AgentConfig, defaults, f"{where} [DEFAULT]")
    )
