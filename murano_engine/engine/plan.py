"""Plans: what a deploy, a redeploy or an action would do, without doing it.

:func:`run_plan` runs the task with :func:`murano_engine.engine.tasks.run_task`, as a
deploy runs it, under the same budget, but with services that record instead of
acting (:func:`plan_services`):

* the cloud is a :class:`~murano_engine.clouds.recording.RecordingCloud`: stack
  pushes become template diffs over what the real cloud holds (read, never written);
* the agents are a :class:`RecordingAgents`: a plan sent is recorded (its server,
  name, scripts and parameters) and answered at once with the result its template
  declares for a dry run (:data:`~murano_engine.messaging.plans.DRY_RUN_RESULT`); a
  plan without one stops the branch that waits for it (:class:`DependsOnResult`, a
  :class:`~murano_engine.dsl.concurrency.BranchStop`): its ``Parallel``/``pselect``
  branch, a ``.destroy``, or else the action, ends there and the rest goes on;
* broker identities are placeholders, minted nowhere; signing keys are read when
  the environment has one, never made;
* the journal is kept in memory only, and ``sleep`` does not wait.

The result (:meth:`PlanRecorder.result`) is plain JSON data: the stacks' net diffs,
the servers made, changed and deleted, every push in order, the plans per server in
order, the stops, the reports the deploy would send and the broker users it would
make and remove. :func:`text` writes it for people; ``web/plan_picture.py`` draws it.
"""

from __future__ import annotations

import copy
import functools
import itertools
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from murano_engine.clouds.recording import (
    HeatCurrent,
    LocalCurrent,
    LocalRecordingCloud,
    RecordingCloud,
    known_after,
    template_diff,
)
from murano_engine.dsl import concurrency
from murano_engine.dsl.reports import is_step
from murano_engine.engine.journal import Journal
from murano_engine.messaging.plans import DRY_RUN_RESULT

if TYPE_CHECKING:
    from murano_engine.dsl.budget import Budget
    from murano_engine.dsl.packages import PackageLoader

#: The public key text agents are given: ``(line prefix, environment) -> PEM``.
SigningKey = Callable[[str, str | None], str]
#: Parameter names whose values a plan does not show.
SECRET_WORDS = ("password", "secret", "token", "credential")
#: Longest parameter value a plan shows (characters).
SHOWN_VALUE = 200


class DependsOnResult(concurrency.BranchStop):  # noqa: N818 - a stop, as its base
    """A plan without a declared dry-run result returned: the branch waiting for it
    stops (what it does next depends on that result)."""


def depends_on(plan_name: str, server: str) -> str:
    """The line a plan shows where a branch stopped."""
    return f"then: depends on the result of `{plan_name}` on `{server}`"


class _Clock:
    """Logical times of a plan's events: each takes one unit on its lane (a server, or
    the stack lane), after what came before it in its branch and after the branches its
    branch waited for (``run_all`` returns once every branch it started ended)."""

    def __init__(self) -> None:
        self._ends: dict[str, float] = {}
        self._lanes: dict[str, float] = {}

    def _start(self, path: str) -> float:
        """When branch ``path`` began: once its parent reached the ``run_all`` that
        started it (and the branches the parent started earlier had ended)."""
        if not path:
            return 0.0
        parent = path.rsplit("/", 1)[0]
        group = path[:path.rindex(".") + 1]
        began = self._ends.get(parent)
        if began is None:
            began = self._start(parent)
        done = [end for other, end in self._ends.items()
                if other.startswith(parent + "/") and not other.startswith(group)]
        return max([began, *done])

    def occupy(self, path: str, lane: str) -> tuple[float, float]:
        """The start and end of the next event of branch ``path`` on ``lane``."""
        own = self._ends.get(path)
        ready = self._start(path) if own is None else own
        done = [end for other, end in self._ends.items() if other.startswith(path + "/")]
        start = max([ready, *done, self._lanes.get(lane, 0.0)])
        self._ends[path] = self._lanes[lane] = start + 1.0
        return start, start + 1.0


