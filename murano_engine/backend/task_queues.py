"""The RabbitMQ queues between the API and its workers: tasks, results and dead letters."""

from __future__ import annotations

from typing import Any, NamedTuple

from amqp.exceptions import PreconditionFailed
from kombu import Exchange, Queue

from murano_engine.backend.settings import Settings


class Queues(NamedTuple):
    """The queues between the API and its workers."""

    tasks: Queue
    results: Queue
    dead: Queue


class QueueMismatch(Exception):  # noqa: N818 - reads as the sentence it carries
    """A queue exists on the broker with other arguments than the configuration asks for."""


def task_queues(settings: Settings) -> Queues:
    """The task queue workers take from, the result queue the API reads, and the
    dead-letter queue of the tasks no worker finished.

    The task queue is a quorum queue: RabbitMQ counts the times it hands a task
    out, and when ``max_deliveries`` workers took it and none acknowledged it
    (each died with it) moves it to the dead-letter queue, at least once (it is
    never just dropped).
    """
    exchange = Exchange("", type="direct")
    dead = settings.dead_letter_queue
    tasks = Queue(settings.task_queue, exchange, routing_key=settings.task_queue, durable=True,
                  queue_arguments={
                      "x-queue-type": "quorum",
                      # RabbitMQ's limit counts the returns: the deliveries after the first.
                      "x-delivery-limit": settings.max_deliveries - 1,
                      "x-dead-letter-exchange": "",
                      "x-dead-letter-routing-key": dead,
                      "x-dead-letter-strategy": "at-least-once",
                      "x-overflow": "reject-publish"})
    return Queues(tasks,
                  Queue(settings.result_queue, exchange, routing_key=settings.result_queue,
                        durable=True),
                  Queue(dead, exchange, routing_key=dead, durable=True))


def declare_queues(channel: Any, settings: Settings) -> Queues:
    """Declare the queues of :func:`task_queues` (the dead-letter one first, so nothing
    dead-lettered is lost); a queue declared otherwise before is a clear error."""
    queues = task_queues(settings)
    for queue in (queues.dead, queues.tasks, queues.results):
        try:
            queue(channel).declare()
        except PreconditionFailed as exc:
            raise QueueMismatch(
                f"the RabbitMQ queue {queue.name!r} exists with other arguments than the "
                f"configuration asks for ({exc.reply_text}). It was declared by an earlier "
                "version (a classic queue) or with another [engine] max_deliveries: once it "
                f"is empty, delete it (rabbitmqctl delete_queue {queue.name}), or set [engine] "
                f"task_queue to a new name") from None
    return queues


def prepare_engine_transport(settings: Settings) -> None:
    """Check ``transport_url`` is apart from the guests' virtual host and make its
    own when the broker lacks it (:mod:`murano_engine.messaging.transport`)."""
    from murano_engine.backend.settings import SCHEMA
    from murano_engine.engine.config import load_config
    from murano_engine.messaging.transport import prepare_transport
    prepare_transport(settings.transport_url, load_config(settings.config_file, schema=SCHEMA))
