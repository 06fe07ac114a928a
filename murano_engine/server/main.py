"""``murano-api --config-file FILE``: migrate the database and serve the API.

The one place the server side is put together: :func:`build` makes the HTTP API
(:mod:`murano_engine.api`), mounts the web pages (:mod:`murano_engine.web`) on it
and gives it its dispatcher, the in-process worker
(:mod:`murano_engine.server.in_process`) or RabbitMQ's task queue; none of those
parts imports another of them.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from murano_engine.api import auth, workers
from murano_engine.api.app import Api
from murano_engine.backend import db
from murano_engine.backend.settings import ConfigError, Settings, load_settings
from murano_engine.backend.task_queues import QueueMismatch
from murano_engine.messaging.transport import TransportError
from murano_engine.server import worker
from murano_engine.server.in_process import LocalDispatcher
from murano_engine.web.pages import WebUi, token_from_cookie

LOG = logging.getLogger(__name__)


def compose(settings: Settings, store: db.Store, dispatcher: workers.Dispatcher,
            identify: Callable[[dict[str, Any]], auth.Context]) -> Api:
    """The API with the web pages mounted under ``/ui/``."""
    api = Api(settings, store, dispatcher, identify)
    api.web = WebUi(api)
    return api


def build(settings: Settings) -> tuple[Any, Any]:
    """The WSGI application (behind Keystone when configured) and its dispatcher."""
    store = db.Store(settings.database, settings.quotas)
    db.upgrade(store.engine)
    dispatcher: Any = workers.AmqpDispatcher(store, settings) if settings.uses_broker \
        else LocalDispatcher(store, settings, settings.task_workers)
    if settings.auth_strategy == "keystone":
        api = compose(settings, store, dispatcher, auth.keystone_identity)
        app: Any = token_from_cookie(auth.wrap_keystone(api, settings.keystone), api.web)
    elif settings.auth_strategy == "tokens":
        if settings.token_file is None:
            LOG.warning("NO AUTHENTICATION IS CONFIGURED: every request will be refused "
                        "(401). Set [auth] token_file (see murano_engine/api/"
                        "tokens.yaml.sample) or [auth] strategy = keystone.")
        elif not settings.token_file.is_file():
            raise SystemExit(f"error: [auth] token_file {settings.token_file} does not exist "
                             "(murano_engine/api/tokens.yaml.sample shows its format)")
        app = compose(settings, store, dispatcher, auth.TokenFile(settings.token_file))
    else:
        raise SystemExit(f"error: unknown auth strategy {settings.auth_strategy!r}")
    return app, dispatcher


def quiet_migrations() -> None:
    """Of alembic's INFO lines only those of a migration it runs are logged: its plugins
    and the database's dialect (eight lines at every start) say nothing to the user."""
    logging.getLogger("alembic").setLevel(logging.WARNING)
    migration = logging.getLogger("alembic.runtime.migration")
    migration.setLevel(logging.INFO)
    migration.addFilter(lambda record: record.getMessage().startswith("Running upgrade"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="murano-api", description="Murano v1 API server.")
    parser.add_argument("--config-file", help="INI file (see murano-api.conf.sample)")
    parser.add_argument("--quiet", action="store_true", help="no request log")
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    if options.quiet:
        logging.getLogger("murano_engine.api.requests").setLevel(logging.WARNING)
    quiet_migrations()
    sys.setrecursionlimit(100_000)
    worker.load_green_threads()
    try:
        settings = load_settings(options.config_file)
        app, dispatcher = build(settings)
    except ConfigError as exc:
        raise SystemExit(exc.lines()) from None
    except (QueueMismatch, TransportError) as exc:
        raise SystemExit(f"error: {exc}") from None

    from murano_engine.server import listener
    from murano_engine.web import favicon, form_pool

    server = listener.create(favicon.serving(app), settings)  # /favicon.ico before any login

    def stop(_signum: int, _frame: Any) -> None:
        if form_pool.STOPPING.is_set():
            return  # stopping already: a second signal must not cut the dispatcher's close
        form_pool.STOPPING.set()  # ui.yaml evaluations end at their next step
        server.close()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    LOG.info("murano-api serves http://%s:%d/ (%s, %s)", settings.bind_host, settings.bind_port,
             "RabbitMQ workers" if settings.uses_broker else "in-process engine",
             settings.database.split("://")[0])
    try:
        server.run()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        ended = dispatcher.close(grace=settings.stop_grace)
    if not ended:  # the tasks' threads end with the process: the next one resumes them
        logging.shutdown()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