class PlanRecorder:
    """Collects what a planned run would do; its :meth:`reporter` takes the run's
    reports, the recording cloud and agents report to it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clock = _Clock()
        self._order = itertools.count(1)
        self.pushes: list[dict[str, Any]] = []
        self.plans: list[dict[str, Any]] = []
        self.stops: list[dict[str, Any]] = []
        self.reports: list[dict[str, Any]] = []
        self.identities: dict[str, list[str]] = {"made": [], "removed": []}
        self.elsewhere: list[dict[str, Any]] = []  # calls withheld (a workflow service)
        self.lanes: dict[str, str] = {}  # agent queue -> server name
        self._templates: dict[Any, dict[str, Any]] = {}  # plan stamp -> its summary

    # -- what the run reports ------------------------------------------------------------
    def reporter(self, entry: Mapping[str, Any]) -> None:
        """The run's reporter: reports are kept; a plan's step names its server's lane."""
        if not is_step(entry):
            with self._lock:
                self.reports.append({k: entry.get(k) for k in ("id", "level", "text",
                                                               "details")})
            return
        step = entry["step"]
        if step.get("kind") == "plan" and step.get("phase") == "sent" and step.get("host"):
            from murano_common.queue_names import agent_queue_name
            queue = agent_queue_name(str(entry.get("environment_id")), str(step["host"]))
            with self._lock:
                self.lanes[queue] = str(step.get("lane"))

    def _event(self, lane: str, **fields: Any) -> dict[str, Any]:
        """An event of the running branch on ``lane``, numbered and placed in time."""
        branch = concurrency.branch()
        with self._lock:
            start, end = self._clock.occupy(branch, lane)
            return {"order": next(self._order), "branch": branch, "start": start,
                    "end": end, **fields}

    # -- the cloud -----------------------------------------------------------------------
    def stack_changed(self, change: dict[str, Any]) -> None:
        """A push, update or delete the recording cloud recorded."""
        event = self._event("stack", **change)
        with self._lock:
            self.pushes.append(event)

    # -- the agents ----------------------------------------------------------------------
    def built(self, stamp: Any, template: Mapping[str, Any]) -> None:
        """A plan was built from ``template``; ``stamp`` names it when it is sent."""
        summary = _summary(template)
        with self._lock:
            self._templates[stamp] = summary

    def sent(self, queue: str, plan: Mapping[str, Any], wait: bool) -> Any:
        """A plan sent to ``queue``: recorded; its declared dry-run result when ``wait``
        (:class:`DependsOnResult` when it declares none)."""
        with self._lock:
            summary = self._templates.get(plan.get("Stamp"))
            server = self.lanes.get(queue) or queue
        if summary is None:  # a plan built elsewhere (callRaw of a plan of its own)
            summary = _summary(plan)
        name = str(plan.get("Name") or summary["name"] or "execution plan")
        declared = "result" in summary
        outcome = "sent" if not wait else "declared" if declared else "unknown"
        event = self._event(server, server=server, queue=queue, name=name,
                            scripts=summary["scripts"], parameters=summary["parameters"],
                            result=outcome)
        with self._lock:
            self.plans.append(event)
        if not wait:
            return None
        if declared:
            return copy.deepcopy(summary["result"])
        line = depends_on(name, server)
        with self._lock:
            self.stops.append({"order": event["order"], "branch": event["branch"],
                               "server": server, "plan": name, "text": line,
                               "start": event["start"]})
        raise DependsOnResult(line)

    def withheld(self, kind: str, scope: str) -> Any:
        """A call a plan does not make (:data:`WITHHELD`): recorded; an upload answers
        that it made nothing, a workflow started stops the branch, which waits for its
        result."""
        event = self._event("elsewhere", kind=kind, name=scope)
        with self._lock:
            self.elsewhere.append(event)
        if kind == "mistral.upload":
            return []
        line = depends_on(scope or "a workflow", "Mistral")
        with self._lock:
            self.stops.append({"order": event["order"], "branch": event["branch"],
                               "server": "Mistral", "plan": scope, "text": line,
                               "start": event["start"]})
        raise DependsOnResult(line)

    def identity(self, kind: str, queue: str) -> None:
        """A server's broker user the run would make or remove."""
        with self._lock:
            self.identities[kind].append(queue)

    # -- the result ----------------------------------------------------------------------
    def result(self, task: Mapping[str, Any], outcome: Mapping[str, Any],
               cloud: RecordingCloud, journal: Journal) -> dict[str, Any]:
        """The plan as JSON data (see the module's doc)."""
        from murano_engine.messaging.identities import identity_name
        stacks = []
        for name, after in cloud.planned().items():
            before = cloud.current.get(name)
            old = before.template if before is not None else None
            stacks.append({"name": name, "before": "present" if before else "absent",
                           "after": "present" if after is not None else "absent",
                           **template_diff(old, after)})
        servers: dict[str, list[dict[str, Any]]] = {"made": [], "deleted": [], "changed": []}
        for push in self.pushes:
            for kind in servers:
                servers[kind].extend(push["servers"][kind])
        failure = outcome.get("result") if outcome.get("isException") else None
        objects = (task.get("model") or {}).get("Objects") or {}
        return {
            "environment": {"id": task.get("id"), "name": objects.get("name")
                            if isinstance(objects, Mapping) else None},
            "action": task.get("action"),
            "outcome": "failed" if failure else "stopped" if self.stops else "complete",
            "failure": failure,
            "stacks": stacks,
            "servers": servers,
            "pushes": self.pushes,
            "plans": self.plans,
            "stops": self.stops,
            "reports": self.reports,
            "elsewhere": self.elsewhere,
            "broker": {f"users_{kind}": sorted({identity_name(q) for q in queues})
                       for kind, queues in self.identities.items()},
            "calls": [entry["k"] for entry in journal.entries() if entry.get("t") != "begin"
                      and entry["k"].split("|")[1] in COMPARED_CALLS],
        }


