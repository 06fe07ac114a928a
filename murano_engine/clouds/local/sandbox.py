"""Where a local server's agent runs: its own process, sandboxed or (for development) not.

``isolation = namespaces`` (the default): each server's agent is a process in
namespaces of its own, made with ``ip netns`` and system calls (no setuid
helper is needed since the engine that starts it runs as root). A sandbox is
a fork of the agent's fork server (:mod:`.forkserver`), which has the agent's
modules imported: its first process makes the namespaces and its PID 1
(``sandbox-enter.py``), which builds its root, becomes
the server's user and starts the agent, and starts it again, by forking
(``sandbox-init.py``):

* **network**: the server's addresses on its networks (:mod:`.netns`); the
  broker is reached through a relay on the namespace's loopback;
* **mount**: a fresh root holding read-only ``/usr``, the Python installation
  and the agent's code, the server's own folder as ``/sandbox``, private
  ``/tmp``; no other host file is visible;
* **PID, IPC, UTS**: it sees only its own processes; its hostname is the
  server's name;
* **user**: it runs as an unprivileged host user (one per server, no
  capabilities), mapped to root inside its own user namespace;
* **limits** (when the server has a flavor): a control group of its own
  (:mod:`.cgroups`: memory, processes, CPU) and ``/sandbox`` on a disk of the
  flavor's size (:mod:`.disk`).

``isolation = none`` runs the agent as a plain child process of the engine,
with the host's files, network and processes in reach: for a single user's
development on a machine without namespaces, never for the API.
"""

from __future__ import annotations

import configparser
import functools
import hashlib
import importlib.util
import io
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import kombu

from murano_common import procfs
from murano_engine.clouds.base import CloudError
from murano_engine.clouds.local import netns
from murano_engine.clouds.local.cgroups import (
    DEFAULT_MAX_PROCESSES,
    Hierarchies,
    ServerGroup,
    host_hierarchies,
)
from murano_engine.clouds.local.disk import DiskError, ServerDisk, missing_for_disks
from murano_engine.clouds.local.flavors import Flavor
from murano_engine.clouds.local.forkserver import ForkServer, ForkServerError
from murano_engine.clouds.local.relay import DEFAULT_LIMITS, Relay, RelayLimits, RelayLoop

LOG = logging.getLogger(__name__)

ISOLATIONS = ("namespaces", "none")
INIT_CODE = Path(__file__).with_name("sandbox-init.py")
ENTER_SCRIPT = Path(__file__).with_name("sandbox-enter.py")
#: the most of a sandbox's output (its init's, its agents') kept in its ``.out`` file:
#: past it, the older half is cut (sandbox-enter.py keeps it; a guest cannot reach it)
OUTPUT_LIMIT = 1 << 20
INSIDE = "/sandbox"
RELAY_PORT = 5672
DEFAULT_LOGIN = "guest"  # whom AMQP clients log in as when the URL names no user
FIRST_UID = 200_000
UID_SPAN = 100_000
STOP_GRACE = 3.0
#: the name (``comm``) sandbox-enter.py gives a sandbox's first process
FIRST_PROCESS_NAME = "murano-sandbox"
#: A sandbox's environment (its PID 1 adds HOME and PATH): nothing of the engine's, as a
#: VM's agent has nothing of the cloud's.
GUEST_ENVIRONMENT = {"LANG": "C.UTF-8"}
# An agent left running by an engine that exited retries its broker (the next
# engine's relay) this often at most, so that engine need not wait for it long.
RECONNECT_MAX_DELAY = 2.0


class SandboxError(CloudError):
    """A server's sandbox could not be made or started."""


@dataclass
class ServerSpec:
    """What a launcher needs to start one server's agent."""

    server_id: str
    hostname: str
    folder: Path
    agent_ini: str
    broker_url: str
    interfaces: list[netns.Interface] = field(default_factory=list)
    powershell: str | None = None
    #: sizes the sandbox (no limits when None: a server booted before flavors did)
    flavor: Flavor | None = None
    #: where the sandbox's (or the unisolated agent's) output goes: out of the guest's
    #: reach, as the engine reads it (None: ``agent.out`` in the folder, for tests)
    output: Path | None = None

    @property
    def output_file(self) -> Path:
        return self.output or self.folder / "agent.out"


