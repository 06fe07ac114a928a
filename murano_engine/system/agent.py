"""io.murano.system.Agent and AgentListener: execution plans for the agents in instances.

An ``Agent`` is made per instance (``new(sys:Agent, host => $instance)``); it
sends plans to the input queue ``e<environmentId>-h<instanceId>`` and waits for
results on the result queue of the host's region, whose ``AgentListener``
names it (``-execution-results-e<environmentId>-<name>``). Broker traffic goes
through the ``agents`` service (a :class:`murano_engine.messaging.AgentClient`).

The environment in every queue name, and the key plans are signed with, is the one
the engine runs the task for (the ``environment_id`` service: the API's environment
record, the command line's state), never an id the model carries: a model is
tenant input, so an object claiming to be another environment, or a result queue
named by the caller, is refused with an error naming it.

Agent failures reach MuranoPL as exceptions catchable by Murano's names:
``murano.engine.system.agent.AgentException`` (an error result; ``extra`` holds
what the agent reported: ``message``, ``details`` - for a failed script its
``exitCode``, ``stdout`` and ``stderr`` -, ``errorCode``, ``time``, ``extra``),
``murano.engine.system.agent.TimeoutException`` (also known by Murano's
``murano.common.exceptions.TimeoutException``) and, when ``[engine]
disable_murano_agent`` is set, ``murano.common.exceptions.PolicyViolationException``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from murano_engine.dsl import boundary, reports, values
from murano_engine.dsl.errors import MuranoPlException
from murano_engine.dsl.natives import NativeCall, method, native_class
from murano_engine.dsl.objects import MuranoObject, real_object
from murano_engine.messaging.errors import AgentError, AgentTimeout, GuestDown, PlanBuildError

if TYPE_CHECKING:
    from murano_engine.messaging.client import AgentClient
    from murano_engine.messaging.identities import BrokerIdentities

AGENT_EXCEPTION = "murano.engine.system.agent.AgentException"
TIMEOUT_EXCEPTION = "murano.engine.system.agent.TimeoutException"
#: Murano raises its timeouts and refusals with these names.
COMMON_TIMEOUT = "murano.common.exceptions.TimeoutException"
POLICY_VIOLATION = "murano.common.exceptions.PolicyViolationException"


def _engine_option(call: NativeCall, name: str, default: Any) -> Any:
    config = call.executor.services.get("config") or {}
    return (config.get("engine") or {}).get(name, default)


def _exception(
    call: NativeCall, names: list[str], error: Exception, info: Any
) -> MuranoPlException:
    """``error`` as the MuranoPL exception ``names``, with ``info`` as its ``extra``."""
    return MuranoPlException(
        names, str(error), call.frame.stack(), extra=values.freeze(info), native=error
    )


def _intent(plan: dict[str, Any], client: AgentClient) -> dict[str, Any]:
    """What the journal records before a plan is sent: the id it is sent with (its own
    ``ID``, else a new one) and the queue its result comes back on."""
    return {"id": str(plan.get("ID") or boundary.outside().new_id()),
            "results": client.result_queue}


def _note_results_queue(call: NativeCall, client: AgentClient) -> None:
    """Record, before the result queue is made, that this run uses it (so that
    ``destroy`` removes it even when the run is killed before its first plan)."""
    call.executor.outside.value("agent.results", client.result_queue, lambda: None)


def engine_environment(call: NativeCall, claimed: MuranoObject | None = None) -> str:
    """The id of the environment this task runs for: the engine's own record of it
    (the ``environment_id`` service); without one (a package's tests), the id of
    ``claimed``, the io.murano.Environment found in the model."""
    given = call.executor.services.get("environment_id")
    if given:
        return str(given)
    if claimed is None:
        raise ValueError("no environment: this run was given none, and no "
                         "io.murano.Environment owns the object")
    return str(claimed.id)


def _refusal(call: NativeCall, message: str) -> MuranoPlException:
    error = PermissionError(message)
    return _exception(call, [POLICY_VIOLATION, "murano.dsl.exceptions.PolicyViolationException"],
                      error, {"message": message})


def _environment_results(environment: str) -> str:
    """The prefix of every result queue of ``environment``'s regions."""
    from murano_common.queue_names import environment_region, result_queue_name
    return result_queue_name(environment_region(environment, ""))


def _owner_of_class(obj: MuranoObject, class_name: str) -> MuranoObject | None:
    current = obj.owner
    while current is not None:
        if any(cls.name == class_name for cls in current.murano_class.ancestors()):
            return current
        current = current.owner
    return None


def _stepper(call: NativeCall, plan: dict[str, Any]) -> Any:
    """Sends the steps of one plan on its server's lane (the host's name)."""
    agent: Agent = call.native
    services = call.executor.services
    reporter = services.get("reporter")
    if reporter is None:
        return lambda phase, **extra: None
    lane = str(agent.host.props.get("name") or agent.host.id)
    environment = agent.environment_id
    agent.plans += 1
    key = f"{agent.queue}#{agent.plans}"
    name = str(plan.get("Name") or "execution plan")

    def step(phase: str, **extra: Any) -> None:
        reports.step(reporter, environment, kind="plan", phase=phase, lane=lane,
                     host=agent.host.id, name=name, key=key, **extra)
    return step


@native_class("io.murano.system.AgentListener")
class AgentListener:
    """The result queue of one region: ``-execution-results-<name>`` (lower case)."""

    def __init__(self, call: NativeCall, name: str) -> None:
        from murano_common.queue_names import environment_region
        this = call.this
        claimed = _owner_of_class(this, "io.murano.Environment") if this is not None else None
        self.region = environment_region(engine_environment(call, claimed), str(name))

    def client(self, call: NativeCall) -> AgentClient:
        return call.executor.services["agents"].for_region(self.region)

    @method
    def queueName(call: NativeCall) -> str:  # noqa: N802 - MuranoPL name
        return call.native.client(call).result_queue

    @method
    def caCertificate(call: NativeCall) -> str:  # noqa: N802
        """The broker's CA certificates (PEM text of ``[rabbitmq] ca_certs``) for the
        region's agents, or '' when the engine names none."""
        rabbit = (call.executor.services.get("config") or {}).get("rabbitmq") or {}
        path = rabbit.get("ca_certs")
        if not path:
            return ""
        try:
            return Path(str(path)).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"[rabbitmq] ca_certs {path}: cannot be read: {exc}") from None

    @method
    def removeResultExchange(call: NativeCall) -> bool:  # noqa: N802
        """Delete the exchange the region's agents publish results to (the region is
        gone); False when there was none or servers share a login."""
        identities: BrokerIdentities | None = call.executor.services.get("identities")
        if identities is None:
            return False
        queue = call.native.client(call).result_queue
        return bool(call.executor.outside.value(
            "broker.exchange", queue, lambda: identities.remove_exchange(queue)))

    @method
    def start(call: NativeCall) -> None:
        """Consume the result queue now (calls start it anyway)."""
        client = call.native.client(call)
        _note_results_queue(call, client)
        client.listen()