#: The kinds of journal entries a plan lists (``calls``), to compare with a deploy's.
COMPARED_CALLS = frozenset({"stack.push", "stack.delete", "agent.call", "agent.send",
                            "broker.identity", "broker.revoke"})


def _summary(template: Mapping[str, Any]) -> dict[str, Any]:
    """What a plan shows of its template: name, scripts, parameters, and the declared
    dry-run result (``result``, absent when there is none)."""
    summary = {"name": template.get("Name"), "scripts": _scripts(template),
               "parameters": _parameters(template)}
    if DRY_RUN_RESULT in template:
        summary["result"] = copy.deepcopy(template[DRY_RUN_RESULT])
    return summary


def _scripts(template: Mapping[str, Any]) -> list[str]:
    """The scripts of a plan template: a v2 script's entry point with its files, a v1
    plan's script files and the commands it calls."""
    scripts = template.get("Scripts")
    if isinstance(scripts, Mapping):
        found = []
        for name, script in scripts.items():
            if not isinstance(script, Mapping):
                continue
            files = [str(f) for f in script.get("Files") or () if isinstance(f, str)]
            entry = f"{name}: {script.get('EntryPoint')}"
            found.append(entry + (f" ({', '.join(files)})" if files else ""))
        return found
    found = [str(s) for s in scripts or () if isinstance(s, str) and len(s) < 200]
    commands = template.get("Commands")
    return found + [f"{c.get('Name')}()" for c in commands or () if isinstance(c, Mapping)]


def _parameters(template: Mapping[str, Any]) -> dict[str, Any]:
    """A plan's parameters as shown: a v2 plan's ``Parameters``, a v1 plan's commands'
    arguments; secrets hidden, long values cut."""
    shown: dict[str, Any] = {}
    given = template.get("Parameters")
    if isinstance(given, Mapping):
        shown.update(given)
    for command in template.get("Commands") or ():
        if isinstance(command, Mapping) and isinstance(command.get("Arguments"), Mapping):
            shown.update(command["Arguments"])
    return {str(k): _shown(str(k), v) for k, v in shown.items()}


def _shown(name: str, value: Any) -> Any:
    if any(word in name.lower() for word in SECRET_WORDS):
        return "(hidden)"
    if isinstance(value, str) and len(value) > SHOWN_VALUE:
        return value[:SHOWN_VALUE] + "…"
    if isinstance(value, (Mapping, list, tuple)):
        import json
        text = json.dumps(value, default=str)
        return value if len(text) <= SHOWN_VALUE else text[:SHOWN_VALUE] + "…"
    return value


# -- the services --------------------------------------------------------------------