#: machines whose pivot_root system call sandbox-enter.py makes (SYS_PIVOT_ROOT there);
#: elsewhere it runs the ``pivot_root`` command
PIVOT_ROOT_CALLED = ("x86_64", "aarch64")


def missing_for_namespaces() -> list[str]:
    """What this host lacks to run sandboxes (empty when it has everything)."""
    tools = ["ip"] + ([] if os.uname().machine in PIVOT_ROOT_CALLED else ["pivot_root"])
    missing = [f"the {tool!r} command" for tool in tools if shutil.which(tool) is None]
    if os.geteuid() != 0:
        missing.append("root privileges for the engine (to make network namespaces)")
    if not Path("/proc/self/ns/user").exists():
        missing.append("kernel namespaces (/proc/self/ns)")
    return missing + host_hierarchies()[1] + missing_for_disks()


def agent_config(ini: str, root: str, broker_url: str, powershell: str | None = None) -> str:
    """The agent's configuration: the user data's, with storage, log and broker for here."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(ini)
    defaults = parser.defaults()
    defaults["storage"] = f"{root}/agent"
    defaults["log_file"] = f"{root}/agent.log"
    defaults["reboot_command"] = "true"
    defaults["reboot_wait"] = "0"
    if powershell:
        defaults["powershell"] = powershell
    if not parser.has_section("rabbitmq"):
        parser.add_section("rabbitmq")
    parser.set("rabbitmq", "url", broker_url)
    parser.set("rabbitmq", "reconnect_max_delay", str(RECONNECT_MAX_DELAY))
    out = io.StringIO()
    parser.write(out)
    return out.getvalue()


@functools.lru_cache(maxsize=256)
def ini_sections(ini: str) -> dict[str, dict[str, str]]:
    """An agent configuration's values by section, each with ``DEFAULT``'s (under
    ``"DEFAULT"`` too); ``configparser.Error`` when it does not parse. Parsed once per
    text: a server's is read at its boot, start and release. Not to be changed."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(ini)
    sections = {name: dict(parser[name]) for name in parser.sections()}
    sections["DEFAULT"] = dict(parser.defaults())
    return sections


def broker_from_ini(ini: str) -> str:
    """The broker URL an agent configuration names (its ``url``, else its parts)."""
    sections = ini_sections(ini)
    section = sections.get("rabbitmq", sections["DEFAULT"])
    if section.get("url"):
        return str(section["url"])
    scheme = "amqps" if section.get("ssl", "").lower() in ("true", "1", "yes") else "amqp"
    login = quote(section.get("login", "guest"), safe="")
    password = quote(section.get("password", "guest"), safe="")
    vhost = quote(section.get("virtual_host", "/").lstrip("/"), safe="")
    return (f"{scheme}://{login}:{password}@{section.get('host', 'localhost')}:"
            f"{section.get('port', '5672')}/{vhost}")


def delete_input_queue(spec: ServerSpec) -> None:
    """Delete the queue a removed server's agent consumed (a queue outlives its agent)."""
    queue = ini_sections(spec.agent_ini).get("rabbitmq", {}).get("input_queue", "")
    if not queue:
        return
    try:
        with kombu.Connection(spec.broker_url, connect_timeout=3) as conn:
            conn.default_channel.queue_delete(queue)
    except Exception as exc:  # noqa: BLE001 - the server is gone either way
        LOG.warning("The queue %s of a removed server could not be deleted: %s", queue, exc)


def _agent_command(config_path: str) -> list[str]:
    """The agent's command: with no ``site`` start-up (its path comes from
    :func:`_agent_path`), which saves a sandbox's Python the site's path hooks."""
    return [_python(), "-S", "-m", "murano_agent.cli", "--config-file", config_path]


def _python() -> str:
    """This Python, as a path the sandbox has: without ``..`` parts (a virtualenv's
    python is a link, so the path is only normalised, never resolved)."""
    return os.path.abspath(sys.executable)


