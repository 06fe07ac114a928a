"""``murano-api`` settings, read from an INI file (Murano's option names where they exist)."""

from __future__ import annotations

import configparser
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_DB = "sqlite:///murano-api.sqlite"


@dataclass
class Settings:
    """Everything the API and the workers read from the configuration file."""

    bind_host: str = "127.0.0.1"
    bind_port: int = 8082
    api_threads: int = 8
    database: str = DEFAULT_DB
    transport_url: str = ""
    task_queue: str = "murano-tasks"
    result_queue: str = "murano-results"
    static_action_timeout: float = 15.0
    environment_class: str = "io.murano.Environment"
    packages_cache: Path = field(default_factory=lambda: Path("murano-packages-cache"))
    package_size_limit: int = 5 * 1024 * 1024
    package_unpacked_limit: int = 50 * 1024 * 1024
    package_max_files: int = 2000
    limit_param_default: int = 20
    api_limit_max: int = 100
    auth_strategy: str = "tokens"
    token_file: Path | None = None
    keystone: dict[str, str] = field(default_factory=dict)
    # The file itself: its engine sections ([local_cloud], [heat], [rabbitmq],
    # [networking]) configure the engine runs, as in Murano's one murano.conf.
    config_file: Path | None = None

    @property
    def uses_broker(self) -> bool:
        return bool(self.transport_url)


def load_settings(path: str | Path | None) -> Settings:
    """Read ``path`` (relative paths in it are relative to the file's folder)."""
    settings = Settings()
    if path is None:
        return settings
    path = Path(path)
    parser = configparser.ConfigParser(interpolation=None)
    if not parser.read(path):
        raise FileNotFoundError(f"configuration file {path} cannot be read")
    here = path.resolve().parent
    settings.config_file = path.resolve()

    def get(section: str, key: str, default: str) -> str:
        if parser.has_option(section, key):
            return parser.get(section, key).strip()
        return default

    def local_path(text: str) -> Path:
        candidate = Path(text).expanduser()
        return candidate if candidate.is_absolute() else here / candidate

    settings.bind_host = get("DEFAULT", "bind_host", settings.bind_host)
    settings.bind_port = int(get("DEFAULT", "bind_port", str(settings.bind_port)))
    settings.api_threads = int(get("murano", "api_workers", str(settings.api_threads)))
    db = get("database", "connection", "")
    if db.startswith("sqlite:///") and not db.startswith("sqlite:////"):
        db = "sqlite:///" + str(local_path(db[len("sqlite:///"):]))
    settings.database = db or "sqlite:///" + str(here / "murano-api.sqlite")
    settings.transport_url = get("DEFAULT", "transport_url", "")
    settings.task_queue = get("engine", "task_queue", settings.task_queue)
    settings.result_queue = get("engine", "result_queue", settings.result_queue)
    settings.static_action_timeout = float(
        get("engine", "static_action_timeout", str(settings.static_action_timeout)))
    settings.environment_class = get("engine", "environment_class",
                                     settings.environment_class)
    settings.packages_cache = local_path(get("engine", "packages_cache",
                                             str(here / "murano-packages-cache")))
    mb = float(get("murano", "package_size_limit", "5"))
    settings.package_size_limit = int(mb * 1024 * 1024)
    settings.package_unpacked_limit = int(
        float(get("murano", "package_unpacked_limit", str(mb * 10))) * 1024 * 1024)
    settings.package_max_files = int(get("murano", "package_max_files",
                                         str(settings.package_max_files)))
    settings.limit_param_default = int(get("murano", "limit_param_default", "20"))
    settings.api_limit_max = int(get("murano", "api_limit_max", "100"))
    settings.auth_strategy = get("auth", "strategy", settings.auth_strategy)
    token_file = get("auth", "token_file", "")
    settings.token_file = local_path(token_file) if token_file else None
    if parser.has_section("keystone_authtoken"):
        settings.keystone = {k: v for k, v in parser.items("keystone_authtoken")
                             if k not in parser.defaults()}
    return settings
