"""Engine workers: the API hands tasks to them and stores what they send back.

Without a broker the API runs tasks in its own threads (:class:`LocalDispatcher`).
With ``transport_url`` set, tasks go to a durable RabbitMQ queue
(:class:`AmqpDispatcher`); any number of ``murano-engine worker`` processes
take them one at a time, send every status report and the final result to
the result queue as they go, and acknowledge the task only when it is done,
so the broker hands the task of a worker that died to another one. The API
consumes the result queue and writes reports, models and task states.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kombu import Connection, Consumer, Exchange, Queue
from kombu.mixins import ConsumerMixin

from murano_engine.api import db, environments
from murano_engine.api.auth import Context
from murano_engine.api.catalog import CatalogLoader
from murano_engine.api.config import SCHEMA, Settings, load_settings
from murano_engine.api.errors import ApiError, Unavailable

LOG = logging.getLogger(__name__)
Reporter = Callable[[dict[str, Any]], None]


# -- running work (the same code in threads and in worker processes) -------------

def json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class EngineServices:
    """The cloud and the agents' broker of one process, opened for its first task.

    Every task of the process shares them (the local cloud keeps its stacks and
    the servers' agents in the process that opened its state folder); the
    engine sections of the API's configuration file say what they are.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._services: dict[str, Any] | None = None

    def get(self) -> dict[str, Any]:
        with self._lock:
            if self._services is None:
                from murano_engine.config import load_config
                from murano_engine.deploy import engine_services

                self._services = engine_services(
                    load_config(self.settings.config_file, schema=SCHEMA))
            return self._services

    def close(self) -> None:
        with self._lock:
            services, self._services = self._services, None
        if services is not None:
            from murano_engine.deploy import close_services

            close_services(services)


def run_engine_task(store: db.Store, settings: Settings, task: Mapping[str, Any],
                    reporter: Reporter, services: EngineServices) -> dict[str, Any]:
    """Run one task with the catalog's packages; failures become exception results."""
    from murano_engine.tasks import describe_failure, run_task

    try:
        loader = CatalogLoader(store, settings.packages_cache, str(task.get("project_id")))
        result = run_task(task, loader, reporter=reporter, services=services.get())
    except Exception as exc:  # noqa: BLE001 - a task that cannot start still ends
        LOG.exception("task %s could not run", task.get("task_id"))
        failure = describe_failure(exc)
        reporter({"id": task.get("id"), "text": failure["message"], "level": "error",
                  "details": failure.get("traceback"), "timestamp": time.time()})
        result = {"action": {"result": failure, "isException": True}, "model": None}
    return json_safe(result)


def run_static_action(store: db.Store, settings: Settings, project_id: str,
                      request: Mapping[str, Any]) -> dict[str, Any]:
    """Call a public static method: ``{"status": 200, "result"}`` or a status and message."""
    from murano_engine.dsl import errors, serializer
    from murano_engine.dsl.executor import Executor

    loader = CatalogLoader(store, settings.packages_cache, project_id)
    class_name = str(request.get("className") or "")
    method_name = str(request.get("methodName") or "")
    try:
        if request.get("packageName"):
            package = loader.find_package(str(request["packageName"]),
                                          request.get("classVersion") or "=0")
            cls = package.find_class(class_name)
        else:
            cls = loader.find_class(class_name)
        method = cls.find_method(method_name)
        if method is None:
            return {"status": 404, "message": f"method {method_name} is not found in "
                                              f"{class_name}"}
        if method.usage not in ("Static", "Extension") or method.scope != "Public":
            return {"status": 404, "message": f"method {method_name} of {class_name} is not "
                                              f"a public static method"}
        executor = Executor(loader, services={"reporter": None})
        result = executor.invoke(method, cls.ref, [], dict(request.get("parameters") or {}),
                                 None)
        return {"status": 200, "result": json_safe(serializer.serialize_value(result))}
    except (errors.NoClassFound, errors.NoPackageFound, errors.NoMethodFound) as exc:
        return {"status": 404, "message": str(exc)}
    except (errors.ContractViolationException, errors.NoMatchingMethodException,
            ValueError, TypeError) as exc:
        return {"status": 400, "message": str(exc)}
    except Exception as exc:  # noqa: BLE001 - every failure is answered
        message = getattr(exc, "message", None) or str(exc)
        status = 400 if "ContractViolation" in type(exc).__name__ else 503
        return {"status": status, "message": message}


def static_outcome(answer: Mapping[str, Any]) -> Any:
    if answer.get("status") == 200:
        return answer.get("result")
    raise ApiError(str(answer.get("message")), status=int(answer.get("status") or 503))


def load_green_threads() -> None:
    """Load eventlet in the main thread, before any engine task runs in another one.

    Imported first from an engine thread, eventlet leaves that thread's state
    lock held when the thread ends: joining it (the dispatcher's shutdown,
    interpreter exit) then never returns and the process hangs at SIGTERM.
    """
    from murano_engine import concurrency

    concurrency.sleep(0)


# -- in-process ------------------------------------------------------------------

class LocalDispatcher:
    """Runs each task in a thread of the API process."""

    def __init__(self, store: db.Store, settings: Settings, threads: int = 2) -> None:
        self.store = store
        self.settings = settings
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="engine")
        self.services = EngineServices(settings)

    def submit(self, task: dict[str, Any]) -> None:
        self.pool.submit(self._run, task)

    def _run(self, task: dict[str, Any]) -> None:
        task_id = task["task_id"]
        try:
            result = run_engine_task(self.store, self.settings, task,
                                     lambda r: environments.store_report(self.store, task_id, r),
                                     self.services)
            environments.process_result(self.store, task_id, result)
        except Exception:  # noqa: BLE001 - never leave an environment taken
            LOG.exception("task %s failed in the API process", task_id)
            environments.release_stuck(self.store, task_id, "the engine failed; see the log")

    def call_static(self, context: Context, request: Mapping[str, Any]) -> Any:
        return static_outcome(run_static_action(self.store, self.settings, context.project_id,
                                                request))

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=False)
        self.services.close()