def _agent_path() -> str:
    """The agent's ``PYTHONPATH``: its packages where the engine found them, whatever
    the installation's own path hooks (an editable install's) point at, then the
    site folders this Python's ``site`` gave the engine (its libraries)."""
    sites = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]
    return ":".join(dict.fromkeys([*_agent_code_roots(), *sites]))


def _check_broker(url: str) -> None:
    if url.split("://", 1)[0] not in ("amqp", "amqps", "pyamqp"):
        raise SandboxError(
            f"a local-cloud server's agent runs in its own process and needs a real broker; "
            f"{url.split('://', 1)[0]}:// cannot reach it (configure [rabbitmq])")


class ProcessLauncher:
    """``isolation = none``: the agent as a plain child process of the engine."""

    isolation = "none"

    def __init__(self) -> None:
        self._children: dict[str, subprocess.Popen] = {}

    def start(self, spec: ServerSpec) -> None:
        """Start the agent, or take back the one a previous engine left running."""
        _check_broker(spec.broker_url)
        if self.running(spec):
            return
        config = write_into(spec.folder, "agent.effective.conf", agent_config(
            spec.agent_ini, str(spec.folder), spec.broker_url, spec.powershell))
        with open(spec.output_file, "ab") as out:
            child = subprocess.Popen(
                _agent_command(str(config)), stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                cwd=spec.folder, start_new_session=True,
                env=dict(os.environ, PYTHONPATH=_agent_path()))
        _write_process(spec.folder / "agent.pid", child.pid)
        self._children[spec.server_id] = child

    def running(self, spec: ServerSpec) -> bool:
        child = self._children.get(spec.server_id)
        if child is not None:
            return child.poll() is None
        kept = _read_process(spec.folder / "agent.pid")
        return kept is not None and procfs.running(*kept)

    def exited(self, spec: ServerSpec) -> bool:
        """Whether the agent ended (cheap: for polling); nothing restarts it here."""
        return not self.running(spec)

    def oom_kills(self, spec: ServerSpec) -> int:
        """None are counted: a plain process has no memory limit of its own."""
        return 0

    def detach(self, spec: ServerSpec) -> None:
        """Leave the agent running (in a session of its own) for a later engine."""
        self._children.pop(spec.server_id, None)

    def resize(self, spec: ServerSpec) -> None:
        """Nothing to do: a plain process has no limits."""

    def cut_off(self, server_id: str) -> None:
        """Nothing to do: a plain process reaches the broker itself."""

    def remove(self, spec: ServerSpec) -> None:
        """Stop the server for good: its agent, then its queue."""
        self.discard(spec)
        delete_input_queue(spec)

    def discard(self, spec: ServerSpec) -> None:
        """Stop the server for good, leaving the broker alone (its queue goes with its
        broker user, removed with the administrative login)."""
        self.stop(spec)

    def stop(self, spec: ServerSpec) -> None:
        child = self._children.pop(spec.server_id, None)
        kept = (child.pid, None) if child is not None else _read_process(spec.folder / "agent.pid")
        if kept is not None and (child is not None or procfs.running(*kept)):
            _terminate([kept[0]], group=True)  # a zombie child counts as ended
        if child is not None:
            child.wait()

    def close(self) -> None:
        self._children.clear()


