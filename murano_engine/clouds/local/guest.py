"""Guests: a local server is a folder and its agent, a process of its own.

``<servers>/<server id>/`` holds ``user_data`` (as booted), ``agent.conf`` (the
agent config found in it, see :mod:`.userdata`), ``server.json`` (its name and
ports) and the agent's storage (``agent/``) and log. That folder is the guest's
(its ``/sandbox``, which a hostile guest may rewrite, links included), so what the
engine acts on is kept in ``<servers>-records/`` instead, out of its reach: the
agent config and the server's name, ports and flavor as booted
(``<server id>.conf``, ``.json``), its queue (``.queue``) and the output of its
sandbox and agent (``.out``); the engine writes into the guest's folder only
through :func:`.sandbox.write_into`, which never follows a link. ``by-queue/`` there
lists, for each queue, the servers booted to serve it: what a boot looks through for
a rival on its queue, instead of every server of the folder.

Releasing a server removes all it holds, on the host (its sandbox: processes,
network namespace, control groups, disk, mount and loop device) and on the
broker (its user and queue), every step tried whichever fails before it. What a
release could not remove stays recorded in ``<server id>.releasing`` (with the
stack the server was deleted from, and why), its records with it, and is tried
again by the next delete of that stack (:meth:`Guests.settle` of it, which
reports it again while it fails) and by the next ``Guests`` on the folder.

A guest that dies is a server in ERROR, as Nova would have it: a watcher sees
a server's agent end for good (it could not start, or ended and could not be
restarted) and records why, with the agent's last output, in
``<servers>-records/<server id>.error`` (out of the guest's reach); plans waiting on
the server's queue fail with that text (:meth:`Guests.queue_failure`). A
server in ERROR is not started again by a later engine; deleting it clears it. The agent is the
real ``murano-agent``, started by a launcher (:mod:`.sandbox`): in a sandbox of
its own by default. ``broker_url`` (when set) replaces the broker address the
agent config names, since the address a VM would use may not be the one this
host reaches (a server's own broker identity, ``murano-agent-<queue>``, is kept);
``broker_address`` (the engine's broker) replaces the host and port it names in any
case, so no package's user data sends a sandbox's relay elsewhere.
Releasing a server revokes that identity.
"""

from __future__ import annotations

import configparser
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from murano_engine.clouds.base import CloudError
from murano_engine.clouds.local.flavors import Flavor
from murano_engine.clouds.local.netns import Interface
from murano_engine.clouds.local.sandbox import (
    Launcher,
    ServerSpec,
    broker_from_ini,
    ini_sections,
    write_into,
)
from murano_engine.clouds.local.userdata import find_agent_config
from murano_engine.messaging.identities import (
    USER_PREFIX,
    BrokerIdentities,
    identity_name,
    with_credentials,
)

LOG = logging.getLogger(__name__)

POWERSHELL_NAMES = ("pwsh", "powershell")
#: a server's id (the cloud's uuid), as a file name of its records
_SERVER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
#: Seconds between two looks at whether the running servers' agents are still there.
WATCH_INTERVAL = 0.25
#: How much of a dead agent's output its server's error keeps.
LAST_OUTPUT_CHARS = 2000
#: The steps of a server's release, as its record names those left: the server on the
#: host (its sandbox, or its process) and its broker user with its queue.
SANDBOX, BROKER = "sandbox", "broker"
#: A release as ``<server id>.releasing`` records it: the stack the server was deleted
#: from (or None), the steps left (None: every one) and why each failed.
Release = dict[str, Any]


class GuestError(CloudError):
    """A guest could not be booted."""


