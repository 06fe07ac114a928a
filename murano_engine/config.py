"""The engine's configuration: one INI file, every option with a default.

Sections: ``[engine]``, ``[rabbitmq]``, ``[heat]``, ``[networking]`` and
``[local_cloud]``. An environment variable ``MURANO_<SECTION>_<OPTION>``
(upper case) overrides the file. With no file and no ``[heat]`` settings the
engine deploys to the embedded local cloud with in-process messaging.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

Config = dict[str, dict[str, Any]]

DEFAULTS: Config = {
    "engine": {
        "agent_timeout": 3600,
        "disable_murano_agent": False,
        "stack_timeout": 3600,
        "signing_key": "",
        "class_configs": "",
    },
    "rabbitmq": {
        "url": "",
        "host": "127.0.0.1",
        "port": 5672,
        "login": "guest",
        "password": "guest",
        "virtual_host": "/",
        "ssl": False,
        "ca_certs": "",
    },
    "heat": {
        "auth_url": "",
        "url": "",
        "token": "",
        "username": "",
        "password": "",
        "project_name": "",
        "user_domain_name": "Default",
        "project_domain_name": "Default",
        "region_name": "",
        "stack_timeout": 3600,
    },
    "networking": {
        "env_ip_template": "10.0.0.0",
        "max_environments": 250,
        "max_hosts": 250,
        "default_dns": "",
        "external_network": "public",
        "router_name": "murano-default-router",
        "create_router": True,
    },
    "local_cloud": {
        "state_dir": "~/.local/state/murano-engine/local-cloud",
        "powershell": "",
        "parallel": 64,
        "stack_timeout": 3600,
    },
}


class ConfigError(ValueError):
    """A configuration value is malformed; the message names file and option."""


def load_config(path: str | Path | None = None,
                environ: Mapping[str, str] | None = None) -> Config:
    """Defaults, then the file, then ``MURANO_<SECTION>_<OPTION>`` variables."""
    config: Config = {section: dict(options) for section, options in DEFAULTS.items()}
    if path is not None:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            with open(path, encoding="utf-8") as stream:
                parser.read_file(stream)
        except (OSError, configparser.Error) as exc:
            raise ConfigError(f"{path}: {exc}") from None
        for section in parser.sections():
            for option, value in parser.items(section, raw=True):
                _set(config, section, option, value, f"{path} [{section}] {option}")
        for option, value in parser.defaults().items():
            _set(config, "engine", option, value, f"{path} [DEFAULT] {option}")
    env = os.environ if environ is None else environ
    for key, value in env.items():
        if not key.startswith("MURANO_"):
            continue
        rest = key[len("MURANO_"):].lower()
        section = next((name for name in config if rest.startswith(name + "_")), None)
        if section is not None:
            _set(config, section, rest[len(section) + 1:], value,
                 f"environment variable {key}")
    if not config["rabbitmq"]["url"] and not heat_configured(config):
        config["rabbitmq"]["url"] = "memory://"
    return config


def heat_configured(config: Config) -> bool:
    heat = config["heat"]
    return bool(heat.get("auth_url") or (heat.get("url") and heat.get("token")))


def broker_url(config: Config) -> str:
    """The AMQP URL the engine and the agents use."""
    rabbit = config["rabbitmq"]
    if rabbit.get("url"):
        return str(rabbit["url"])
    vhost = str(rabbit["virtual_host"]).lstrip("/")
    return (f"amqp://{rabbit['login']}:{rabbit['password']}@{rabbit['host']}:"
            f"{rabbit['port']}/{vhost}")


def _set(config: Config, section: str, option: str, value: str, where: str) -> None:
    default = DEFAULTS.get(section, {}).get(option)
    config.setdefault(section, {})[option] = _coerce(value, default, where)


def _coerce(value: str, default: Any, where: str) -> Any:
    if isinstance(default, bool):
        lowered = value.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off", ""):
            return False
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if isinstance(default, int):
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"{where}: expected a whole number, got {value!r}") from None
    return value
