"""Engine workers: processes that run the tasks ``murano-api`` queues.

``murano-engine worker`` takes tasks from a durable RabbitMQ queue, up to ``[engine]
task_workers`` at once (each in a thread of its own), sends every status report and the
final result to the result queue as it goes, and acknowledges a task only when it is
done, so the broker hands the task of a worker that died to another one. Every run is
journaled in the database (:mod:`murano_engine.backend.journal_store`): the worker that
takes a task over replays what the dead one did and goes on from there. A run that
cannot record a step (the database or the broker went away) stops there and is run again
from its journal, after a pause, by the worker that holds it. A task handed out
``max_deliveries`` times is dead-lettered; the API fails it. The API also runs tasks in
its own threads (no broker) with the same :func:`run_engine_task`. Packages come from
the catalog's database.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import logging
import os
import queue
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from kombu import Connection
from kombu.mixins import ConsumerMixin
from sqlalchemy.exc import InterfaceError, OperationalError, SQLAlchemyError

from murano_common.options import Values
from murano_engine.backend import db
from murano_engine.backend.journal_store import DbJournalStore, LeaseLost
from murano_engine.backend.package_loader import CatalogLoader
from murano_engine.backend.settings import SCHEMA, ConfigError, Settings, load_settings
from murano_engine.backend.shares import ALL_TAKEN, SHARE_TAKEN, ProjectShares
from murano_engine.backend.task_queues import (
    QueueMismatch,
    declare_queues,
    prepare_engine_transport,
    task_queues,
)
from murano_engine.dsl import concurrency, errors, serializer
from murano_engine.dsl.budget import Budget
from murano_engine.dsl.executor import Executor
from murano_engine.engine.config import load_config
from murano_engine.engine.interpreter import build_interpreter
from murano_engine.engine.journal import Journal, RecordingFailed, journal_key
from murano_engine.engine.services import close_services, engine_services, project_config
from murano_engine.engine.tasks import describe_failure, run_task
from murano_engine.messaging.transport import TransportError

LOG = logging.getLogger(__name__)
Reporter = Callable[[dict[str, Any]], None]
#: seconds a worker waits before it runs again, from its journal, a task whose run
#: could not record a step (the database or the broker was away): one after another,
#: then the last each time
RETRY_PAUSES = (1.0, 2.0, 5.0, 10.0, 30.0)


def json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class EngineServices:
    """The cloud and the agents' broker of each project, opened for its first task.

    The engine sections of the API's configuration file say what they are. On
    the local cloud every project has a cloud of its own (its own state folder,
    so its own stacks, networks and servers): nothing one project lists or
    reaches belongs to another.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.interpreter = build_interpreter()
        self.interpreter.warm()
        self._lock = threading.Lock()
        self._projects: dict[str, dict[str, Any]] = {}

    @functools.cached_property
    def config(self) -> Values:
        """The engine sections of the configuration file, read once."""
        return load_config(self.settings.config_file, schema=SCHEMA)

    @functools.cached_property
    def journal_key(self) -> bytes | None:
        """The key of the tasks' journal digests (``[engine] journal_key_file``)."""
        return journal_key(self.config["engine"]["journal_key_file"])

    def budget(self, seconds: float | None = None) -> Budget:
        """A fresh budget for one task, as the configuration gives it; its clock no
        longer than ``seconds`` when given."""
        configured = Budget.from_config(self.config)
        if seconds is None:
            return configured
        return Budget(min(filter(None, (configured.seconds, seconds))), configured.steps,
                      configured.memory_mb)

    def get(self, project_id: str) -> dict[str, Any]:
        with self._lock:
            services = self._projects.get(project_id)
            if services is None:
                services = self._projects[project_id] = engine_services(
                    project_config(self.config, project_id))
            return services

    def close(self) -> None:
        with self._lock:
            projects, self._projects = list(self._projects.values()), {}
        for services in projects:
            close_services(services)