class RecordingAgents:
    """An :class:`~murano_engine.messaging.AgentClient` stand-in: plans are built as
    for an agent (their script files read and checked), recorded, and answered at once
    (see :meth:`PlanRecorder.sent`); nothing reaches a broker."""

    def __init__(self, recorder: PlanRecorder, signing_key: SigningKey, region: str = "",
                 stamps: itertools.count | None = None) -> None:
        from murano_common.queue_names import result_queue_name
        self.result_queue = result_queue_name(region)
        self.keys = None  # a plan removes no signing key (tasks._forget_keys)
        self._recorder = recorder
        self._signing_key = signing_key
        self._stamps = stamps if stamps is not None else itertools.count(1)
        self._regions: dict[str, RecordingAgents] = {}

    def for_region(self, region: str) -> RecordingAgents:
        from murano_common.queue_names import result_queue_name
        if result_queue_name(region) == self.result_queue:
            return self
        if region not in self._regions:
            self._regions[region] = RecordingAgents(self._recorder, self._signing_key,
                                                    region, self._stamps)
        return self._regions[region]

    @staticmethod
    def queue_name(environment_id: str, instance_id: str) -> str:
        from murano_common import amqp
        return amqp.agent_queue_name(environment_id, instance_id)

    def watch_guests(self, failure: Callable[[str], str | None]) -> None:
        """Nothing to watch: no guest runs a plan."""

    def listen(self) -> None:
        """Nothing to listen to."""

    def signing_key(self, line_prefix: str = "", environment: str | None = None) -> str:
        return self._signing_key(line_prefix, environment)

    def build_plan(self, template: dict[str, Any],
                   read_resource: Callable[[str], bytes]) -> dict[str, Any]:
        from murano_engine.messaging import plans
        stamp = next(self._stamps)
        plan = plans.build_plan(template, read_resource, stamp)
        self._recorder.built(stamp, template)
        return plan

    def call(self, queue: str, plan: dict[str, Any], timeout: float,
             interrupted: Callable[[], bool] | None = None,
             environment: str | None = None) -> Any:
        return self._recorder.sent(queue, plan, wait=True)

    def send(self, queue: str, plan: dict[str, Any], timeout: float = 0.0,
             environment: str | None = None) -> str:
        self._recorder.sent(queue, plan, wait=False)
        return str(plan.get("ID") or "")

    def is_ready(self, queue: str, timeout: float = 100, environment: str | None = None) -> bool:
        return True

    def remove_region(self, region: str) -> None:
        """Nothing to remove: the plan made no queue."""

    def close(self) -> None:
        """Nothing to close."""


class PlaceholderIdentities:
    """Broker identities that are minted nowhere: what a server's agent would be given,
    its password a placeholder; revoking records the removal."""

    def __init__(self, recorder: PlanRecorder, virtual_host: str) -> None:
        self._recorder = recorder
        self.virtual_host = virtual_host

    def mint(self, queue: str, result_queue: str) -> Any:
        from murano_engine.messaging.identities import (
            BrokerIdentity,
            identity_name,
            result_exchange_name,
        )
        self._recorder.identity("made", queue)
        return BrokerIdentity(identity_name(queue), known_after(f"broker password of {queue}"),
                              self.virtual_host, result_exchange_name(result_queue))

    def revoke(self, queue: str) -> bool:
        self._recorder.identity("removed", queue)
        return True

    def remove_exchange(self, result_queue: str) -> bool:
        return True


class _MemoryStore:
    """A journal store in memory: the plan's calls are keyed as a deploy's are."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def load(self) -> list[dict[str, Any]]:
        return []

    def append(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)

    def close(self) -> None:
        """Nothing to release."""


#: Calls through the journal that change something outside the cloud and the agents
#: (a workflow service): a plan withholds them (:meth:`PlanRecorder.withheld`).
WITHHELD = frozenset({"mistral.upload", "mistral.start", "mistral.wait"})


class PlanJournal(Journal):
    """The journal of a plan: in memory, its ``sleep`` does not wait (nothing outside
    changes while a plan waits), and the calls of :data:`WITHHELD` kinds are not made
    but handed to ``withheld(kind, scope)``, whose answer they get."""

    def __init__(self, withheld: Callable[[str, str], Any]) -> None:
        self._memory = _MemoryStore()
        self._withheld = withheld
        super().__init__(self._memory)

    def value(self, kind: str, scope: str, compute: Callable[[], Any]) -> Any:
        if kind in WITHHELD:
            return super().value(kind, scope, lambda: self._withheld(kind, scope))
        return super().value(kind, scope, compute)

    def sleep(self, seconds: float) -> None:
        self.value("sleep", "", lambda: None)

    def entries(self) -> list[dict[str, Any]]:
        return list(self._memory.entries)


def _signing_key(config: Mapping[str, Mapping[str, Any]]) -> SigningKey:
    """The public key text agents would be given, read where it exists, never made: the
    environment's own (``[engine] sign_plans``), or the one key of ``[engine]
    signing_key``; a placeholder where it does not exist yet; '' for unsigned plans."""
    from murano_engine.engine.services import signing_key_file, signing_keys
    from murano_engine.messaging.signing import PlanSigner
    keys = signing_keys(config)
    key_file = signing_key_file(config)

    @functools.cache
    def public(line_prefix: str, environment: str | None) -> str:
        if keys is not None:
            if environment and environment in keys.environments():
                return keys.keys(environment).current.public_key_pem(line_prefix)
            return known_after("the environment's plan signing key")
        if key_file is not None:
            if key_file.is_file():
                return PlanSigner(key_file.read_bytes()).public_key_pem(line_prefix)
            return known_after("the engine's plan signing key")
        return ""

    return public


def _local_check(name: str, template: dict[str, Any], parameters: dict[str, Any],
                 files: dict[str, str], environment: dict[str, Any]) -> None:
    """The local cloud's checks of a push (TemplateError when it would refuse it)."""
    from murano_engine.clouds.local.stack import check_stack_name
    from murano_engine.clouds.local.template import Template
    check_stack_name(name)
    Template(template, parameters, files, environment)