@native_class("io.murano.system.Agent")
class Agent:
    """The agent in ``host``: plans go to ``e<envId>-h<hostId>``."""

    def __init__(self, call: NativeCall, host: Any) -> None:
        target = real_object(host)
        if target is None:
            raise ValueError("sys:Agent needs a host object")
        environment = _owner_of_class(target, "io.murano.Environment")
        if environment is None:
            raise ValueError(f"host {target.id} is not owned by an io.murano.Environment")
        self.environment_id = engine_environment(call, environment)
        if str(environment.id) != self.environment_id:
            raise _refusal(call, (
                f"host {target.id} belongs to environment {environment.id} "
                f"({environment.murano_class.name}), not to {self.environment_id}, the "
                "environment this deployment runs for: its agent is not this "
                "environment's to reach"))
        self.host = target
        self.environment = environment
        from murano_common.queue_names import agent_queue_name
        self.queue = agent_queue_name(self.environment_id, target.id)
        self._client: AgentClient | None = None
        self._attached = False
        self.plans = 0  # plans sent so far (numbers their steps)

    def client(self, call: NativeCall) -> AgentClient:
        """The client of the host's region (found on first use: regions come after hosts).

        On first use the cloud is asked to make the agent reachable (a server an
        earlier engine run made is taken up again)."""
        if not self._attached:
            cloud = call.executor.services.get("cloud")
            if cloud is not None:
                cloud.attach_agent(self.queue)
            self._attached = True
        if self._client is None:
            executor = call.executor
            if self.host.murano_class.find_method("getRegion") is not None:
                holder = real_object(executor.call(self.host, "getRegion", caller=call.frame))
            else:
                holder = self.environment
            listener = real_object(
                executor.get_property(holder, "agentListener", call.frame, lenient=True)
                if holder is not None
                else None
            )
            agents: AgentClient = executor.services["agents"]
            from murano_common.queue_names import environment_region
            self._client = listener.native.client(call) if listener is not None else \
                agents.for_region(environment_region(self.environment_id, ""))
            _note_results_queue(call, self._client)
        return self._client

    @staticmethod
    def _check_enabled(call: NativeCall) -> None:
        if _engine_option(call, "disable_murano_agent", False):
            raise _refusal(call, "Use of murano-agent is disallowed by the server configuration")

    @staticmethod
    def _plan(call: NativeCall, template: Any, resources: Any = None) -> dict[str, Any]:
        """The wire plan for ``template``; script files come from ``Resources/scripts`` of
        the package that made ``resources`` (as in Murano), else of the calling package."""
        package = getattr(getattr(real_object(resources), "native", None), "package", None)
        if package is None:
            caller = call.caller_class()
            package = caller.package if caller is not None else call.frame.murano_class.package
        try:
            return call.native.client(call).build_plan(
                values.thaw(template), lambda name: package.read_resource(f"scripts/{name}")
            )
        except PlanBuildError as exc:
            raise _exception(call, [AGENT_EXCEPTION], exc, {"message": str(exc)}) from exc

    @staticmethod
    def _timeout(call: NativeCall, timeout: Any) -> float:
        return float(_engine_option(call, "agent_timeout", 3600) if timeout is None else timeout)

    @staticmethod
    def _wait(call: NativeCall, plan: dict[str, Any], timeout: Any) -> Any:
        """Send ``plan`` and wait for its result, through the run's journal: the plan's id
        is recorded before it is sent, its result when it comes; a resumed run gets a
        recorded result back without sending, and re-sends a plan sent but not answered
        with the same id (the agent answers a known id from its own journal)."""
        agent: Agent = call.native
        client = agent.client(call)
        seconds = Agent._timeout(call, timeout)
        outside = call.executor.outside

        def send_and_wait(intent: dict[str, Any]) -> Any:
            return client.call(agent.queue, dict(plan, ID=intent["id"]), seconds,
                               interrupted=lambda: outside.cancelled,
                               environment=agent.environment_id)

        step = _stepper(call, plan)
        step("sent", inputs=reports.digests(plan.get("Parameters") or plan.get("Commands")))
        try:
            result = outside.effect("agent.call", agent.queue,
                                    lambda: _intent(plan, client), send_and_wait)
        except AgentTimeout as exc:
            step("answered", result="timeout")
            raise _exception(call, [TIMEOUT_EXCEPTION, COMMON_TIMEOUT], exc, exc.info) from exc
        except AgentError as exc:
            step("answered", result="error", error=str(exc)[:300])
            raise _exception(call, [AGENT_EXCEPTION], exc, exc.info) from exc
        step("answered", result="success", outputs=reports.digests(result))
        return values.freeze(result)

    @method
    def call(call: NativeCall, template: Any, resources: Any = None, timeout: Any = None) -> Any:
        """Build a plan from ``template`` (scripts from the calling package: ``resources``
        only says so, as in Murano), send it, wait for its result and return it."""
        Agent._check_enabled(call)
        return Agent._wait(call, Agent._plan(call, template, resources), timeout)

    @method
    def send(call: NativeCall, template: Any, resources: Any = None) -> None:
        """Build and send a plan without waiting for its result."""
        Agent._check_enabled(call)
        Agent._send(call, Agent._plan(call, template, resources))

    @staticmethod
    def _send(call: NativeCall, plan: dict[str, Any]) -> None:
        agent: Agent = call.native
        client = agent.client(call)
        call.executor.outside.effect(
            "agent.send", agent.queue, lambda: _intent(plan, client),
            lambda intent: client.send(agent.queue, dict(plan, ID=intent["id"]),
                                       environment=agent.environment_id))

    @method
    def callRaw(call: NativeCall, plan: Any, timeout: Any = None) -> Any:  # noqa: N802
        """Send an already built plan as it is and wait for its result."""
        Agent._check_enabled(call)
        return Agent._wait(call, values.thaw(plan), timeout)

    @method
    def sendRaw(call: NativeCall, plan: Any) -> None:  # noqa: N802
        """Send an already built plan as it is, without waiting."""
        Agent._check_enabled(call)
        Agent._send(call, values.thaw(plan))

    @method
    def buildExecutionPlan(call: NativeCall, template: Any, resources: Any = None) -> Any:  # noqa: N802
        """The wire plan ``call``/``send`` would send for ``template``."""
        return values.freeze(Agent._plan(call, template, resources))

    @method
    def isReady(call: NativeCall, timeout: Any = 100) -> bool:  # noqa: N802
        """True when the agent answers a no-op plan within ``timeout`` seconds."""
        Agent._check_enabled(call)
        return Agent._ready(call, Agent._timeout(call, timeout))

    @staticmethod
    def _ready(call: NativeCall, seconds: float) -> bool:
        agent: Agent = call.native
        client = agent.client(call)
        try:
            return call.executor.outside.value(
                "agent.ready", agent.queue,
                lambda: client.is_ready(agent.queue, seconds, environment=agent.environment_id))
        except GuestDown as exc:  # the server is in ERROR: say why rather than time out
            raise _exception(call, [AGENT_EXCEPTION], exc, exc.info) from exc

    @method
    def waitReady(call: NativeCall, timeout: Any = 100) -> None:  # noqa: N802
        """Wait for the agent to answer a no-op plan; a TimeoutException after ``timeout`` s."""
        Agent._check_enabled(call)
        agent: Agent = call.native
        seconds = Agent._timeout(call, timeout)
        if not Agent._ready(call, seconds):
            error = AgentTimeout(agent.queue, seconds)
            raise _exception(call, [TIMEOUT_EXCEPTION, COMMON_TIMEOUT], error, error.info)

    @method
    def queueName(call: NativeCall) -> str:  # noqa: N802
        return call.native.queue

    @method
    def brokerIdentity(call: NativeCall, resultQueue: str) -> Any:  # noqa: N802, N803
        """A broker user of the host's own (``login``, ``password``, ``virtual_host``,
        ``result_exchange``, and ``url`` when ``[rabbitmq] url`` is set), allowed only
        to consume the host's queue and publish results to ``resultQueue`` through the
        exchange bound to it; null where servers share the engine's login. Minted
        through the run's journal: a resumed run gets the same identity back.
        ``resultQueue`` must be a result queue of this environment's regions (the
        engine names them: ``AgentListener.queueName()``)."""
        identities: BrokerIdentities | None = call.executor.services.get("identities")
        if identities is None:
            return None
        agent: Agent = call.native
        own = _environment_results(agent.environment_id)
        if not (str(resultQueue) == own or str(resultQueue).startswith(own + "-")):
            raise _refusal(call, (
                f"result queue {str(resultQueue)[:200]!r} is not one of environment "
                f"{agent.environment_id}'s (theirs begin {own!r}): a broker identity "
                "publishes only to its own environment's results"))
        # the exchange's binding makes the results queue: destroy must know it from now
        call.executor.outside.value("agent.results", str(resultQueue), lambda: None)

        def mint() -> dict[str, str]:
            from murano_engine.messaging.identities import with_credentials
            identity = identities.mint(agent.queue, str(resultQueue)).as_dict()
            rabbit = (call.executor.services.get("config") or {}).get("rabbitmq") or {}
            url = str(rabbit.get("url") or "")
            identity["url"] = (with_credentials(url, identity["login"], identity["password"])
                               if url else "")
            return identity

        return values.freeze(call.executor.outside.value("broker.identity", agent.queue, mint))

    @method
    def releaseBrokerIdentity(call: NativeCall) -> bool:  # noqa: N802
        """Revoke the host's broker user (its server is gone); False when it had none."""
        identities: BrokerIdentities | None = call.executor.services.get("identities")
        if identities is None:
            return False
        agent: Agent = call.native
        cloud = call.executor.services.get("cloud")

        def revoke() -> bool:
            if cloud is not None:
                cloud.detach_agent(agent.queue)
            return identities.revoke(agent.queue)

        return bool(call.executor.outside.value("broker.revoke", agent.queue, revoke))

    @method
    def signingKey(call: NativeCall, linePrefix: str = "") -> str:  # noqa: N802, N803
        """The public key of this environment's plans, which its agents verify them
        with (PKCS#1 PEM), or '' (also where no broker is configured, as in package
        tests)."""
        agents: AgentClient | None = call.executor.services.get("agents")
        if agents is None:
            return ""
        return agents.signing_key(str(linePrefix or ""), call.native.environment_id)