def run_engine_task(store: db.Store, settings: Settings, task: Mapping[str, Any],
                    reporter: Reporter, services: EngineServices,
                    begin: Callable[[int], None] | None = None,
                    journaled: Callable[[Journal], None] | None = None,
                    holder: str | None = None) -> dict[str, Any]:
    """Run one task with the catalog's packages; failures become exception results.

    The run is journaled in the database under the task's id: when the journal
    already holds entries (a worker died running the task) the run replays
    them and goes on live where they end. ``begin`` is called before the run
    with the number of steps the journal already holds, ``journaled`` with the
    journal (whose ``cancel()`` stops the run at its next step: it then raises
    :class:`~murano_engine.engine.journal.Cancelled`, and no result is made). With
    ``holder``, the journal records only while the task is that holder's, and the
    run stops (:class:`~murano_engine.backend.journal_store.LeaseLost`) once it is not.
    A database that does not answer is not the task's failure: the run stops with
    :class:`~murano_engine.engine.journal.RecordingFailed`, to be run again later.
    """
    try:
        recorded = DbJournalStore(store, str(task["task_id"]), services.journal_key, holder)
        if begin is not None:
            begin(sum(1 for entry in recorded.load() if entry.get("t") != "begin"))
        journal = Journal(recorded)
        if journaled is not None:
            journaled(journal)
        loader = CatalogLoader(store, settings.packages_cache, str(task.get("project_id")),
                               services.interpreter)
        project_services = services.get(str(task.get("project_id")))
        try:
            result = run_task(task, loader, reporter=reporter, services=project_services,
                              budget=services.budget(), outside=journal)
        finally:
            # The task ends once the servers it deleted are gone, as on the command line;
            # its stacks are let go, for whichever process (worker) runs their next task.
            cloud = project_services["cloud"]
            try:
                cloud.settle()
            finally:
                try:
                    cloud.let_go(journal.touched()["stacks"])
                finally:
                    project_services["agents"].let_go(str(task.get("id")))
        if journal.replayed:
            LOG.info("task %s: %d steps came from its journal", task.get("task_id"),
                     journal.replayed)
        if not task.get("action") and not result["action"]["isException"]:
            remove_result_queues(project_services["agents"], str(task.get("id")),
                                 task.get("model"))
    except (OperationalError, InterfaceError) as exc:  # reading the journal or packages
        raise RecordingFailed(f"the database did not answer: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - a task that cannot start still ends
        LOG.exception("task %s could not run", task.get("task_id"))
        failure = describe_failure(exc)
        reporter({"id": task.get("id"), "text": failure["message"], "level": "error",
                  "details": failure.get("traceback"), "timestamp": time.time()})
        result = {"action": {"result": failure, "isException": True}, "model": None}
    return json_safe(result)


#: the attribute a region (io.murano.CloudRegion) keeps its stack's name in; its agents
#: send results to the queue named for it
REGION_NAME_ATTRIBUTE = ("io.murano.CloudRegion", "generatedStackName")


def remove_result_queues(agents: Any, environment_id: str,
                         model: Mapping[str, Any] | None) -> None:
    """After an environment's deletion: the result queues of its regions (as the
    command line's ``destroy`` removes every queue its runs made). The model names
    the regions; the queues are this environment's whatever it says."""
    from murano_common import amqp
    regions = [""]  # hosts outside any region answer on the environment's own queue
    regions += [entry[3] for entry in (model or {}).get("Attributes") or ()
                if isinstance(entry, list | tuple) and len(entry) == 4
                and tuple(entry[1:3]) == REGION_NAME_ATTRIBUTE and isinstance(entry[3], str)]
    for region in regions:
        try:
            agents.remove_region(amqp.environment_region(environment_id, region))
        except OSError as exc:
            LOG.warning("the result queue of region %s stays: %s", region, exc)


def run_static_action(store: db.Store, settings: Settings, services: EngineServices,
                      project_id: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """Call a public static method: ``{"status": 200, "result"}`` or a status and message."""
    loader = CatalogLoader(store, settings.packages_cache, project_id, services.interpreter)
    class_name = str(request.get("className") or "")
    method_name = str(request.get("methodName") or "")
    timeout = settings.static_action_timeout
    stopped_at_timeout = False
    budget = None
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
        # Nobody waits past static_action_timeout: the call stops there too.
        budget = services.budget(timeout)
        stopped_at_timeout = bool(timeout) and budget.seconds == timeout
        return {"status": 200, "result": _invoke(loader, cls, method, request, budget)}
    except (errors.NoClassFound, errors.NoPackageFound, errors.NoMethodFound) as exc:
        return {"status": 404, "message": str(exc)}
    except (errors.ContractViolationException, errors.NoMatchingMethodException,
            ValueError, TypeError) as exc:
        return {"status": 400, "message": str(exc)}
    except errors.TimeBudgetExceededError as exc:
        if stopped_at_timeout:  # the caller's clock, which can run out first: one answer
            return timed_out(f"{class_name}.{method_name}", timeout)
        return {"status": 503, "message": getattr(exc, "message", None) or str(exc)}
    except Exception as exc:  # noqa: BLE001 - every failure is answered
        message = getattr(exc, "message", None) or str(exc)
        status = 400 if "ContractViolation" in type(exc).__name__ else 503
        return {"status": status, "message": message}
    finally:
        if budget is not None:
            budget.release()


def _invoke(loader: CatalogLoader, cls: Any, method: Any, request: Mapping[str, Any],
            budget: Budget) -> Any:
    """The static method's result as JSON data; its executor and objects end with this
    call, before the budget's release collects what they held."""
    executor = Executor(loader, services={"reporter": None}, budget=budget)
    result = executor.invoke(method, cls.ref, [], dict(request.get("parameters") or {}), None)
    return json_safe(serializer.serialize_value(result))


def timed_out(name: str, timeout: float) -> dict[str, Any]:
    """The answer to a static action that did not finish within ``timeout``."""
    return {"status": 504, "message": f"static action {name} did not finish within "
                                      f"static_action_timeout ({timeout:g} s)"}


class StaticActions:
    """Runs static actions in threads of their own, ``static_action_workers`` at most.

    A caller waits ``static_action_timeout`` seconds, then gets a 504 answer;
    when every thread is busy it gets a 503 at once. A timed-out action keeps
    its thread until it ends, so runaway actions never take more threads than
    that and the threads answering other requests stay free. The threads are
    daemons: a runaway action does not hold up the process's exit.
    """

    def __init__(self, store: db.Store, settings: Settings, services: EngineServices) -> None:
        self.store = store
        self.settings = settings
        self.services = services
        #: a project's share: one project's runaway actions leave the others slots
        self._slots = ProjectShares(settings.static_action_workers,
                                    settings.static_action_workers_per_project)

    def _take_slot(self, project_id: str) -> dict[str, Any] | None:
        """Take a slot for ``project_id``; the 503 or 429 answer when there is none."""
        refused = self._slots.take(project_id)
        if refused == ALL_TAKEN:
            return {"status": 503, "message": f"{self.settings.static_action_workers} static "
                                              "actions are running, as many as "
                                              "static_action_workers allows; try again later"}
        if refused == SHARE_TAKEN:
            return {"status": 429, "message": f"project {project_id} runs "
                                              f"{self._slots.per_project} static actions, as "
                                              "many as static_action_workers_per_project "
                                              "allows; try again later"}
        return None

    def call(self, project_id: str, request: Mapping[str, Any]) -> dict[str, Any]:
        """The answer of :func:`run_static_action`, or a 503/429/504 one."""
        name = f"{request.get('className')}.{request.get('methodName')}"
        return self._answer(project_id, f"static action {name}", lambda: run_static_action(
            self.store, self.settings, self.services, project_id, request),
            lambda: timed_out(name, self.settings.static_action_timeout))

    def preview(self, project_id: str, task: Mapping[str, Any]) -> dict[str, Any]:
        """The answer of :func:`murano_engine.server.preview.run_preview` (the plan of a
        task), in the same slots as static actions, or a 503/429/504 one."""
        from murano_engine.server.preview import late_preview, run_preview
        return self._answer(project_id, f"preview of environment {task.get('id')}",
                            lambda: run_preview(self.store, self.settings, self.services,
                                                task),
                            lambda: late_preview(self.settings.static_action_timeout))

    def _answer(self, project_id: str, what: str, work: Callable[[], dict[str, Any]],
                late: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """``work()``'s answer, run in a thread of its own holding one of the project's
        slots; ``late()`` once ``static_action_timeout`` has passed."""
        refused = self._take_slot(project_id)
        if refused is not None:
            return refused
        answer: Future[dict[str, Any]] = Future()

        def run() -> None:
            # The slot is free before the caller has its answer: a caller that calls
            # again at once must not find its own finished action still holding it.
            try:
                result = work()
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                self._slots.free(project_id)
                answer.set_exception(exc)
            else:
                self._slots.free(project_id)
                answer.set_result(result)

        with concurrency.interpreter_stacks():
            threading.Thread(target=run, name=what, daemon=True).start()
        timeout = self.settings.static_action_timeout
        try:
            return answer.result(timeout=timeout)
        except TimeoutError:
            LOG.warning("%s of project %s runs past %g s", what, project_id, timeout)
            return late()


def load_green_threads() -> None:
    """Load eventlet in the main thread, before any engine task runs in another one.

    Imported first from an engine thread, eventlet leaves that thread's state
    lock held when the thread ends: joining it (the dispatcher's shutdown,
    interpreter exit) then never returns and the process hangs at SIGTERM.
    """
    from murano_engine.dsl import concurrency

    concurrency.sleep(0)


def holder_name() -> str:
    """This process's name on the tasks it takes: host and pid, and a token of its own
    (two containers on one host network may both be pid 1 under one hostname, and the
    journal's fence must tell them apart)."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"


class Worker(ConsumerMixin):
    """``murano-engine worker``: takes up to ``task_workers`` tasks at once, each run in a
    thread of its own and acknowledged (on the consumer's thread) once done."""

    def __init__(self, connection: Any, store: db.Store, settings: Settings) -> None:
        self.connection = connection
        self.store = store
        self.settings = settings
        self.task_queue = task_queues(settings).tasks
        self.name = holder_name()
        self._results = connection.clone()
        self._results_lock = threading.Lock()  # one publisher at a time on that connection
        self.services = EngineServices(settings)
        self.static = StaticActions(store, settings, self.services)
        #: the messages of the tasks that ended, for the consumer's thread to acknowledge
        self._done: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._running: set[threading.Thread] = set()
        self._running_lock = threading.Lock()

    def get_consumers(self, consumer_class: Any, channel: Any) -> list:
        return [consumer_class(queues=[self.task_queue], accept=["json"],
                               callbacks=[self.on_message],
                               prefetch_count=self.settings.task_workers)]

    def on_iteration(self) -> None:
        """Acknowledge the tasks that ended (a channel is its connection's thread's)."""
        while True:
            try:
                message = self._done.get_nowait()
            except queue.Empty:
                return
            try:
                message.ack()
            except Exception as exc:  # noqa: BLE001 - the connection was lost meanwhile
                LOG.warning("a finished task's message could not be acknowledged (%s); "
                            "handed out again, it is found finished", exc)

    def wait_for_tasks(self) -> None:
        """Wait for the tasks running to end (the worker stops: they stop at their next
        pause; their messages, not acknowledged, go back to the queue)."""
        while True:
            with self._running_lock:
                running = list(self._running)
            if not running:
                return
            for thread in running:
                thread.join()

    def send(self, body: dict[str, Any], **properties: Any) -> None:
        routing = properties.pop("routing_key", self.settings.result_queue)
        with self._results_lock:
            producer = self._results.Producer(serializer="json")
            self._results.ensure(producer, producer.publish, max_retries=5)(
                json_safe(body), routing_key=routing, delivery_mode=2, **properties)

    def on_message(self, body: dict, message: Any) -> None:
        if body.get("kind") in ("static", "preview"):
            project = str(body.get("project_id"))
            answer = self.static.call(project, body.get("request") or {}) \
                if body["kind"] == "static" else self.static.preview(project, body["task"])
            self.send(answer, routing_key=message.properties.get("reply_to"),
                      correlation_id=message.properties.get("correlation_id"))
        elif body.get("kind") == "task":
            # RabbitMQ's count of the earlier deliveries that no worker acknowledged.
            earlier = int((message.headers or {}).get("x-delivery-count") or 0)
            self._start_task(body["task"], earlier + 1, message)
            return
        message.ack()

    def _start_task(self, task: dict[str, Any], delivery: int, message: Any) -> None:
        """Run the task in a thread of its own; its message is acknowledged once it ended."""
        def run() -> None:
            try:
                if self.run_message_task(task, delivery):
                    self._done.put(message)
                # else the worker stops: unacknowledged, the task goes back to the queue
                # as its connection closes, for another worker (a requeue now would hand
                # it back to this one first, and count a delivery more)
            except BaseException:
                LOG.exception("task %s broke the worker; it stops (the task goes back to "
                              "the queue)", task.get("task_id"))
                self.should_stop = True
            finally:
                with self._running_lock:
                    self._running.discard(threading.current_thread())

        thread = threading.Thread(target=run, name=f"task {task.get('task_id')}",
                                  daemon=True)
        with self._running_lock:
            self._running.add(thread)
        with concurrency.interpreter_stacks():  # it runs MuranoPL (the stack is made here)
            thread.start()

    def run_message_task(self, task: dict[str, Any], delivery: int) -> bool:
        """Run a task (the ``delivery``-th time it is handed out), unless its result is
        in; a run that could not record a step is run again from its journal after a
        pause. False when the worker stopped before the task ended."""
        task_id = task["task_id"]
        pauses = itertools.chain(RETRY_PAUSES, itertools.repeat(RETRY_PAUSES[-1]))
        taken = retried = False
        while True:
            try:
                # taken again only while no other worker took it meanwhile
                if not db.take_task(self.store, task_id, self.name, again=taken):
                    LOG.info("task %s is finished, its environment is gone or another "
                             "worker runs it; nothing to run", task_id)
                    return True
                taken = True
                self._run_message_task(task, delivery, retried)
                return True
            except LeaseLost as exc:  # another worker has the task (the broker gave it on)
                LOG.error("task %s stopped here: %s", task_id, exc)
                return True
            except (RecordingFailed, SQLAlchemyError) as exc:
                pause = next(pauses)
                LOG.error("task %s stopped: %s; it runs again from its journal in %g s",
                          task_id, exc, pause)
                if not self._pause(pause):
                    return False
                retried = True

    def _pause(self, seconds: float) -> bool:
        """Wait ``seconds``; False as soon as the worker is asked to stop."""
        deadline = time.monotonic() + seconds
        while not self.should_stop:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            time.sleep(min(left, 0.2))
        return False

    def _run_message_task(self, task: dict[str, Any], delivery: int, retried: bool) -> None:
        task_id = task["task_id"]

        def reporter(report: dict[str, Any]) -> None:
            self.send({"kind": "report", "task_id": task_id, "report": report})

        def begin(steps: int) -> None:
            text = f"Worker {self.name} took the task"
            if retried:
                text += (f" up again (it could not record a step); {steps} steps come "
                         f"from its journal")
            elif delivery > 1 or steps:
                text += (f" again, after another worker stopped; {steps} steps come from its "
                         f"journal (delivery {delivery} of at most "
                         f"{self.settings.max_deliveries})")
            reporter({"id": task.get("id"), "text": text, "level": "info",
                      "timestamp": time.time()})
            LOG.info("task %s for environment %s, delivery %d: %d steps journaled", task_id,
                     task.get("id"), delivery, steps)

        started = time.monotonic()
        result = run_engine_task(self.store, self.settings, task, reporter, self.services,
                                 begin, holder=self.name)
        self.send({"kind": "result", "task_id": task_id, "result": result})
        LOG.info("task %s for environment %s: %s %s in %.1f s", task_id, task.get("id"),
                 describe_action(task),
                 "failed" if (result.get("action") or {}).get("isException") else "done",
                 time.monotonic() - started)


def describe_action(task: Mapping[str, Any]) -> str:
    """What a task does, for the log: ``deploy``, ``action scaleTo on <id>``, ``delete``."""
    action = task.get("action")
    if not action:
        return "delete"
    if action.get("method") == "deploy":
        return "deploy"
    return f"action {action.get('method')} on {action.get('object_id')}"


def serve_worker(options: argparse.Namespace) -> int:
    """Handler of ``murano-engine worker --config FILE``."""
    if not options.config_file:
        raise SystemExit("error: worker takes --config FILE (murano-api's configuration)")
    try:
        settings = load_settings(options.config_file)
    except ConfigError as exc:
        raise SystemExit(exc.lines()) from None
    logging.basicConfig(level=logging.INFO, force=True,  # the CLI set WARNING before
                        format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    if not settings.uses_broker:
        raise SystemExit("error: the configuration has no transport_url; the API runs "
                         "tasks itself")
    load_green_threads()
    store = db.Store(settings.database)
    try:
        prepare_engine_transport(settings)
        connection = Connection(settings.transport_url)
        declare_queues(connection.default_channel, settings)
    except (QueueMismatch, TransportError) as exc:
        raise SystemExit(f"error: {exc}") from None
    worker = Worker(connection, store, settings)

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
        worker.wait_for_tasks()
        worker.services.close()
    return 0
