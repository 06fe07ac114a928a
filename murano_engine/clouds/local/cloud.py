"""The local cloud: Heat's stack API over resources made on this machine.

Operations run on background threads, as Heat's engine does; the API calls
check the template first (a bad one raises :class:`TemplateError` and changes
nothing) and return with the stack ``*_IN_PROGRESS``. State is saved under
``state_dir`` after every resource step.

A stack belongs to one engine process at a time: the first call about it
takes its lock (``locks/<name>.lock``, held until :meth:`LocalCloud.close`
or the process's end; the file goes with the stack, and the lock of a stack
that does not exist is let go when the cloud settles or closes), reads it
from disk, marks operations an earlier process did not finish as FAILED and
takes its servers' agents back. Another process asking for the same stack
meanwhile gets :class:`StackConflict` naming the holder, so two engine runs
never adopt each other's servers.

A cloud may hold at most ``server_quota`` servers, all its stacks together: a create
or update that would take them past it is refused whole
(:class:`~murano_engine.clouds.local.quota.QuotaExceeded`) before anything of it is made.
Every engine process on the folder counts under one lock (on the ``stacks`` folder), so
two pushes at once cannot both pass.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from murano_engine.clouds.base import (
    DEFAULT_STACK_TIMEOUT,
    DEFAULT_STATE_DIR,
    CloudError,
    Stack,
    StackConflict,
    StackNotFound,
    StackService,
)
from murano_engine.clouds.local.addresses import FLOATING_POOL, Addresses
from murano_engine.clouds.local.cgroups import DEFAULT_MAX_PROCESSES
from murano_engine.clouds.local.compute import SERVER
from murano_engine.clouds.local.flavors import FLAVORS
from murano_engine.clouds.local.guest import Guests
from murano_engine.clouds.local.operations import Operation, OperationFailed, outputs
from murano_engine.clouds.local.quota import check_server_quota
from murano_engine.clouds.local.relay import DEFAULT_LIMITS, RelayLimits
from murano_engine.clouds.local.resource import ResourceRecord
from murano_engine.clouds.local.sandbox import Launcher, make_launcher
from murano_engine.clouds.local.scheduler import DEFAULT_PARALLEL
from murano_engine.clouds.local.stack import (
    SECTIONS,
    StackFiles,
    StackState,
    check_stack_name,
    plain,
)
from murano_engine.clouds.local.template import Template, server_count
from murano_engine.messaging.identities import BrokerIdentities

LOG = logging.getLogger(__name__)

INTERRUPTED = "interrupted: the local cloud stopped before the operation ended"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LocalCloud(StackService):
    """Stacks whose resources are records and folders, and whose servers are sandboxes."""

    def __init__(
        self,
        state_dir: str | Path = DEFAULT_STATE_DIR,
        *,
        broker_url: str | None = None,
        broker_address: str | None = None,
        powershell: str | None = None,
        floating_cidr: str = "172.24.4.0/24",
        isolation: str = "namespaces",
        max_processes: int = DEFAULT_MAX_PROCESSES,
        relay_limits: RelayLimits = DEFAULT_LIMITS,
        launcher: Launcher | None = None,
        parallel: int = DEFAULT_PARALLEL,
        timeout: float = DEFAULT_STACK_TIMEOUT,
        poll_interval: float = 0.05,
        identities: BrokerIdentities | None = None,
        server_quota: int = -1,
    ) -> None:
        super().__init__(timeout=timeout, poll_interval=poll_interval)
        root = Path(state_dir).expanduser()
        self.state_dir = root
        #: the most servers the cloud's stacks may hold together (-1: no limit)
        self.server_quota = server_quota
        self._counting = threading.Lock()  # one thread of the process at the servers lock
        self.lock = threading.RLock()
        self.addresses = Addresses(floating_cidr)
        self.guests = Guests(
            root / "servers",
            launcher if launcher is not None
            else make_launcher(isolation, max_processes, relay_limits),
            broker_url=broker_url,
            broker_address=broker_address,
            powershell=powershell,
            identities=identities,
        )
        self.volumes = root / "volumes"
        self.volumes.mkdir(parents=True, exist_ok=True)
        self._parallel = parallel
        self._files = StackFiles(root / "stacks", self.lock)
        self._stacks: dict[str, StackState] = {}
        self._templates: dict[str, Template] = {}
        #: the last outputs worked out of each stack: (the files' version, its template,
        #: the outputs), read only (their values are shared by the readers)
        self._outputs: dict[str, tuple[int, Template, dict[str, Any]]] = {}
        self._workers: dict[str, threading.Thread] = {}
        self._locks = root / "locks"
        self._locks.mkdir(parents=True, exist_ok=True)
        self._owned: dict[str, int] = {}
        self._reload()

    @classmethod
    def from_config(cls, section: Mapping[str, Any],
                    stack_timeout: float = DEFAULT_STACK_TIMEOUT,
                    identities: BrokerIdentities | None = None,
                    broker_address: str | None = None,
                    server_quota: int = -1) -> LocalCloud:
        """Build from the engine config's ``[local_cloud]`` section; its ``stack_timeout``
        (when set) wins over ``stack_timeout``; ``identities`` revokes the broker users
        of the servers it deletes; ``server_quota`` bounds its servers (-1: no limit)."""
        return cls(
            section.get("state_dir") or DEFAULT_STATE_DIR,
            broker_url=section.get("broker_url") or None,
            broker_address=broker_address,
            powershell=section.get("powershell") or None,
            isolation=section.get("isolation") or "namespaces",
            max_processes=int(section.get("max_processes") or DEFAULT_MAX_PROCESSES),
            relay_limits=RelayLimits(
                int(section.get("relay_connections", DEFAULT_LIMITS.connections)),
                int(section.get("relay_channels", DEFAULT_LIMITS.channels))),
            floating_cidr=section.get("floating_cidr") or "172.24.4.0/24",
            parallel=int(section.get("parallel", DEFAULT_PARALLEL)),
            timeout=float(section.get("stack_timeout") or stack_timeout),
            poll_interval=float(section.get("poll_interval", 0.05)),
            identities=identities,
            server_quota=server_quota,
        )

    # --- Services (what resource types use) ------------------------------------
    def new_id(self) -> str:
        return str(uuid.uuid4())

    def records(self, *types: str) -> list[ResourceRecord]:
        # Every resource create asks (for its references): one pass, no list per stack.
        with self.lock:
            return [
                record
                for stack in self._stacks.values()
                for section in (stack.resources, stack.replaced)
                for record in section.values()
                if record.type in types and record.id
            ]

    def find(self, physical_id: str, *types: str) -> ResourceRecord | None:
        """A live resource of one of ``types`` by id, else by name."""
        candidates = self.records(*types)
        return next((r for r in candidates if r.id == physical_id), None) or next(
            (r for r in candidates if r.data.get("name") == physical_id), None)

    # --- StackService -----------------------------------------------------------
    def get(self, name: str, template: bool = True) -> Stack | None:
        self._take(name)
        with self.lock:
            stack = self._stacks.get(name)
            if stack is None:
                return None
            checked = self._templates[name]
            # Worked out once per change of the cloud's stacks: each instance of an
            # environment reads them after every push (N instances, N outputs each).
            version = self._files.version
            kept = self._outputs.get(name)
            if kept is not None and kept[0] == version and kept[1] is checked:
                values = kept[2]
            else:
                values = outputs(self, stack, checked)
                self._outputs[name] = (version, checked, values)
            return Stack(
                name=stack.name,
                id=stack.id,
                status=stack.status,
                status_reason=stack.reason,
                outputs=dict(values),
                parameters=dict(checked.parameters),
                template=plain(stack.template) if template else None,
                created=stack.created,
                updated=stack.updated,
            )

    def peek(self, name: str) -> Stack | None:
        self._take(name)
        with self.lock:
            stack = self._stacks.get(name)
            if stack is None:
                return None
            return Stack(
                name=stack.name,
                id=stack.id,
                status=stack.status,
                status_reason=stack.reason,
                created=stack.created,
                updated=stack.updated,
            )

    def create(
        self,
        name: str,
        template: dict[str, Any],
        parameters: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        environment: dict[str, Any] | None = None,
    ) -> None:
        check_stack_name(name)
        checked = Template(plain(template), parameters, files, environment)
        with self._within_server_quota(name, checked):
            with self.lock:  # taken and made at once: settle() lets go of absent stacks
                self._take(name)
                if name in self._stacks:
                    raise StackConflict(f"The Stack ({name}) already exists.")
                stack = StackState(
                    name=name,
                    id=self.new_id(),
                    status="CREATE_IN_PROGRESS",
                    reason="Stack CREATE started",
                    created=_now(),
                )
                self._accept(stack, checked, parameters, files, environment)
                self._stacks[name] = stack
            self._start(stack, "CREATE")

    def update(
        self,
        name: str,
        template: dict[str, Any],
        parameters: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        environment: dict[str, Any] | None = None,
    ) -> None:
        checked = Template(plain(template), parameters, files, environment)
        self._take(name)
        with self._within_server_quota(name, checked):
            with self.lock:
                stack = self._busy_check(name)
                self._accept(stack, checked, parameters, files, environment)
                stack.status, stack.reason = "UPDATE_IN_PROGRESS", "Stack UPDATE started"
                stack.updated = _now()
            self._start(stack, "UPDATE")

    def delete(self, name: str) -> None:
        self._take(name)
        with self.lock:
            stack = self._busy_check(name)
            stack.status, stack.reason = "DELETE_IN_PROGRESS", "Stack DELETE started"
            stack.updated = _now()
        self._start(stack, "DELETE")

    def settle(self) -> None:
        """Wait for the servers let go to be released; then let go of the stacks this
        process asked about that do not exist (their lock files go)."""
        self.guests.settle()
        self._release_absent()

    def close(self) -> None:
        """Let running operations finish, then leave the servers running.

        Servers are VMs: they outlive the engine (a command-line deploy, the
        API) and the next LocalCloud on the same folder takes them up again;
        deleting a server stops it.
        """
        while True:
            with self.lock:
                workers = list(self._workers.values())
            if not workers:
                break
            for worker in workers:
                worker.join()
        try:
            self.settle()
        except CloudError as exc:
            LOG.error("%s", exc)
        self.guests.detach_all()
        self._release_absent()
        with self.lock:
            owned, self._owned = list(self._owned.values()), {}
        for fd in owned:
            os.close(fd)

    def guest_failure(self, queue: str) -> str | None:
        return self.guests.queue_failure(queue)

    def attach_agent(self, queue: str) -> None:
        with self.lock:
            owners = {
                self.guests.input_queue(record.id): name
                for name, stack in self._stacks.items()
                if name not in self._owned
                for record in stack.records()
                if record.exists and record.type == "OS::Nova::Server"
                and record.data.get("agent")
            }
        if queue in owners:
            self._take(owners[queue])

    def detach_agent(self, queue: str) -> None:
        self.guests.cut_off(queue)

    def let_go(self, names: Iterable[str]) -> None:
        """Give up stacks ``names`` as :meth:`close` gives up all: each once its operation
        ended, its servers left running (their agents reconnect when a process takes the
        stack again), its lock let go. The stack stays known, as the folder has it."""
        for name in names:
            with self.lock:
                worker = self._workers.get(name)
            if worker is not None:
                worker.join()
            with self.lock:
                if name not in self._owned or name in self._workers:
                    continue
                stack = self._stacks.get(name)
                servers = [r.id for r in stack.records() if r.exists and r.type == SERVER] \
                    if stack is not None else []
                self.guests.detach(servers)
                os.close(self._owned.pop(name))
                if stack is None:
                    self._lock_path(name).unlink(missing_ok=True)

    # --- internals ---------------------------------------------------------------
    @contextlib.contextmanager
    def _within_server_quota(self, name: str, template: Template) -> Iterator[None]:
        """Accept a push of stack ``name`` (the body, which saves it) only when ``template``
        keeps the cloud's servers within :attr:`server_quota`, or holds no more than the
        stack holds now; else :class:`~murano_engine.clouds.local.quota.QuotaExceeded`.
        Held under the servers lock, so the next push counts this one's servers."""
        if self.server_quota < 0:
            yield
            return
        with self._counting:
            fd = os.open(self._files.folder, os.O_RDONLY | os.O_DIRECTORY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                check_server_quota(self.server_quota, name, self._servers_by_stack(),
                                   template.servers)
                yield
            finally:
                os.close(fd)  # (and the lock with it)

    def _servers_by_stack(self) -> dict[str, int]:
        """The servers of each stack of the folder, whichever process holds it: those its
        template defines or those it has, whichever are more."""
        counts = {}
        for header in self._files.folder.glob("*/stack.json"):
            name = header.parent.name
            with self.lock:
                stack = self._stacks.get(name) if name in self._owned else None
            if stack is None:
                try:
                    stack = self._files.load(name)
                except FileNotFoundError:  # deleted by its process meanwhile
                    continue
            if stack is not None:
                live = sum(1 for r in stack.records() if r.type == SERVER and r.exists)
                counts[name] = max(live, server_count(stack.template))
        return counts

    def _release_absent(self) -> None:
        """Give up the locks of stacks that do not exist (asked about and never made, or
        deleted): their files go, so nothing is left of a stack that is gone."""
        with self.lock:
            absent = [n for n in self._owned if n not in self._stacks and n not in self._workers]
            for name in absent:
                self._lock_path(name).unlink(missing_ok=True)
                os.close(self._owned.pop(name))

    def _busy_check(self, name: str) -> StackState:
        stack = self._stacks.get(name)
        if stack is None:
            raise StackNotFound(f"The Stack ({name}) could not be found.")
        if stack.in_progress:
            raise StackConflict(f"Stack {name} is {stack.status}; try again when it settles")
        return stack

    def _accept(
        self,
        stack: StackState,
        template: Template,
        parameters: dict[str, Any] | None,
        files: dict[str, str] | None,
        environment: dict[str, Any] | None,
    ) -> None:
        stack.template = template.raw
        stack.parameters = plain(parameters or {})
        stack.files = dict(files or {})
        stack.environment = plain(environment or {})
        self._templates[stack.name] = template

    def _start(self, stack: StackState, action: str) -> None:
        self._files.save_stack(stack)
        worker = threading.Thread(
            target=self._run, args=(stack, action), name=f"local-cloud {action} {stack.name}"
        )
        with self.lock:
            self._workers[stack.name] = worker
        worker.start()

    def _run(self, stack: StackState, action: str) -> None:
        operation = Operation(
            self, stack, self._templates[stack.name], self._files, parallel=self._parallel
        )
        try:
            if action == "DELETE":
                operation.delete()
            else:
                operation.converge(action)
        except OperationFailed as exc:
            self._finish(stack, f"{action}_FAILED", str(exc))
        except Exception as exc:
            LOG.exception("Local cloud %s of stack %s broke", action, stack.name)
            self._finish(stack, f"{action}_FAILED", f"{type(exc).__name__}: {exc}")
        else:
            self._finish(stack, f"{action}_COMPLETE", f"Stack {action} completed successfully")

    def _finish(self, stack: StackState, status: str, reason: str) -> None:
        # The file is written before the worker is let go: close() (and
        # anyone who saw the new status) may rely on it being on disk.
        with self.lock:
            stack.status, stack.reason = status, reason
            if status == "DELETE_COMPLETE":
                del self._stacks[stack.name]
                del self._templates[stack.name]
                self._outputs.pop(stack.name, None)
                self._files.remove(stack.name)
                self._lock_path(stack.name).unlink(missing_ok=True)
            else:
                self._files.save_stack(stack)
            self._workers.pop(stack.name, None)

    def _reload(self) -> None:
        """Read the stacks saved in the folder: their records tell which addresses are
        taken. Each is taken up for real by :meth:`_take`."""
        for stack in self._files.load_all():
            self._load(stack)

    def _load(self, stack: StackState) -> None:
        self._stacks[stack.name] = stack
        self._templates[stack.name] = Template(
            stack.template, stack.parameters, stack.files, stack.environment
        )
        for record in stack.records():
            self._reserve_addresses(record)

    def _lock_path(self, name: str) -> Path:
        """The lock file of stack ``name``: ``<name>.lock``, or for a name too long for
        that (Heat takes 255 characters) its start and a digest of the whole."""
        if len(name) <= 200:
            return self._locks / f"{name}.lock"
        return self._locks / f"{name[:200]}~{hashlib.sha256(name.encode()).hexdigest()[:24]}.lock"

    def _take(self, name: str) -> None:
        """Make stack ``name`` this process's (see the module's doc); StackConflict when
        another live process holds it."""
        check_stack_name(name)
        with self.lock:
            if name in self._owned:
                return
            path = self._lock_path(name)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
                os.close(fd)
                raise StackConflict(
                    f"Stack {name} is in use by another engine process (pid {holder}) "
                    f"on {self.state_dir}") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
            self._owned[name] = fd
            stack = self._files.load(name)
            self._stacks.pop(name, None)
            self._templates.pop(name, None)
            self._outputs.pop(name, None)
            if stack is not None:
                self._adopt(stack)

    def _adopt(self, stack: StackState) -> None:
        """Take up a stack an earlier process left: what it did not finish is FAILED,
        its servers' agents run again."""
        if stack.in_progress:
            stack.status = stack.status.replace("IN_PROGRESS", "FAILED")
            stack.reason = INTERRUPTED
        for section in SECTIONS:
            for key, record in getattr(stack, section).items():
                if record.status.endswith("_IN_PROGRESS"):
                    record.status = record.status.replace("IN_PROGRESS", "FAILED")
                    record.reason = INTERRUPTED
                    self._files.save_record(stack, section, key)
        self._files.save_stack(stack)
        self._load(stack)
        for record in stack.records():
            if record.exists and record.type == "OS::Nova::Server" and record.data.get("agent"):
                try:
                    self.guests.resume(record.id, FLAVORS.get(record.properties.get("flavor")))
                except Exception:
                    LOG.exception("The agent of server %s could not be restarted", record.id)

    def _reserve_addresses(self, record: ResourceRecord) -> None:
        if not record.exists:
            return
        ports = [record.data] if record.type == "OS::Neutron::Port" else []
        if record.type == "OS::Nova::Server":
            ports = [nic["implicit"] for nic in record.data.get("nics", []) if "implicit" in nic]
        for port in ports:
            for item in port["fixed_ips"]:
                self.addresses.reserve(item["subnet_id"], item["ip_address"])
        if record.type == "OS::Neutron::FloatingIP":
            self.addresses.reserve(FLOATING_POOL, record.data["floating_ip_address"])