class NamespaceLauncher:
    """``isolation = namespaces``: the agent in a sandbox of its own (see the module)."""

    isolation = "namespaces"

    def __init__(self, max_processes: int = DEFAULT_MAX_PROCESSES,
                 relay_limits: RelayLimits = DEFAULT_LIMITS) -> None:
        missing = missing_for_namespaces()
        if missing:
            raise SandboxError(
                "local-cloud servers run in sandboxes, and this host lacks "
                + ", ".join(missing)
                + "; set [local_cloud] isolation = none to run agents unisolated "
                  "(single-user development only)")
        self._relays: dict[str, Relay] = {}
        #: the one thread serving every server's relay
        self._relay_loop = RelayLoop("sandboxes")
        #: the sandboxes this engine started: their first process
        self._children: dict[str, KeptProcess] = {}
        self._hierarchies: Hierarchies | None = host_hierarchies()[0]
        self.max_processes = max_processes
        #: what each server's broker relay lets its guest hold
        self.relay_limits = relay_limits
        self._forks = ForkServer(lambda: dict(os.environ, PYTHONPATH=_agent_path()))

    def start(self, spec: ServerSpec) -> None:
        """Start the sandbox, or take back the one a previous engine left running."""
        _check_broker(spec.broker_url)
        parts = urlsplit(spec.broker_url)
        if parts.scheme == "amqps":
            raise SandboxError(
                f"server {spec.hostname}'s agent would reach the broker over TLS, but a "
                f"sandbox reaches it through the engine's relay, which must read the "
                f"agent's login: use amqp:// for the local cloud's agents ([rabbitmq] ssl)")
        inside_url = urlunsplit(parts._replace(
            netloc=parts.netloc.rsplit("@", 1)[0] + f"@127.0.0.1:{RELAY_PORT}"
            if "@" in parts.netloc else f"127.0.0.1:{RELAY_PORT}"))
        name = netns.server_namespace(spec.server_id)
        if self.running(spec):  # left by a previous engine: give it its broker relay again
            self._relay(spec, name)
            if _read_process(_sandbox_pid_file(spec)) is None:  # made before pids were kept
                inside = netns.pids(name)
                if inside:
                    _write_process(_sandbox_pid_file(spec), min(inside))  # its oldest
            return
        uid = _uid_for(spec.server_id)
        try:
            self._bound(spec)
        except OSError as exc:
            self._teardown_after_failed_start(spec)
            raise SandboxError(f"cannot size the sandbox of server {spec.hostname} by its "
                               f"flavor: {exc}") from None
        write_into(spec.folder, "agent.effective.conf",
                   agent_config(spec.agent_ini, INSIDE, inside_url, spec.powershell))
        _own(spec.folder, uid)
        try:
            netns.create_server(spec.server_id, spec.interfaces)
            self._relay(spec, name)
        except (OSError, RuntimeError) as exc:  # RuntimeError: no thread for its relay
            self._teardown_after_failed_start(spec)
            raise SandboxError(f"cannot make the network of server {spec.hostname}: "
                               f"{exc}") from None
        root = spec.folder.parent / f".{spec.folder.name}.root"
        root.mkdir(exist_ok=True)
        args = {
            "cgroups": [str(path / "cgroup.procs") for path in self._group(spec).paths]
            if spec.flavor is not None else [],
            "netns": netns.namespace_file(name),
            "output_limit": OUTPUT_LIMIT,
            "root": {"root": str(root), "hostname": _hostname(spec.hostname),
                     "folder": str(spec.folder), "read_only": _read_only_paths(),
                     "init": str(INIT_CODE), **_memory_folders(spec.flavor)},
            "uid": uid,
            "agent": ["--config-file", f"{INSIDE}/agent.effective.conf"],
        }
        try:
            pid = self._forks.start(ENTER_SCRIPT, args, dict(GUEST_ENVIRONMENT),
                                    spec.output_file)
        except ForkServerError as exc:
            self._teardown_after_failed_start(spec)
            raise SandboxError(f"cannot start server {spec.hostname}: {exc}") from None
        self._children[spec.server_id] = _write_process(_sandbox_pid_file(spec), pid)

    def running(self, spec: ServerSpec) -> bool:
        # the control group's list first: one file, where the namespace's processes
        # are found by looking at every process of the host
        return (spec.flavor is not None and bool(self._group(spec).pids())) \
            or bool(netns.pids(netns.server_namespace(spec.server_id)))

    def _group(self, spec: ServerSpec) -> ServerGroup:
        assert self._hierarchies is not None  # __init__ refused a host without them
        return ServerGroup(self._hierarchies, spec.server_id)

    def _bound(self, spec: ServerSpec) -> None:
        """The flavor's limits: the server's disk on its folder, its control group."""
        if spec.flavor is None:
            return
        ServerDisk(spec.folder).attach(spec.flavor.disk_mib)
        self._group(spec).create(spec.flavor, self.max_processes)

    def resize(self, spec: ServerSpec) -> None:
        """Give a server its new flavor's limits: memory, processes and CPU at once; a
        bigger disk restarts the server, as Nova's resize does (a disk never shrinks)."""
        if spec.flavor is None:
            return
        disk = ServerDisk(spec.folder)
        try:
            current = disk.size_mib()
            if current is not None and current > spec.flavor.disk_mib:
                raise DiskError(f"a disk cannot shrink (from {current} to "
                                f"{spec.flavor.disk_mib} MiB)")
            if current is not None and current < spec.flavor.disk_mib:
                self.stop(spec)
                disk.grow(spec.flavor.disk_mib)
                self.start(spec)
            elif any(path.exists() for path in self._group(spec).paths):
                self._group(spec).create(spec.flavor, self.max_processes)
        except OSError as exc:
            raise SandboxError(f"cannot resize server {spec.hostname} to {spec.flavor.name}: "
                               f"{exc}") from None

    def exited(self, spec: ServerSpec) -> bool:
        """Whether the sandbox ended: its init gave up restarting the agent, or the agent
        could not start at all (cheap: for polling). Its first process, outside the
        sandbox, is a host-side helper: when it died and the guest's init still runs,
        the server is taken back by its init (kept as the sandbox's process from then
        on), not given up."""
        first = self._children.get(spec.server_id) or _read_process(_sandbox_pid_file(spec))
        if first is not None and procfs.running(*first):
            return False
        init = _oldest(netns.pids(netns.server_namespace(spec.server_id)))
        if init is None:
            return True
        LOG.warning("The host-side process of server %s's sandbox ended; its guest runs on "
                    "and is taken back by its init (pid %s); its output is no longer kept",
                    spec.hostname, init)
        self._children[spec.server_id] = _write_process(_sandbox_pid_file(spec), init)
        return False

    def oom_kills(self, spec: ServerSpec) -> int:
        """How many of the server's processes the kernel killed at its memory limit."""
        return self._group(spec).oom_kills() if spec.flavor is not None else 0

    def _relay(self, spec: ServerSpec, name: str) -> None:
        """A relay from the namespace's loopback to the broker (replacing any old one)
        that admits only the server's login (its own user, or the configured one)."""
        parts = urlsplit(spec.broker_url)
        target = (parts.hostname or "127.0.0.1", parts.port or 5672)
        old = self._relays.pop(spec.server_id, None)
        if old is not None:
            old.close()
        listener = netns.listening_socket(name, "127.0.0.1", RELAY_PORT)
        try:
            self._relays[spec.server_id] = Relay(
                listener, target, f"{spec.hostname} ({name})",
                unquote(parts.username or DEFAULT_LOGIN), self.relay_limits,
                self._relay_loop)
        except BaseException:
            listener.close()  # it holds the namespace
            raise

    def detach(self, spec: ServerSpec) -> None:
        """Leave the sandbox running for a later engine; only the broker relay goes
        (the agent reconnects once a later :meth:`start` gives it a new one)."""
        self._children.pop(spec.server_id, None)
        self.cut_off(spec.server_id)

    def remove(self, spec: ServerSpec) -> None:
        """Stop the server for good: its sandbox, its disk, then its queue."""
        self.discard(spec)
        delete_input_queue(spec)

    def discard(self, spec: ServerSpec) -> None:
        """Stop the server for good, its disk too, leaving the broker alone (its queue
        goes with its broker user, removed with the administrative login). Its
        processes are killed at once, as deleting a VM powers it off: nothing of the
        server is left to stop gracefully for. Every step is tried whichever fails
        before it; SandboxError names those that failed."""
        _every_step(spec, [
            ("its processes", lambda: _terminate(self._processes(spec),
                                                 signals=(signal.SIGKILL,))),
            *self._teardown_steps(spec),
            ("its disk", ServerDisk(spec.folder).delete),
        ])

    def _processes(self, spec: ServerSpec) -> list[int]:
        """The sandbox's processes: its control group's list when it has one (every
        process of a sandbox is in it, and its first process outside the sandbox is
        ended on its own), else those in its network namespace (found by looking at
        every process of the host: for each server, quadratic in a destroy's servers)."""
        if spec.flavor is not None and any(path.exists() for path in self._group(spec).paths):
            return self._group(spec).pids()
        return netns.pids(netns.server_namespace(spec.server_id))

    def cut_off(self, server_id: str) -> None:
        """Close the server's broker relay (its agent's way to the broker)."""
        relay = self._relays.pop(server_id, None)
        if relay is not None:
            relay.close()

    def stop(self, spec: ServerSpec) -> None:
        _every_step(spec, [
            ("its processes", lambda: _terminate(
                netns.pids(netns.server_namespace(spec.server_id)))),
            *self._teardown_steps(spec),
        ])

    def _teardown_steps(self, spec: ServerSpec) -> list[tuple[str, Callable[[], object]]]:
        """What goes when a sandbox ends, in order: its first process, its broker relay,
        its control groups (with what is left of its processes), its disk's mount (and
        loop device), its network namespace, its root folder, its pid file."""
        relay = self._relays.pop(spec.server_id, None)
        return [
            ("its first process", lambda: self._end_first_process(spec)),
            ("its broker relay", relay.close if relay is not None else lambda: None),
            ("its control groups", self._group(spec).remove),
            ("its disk's mount", ServerDisk(spec.folder).detach),
            ("its network namespace",
             lambda: netns.delete_server(spec.server_id, spec.interfaces)),
            ("its root folder", lambda: shutil.rmtree(
                spec.folder.parent / f".{spec.folder.name}.root", ignore_errors=True)),
            ("its pid file", lambda: _sandbox_pid_file(spec).unlink(missing_ok=True)),
        ]

    def _teardown_after_failed_start(self, spec: ServerSpec) -> None:
        """Undo what a start made; what cannot be undone is logged (the start's own
        failure is the one raised)."""
        try:
            _every_step(spec, self._teardown_steps(spec))
        except SandboxError as exc:
            LOG.error("%s", exc)

    def _end_first_process(self, spec: ServerSpec) -> None:
        """Kill the sandbox's first process if it still runs, and wait for its end. The
        whole sandbox ends with it (its PID 1 dies with its parent, the agents with PID
        1), also one still starting: not yet in the server's control groups or network,
        where a removal looks for processes, it would otherwise outlive its server."""
        first = self._children.pop(spec.server_id, None) \
            or _read_process(_sandbox_pid_file(spec))
        if first is None:
            return
        try:
            handle = os.pidfd_open(first[0])  # this process, whatever later takes its pid
        except OSError:
            return  # ended and collected
        try:
            # Checked after the handle is open: the pid may be another process's by now.
            if procfs.running(*first) if first[1] is not None else \
                    _process_name(first[0]) == FIRST_PROCESS_NAME:
                signal.pidfd_send_signal(handle, signal.SIGKILL)
                select.select([handle], [], [], STOP_GRACE)  # readable once it ended
        except ProcessLookupError:
            pass
        finally:
            os.close(handle)

    def close(self) -> None:
        for relay in self._relays.values():
            relay.close()
        self._relays.clear()
        self._relay_loop.close()
        self._forks.close()