# -- RabbitMQ --------------------------------------------------------------------

def _queues(settings: Settings) -> tuple[Any, Any]:
    exchange = Exchange("", type="direct")
    return (Queue(settings.task_queue, exchange, routing_key=settings.task_queue, durable=True),
            Queue(settings.result_queue, exchange, routing_key=settings.result_queue,
                  durable=True))


class AmqpDispatcher:
    """Publishes tasks to the task queue and consumes the result queue in a thread."""

    def __init__(self, store: db.Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.task_queue, self.result_queue = _queues(settings)
        self._publisher = Connection(settings.transport_url)
        self._lock = threading.Lock()
        with self._lock:
            self.task_queue(self._publisher.default_channel).declare()
            self.result_queue(self._publisher.default_channel).declare()
        self._listener = ResultListener(Connection(settings.transport_url), self)
        self._thread = threading.Thread(target=self._listener.run, name="results", daemon=True)
        self._thread.start()

    def publish(self, body: dict[str, Any], **properties: Any) -> None:
        with self._lock:
            producer = self._publisher.Producer(serializer="json")
            self._publisher.ensure(producer, producer.publish, max_retries=3)(
                body, routing_key=self.settings.task_queue, delivery_mode=2,
                declare=[self.task_queue], **properties)

    def submit(self, task: dict[str, Any]) -> None:
        try:
            self.publish({"kind": "task", "task": task})
        except Exception as exc:  # noqa: BLE001 - the broker is down: free the environment
            environments.release_stuck(self.store, task["task_id"],
                                       f"the task could not be handed to a worker: {exc}")
            raise Unavailable(f"the message broker is not reachable: {exc}") from None

    def call_static(self, context: Context, request: Mapping[str, Any]) -> Any:
        """Ask a worker and wait for its answer (``static_action_timeout`` seconds)."""
        reply = Queue(f"murano-reply-{uuid.uuid4().hex}", exclusive=True, auto_delete=True)
        correlation = uuid.uuid4().hex
        answers: list[dict] = []
        with Connection(self.settings.transport_url) as connection:
            channel = connection.channel()
            reply(channel).declare()

            def on_answer(body: dict, message: Any) -> None:
                if message.properties.get("correlation_id") == correlation:
                    answers.append(body)
                message.ack()

            with Consumer(channel, queues=[reply], callbacks=[on_answer], accept=["json"]):
                self.publish({"kind": "static", "project_id": context.project_id,
                              "request": dict(request)},
                             reply_to=reply.name, correlation_id=correlation)
                deadline = time.monotonic() + self.settings.static_action_timeout
                while not answers and time.monotonic() < deadline:
                    try:
                        connection.drain_events(timeout=max(0.05, deadline - time.monotonic()))
                    except TimeoutError:
                        break
        if not answers:
            raise Unavailable("no engine worker answered in time")
        return static_outcome(answers[0])

    def handle_result(self, body: Mapping[str, Any]) -> None:
        if body.get("kind") == "report":
            environments.store_report(self.store, str(body["task_id"]), body["report"])
        elif body.get("kind") == "result":
            environments.process_result(self.store, str(body["task_id"]), body["result"])

    def close(self) -> None:
        self._listener.should_stop = True
        self._thread.join(timeout=5)
        self._publisher.release()


class ResultListener(ConsumerMixin):
    """Consumes reports and results; acknowledges each once it is stored."""

    def __init__(self, connection: Any, dispatcher: AmqpDispatcher) -> None:
        self.connection = connection
        self.dispatcher = dispatcher

    def get_consumers(self, consumer_class: Any, channel: Any) -> list:
        return [consumer_class(queues=[self.dispatcher.result_queue], accept=["json"],
                               callbacks=[self.on_message], prefetch_count=50)]

    def on_message(self, body: dict, message: Any) -> None:
        try:
            self.dispatcher.handle_result(body)
        except Exception:  # noqa: BLE001 - keep the message for the next try
            LOG.exception("could not store a result; it will be retried")
            message.requeue()
            time.sleep(1)
            return
        message.ack()


class Worker(ConsumerMixin):
    """``murano-engine worker``: takes tasks one at a time, acknowledges when done."""

    def __init__(self, connection: Any, store: db.Store, settings: Settings) -> None:
        self.connection = connection
        self.store = store
        self.settings = settings
        self.task_queue, self.result_queue = _queues(settings)
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        self._results = connection.clone()
        self.services = EngineServices(settings)

    def get_consumers(self, consumer_class: Any, channel: Any) -> list:
        return [consumer_class(queues=[self.task_queue], accept=["json"],
                               callbacks=[self.on_message], prefetch_count=1)]

    def send(self, body: dict[str, Any], **properties: Any) -> None:
        producer = self._results.Producer(serializer="json")
        routing = properties.pop("routing_key", self.settings.result_queue)
        self._results.ensure(producer, producer.publish, max_retries=5)(
            json_safe(body), routing_key=routing, delivery_mode=2, **properties)

    def on_message(self, body: dict, message: Any) -> None:
        if body.get("kind") == "static":
            answer = run_static_action(self.store, self.settings, str(body.get("project_id")),
                                       body.get("request") or {})
            self.send(answer, routing_key=message.properties.get("reply_to"),
                      correlation_id=message.properties.get("correlation_id"))
        elif body.get("kind") == "task":
            self.run_message_task(body["task"], bool(message.delivery_info.get("redelivered")))
        message.ack()

    def run_message_task(self, task: dict[str, Any], redelivered: bool) -> None:
        task_id = task["task_id"]

        def reporter(report: dict[str, Any]) -> None:
            self.send({"kind": "report", "task_id": task_id, "report": report})

        again = " again, after another worker stopped" if redelivered else ""
        reporter({"id": task.get("id"), "text": f"Worker {self.name} took the task{again}",
                  "level": "info", "timestamp": time.time()})
        LOG.info("task %s for environment %s%s", task_id, task.get("id"), again)
        result = run_engine_task(self.store, self.settings, task, reporter, self.services)
        self.send({"kind": "result", "task_id": task_id, "result": result})


def serve_worker(options: argparse.Namespace) -> int:
    """Handler of ``murano-engine worker --config-file FILE``."""
    settings = load_settings(options.config_file)
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    if not settings.uses_broker:
        raise SystemExit("error: the configuration has no transport_url; the API runs "
                         "tasks itself")
    threading.stack_size(256 * 1024 * 1024)
    load_green_threads()
    store = db.Store(settings.database)
    worker = Worker(Connection(settings.transport_url), store, settings)

    def stop(_signum: int, _frame: Any) -> None:
        worker.should_stop = True

    signal.signal(signal.SIGTERM, stop)
    LOG.info("worker %s takes tasks from %s", worker.name, settings.task_queue)
    thread = threading.Thread(target=worker.run, name="worker")
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.5)
    except KeyboardInterrupt:
        worker.should_stop = True
        thread.join()
    finally:
        worker.services.close()
    return 0
