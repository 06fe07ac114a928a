"""Dispatchers: how the API hands tasks to the engine and stores what comes back.

A dispatcher is anything with the methods of :class:`Dispatcher`. Without a
broker, :mod:`murano_engine.server.main` gives the API one that runs tasks in the
API's own threads (:mod:`murano_engine.server.in_process`). With
``transport_url`` set, tasks go to a durable RabbitMQ queue
(:class:`AmqpDispatcher`) that ``murano-engine worker`` processes take them
from; the API consumes the result queue and writes reports, models and task
states, and the dead-letter queue, where RabbitMQ puts the tasks no worker
finished: it fails them, saying why.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kombu import Connection, Consumer, Queue
from kombu.mixins import ConsumerMixin
from sqlalchemy.exc import InterfaceError, OperationalError

from murano_engine.api import environments
from murano_engine.api.auth import Context
from murano_engine.api.errors import ApiError, TimedOut, Unavailable
from murano_engine.backend import db
from murano_engine.backend.settings import Settings
from murano_engine.backend.shares import ALL_TAKEN, SHARE_TAKEN, ProjectShares
from murano_engine.backend.task_queues import declare_queues, prepare_engine_transport

LOG = logging.getLogger(__name__)


class Dispatcher(Protocol):
    """What the API needs of whatever runs its tasks."""

    def submit(self, task: dict[str, Any]) -> None:
        """Hand a task over (its result comes back through the database)."""

    def call_static(self, context: Context, request: Mapping[str, Any]) -> Any:
        """Run a static action and return its result."""

    def preview(self, context: Context, task: Mapping[str, Any]) -> Any:
        """The plan of ``task`` (:mod:`murano_engine.engine.plan`), made by an engine
        worker as a static action is (its slots, its time)."""

    def close(self, grace: float = 0.0) -> bool:
        """Stop taking tasks, wait up to ``grace`` seconds for those running here, release
        connections; whether none is left running (else the caller ends the process
        without waiting for them: they resume elsewhere from their journals)."""


def static_outcome(answer: Mapping[str, Any]) -> Any:
    if answer.get("status") == 200:
        return answer.get("result")
    raise ApiError(str(answer.get("message")), status=int(answer.get("status") or 503))


# -- RabbitMQ --------------------------------------------------------------------

class AmqpDispatcher:
    """Publishes tasks to the task queue; consumes the result and dead-letter queues in a
    thread."""

    def __init__(self, store: db.Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        prepare_engine_transport(settings)
        self._publisher = Connection(settings.transport_url)
        self._lock = threading.Lock()
        with self._lock:
            self.queues = declare_queues(self._publisher.default_channel, settings)
        self._static_slots = ProjectShares(settings.static_action_workers,
                                           settings.static_action_workers_per_project)
        self._listener = ResultListener(Connection(settings.transport_url), self)
        self._thread = threading.Thread(target=self._listener.run, name="results", daemon=True)
        self._thread.start()

    def publish(self, body: dict[str, Any], **properties: Any) -> None:
        with self._lock:
            producer = self._publisher.Producer(serializer="json")
            self._publisher.ensure(producer, producer.publish, max_retries=3)(
                body, routing_key=self.settings.task_queue, delivery_mode=2,
                declare=[self.queues.tasks], **properties)

    def submit(self, task: dict[str, Any]) -> None:
        try:
            self.publish({"kind": "task", "task": task})
        except Exception as exc:  # noqa: BLE001 - the broker is down: free the environment
            environments.release_stuck(self.store, task["task_id"],
                                       f"the task could not be handed to a worker: {exc}")
            raise Unavailable(f"the message broker is not reachable: {exc}") from None

    def call_static(self, context: Context, request: Mapping[str, Any]) -> Any:
        """Ask a worker and wait ``static_action_timeout`` seconds for its answer.

        At most ``static_action_workers`` requests wait at once (more get a 503),
        ``static_action_workers_per_project`` of one project (more get a 429), so
        the API's other request threads stay free; a request no worker took in time
        expires in the queue.
        """
        return self._asked(context, {"kind": "static", "project_id": context.project_id,
                                     "request": dict(request)}, "the static action")

    def preview(self, context: Context, task: Mapping[str, Any]) -> Any:
        """The plan of ``task``, asked of a worker as a static action is."""
        return self._asked(context, {"kind": "preview", "project_id": context.project_id,
                                     "task": dict(task)}, "the preview")

    def _asked(self, context: Context, body: dict[str, Any], what: str) -> Any:
        """A worker's answer to ``body``, in one of the static actions' slots."""
        refused = self._static_slots.take(context.project_id)
        if refused == ALL_TAKEN:
            raise Unavailable(f"{self.settings.static_action_workers} static actions are "
                              "waiting for workers, as many as static_action_workers allows; "
                              "try again later")
        if refused == SHARE_TAKEN:
            raise ApiError(f"the project already has {self._static_slots.per_project} static "
                           "actions waiting for workers, as many as "
                           "static_action_workers_per_project allows; try again later",
                           status=429)
        try:
            answers = self._ask_worker(body)
        finally:
            self._static_slots.free(context.project_id)
        if not answers:
            raise TimedOut(f"no engine worker answered {what} within "
                           f"static_action_timeout ({self.settings.static_action_timeout:g} s)")
        return static_outcome(answers[0])

    def _ask_worker(self, body: dict[str, Any]) -> list[dict]:
        reply = Queue(f"murano-reply-{uuid.uuid4().hex}", exclusive=True, auto_delete=True)
        correlation = uuid.uuid4().hex
        answers: list[dict] = []
        timeout = self.settings.static_action_timeout
        with Connection(self.settings.transport_url) as connection:
            channel = connection.channel()
            reply(channel).declare()

            def on_answer(body: dict, message: Any) -> None:
                if message.properties.get("correlation_id") == correlation:
                    answers.append(body)
                message.ack()

            with Consumer(channel, queues=[reply], callbacks=[on_answer], accept=["json"]):
                self.publish(body, reply_to=reply.name, correlation_id=correlation,
                             expiration=timeout)
                deadline = time.monotonic() + timeout
                while not answers and time.monotonic() < deadline:
                    try:
                        connection.drain_events(timeout=max(0.05, deadline - time.monotonic()))
                    except TimeoutError:
                        break
        return answers

    def handle_result(self, body: Mapping[str, Any]) -> None:
        if body.get("kind") == "report":
            environments.store_report(self.store, str(body["task_id"]), body["report"])
        elif body.get("kind") == "result":
            environments.process_result(self.store, str(body["task_id"]), body["result"])

    def handle_dead(self, body: Mapping[str, Any], headers: Mapping[str, Any]) -> None:
        """A message RabbitMQ dead-lettered: a task no worker finished fails; a static
        action request (expired: nobody waits for it any more) is dropped."""
        if body.get("kind") != "task":
            return
        task_id = str(body["task"]["task_id"])
        reason = headers.get("x-first-death-reason")
        LOG.warning("task %s was dead-lettered (%s)", task_id, reason)
        if reason == "delivery_limit":
            environments.give_up(self.store, task_id, self.settings.max_deliveries)
        else:
            environments.release_stuck(self.store, task_id,
                                       f"the message broker dropped the task ({reason})")

    def close(self, grace: float = 0.0) -> bool:
        """Stop consuming results (the tasks run in the workers, not here)."""
        self._listener.should_stop = True
        self._thread.join(timeout=5)
        self._publisher.release()
        return True


class ResultListener(ConsumerMixin):
    """Consumes reports, results and dead letters; acknowledges each once it is stored."""

    def __init__(self, connection: Any, dispatcher: AmqpDispatcher) -> None:
        self.connection = connection
        self.dispatcher = dispatcher

    def get_consumers(self, consumer_class: Any, channel: Any) -> list:
        queues = self.dispatcher.queues
        return [consumer_class(queues=[queues.results], accept=["json"],
                               callbacks=[self.on_message], prefetch_count=50),
                consumer_class(queues=[queues.dead], accept=["json"],
                               callbacks=[self.on_dead], prefetch_count=10)]

    def on_message(self, body: dict, message: Any) -> None:
        self._store(message, lambda: self.dispatcher.handle_result(body))

    def on_dead(self, body: dict, message: Any) -> None:
        self._store(message, lambda: self.dispatcher.handle_dead(body, message.headers or {}))

    @staticmethod
    def _store(message: Any, handle: Callable[[], None]) -> None:
        try:
            handle()
        except Exception as exc:  # noqa: BLE001 - keep the message for the next try
            if isinstance(exc, OperationalError | InterfaceError):
                # the database is away: a line a try, not a traceback a second
                LOG.warning("could not store a result, the database does not answer (%s); "
                            "it will be retried",
                            str(exc.orig).strip() or type(exc.orig).__name__)
            else:
                LOG.exception("could not store a result; it will be retried")
            message.requeue()
            time.sleep(1)
            return
        message.ack()