Launcher = ProcessLauncher | NamespaceLauncher


def make_launcher(isolation: str, max_processes: int = DEFAULT_MAX_PROCESSES,
                  relay_limits: RelayLimits = DEFAULT_LIMITS) -> Launcher:
    if isolation == "namespaces":
        return NamespaceLauncher(max_processes, relay_limits)
    if isolation == "none":
        return ProcessLauncher()
    raise SandboxError(f"[local_cloud] isolation must be one of {', '.join(ISOLATIONS)}, "
                       f"not {isolation!r}")


def _every_step(spec: ServerSpec, steps: list[tuple[str, Callable[[], object]]]) -> None:
    """Run each of ``steps`` (what it removes, how), whichever fails before it; then
    SandboxError naming every one that failed and why."""
    failed = []
    for what, step in steps:
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - the next steps are tried all the same
            failed.append(f"{what} ({type(exc).__name__}: {exc})")
    if failed:
        raise SandboxError(f"cannot remove {'; '.join(failed)} of server {spec.hostname} "
                           f"({spec.server_id})")


def _agent_packages() -> list[Path]:
    """The folders of the agent's own packages, as this process imports them."""
    found = []
    for name in ("murano_agent", "murano_common"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            found.append(Path(spec.origin).resolve().parent)
    return found


def _agent_code_roots() -> list[str]:
    return sorted({str(folder.parent) for folder in _agent_packages()})


def _read_only_paths() -> list[str]:
    """The Python installation and the agent's own packages (their folders only: not the
    checkout or site folder around them)."""
    paths = {sys.prefix, sys.base_prefix, *(str(p) for p in _agent_packages())}
    return sorted(p for p in paths if not p.startswith(("/usr/", "/proc", "/dev")))


def _sandbox_pid_file(spec: ServerSpec) -> Path:
    """Where the sandbox's outermost process id is kept: beside the server's folder, out
    of the guest's reach."""
    return spec.folder.parent / f".{spec.folder.name}.pid"


def _uid_for(server_id: str) -> int:
    digest = int(hashlib.sha256(server_id.encode()).hexdigest()[:8], 16)
    return FIRST_UID + digest % UID_SPAN


def _hostname(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "-" else "-" for c in name).strip("-")
    return cleaned[:63] or "server"


#: the largest /tmp and /dev/shm of a sandbox (MiB)
MAX_TMP_MIB, MAX_SHM_MIB = 256, 64


def _memory_folders(flavor: Flavor | None) -> dict[str, int]:
    """The sizes of a sandbox's /tmp and /dev/shm: a quarter and an eighth of its RAM,
    at most MAX_TMP_MIB and MAX_SHM_MIB. Their files are memory the server's control
    group counts, but no process's: past the RAM, the kernel would kill the server's
    biggest process (its agent, its init) rather than the one filling them, which
    instead meets a full disk."""
    if flavor is None:
        return {"tmp_mib": MAX_TMP_MIB, "shm_mib": MAX_SHM_MIB}
    return {"tmp_mib": max(16, min(MAX_TMP_MIB, flavor.ram_mib // 4)),
            "shm_mib": max(8, min(MAX_SHM_MIB, flavor.ram_mib // 8))}


def write_into(folder: Path, name: str, text: str) -> Path:
    """Write ``folder/name`` where the folder is the guest's to change (a server's
    folder is its ``/sandbox``): the file is made anew and renamed into place, so a
    link the guest left under that name is replaced, never followed by the engine,
    which runs as the host's root."""
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=folder)  # O_EXCL|O_NOFOLLOW
    try:
        with open(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, folder / name)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return folder / name


def _own(folder: Path, uid: int) -> None:
    for path in [folder, *folder.rglob("*")]:
        os.lchown(path, uid, uid)


#: a process kept in a file (a sandbox's first process, an unisolated agent): its pid and
#: its start (clock ticks after boot), which tells it from a later process given the same
#: pid (None in files from before starts were kept)
KeptProcess = tuple[int, int | None]


def _write_process(path: Path, pid: int) -> KeptProcess:
    """Keep process ``pid`` in the file at ``path`` (see :data:`KeptProcess`)."""
    kept = (pid, procfs.start_ticks(pid))
    path.write_text(" ".join(str(f) for f in kept if f is not None))
    return kept


def _read_process(path: Path) -> KeptProcess | None:
    try:
        pid, *start = (int(f) for f in path.read_text().split()[:2])
    except (OSError, ValueError):
        return None
    return pid, start[0] if start else None


def _oldest(pids: list[int]) -> int | None:
    """The process of ``pids`` that started first (a sandbox's init among its processes),
    None when none runs."""
    started = [(ticks, pid) for pid in pids
               if (ticks := procfs.start_ticks(pid)) is not None and procfs.running(pid)]
    return min(started)[1] if started else None


def _process_name(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def _terminate(pids: list[int], group: bool = False,
               signals: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGKILL)) -> None:
    """SIGTERM, then SIGKILL what is still there after :data:`STOP_GRACE` seconds
    (or each of ``signals`` in turn)."""
    kill = os.killpg if group else os.kill
    for sig in signals:
        for pid in pids:
            try:
                kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + STOP_GRACE
        while any(map(procfs.running, pids)) and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = [p for p in pids if procfs.running(p)]
        if not pids:
            return
    LOG.warning("processes %s did not end", pids)