def _heat_section(config: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """``[heat]`` when it says how to reach Heat, else None (the local cloud); Heat's
    client is imported only then."""
    heat = config.get("heat") or {}
    if not (heat.get("auth_url") or heat.get("url")):
        return None
    from murano_engine.clouds.heat import heat_configured
    return heat if heat_configured(heat) else None


def plan_services(config: Mapping[str, Mapping[str, Any]],
                  recorder: PlanRecorder) -> dict[str, Any]:
    """The services of a planned run for ``config`` (a project's own under the API):
    as :func:`murano_engine.engine.services.engine_services` makes them, recording."""
    from murano_engine.engine.quotas import servers_quota
    from murano_engine.messaging.identities import BrokerIdentities
    heat = _heat_section(config)
    cloud: RecordingCloud
    if heat is not None:
        from murano_engine.clouds.heat import HeatStacks
        timeout = float((config.get("engine") or {}).get("stack_timeout") or 60)
        cloud = RecordingCloud(HeatCurrent(HeatStacks.from_config(heat, timeout)),
                               recorder.stack_changed)
    else:
        state_dir = (config.get("local_cloud") or {}).get("state_dir")
        from murano_engine.clouds.base import DEFAULT_STATE_DIR
        cloud = LocalRecordingCloud(LocalCurrent(Path(str(state_dir or DEFAULT_STATE_DIR))),
                                    recorder.stack_changed, _local_check,
                                    servers_quota(config))
    services: dict[str, Any] = {
        "cloud": cloud, "agents": RecordingAgents(recorder, _signing_key(config)),
        "config": config}
    identities = BrokerIdentities.from_config(config)
    if identities is not None:
        services["identities"] = PlaceholderIdentities(recorder, identities.virtual_host)
    folder = (config.get("engine") or {}).get("class_configs")
    if folder:
        from murano_engine.engine.class_configs import ClassConfigFiles
        services["class_configs"] = ClassConfigFiles(folder)
    return services


def run_plan(task: Mapping[str, Any], loader: PackageLoader,
             config: Mapping[str, Mapping[str, Any]], budget: Budget | None) -> dict[str, Any]:
    """The plan of ``task`` (see the module's doc), within ``budget``."""
    from murano_engine.dsl import boundary
    from murano_engine.engine.tasks import describe_failure, run_task
    recorder = PlanRecorder()
    services = plan_services(config, recorder)
    journal = PlanJournal(recorder.withheld)
    with boundary.use(journal.stoppable()):
        try:
            result = run_task(task, loader, reporter=recorder.reporter, services=services,
                              budget=budget, outside=journal)
        except concurrency.BranchStop:  # stopped outside any branch (loading the model)
            result = {"action": {"result": None, "isException": False}}
        except Exception as exc:  # noqa: BLE001 - a plan that cannot run says why
            result = {"action": {"result": describe_failure(exc), "isException": True}}
    planned = recorder.result(task, result["action"], services["cloud"], journal)
    planned["model"] = (result.get("model") or {}).get("Objects")
    return planned


# -- text ----------------------------------------------------------------------------

def text(plan: Mapping[str, Any]) -> str:
    """The plan as people read it."""
    lines = [_title(plan)]
    for stack in plan["stacks"]:
        state = {("absent", "present"): "made", ("present", "absent"): "deleted"}.get(
            (stack["before"], stack["after"]), "changed")
        lines.append(f"stack {stack['name']} ({state}):")
        lines += [f"  + {r['name']} ({r['type']})" for r in stack["added"]]
        lines += [f"  ~ {r['name']} ({r['type']}): "
                  + ", ".join(r["properties"] + r["other"]) for r in stack["changed"]]
        lines += [f"  - {r['name']} ({r['type']})" for r in stack["removed"]]
        if not (stack["added"] or stack["changed"] or stack["removed"]):
            lines.append("  (no change)")
    if not plan["stacks"]:
        lines.append("no stack is changed")
    servers = plan["servers"]
    for server in servers["made"]:
        lines.append(f"server {server['name']} is made ({server.get('flavor')}, "
                     f"{server.get('image')})")
    for server in servers["changed"]:
        lines.append(f"server {server['name']} changes: {', '.join(server['properties'])}")
    for server in servers["deleted"]:
        known = f" ({server['id']})" if server.get("id") else ""
        lines.append(f"server {server['name']}{known} is deleted")
    if plan["pushes"]:
        lines.append("stack pushes, in order:")
        for index, push in enumerate(plan["pushes"], 1):
            lines.append(f"  {index}. {push['action']} {push['stack']}: +{len(push['added'])} "
                         f"~{len(push['changed'])} -{len(push['removed'])}")
    by_server: dict[str, list[dict[str, Any]]] = {}
    for entry in plan["plans"]:
        by_server.setdefault(entry["server"], []).append(entry)
    stops = {stop["order"]: stop for stop in plan["stops"]}
    if by_server:
        lines.append("plans per server, in order:")
    for server, entries in by_server.items():
        lines.append(f"  {server}:")
        for index, entry in enumerate(entries, 1):
            sent = " (sent, not waited for)" if entry["result"] == "sent" else ""
            lines.append(f"    {index}. {entry['name']}{sent}")
            if entry["scripts"]:
                lines.append(f"       scripts: {'; '.join(entry['scripts'])}")
            if entry["parameters"]:
                shown = ", ".join(f"{k}={_short(v)}" for k, v in entry["parameters"].items())
                lines.append(f"       parameters: {shown}")
            if entry["order"] in stops:
                lines.append(f"       {stops[entry['order']]['text']}")
    for call in plan["elsewhere"]:
        lines.append(f"not made: {call['kind']} {call['name']}".rstrip())
    planned = {entry["order"] for entry in plan["plans"]}
    lines += [stop["text"] for stop in plan["stops"] if stop["order"] not in planned]
    broker = plan["broker"]
    if broker["users_made"]:
        lines.append(f"broker users made: {len(broker['users_made'])} (one per new server)")
    if broker["users_removed"]:
        lines.append(f"broker users removed: {len(broker['users_removed'])}")
    if plan["reports"]:
        lines.append("reports the deploy would send:")
        lines += [f"  {r.get('level') or 'info':<7} {r.get('text')}" for r in plan["reports"]]
    if plan["failure"]:
        lines.append(f"the run would fail: {plan['failure'].get('message')}")
    if plan["stops"]:
        lines.append(f"{len(plan['stops'])} branch(es) stopped where a script's result is "
                     "needed; what they do next is not shown")
    lines.append("nothing was made, changed or sent")
    return "\n".join(lines) + "\n"


def _title(plan: Mapping[str, Any]) -> str:
    env = plan["environment"]
    action = plan["action"]
    what = "destroy" if action is None else "deploy" if action.get("method") == "deploy" \
        else f"action {action.get('method')} on {action.get('object_id')}"
    name = f" ({env['name']})" if env.get("name") else ""
    return f"plan of the {what} of environment {env.get('id')}{name}: {plan['outcome']}"


def _short(value: Any, limit: int = 60) -> str:
    shown = value if isinstance(value, str) else repr(value)
    return shown if len(shown) <= limit else shown[:limit - 1] + "…"


__all__ = ["DependsOnResult", "PlanRecorder", "depends_on", "plan_services",
           "run_plan", "text"]
