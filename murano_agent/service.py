"""The agent service: consume plans, keep them on disk, run them, send results."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kombu

from murano_agent import broker, plans, process, results
from murano_agent.calls import ScriptCalls
from murano_agent.config import AgentConfig, ConfigError
from murano_agent.runner import PlanRunner, describe
from murano_agent.security import Rejected, SignatureVerifier, StampGuard
from murano_agent.storage import Outgoing, PlanStore, StoredMessage
from murano_common import amqp

LOG = logging.getLogger(__name__)

#: A plan whose run was started this often without finishing is answered with an error;
#: so is a message redelivered this often without being read to the end (the agent died
#: while reading it).
MAX_ATTEMPTS = 3
#: The recursion limit while serving, and the serving thread's stack: the AMQP client
#: reads a header table with a Python call per level, so any table a broker frame can
#: hold is read; JSON's C decoder (about 100 bytes of stack per level) meets the limit,
#: and raises, long before the stack ends.
RECURSION_LIMIT = 100_000
STACK_BYTES = 256 << 20


class AgentService(amqp.QueueConsumer):
    """One guest agent: ``start()`` serves in a thread of its own (sized for deep
    messages), ``wait()`` until stopped, ``stop()``.

    Works with plain threads and under ``eventlet.monkey_patch()`` (no busy
    loops; every wait has a timeout).
    """

    def __init__(self, config: AgentConfig) -> None:
        rabbit = config.rabbitmq
        if not rabbit.input_queue:
            raise ConfigError(f"{config.source}: [rabbitmq] input_queue is not set")
        if not rabbit.result_routing_key and not config.enable_dynamic_result_queue:
            raise ConfigError(f"{config.source}: [rabbitmq] result_routing_key is not set")
        name = f"murano-agent {rabbit.input_queue}"
        super().__init__(
            broker.connect(rabbit, name, confirm_publish=False),
            name,
            rabbit.reconnect_delay,
            rabbit.reconnect_max_delay,
        )
        self._cfg = config
        self._store = PlanStore(Path(config.storage))
        self._verifier = (
            SignatureVerifier(config.engine_key, rabbit.input_queue)
            if config.engine_key.strip()
            else None
        )
        self._stamps = StampGuard(self._store.stamp_file, durable=self._verifier is not None)
        self._runner = PlanRunner(config)
        self._thread: threading.Thread | None = None
        self._sender: _ResultSender | None = None
        self._awaiting_reboot: set[str] = set()

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Serve in a background thread; returns at once."""
        if self._thread and self._thread.is_alive():
            return
        self.stopping.clear()
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        self._thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        previous = threading.stack_size(STACK_BYTES)
        try:
            self._thread.start()
        finally:
            threading.stack_size(previous)

    def wait(self) -> None:
        """Return once serving has stopped (signal handlers still run meanwhile)."""
        while self._thread and self._thread.is_alive():
            self._thread.join(amqp.POLL_SECONDS)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop serving (after the plan in progress, if any) and close connections."""
        super().stop()
        if self._thread and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def run(self) -> None:
        """Serve until :meth:`stop`, reconnecting when the broker goes away."""
        LOG.info("agent serving queue %s", self._cfg.rabbitmq.input_queue)
        super().run()
        LOG.info("agent stopped")

    # -- serving (ConsumerMixin hooks) -------------------------------------------------

    def get_consumers(
        self, consumer_class: Callable[..., kombu.Consumer], channel: Any
    ) -> list[kombu.Consumer]:
        queue = amqp.agent_queue(self._cfg.rabbitmq.input_queue)
        return [consumer_class(queues=[queue], on_message=self._on_message, prefetch_count=1)]

    @contextlib.contextmanager
    def extra_context(self, connection: kombu.Connection, channel: Any) -> Iterator[None]:
        """Results go out on a channel of their own, for the time of one connection."""
        self._sender = _ResultSender(self._store, connection, self._cfg)
        try:
            yield
            self._sender.await_confirms(amqp.POLL_SECONDS)
        finally:
            self._sender = None

    def on_consume_ready(
        self, connection: kombu.Connection, channel: Any, consumers: list, **kwargs: Any
    ) -> None:
        LOG.info("connected; consuming %s", self._cfg.rabbitmq.input_queue)

    def on_iteration(self) -> None:
        """Before each wait for traffic: send stored results, run the stored plans."""
        assert self._sender is not None
        while not self.should_stop:
            self._sender.flush(self._awaiting_reboot)
            pending = self._store.pending()
            if not pending:
                return
            self._execute(pending[0])

    def on_disconnected(self) -> None:
        self._run_pending()  # what is already stored still gets done without a broker

    def _on_message(self, message: kombu.Message) -> None:
        """Keep or answer one message, then ack it: no message is delivered forever.

        A message redelivered :data:`MAX_ATTEMPTS` times without being read to the end
        (the agent died reading it each time) is answered with an error unread.
        """
        body = message.body if isinstance(message.body, bytes) else message.body.encode("utf-8")
        properties = message.properties
        amqp_id = properties.get("message_id")
        reply_to = properties.get("reply_to")
        digest = None
        if message.delivery_info.get("redelivered"):
            digest = hashlib.sha256(body).hexdigest()
        try:
            arrivals = self._store.redelivered(digest) if digest else 0
            if arrivals > MAX_ATTEMPTS:  # unread, so unchecked: no reply-to of its own
                self._refuse(
                    amqp_id,
                    reply_to if self._verifier is None else None,
                    plans.ERROR_UNEXPECTED,
                    f"message arrived {arrivals} times and the agent stopped while reading it "
                    f"each time before; it is not read again",
                )
            else:
                self._accept(body, amqp_id, reply_to, message.headers or {})
        except Rejected as exc:
            LOG.warning(
                "rejected message %s on %s: %s", amqp_id, self._cfg.rabbitmq.input_queue, exc
            )
        except Exception as exc:  # a fault of the agent's own: answered, never redelivered
            LOG.exception("message %s: the agent failed while receiving it", amqp_id)
            message_text = f"the agent failed while receiving the message: {describe(exc)}"
            self._refuse(amqp_id, reply_to, plans.ERROR_UNEXPECTED, message_text)
        if digest:
            self._store.handled(digest)
        message.ack()

    def _refuse(self, plan_id: str | None, reply_to: str | None, code: int, text: str) -> None:
        """Answer a message that is not kept as a plan with an error result; one with no
        ID to answer to is dropped with a log line."""
        if not plan_id:
            LOG.error("dropped a message with no ID to answer to: %s", text)
            return
        LOG.warning("message %s refused: %s", plan_id, text)
        self._store.answer(plan_id, reply_to, results.v2_failure(plan_id, code, text))

    def _accept(
        self, body: bytes, amqp_id: str | None, reply_to: str | None, headers: dict
    ) -> None:
        """Check one message and keep it on disk, or answer it with an error when it is
        not a plan to run (raises Rejected for refused ones, after answering them).

        With a key, the signature is checked first and nothing unsigned is trusted:
        the answer goes to the signed ``ReplyTo`` (never the message's own reply-to
        property), and the stamp must grow before anything is done for the plan,
        answering from storage included, so a replayed old message gets an error.
        """
        signed = self._verifier is not None
        if signed:
            try:
                self._verifier.verify_any(body, headers)
            except Rejected as exc:
                self._notify(_claimed_id(body, self._cfg.max_message_bytes) or amqp_id,
                             None, str(exc))
                raise
            reply_to = None
        try:
            plan = plans.decode(body, self._cfg.max_message_bytes)
            plan_id = plans.short_string(plan, "ID") or amqp_id or uuid.uuid4().hex
            reply_to = plans.short_string(plan, "ReplyTo") or reply_to
        except plans.PlanError as exc:
            self._refuse(amqp_id, reply_to, exc.code, exc.message)
            return
        if self._store.is_queued(plan_id):
            LOG.info("plan %s is already queued; ignoring the repeated delivery", plan_id)
            return
        stamp = plan.get("Stamp")
        try:
            self._stamps.check(stamp, required=signed)
        except Rejected as exc:  # answered (murano-agent drops it): the engine need not wait
            self._notify(plan_id, reply_to, str(exc))
            raise
        if self._store.has_result(plan_id):
            LOG.info("plan %s already ran; answering with its stored result", plan_id)
            self._stamps.accept(stamp)
            self._store.resend(plan_id, reply_to)
            return
        self._store.receive(plan_id, body, reply_to)  # first: a crash before the stamp is
        self._stamps.accept(stamp)  # kept leaves a redelivery that is_queued() recognises
        LOG.debug("plan %s received", plan_id)

    def _notify(self, plan_id: str | None, reply_to: str | None, text: str) -> None:
        """Answer a refused message with an error result that is not kept as its plan's
        result (a genuine plan of that ID may still come and run)."""
        if not plan_id:
            LOG.error("dropped a refused message with no ID to answer to: %s", text)
            return
        self._store.notify(plan_id, reply_to, results.v2_failure(plan_id, plans.ERROR_INVALID,
                                                                 text))

    # -- running -----------------------------------------------------------------------

    def _run_pending(self) -> None:
        try:
            for message in self._store.pending():
                if self.should_stop:
                    return
                self._execute(message)
        except Exception:
            LOG.exception("cannot run stored plans")

    def _execute(self, message: StoredMessage) -> None:
        if self._store.has_result(message.plan_id):  # finished just before a crash
            self._store.finish(message, self._store.stored_result(message.plan_id))
            return
        attempts = self._store.start_attempt(message)
        calls = ScriptCalls(self._store, message.seq, self._cfg.plan_timeout)
        if attempts > MAX_ATTEMPTS:
            LOG.error(
                "plan %s was interrupted %d times; not running it again",
                message.plan_id,
                attempts - 1,
            )
            calls.settle(lambda: 0.0)  # nothing an attempt started keeps running
            result = self._runner.failure(
                message.plan_id,
                message.body,
                f"plan was interrupted {attempts - 1} times (agent crash or reboot while "
                "running); it is not run again",
            )
            self._store.finish(message, self._addressed(message, result))
            return
        LOG.info("running plan %s (attempt %d)", message.plan_id, attempts)
        outcome = self._runner.run(message.plan_id, message.body, calls)
        result = self._addressed(message, outcome.result) if outcome.ran else outcome.result
        self._store.finish(message, result)
        LOG.info("plan %s finished", message.plan_id)
        if outcome.reboot:
            self._reboot(message.plan_id)

    def _addressed(self, message: StoredMessage, result: dict[str, Any]) -> dict[str, Any]:
        """A run plan's v2 result with its ``ReplyTo`` when results go to the configured
        queue (murano-agent's shape; a dynamic result queue routes by it instead)."""
        if self._cfg.enable_dynamic_result_queue or "FormatVersion" not in result:
            return result
        return results.with_reply_to(result, message.reply_to)

    def _reboot(self, plan_id: str) -> None:
        """Reboot for ``plan_id``; its result is sent by the agent that starts afterwards."""
        self._awaiting_reboot.add(plan_id)
        LOG.warning("plan %s asks for a reboot: %s", plan_id, self._cfg.reboot_command)
        done = process.run(self._cfg.reboot_command, Path(self._cfg.storage), 60.0)
        if done.exit_code == 0 and self.stopping.wait(self._cfg.reboot_wait):
            return
        LOG.error(
            "reboot for plan %s did not happen (exit code %s: %s); sending its result now",
            plan_id,
            done.exit_code,
            done.stderr.strip(),
        )
        self._awaiting_reboot.discard(plan_id)


def _claimed_id(body: bytes, max_bytes: int) -> str | None:
    """The ``ID`` an unverified message claims, to address its refusal (None if none)."""
    try:
        return plans.short_string(plans.decode(body, max_bytes), "ID")
    except plans.PlanError:
        return None


class _ResultSender:
    """Publishes stored results; each leaves the outbox once the broker confirms it.

    On AMQP, publisher confirms are pipelined: the agent goes on with the next
    plan while a confirm is on its way, and the confirm (read with the next
    incoming traffic) drops the result from the outbox. A result the broker
    refuses, or whose confirm is lost with the connection, is published again.
    ``memory://`` has no confirms: a publish there is done when it returns.
    """

    def __init__(self, store: PlanStore, conn: kombu.Connection, cfg: AgentConfig) -> None:
        self._store = store
        self._cfg = cfg
        self._conn = conn
        channel = conn.channel()
        self._producer = kombu.Producer(channel)
        self._confirms = amqp.is_amqp(conn)
        self._in_flight: dict[int, Outgoing] = {}  # delivery tag -> result
        self._last_tag = 0
        if self._confirms:
            channel.confirm_select()
            channel.events["basic_ack"].add(self._on_ack)
            channel.events["basic_nack"].add(self._on_nack)

    def flush(self, held: set[str]) -> None:
        """Publish every stored result not yet published, oldest first (except ``held`` ids)."""
        rabbit = self._cfg.rabbitmq
        flying = {id(outgoing) for outgoing in self._in_flight.values()}
        for outgoing in self._store.outbox():
            if id(outgoing) in flying or outgoing.plan_id in held:
                continue
            routing_key = rabbit.result_routing_key
            if self._cfg.enable_dynamic_result_queue and outgoing.reply_to:
                routing_key = outgoing.reply_to
            self._producer.publish(
                json.dumps(outgoing.result),
                exchange=rabbit.result_exchange,
                routing_key=routing_key,
                message_id=outgoing.plan_id,
                delivery_mode=2,
            )
            LOG.debug("result of plan %s sent to %s", outgoing.plan_id, routing_key)
            if self._confirms:
                self._last_tag += 1
                self._in_flight[self._last_tag] = outgoing
            else:
                self._store.sent(outgoing)

    def await_confirms(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the confirms still due (before disconnecting)."""
        deadline = time.monotonic() + timeout
        while self._in_flight and (left := deadline - time.monotonic()) > 0:
            try:
                self._conn.drain_events(timeout=left)
            except TimeoutError:
                return

    def _confirmed(self, tag: int, multiple: bool) -> list[Outgoing]:
        tags = [t for t in self._in_flight if t <= tag] if multiple else [tag]
        return [self._in_flight.pop(t) for t in tags if t in self._in_flight]

    def _on_ack(self, tag: int, multiple: bool) -> None:
        for outgoing in self._confirmed(tag, multiple):
            self._store.sent(outgoing)

    def _on_nack(self, tag: int, multiple: bool) -> None:
        for outgoing in self._confirmed(tag, multiple):
            LOG.warning("broker refused the result of plan %s; sending it again", outgoing.plan_id)
