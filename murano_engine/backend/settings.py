"""``murano-api`` settings, read from an INI file (Murano's option names where they exist).

The API's options are declared here; the same file holds the engine's sections
(:mod:`murano_engine.engine.config`), which configure the deployments the API process or
its workers run, as in Murano's one murano.conf. :data:`SCHEMA` declares both;
``murano-api.conf.sample`` lists them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from murano_common.options import ConfigError, Option, Schema, Section, SectionValues
from murano_engine.engine import config as engine_config
from murano_engine.engine.quotas import QuotaTable, quota_table

__all__ = ["SCHEMA", "ConfigError", "Settings", "load_settings"]

MB = 1024 * 1024
#: The database when none is configured: a SQLite file in the user's state folder
#: (never in the source tree).
DEFAULT_DB_FILE = "~/.local/state/murano-engine/murano-api.sqlite"
#: Where catalog packages are unpacked when no folder is configured.
DEFAULT_PACKAGES_CACHE = "~/.cache/murano-engine/packages"

DEFAULTS = Section(
    "DEFAULT", "The API server.",
    Option("bind_host", str, "127.0.0.1", "Address the API listens on."),
    Option("bind_port", int, 8082, "Port the API listens on."),
    Option("transport_url", str, "",
           "Empty: deployments run in the API process. A broker URL (e.g. "
           "amqp://guest:guest@127.0.0.1:5672/murano-engine) hands tasks to `murano-engine "
           "worker --config THIS_FILE` processes over RabbitMQ. Its virtual host must "
           "not be the guest agents' ([rabbitmq] virtual_host); on the agents' broker it is "
           "made on first use."),
)
DATABASE = Section(
    "database", "Where environments, sessions and packages are stored.",
    Option("connection", str, "",
           "SQLAlchemy URL, e.g. postgresql+psycopg://postgres@127.0.0.1:5432/murano "
           f"(default: the SQLite file {DEFAULT_DB_FILE}); a relative SQLite path is "
           "relative to this file's folder."),
)
ENGINE = Section(
    "engine", "",
    Option("task_queue", str, "murano-tasks", "Queue of the deployment tasks for workers."),
    Option("result_queue", str, "murano-results", "Queue of the workers' results."),
    Option("max_deliveries", int, 3,
           "Workers a deployment task is handed to at most. A task whose worker dies is "
           "handed to another one, which resumes it from its journal; after this many the "
           "task is dead-lettered to the queue <task_queue>.dead and its deployment fails, "
           "saying why. The task queue is a RabbitMQ quorum queue with this delivery limit: "
           "changing it needs a new (or deleted, empty) task queue."),
    Option("task_lease", float, 60.0,
           "Without a broker: seconds an API process holds a task it runs; it renews the "
           "hold every quarter of them. When the process dies, an API process (another, or "
           "the same one started again) takes each of its unfinished tasks over once its "
           "hold runs out and resumes it from its journal."),
    Option("stop_grace", float, 10.0,
           "Without a broker: seconds murano-api waits at SIGTERM for the tasks it runs to "
           "stop at their next step. Then it stops without them; either way they resume "
           "from their journals in the next API process, a few seconds after (their holds "
           "are shortened as it stops)."),
    Option("static_action_timeout", float, 15.0,
           "Seconds a caller waits for a static action; past them it gets a 504."),
    Option("static_action_workers", int, 4,
           "Static actions that run at once (in the API process, and in each worker); "
           "more are answered 503. Below [murano] api_workers, so other requests always "
           "find a free thread."),
    Option("static_action_workers_per_project", int, 2,
           "Static actions one project may run at once (at most static_action_workers); "
           "more are answered 429, so one project's slow actions leave the others room."),
    Option("task_workers", int, 16,
           "Tasks (deployments, actions, deletions) run at once: by the API's own engine "
           "without a broker, by each `murano-engine worker` with one. Runs past them wait "
           "for one to end, the projects with fewest running first."),
    Option("environment_class", str, "io.murano.Environment", "Class of new environments."),
    Option("packages_cache", str, DEFAULT_PACKAGES_CACHE,
           "Folder the engine unpacks catalog packages into."),
)
MURANO = Section(
    "murano", "The catalog and the API's limits.",
    Option("api_workers", int, 8, "Request threads."),
    Option("package_size_limit", float, 5.0, "Largest package upload, in MB."),
    Option("package_unpacked_limit", float, None,
           "Largest unpacked package, in MB (default: 10 times package_size_limit)."),
    Option("package_max_files", int, 2000, "Most files a package may hold."),
    Option("limit_param_default", int, 20, "Page size when a request gives no limit."),
    Option("api_limit_max", int, 100, "Largest page size a request may ask for."),
    Option("ui_form_workers", int, 4,
           "Threads that evaluate packages' UI/ui.yaml forms (wizard pages, ui/model "
           "calls), off the request threads; each evaluation within the [engine] form_* "
           "budget."),
    Option("ui_form_workers_per_project", int, 2,
           "UI form evaluations one project may run at once; more are answered 429."),
    Option("connection_limit", int, 1000,
           "Client connections served at once; more wait to be accepted. A connection "
           "holds no request thread until its request is read whole."),
    Option("header_timeout", float, 10.0,
           "Seconds a client has to send a request's headers, however it trickles them; "
           "past them the connection is closed."),
    Option("body_timeout", float, 120.0,
           "Seconds a client has to send a request's body after its headers (uploads "
           "included); past them the connection is closed."),
    Option("idle_timeout", float, 60.0,
           "Seconds an idle keep-alive connection stays open."),
    Option("header_size_limit", int, 65536,
           "Largest request head (request line and headers), in bytes."),
    Option("secure_cookies", bool, False,
           "Mark the pages' cookies Secure (set it when a TLS proxy serves them over "
           "HTTPS; requests that arrive as https get Secure cookies anyway)."),
)
AUTH = Section(
    "auth", "How requests are authenticated.",
    Option("strategy", str, "tokens",
           "tokens: token_file maps TOKEN: {project_id: ..., user_id: ..., roles: [admin]}; "
           "keystone: keystonemiddleware auth_token with the [keystone_authtoken] options."),
    Option("token_file", str, "", "The tokens file of the tokens strategy."),
)
KEYSTONE = Section(
    "keystone_authtoken",
    "With strategy = keystone: keystonemiddleware's auth_token options (www_authenticate_uri, "
    "auth_url, auth_type, ...), handed on as they are.",
    free_form=True,
)

SCHEMA = Schema(
    DEFAULTS, DATABASE, ENGINE, MURANO, AUTH, KEYSTONE, *engine_config.SCHEMA.sections.values(),
    title="murano-api --config-file murano-api.conf\n"
          "Relative paths are relative to this file's folder. The engine's sections "
          "([engine], [rabbitmq], [heat], [networking], [local_cloud]) configure the "
          "deployments the API process or its workers run; without [heat] they go to the "
          "embedded local cloud. [quotas] bounds what each project may have.\n"
          "MURANO_<SECTION>_<OPTION> environment variables override this file.",
)

_DEFAULT = SCHEMA.defaults()


def _unpacked_mb(murano: SectionValues) -> float:
    limit = murano.package_unpacked_limit
    return float(murano.package_size_limit * 10 if limit is None else limit)


@dataclass
class Settings:
    """Everything the API and the workers read from the configuration file."""

    bind_host: str = _DEFAULT.bind_host
    bind_port: int = _DEFAULT.bind_port
    api_threads: int = _DEFAULT.murano.api_workers
    database: str = f"sqlite:///{Path(DEFAULT_DB_FILE).expanduser()}"
    transport_url: str = _DEFAULT.transport_url
    task_queue: str = _DEFAULT.engine.task_queue
    result_queue: str = _DEFAULT.engine.result_queue
    max_deliveries: int = _DEFAULT.engine.max_deliveries
    task_lease: float = _DEFAULT.engine.task_lease
    stop_grace: float = _DEFAULT.engine.stop_grace
    static_action_timeout: float = _DEFAULT.engine.static_action_timeout
    static_action_workers: int = _DEFAULT.engine.static_action_workers
    static_action_workers_per_project: int = _DEFAULT.engine.static_action_workers_per_project
    task_workers: int = _DEFAULT.engine.task_workers
    environment_class: str = _DEFAULT.engine.environment_class
    packages_cache: Path = field(
        default_factory=lambda: Path(_DEFAULT.engine.packages_cache).expanduser())
    package_size_limit: int = int(_DEFAULT.murano.package_size_limit * MB)
    package_unpacked_limit: int = int(_unpacked_mb(_DEFAULT.murano) * MB)
    package_max_files: int = _DEFAULT.murano.package_max_files
    limit_param_default: int = _DEFAULT.murano.limit_param_default
    api_limit_max: int = _DEFAULT.murano.api_limit_max
    ui_form_workers: int = _DEFAULT.murano.ui_form_workers
    ui_form_workers_per_project: int = _DEFAULT.murano.ui_form_workers_per_project
    #: the [engine] form_* budget of one ui.yaml evaluation (None: no limit)
    form_time_limit: float | None = _DEFAULT.engine.form_time_limit or None
    form_step_limit: int | None = _DEFAULT.engine.form_step_limit or None
    form_memory_limit: int | None = _DEFAULT.engine.form_memory_limit or None
    connection_limit: int = _DEFAULT.murano.connection_limit
    header_timeout: float = _DEFAULT.murano.header_timeout
    body_timeout: float = _DEFAULT.murano.body_timeout
    idle_timeout: float = _DEFAULT.murano.idle_timeout
    header_size_limit: int = _DEFAULT.murano.header_size_limit
    secure_cookies: bool = _DEFAULT.murano.secure_cookies
    auth_strategy: str = _DEFAULT.auth.strategy
    token_file: Path | None = None
    keystone: dict[str, str] = field(default_factory=dict)
    #: each project's quotas ([quotas])
    quotas: QuotaTable = field(default_factory=lambda: quota_table(_DEFAULT))
    # The file itself: its engine sections configure the engine runs.
    config_file: Path | None = None

    @property
    def uses_broker(self) -> bool:
        return bool(self.transport_url)

    @property
    def dead_letter_queue(self) -> str:
        """Where RabbitMQ moves the tasks no worker finished in ``max_deliveries`` tries."""
        return f"{self.task_queue}.dead"


def load_settings(path: str | Path | None,
                  environ: Mapping[str, str] | None = None) -> Settings:
    """Read ``path`` (relative paths in it are relative to the file's folder), then the
    ``MURANO_<SECTION>_<OPTION>`` variables of ``environ`` (default ``os.environ``)."""
    values = SCHEMA.load(path, environ=os.environ if environ is None else environ)
    config_file = Path(path).resolve() if path is not None else None

    def local_path(text: str) -> Path:
        candidate = Path(text).expanduser()
        if candidate.is_absolute() or config_file is None:
            return candidate
        return config_file.parent / candidate

    db = values.database.connection
    if not db:
        default = Path(DEFAULT_DB_FILE).expanduser()
        default.parent.mkdir(parents=True, exist_ok=True)
        db = f"sqlite:///{default}"
    elif db.startswith("sqlite:///") and not db.startswith("sqlite:////"):
        db = "sqlite:///" + str(local_path(db[len("sqlite:///"):]))
    engine, murano, auth = values.engine, values.murano, values.auth
    quotas = quota_table(values, values.source)
    if not 0 < engine.static_action_workers < murano.api_workers:
        raise ConfigError(f"{values.source}: [engine] static_action_workers is "
                          f"{engine.static_action_workers}; it must be at least 1 and below "
                          f"[murano] api_workers ({murano.api_workers})")
    if not 0 < murano.ui_form_workers_per_project <= murano.ui_form_workers:
        raise ConfigError(f"{values.source}: [murano] ui_form_workers_per_project is "
                          f"{murano.ui_form_workers_per_project}; it must be at least 1 and "
                          f"at most ui_form_workers ({murano.ui_form_workers})")
    for name in ("connection_limit", "header_timeout", "body_timeout", "idle_timeout",
                 "header_size_limit"):
        if getattr(murano, name) <= 0:
            raise ConfigError(f"{values.source}: [murano] {name} must be positive, not "
                              f"{getattr(murano, name)}")
    for name, least, wanted in (("max_deliveries", 1, "at least 1"),
                                ("static_action_workers_per_project", 1, "at least 1"),
                                ("task_workers", 1, "at least 1"),
                                ("task_lease", 1, "at least 1 second"),
                                ("stop_grace", 0, "0 or more")):
        if getattr(engine, name) < least:
            raise ConfigError(f"{values.source}: [engine] {name} must be {wanted}, not "
                              f"{getattr(engine, name):g}")
    if engine.static_action_timeout <= 0:
        raise ConfigError(f"{values.source}: [engine] static_action_timeout must be "
                          f"positive, not {engine.static_action_timeout}")
    return Settings(
        bind_host=values.bind_host,
        bind_port=values.bind_port,
        api_threads=murano.api_workers,
        database=db,
        transport_url=values.transport_url,
        task_queue=engine.task_queue,
        result_queue=engine.result_queue,
        max_deliveries=engine.max_deliveries,
        task_lease=engine.task_lease,
        stop_grace=engine.stop_grace,
        static_action_timeout=engine.static_action_timeout,
        static_action_workers=engine.static_action_workers,
        static_action_workers_per_project=engine.static_action_workers_per_project,
        task_workers=engine.task_workers,
        environment_class=engine.environment_class,
        packages_cache=local_path(engine.packages_cache),
        package_size_limit=int(murano.package_size_limit * MB),
        package_unpacked_limit=int(_unpacked_mb(murano) * MB),
        package_max_files=murano.package_max_files,
        limit_param_default=murano.limit_param_default,
        api_limit_max=murano.api_limit_max,
        ui_form_workers=murano.ui_form_workers,
        ui_form_workers_per_project=murano.ui_form_workers_per_project,
        form_time_limit=engine.form_time_limit or None,
        form_step_limit=engine.form_step_limit or None,
        form_memory_limit=engine.form_memory_limit or None,
        connection_limit=murano.connection_limit,
        header_timeout=murano.header_timeout,
        body_timeout=murano.body_timeout,
        idle_timeout=murano.idle_timeout,
        header_size_limit=murano.header_size_limit,
        secure_cookies=murano.secure_cookies,
        auth_strategy=auth.strategy,
        token_file=local_path(auth.token_file) if auth.token_file else None,
        keystone=dict(values.keystone_authtoken),
        quotas=quotas,
        config_file=config_file,
    )