def find_powershell(preferred: str | None = None) -> str | None:
    """The host's PowerShell executable (``preferred`` first, then pwsh, powershell)."""
    for name in ((preferred,) if preferred else ()) + POWERSHELL_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class Guests:
    """The agents of every local server, one folder each, started by ``launcher``."""

    def __init__(
        self,
        root: Path,
        launcher: Launcher,
        *,
        broker_url: str | None = None,
        broker_address: str | None = None,
        powershell: str | None = None,
        identities: BrokerIdentities | None = None,
    ) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        #: what the engine keeps of each server out of the guest's reach (its queue as
        #: booted, why it is in ERROR): ``<servers>-records/<server id>.queue|.error``
        self._records = root.with_name(root.name + "-records")
        self._records.mkdir(exist_ok=True)
        self.launcher = launcher
        self._broker_url = broker_url
        #: the broker's host and port (an AMQP URL's) every agent is sent to: the one
        #: in a server's user data, which a package writes, could name any service
        #: on the host's loopback for its sandbox's relay to connect to
        self._broker_address = urlsplit(broker_address).netloc.rsplit("@", 1)[-1] \
            if broker_address else None
        self._identities = identities
        self._powershell = powershell
        self._running: set[str] = set()
        #: the running servers' specs, as started (what the watcher looks at)
        self._specs: dict[str, ServerSpec] = {}
        self._lock = threading.Lock()
        #: servers in ERROR: server id -> (its queue, why)
        self._failed: dict[str, tuple[str | None, str]] = {}
        self._watcher: threading.Thread | None = None
        self._closing = threading.Event()
        #: servers being released in the background
        self._releases: dict[str, threading.Thread] = {}
        #: the queues of servers looked at (a server's is written once, at its boot)
        self._queues: dict[str, str] = {}
        #: releases that failed and were not reported yet: server id -> (stack, why)
        self._release_errors: dict[str, tuple[str | None, str]] = {}
        self._by_queue = self._records / "by-queue"
        if not self._by_queue.is_dir():
            self._index_servers()
        # Releases an earlier process began and did not finish (it died: a live one holds
        # its markers locked): their servers' stack records are gone, so nothing else
        # would ever release them.
        for marker in sorted(self._records.glob("*.releasing")):
            self.destroy(marker.name.removesuffix(".releasing"))

    def sandbox(self, server_id: str) -> Path:
        return self.root / server_id

    def boot(self, server_id: str, image: str, windows: bool, user_data: str | None,
             hostname: str = "server", interfaces: tuple[Interface, ...] = (),
             flavor: Flavor | None = None) -> bool:
        """Make the server's folder and start its agent; True when user data had an agent."""
        powershell = None
        if windows:
            powershell = find_powershell(self._powershell)
            if powershell is None:
                raise GuestError(
                    f"image {image!r} is a Windows image: running it needs a PowerShell "
                    f"executable ({', '.join(POWERSHELL_NAMES)}) on this host's PATH, "
                    "and none was found"
                )
        folder = self.sandbox(server_id)
        folder.mkdir(parents=True, exist_ok=True)
        write_into(folder, "user_data", user_data or "")
        ini = find_agent_config(user_data)
        if ini is None:
            return False
        queue = _input_queue(ini)
        meta = json.dumps({"hostname": hostname, "powershell": powershell,
                           "interfaces": [vars(i) for i in interfaces],
                           "flavor": flavor.to_json() if flavor else None})
        # the engine's copies first: a server with a folder copy is known by them
        self._record(server_id, ".conf").write_text(ini, encoding="utf-8")
        self._record(server_id, ".queue").write_text(queue or "", encoding="utf-8")
        self._queues.pop(server_id, None)
        if queue:
            self._add_to_index(queue, server_id)
        self._record(server_id, ".json").write_text(meta, encoding="utf-8")
        write_into(folder, "agent.conf", ini)  # the guest's copies, as a VM's metadata
        write_into(folder, "server.json", meta)
        self._stop_rivals(server_id)
        self._keep_identity(server_id)
        self._start(server_id)
        return True

    def _keep_identity(self, server_id: str) -> None:
        """Make sure the broker user the server's user data names exists, with that
        password: a server released just before, serving the same queue (one a killed
        run half made, replaced by the next run), revoked it on its way out."""
        queue = self.input_queue(server_id)
        if self._identities is None or not queue:
            return
        try:
            ini = self._agent_ini(server_id)
            sections = ini_sections(ini)
            own = urlsplit(broker_from_ini(ini))
        except (OSError, configparser.Error, ValueError):
            return  # starting the agent says what is wrong with its config
        if unquote(own.username or "") != identity_name(queue):
            return
        with self._lock:
            releasing = [thread for other, thread in self._releases.items()
                         if self.input_queue(other) in (queue, None)]
        for thread in releasing:
            if thread.ident is not None:  # (else released on destroy's own thread)
                thread.join()
        results, password = sections["rabbitmq"]["result_routing_key"], \
            unquote(own.password or "")
        if not self._identities.granted(queue, results, password):  # minted just now
            self._identities.grant(queue, results, password)
        self._hand_over_broker_user(server_id, queue)

    def _hand_over_broker_user(self, server_id: str, queue: str) -> None:
        """The user of ``queue`` is ``server_id``'s now: a release of another server on
        that queue that failed to remove it must not, tried again, remove it."""
        for other in self._serving(queue):
            if other == server_id or not self._releasing_file(other).exists() \
                    or self.input_queue(other) != queue:
                continue
            with self._lock:
                held = self._claim_release(other) if other not in self._releases else None
            if held is None:
                continue
            try:
                release = _read_release(held)
                left = [step for step in release.get("left") or (SANDBOX, BROKER)
                        if step != BROKER]
                if left:
                    _write_release(held, {**release, "left": left})
                else:
                    self._remove_records(other)
            finally:
                os.close(held)

    def _stop_rivals(self, server_id: str) -> None:
        """Stop other servers whose agents consume this server's queue: left by a run
        that was killed, they would take its plans (a queue has one agent)."""
        queue = self.input_queue(server_id)
        if not queue:
            return
        with self._lock:
            releasing = set(self._releases)
        for other in self._serving(queue):
            if other != server_id and other not in releasing \
                    and not self._releasing_file(other).exists() \
                    and self.input_queue(other) == queue and self.known(other):
                LOG.warning("Server %s also serves queue %s; stopping it for server %s",
                            other, queue, server_id)
                self.stop(other)

    # --- the servers of each queue ------------------------------------------------------
    def _index_file(self, queue: str) -> Path:
        return self._by_queue / hashlib.sha256(queue.encode("utf-8")).hexdigest()[:40]

    def _serving(self, queue: str) -> list[str]:
        """The servers booted to serve ``queue`` that are not forgotten yet."""
        try:
            text = self._index_file(queue).read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [line for line in text.splitlines() if _SERVER_ID.fullmatch(line)]

    def _add_to_index(self, queue: str, server_id: str) -> None:
        """Note ``server_id`` among the servers of ``queue`` (before its agent starts)."""
        self._rewrite_index(queue, add=server_id)

    def _rewrite_index(self, queue: str, add: str | None = None, drop: str | None = None
                       ) -> None:
        """The servers of ``queue`` with ``add`` and without ``drop``; those forgotten
        since (no records, no release left) drop out too, and an empty list goes (its
        folder with it once empty)."""
        with self._lock:
            kept = [other for other in self._serving(queue) if other not in (add, drop)
                    and (self.known(other) or self._releasing_file(other).exists())]
            if add is not None:
                kept.append(add)
            path = self._index_file(queue)
            if not kept:
                path.unlink(missing_ok=True)
                with contextlib.suppress(OSError):  # not empty, or gone
                    self._by_queue.rmdir()
                return
            temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            text = "".join(f"{i}\n" for i in kept)
            try:
                temporary.write_text(text, encoding="utf-8")
            except FileNotFoundError:  # the folder went with its last list
                self._by_queue.mkdir(exist_ok=True)
                temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, path)

    def _index_servers(self) -> None:
        """Make ``by-queue/`` from the servers of the folder (booted by an engine that
        kept no index), when it does not exist (none of its lists would be empty)."""
        serving: dict[str, list[str]] = {}
        for folder in sorted(self.root.iterdir()):
            server_id = folder.name
            if not _SERVER_ID.fullmatch(server_id):
                continue
            queue = self.input_queue(server_id)
            if queue:
                serving.setdefault(queue, []).append(server_id)
        for marker in sorted(self._records.glob("*.releasing")):
            server_id = marker.name.removesuffix(".releasing")
            queue = self.input_queue(server_id) if _SERVER_ID.fullmatch(server_id) else None
            if queue and server_id not in serving.get(queue, ()):
                serving.setdefault(queue, []).append(server_id)
        if not serving:
            return
        made = self._by_queue.with_name(f".by-queue.{os.getpid()}.tmp")
        shutil.rmtree(made, ignore_errors=True)
        made.mkdir()
        for queue, ids in serving.items():
            (made / self._index_file(queue).name).write_text(
                "".join(f"{i}\n" for i in ids), encoding="utf-8")
        try:
            os.rename(made, self._by_queue)
        except OSError:  # another process made it first
            shutil.rmtree(made, ignore_errors=True)

    def cut_off(self, queue: str) -> None:
        """Cut the agents of ``queue`` off the broker (their broker user goes next; the
        servers stay until deleted): refused logins, tried again and again until then,
        would cost the broker and the relays of every server."""
        for server_id in self._serving(queue):
            if self.input_queue(server_id) == queue:
                self.launcher.cut_off(server_id)

    def resize(self, server_id: str, flavor: Flavor) -> None:
        """Give the running server ``flavor``'s limits (:meth:`resume` gives them again
        after a restart: the stack's record holds the flavor)."""
        if not self.known(server_id):
            return
        spec = self._spec(server_id)
        if spec.flavor is not None:  # a server booted before flavors stays without limits
            spec.flavor = flavor
            self.launcher.resize(spec)

    def resume(self, server_id: str, flavor: Flavor | None = None) -> None:
        """Take back the agent of a server that was running before a restart (or start it,
        with ``flavor``'s limits when given); a server in ERROR stays so."""
        if self._releasing_file(server_id).is_file():
            return  # being released (__init__ took up a dead process's release)
        if self._error_file(server_id).is_file():
            why = self._error_file(server_id).read_text(encoding="utf-8")
            with self._lock:
                self._failed[server_id] = (self.input_queue(server_id), why)
        elif self.known(server_id):
            self._start(server_id, flavor)

    def failure(self, server_id: str) -> str | None:
        """Why the server is in ERROR (None when it is not)."""
        with self._lock:
            found = self._failed.get(server_id)
        return found[1] if found else None

    def queue_failure(self, queue: str) -> str | None:
        """Why the server whose agent consumes ``queue`` is in ERROR (None when no such
        server is): cheap, for polling while a plan waits."""
        with self._lock:
            return next((why for q, why in self._failed.values() if q == queue), None)

    def destroy(self, server_id: str, stack: str | None = None) -> None:
        """Release the server (deleted from ``stack``): stop its agent, delete its queue
        and broker user, remove its folder (see the module on a release that fails).

        This runs in the background, as a cloud's server deletion does: stopping an
        agent takes about a second, and the servers that one stack update or a run of
        updates (each instance releasing its own) delete go away side by side.
        :meth:`settle` waits for them.
        """
        with self._lock:
            self._running.discard(server_id)
            self._specs.pop(server_id, None)
            self._failed.pop(server_id, None)
            if server_id in self._releases:
                return
            marker = self._claim_release(server_id)
            if marker is None:
                return  # another live process is releasing it
            earlier = _read_release(marker)  # what a release that failed left
            release = {"stack": earlier.get("stack") if stack is None else stack,
                       "left": earlier.get("left")}
            _write_release(marker, release)
            worker = self._releases[server_id] = threading.Thread(
                target=self._release, args=(server_id, marker, release),
                name=f"local-cloud release {server_id}")
        try:
            worker.start()
        except RuntimeError:  # no thread to be had: released here and now instead
            self._release(server_id, marker, release)

    def _claim_release(self, server_id: str) -> int | None:
        """The server's release marker, made and locked (None when another process holds
        it). It is on disk before the caller drops the server's record, and locked for
        as long as the release runs: a process that dies meanwhile leaves it unlocked
        for the next one (see ``__init__``)."""
        fd = os.open(self._releasing_file(server_id), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    def _release(self, server_id: str, marker: int, release: Release) -> None:
        """Each step of the release still to do (:meth:`_release_steps`), whichever fails
        before it; then the server's records go, or, when a step failed, what is left
        is recorded in its marker for the next try."""
        failed: dict[str, str] = {}
        try:
            for step, remove in self._release_steps(server_id):
                if release["left"] is not None and step not in release["left"]:
                    continue
                try:
                    remove()
                except Exception as exc:  # noqa: BLE001 - recorded, reported by settle()
                    failed[step] = str(exc) or type(exc).__name__
            if failed:
                _write_release(marker, {**release, "left": sorted(failed), "failed": failed})
                why = "; ".join(failed.values())
                LOG.error("Releasing server %s failed, to be tried again: %s", server_id, why)
                with self._lock:
                    self._release_errors[server_id] = (release["stack"], why)
            else:
                self._remove_records(server_id)
        finally:
            os.close(marker)
            with self._lock:
                self._releases.pop(server_id, None)
                self._queues.pop(server_id, None)

    def _release_steps(self, server_id: str) -> list[tuple[str, Callable[[], object]]]:
        """What releasing the server takes, in order: (step, how). A server with a broker
        user of its own is stopped for good (its disk goes too), then that user and its
        queue are removed with the administrative login (the engine revokes it too when
        it deletes the server; a server found orphaned, or deleted by a later
        ``destroy``, has only this). A server with the shared login is removed by the
        launcher, its queue with it."""
        queue = self.input_queue(server_id)
        identities = self._identities
        steps: list[tuple[str, Callable[[], object]]] = []
        if identities is not None and queue \
                and _ini_login(self._agent_ini_or_none(server_id)) == identity_name(queue):
            if self.known(server_id):
                steps.append((SANDBOX, lambda: self.launcher.discard(self._spec(server_id))))
            steps.append((BROKER, lambda: identities.revoke(queue)))
        elif self.known(server_id):
            steps.append((SANDBOX, lambda: self.launcher.remove(self._spec(server_id))))
        return steps

    def _remove_records(self, server_id: str) -> None:
        """Forget a released server: its folder and the engine's records of it."""
        queue = self.input_queue(server_id)
        shutil.rmtree(self.sandbox(server_id), ignore_errors=True)
        if queue:
            self._rewrite_index(queue, drop=server_id)
        for suffix in (".error", ".conf", ".json", ".out", ".queue", ".releasing"):
            self._record(server_id, suffix).unlink(missing_ok=True)

    def settle(self, stack: str | None = None) -> None:
        """Wait until every server :meth:`destroy` let go is released; the releases that
        failed raise here, once each. With ``stack``, only those of its servers, after
        trying again those of them that failed before (so a stack delete fails while a
        server of it still holds anything)."""
        if stack is not None:
            for marker in sorted(self._records.glob("*.releasing")):
                server_id = marker.name.removesuffix(".releasing")
                if _peek_release(marker).get("stack") == stack:
                    self.destroy(server_id, stack)
        while True:
            with self._lock:  # (a thread not started: released on destroy's own thread)
                pending = [w for w in self._releases.values() if w.ident is not None]
            if not pending:
                break
            for worker in pending:
                worker.join()
        with self._lock:
            failed = {server_id: why for server_id, (of, why) in self._release_errors.items()
                      if stack is None or of == stack}
            for server_id in failed:
                del self._release_errors[server_id]
        if failed:
            raise CloudError("releasing servers failed: " + "; ".join(
                f"server {server_id}: {why}" for server_id, why in sorted(failed.items())))

    def stop(self, server_id: str) -> None:
        with self._lock:
            self._running.discard(server_id)
            self._specs.pop(server_id, None)
        if self.known(server_id):
            self.launcher.stop(self._spec(server_id))

    def detach(self, server_ids: list[str]) -> None:
        """Leave these servers' agents running for another process (see
        :meth:`detach_all`)."""
        with self._lock:
            for server_id in server_ids:
                self._running.discard(server_id)
                self._specs.pop(server_id, None)
        for server_id in server_ids:
            if self.known(server_id):
                self.launcher.detach(self._spec(server_id))

    def detach_all(self) -> None:
        """Leave every agent running (as VMs outlive the engine); :meth:`resume`
        takes each up again in the next engine on the same folder."""
        self._closing.set()
        with self._lock:
            ids = list(self._running)
            self._running.clear()
            watcher = self._watcher
        if watcher is not None:
            watcher.join()
        self.detach(ids)
        self.launcher.close()

    def input_queue(self, server_id: str) -> str | None:
        """The queue the server's agent consumes (None when it has no agent config): as
        its user data said at boot, kept out of the guest's reach (the agent.conf in its
        folder is the guest's to change); read from that file for a server booted
        before the queue was kept."""
        known = self._queues.get(server_id)
        if known is not None:
            return known
        try:
            queue = self._queue_file(server_id).read_text(encoding="utf-8") or None
        except FileNotFoundError:
            pass
        else:
            if queue is not None:
                self._queues[server_id] = queue  # one dict write: callers may hold the lock
            return queue
        ini = self._agent_ini_or_none(server_id)
        return _input_queue(ini) if ini is not None else None

    def known(self, server_id: str) -> bool:
        """Whether the server was booted with an agent (and not released since)."""
        return self._meta_file(server_id).is_file()

    def _meta_file(self, server_id: str) -> Path:
        """The file of the server's name, ports and flavor as booted."""
        kept = self._record(server_id, ".json")
        return kept if kept.is_file() else self._legacy(server_id, "server.json")

    def _agent_ini(self, server_id: str) -> str:
        """The server's agent config as booted (OSError when it has none)."""
        try:
            return self._record(server_id, ".conf").read_text(encoding="utf-8")
        except FileNotFoundError:
            return self._legacy(server_id, "agent.conf").read_text(encoding="utf-8")

    def _agent_ini_or_none(self, server_id: str) -> str | None:
        try:
            return self._agent_ini(server_id)
        except OSError:
            return None

    def _legacy(self, server_id: str, name: str) -> Path:
        """A file of a server booted before the engine kept its own copies: read from
        its folder only when the engine's copy does not exist."""
        return self.sandbox(server_id) / name

    def _record(self, server_id: str, suffix: str) -> Path:
        return self._records / f"{server_id}{suffix}"

    def _queue_file(self, server_id: str) -> Path:
        return self._record(server_id, ".queue")

    def _releasing_file(self, server_id: str) -> Path:
        return self._record(server_id, ".releasing")

    def running(self) -> set[str]:
        with self._lock:
            return set(self._running)

    def _spec(self, server_id: str) -> ServerSpec:
        """What the launcher needs, from the engine's copies (see the module)."""
        folder = self.sandbox(server_id)
        ini = self._agent_ini(server_id)
        if not ini.endswith("\n"):
            ini += "\n"
        meta = json.loads(self._meta_file(server_id).read_text(encoding="utf-8"))
        broker_url = broker_from_ini(ini)
        if self._broker_address:
            parts = urlsplit(broker_url)
            login = parts.netloc.rpartition("@")[0]
            broker_url = urlunsplit(parts._replace(
                netloc=f"{login}@{self._broker_address}" if login else self._broker_address))
        if self._broker_url:
            broker_url = self._broker_url
            login = _ini_login(ini)
            if login and login.startswith(USER_PREFIX):  # keep the server's own identity
                broker_url = with_credentials(broker_url, login, unquote(
                    urlsplit(broker_from_ini(ini)).password or ""))
        return ServerSpec(
            server_id=server_id, hostname=meta["hostname"], folder=folder, agent_ini=ini,
            broker_url=broker_url,
            interfaces=[Interface(**i) for i in meta["interfaces"]],
            powershell=meta.get("powershell"),
            flavor=Flavor.from_json(meta["flavor"]) if meta.get("flavor") else None,
            output=self._record(server_id, ".out"))

    def _start(self, server_id: str, flavor: Flavor | None = None) -> None:
        try:
            spec = self._spec(server_id)
        except Exception as exc:  # noqa: BLE001 - any unreadable config is the guest's fault
            raise GuestError(f"the agent config in the user data is unusable: {exc}") from None
        self._error_file(server_id).unlink(missing_ok=True)
        if flavor is not None and spec.flavor is not None:
            spec.flavor = flavor
        self.launcher.start(spec)
        with self._lock:
            self._failed.pop(server_id, None)
            self._running.add(server_id)
            self._specs[server_id] = spec
            if self._watcher is None and not self._closing.is_set():
                self._watcher = threading.Thread(target=self._watch, daemon=True,
                                                 name=f"local-cloud guests {self.root}")
                self._watcher.start()
        LOG.info("Agent of server %s (%s) started in %s", spec.hostname, server_id,
                 spec.folder)

    def _error_file(self, server_id: str) -> Path:
        return self._record(server_id, ".error")

    def _watch(self) -> None:
        """Mark ERROR, at once, every running server whose agent ended for good."""
        while not self._closing.wait(WATCH_INTERVAL):
            with self._lock:
                running = [(i, self._specs.get(i)) for i in self._running]
            for server_id, started in running:
                try:
                    spec = started or self._spec(server_id)
                    ended = self.launcher.exited(spec)
                except (OSError, ValueError, KeyError):
                    continue  # being released
                if ended:
                    self._mark_error(server_id, spec)

    def _mark_error(self, server_id: str, spec: ServerSpec) -> None:
        output = _tail(spec.output_file, LAST_OUTPUT_CHARS)
        restarted = output.rstrip().endswith("cannot be restarted")  # the init's last word
        try:
            killed = self.launcher.oom_kills(spec)
        except OSError:
            killed = 0
        what = "ended and could not be restarted" if restarted else \
            "stopped" if killed else "could not start"
        if killed and spec.flavor is not None:  # (a count since the server started)
            what += (f"; the kernel killed {killed} of its processes for want of memory "
                     f"(the {spec.flavor.name} flavor's {spec.flavor.ram_mib} MiB)")
        why = (f"server {spec.hostname} ({server_id}) is in ERROR: its agent {what}"
               + (f"; its last output:\n{output}" if output else " (it wrote nothing)"))
        queue = self.input_queue(server_id)
        with self._lock:
            if server_id not in self._running:
                return  # stopped or deleted meanwhile: not a failure
            self._running.discard(server_id)
            self._failed[server_id] = (queue, why)
        self._error_file(server_id).write_text(why, encoding="utf-8")
        LOG.error("%s", why)


def _read_release(marker: int) -> Release:
    """The release the open marker file records ({} when it records none)."""
    try:
        found = json.loads(os.pread(marker, 1 << 16, 0) or b"{}")
    except ValueError:  # a marker from before releases were recorded, or cut short
        return {}
    return found if isinstance(found, dict) else {}


def _peek_release(path: Path) -> Release:
    """The release the marker file at ``path`` records ({} when unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return {}
    try:
        return _read_release(fd)
    finally:
        os.close(fd)


def _write_release(marker: int, release: Release) -> None:
    """Record ``release`` in the open marker file."""
    os.ftruncate(marker, 0)
    os.pwrite(marker, json.dumps(release).encode(), 0)


def _tail(path: Path, chars: int) -> str:
    """The last ``chars`` characters of a text file, stripped ('' when there is none)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - chars))
            return handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _input_queue(ini: str) -> str | None:
    """The ``[rabbitmq] input_queue`` of an agent config (None when it names none)."""
    try:
        return ini_sections(ini).get("rabbitmq", {}).get("input_queue")
    except configparser.Error:
        return None

def _ini_login(ini: str | None) -> str | None:
    """The broker login an agent config names (None when it names none or is unreadable)."""
    if ini is None:
        return None
    try:
        rabbitmq = ini_sections(ini).get("rabbitmq", {})
    except configparser.Error:
        return None
    url = rabbitmq.get("url", "")
    if url:
        return unquote(urlsplit(url).username or "") or None
    return rabbitmq.get("login")
