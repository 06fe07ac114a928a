"""Guests: a local server is a folder and its agent, a process of its own.

``<servers>/<server id>/`` holds ``user_data`` (as booted), ``agent.conf`` (the
agent config found in it, see :mod:`.userdata`), ``server.json`` (its name and
ports) and the agent's storage (``agent/``), log and output. The agent is the
real ``murano-agent``, started by a launcher (:mod:`.sandbox`): in a sandbox of
its own by default. ``broker_url`` (when set) replaces the broker address the
agent config names, since the address a VM would use may not be the one this
host reaches (a server's own broker identity, ``murano-agent-<queue>``, is kept).
Releasing a server revokes that identity.
"""

from __future__ import annotations

import configparser
import json
import logging
import re
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from murano_engine.clouds.base import CloudError
from murano_engine.clouds.local.netns import Interface
from murano_engine.clouds.local.sandbox import Launcher, ServerSpec, broker_from_ini
from murano_engine.clouds.local.userdata import find_agent_config
from murano_engine.messaging.identities import (
    USER_PREFIX,
    BrokerIdentities,
    identity_name,
    with_credentials,
)

LOG = logging.getLogger(__name__)

_WINDOWS_IMAGE = re.compile(r"(?<![a-z])win", re.IGNORECASE)
POWERSHELL_NAMES = ("pwsh", "powershell")


class GuestError(CloudError):
    """A guest could not be booted."""


def is_windows(image: str, metadata: Mapping[str, Any] | None = None) -> bool:
    """Whether an image (by name, or ``os_type``/``os_distro`` metadata) is Windows."""
    meta = metadata or {}
    for key in ("os_type", "os_distro"):
        if str(meta.get(key, "")).lower().startswith("win"):
            return True
    return bool(_WINDOWS_IMAGE.search(image))


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
        powershell: str | None = None,
        identities: BrokerIdentities | None = None,
    ) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.launcher = launcher
        self._broker_url = broker_url
        self._identities = identities
        self._powershell = powershell
        self._running: set[str] = set()
        self._lock = threading.Lock()
        #: servers being released in the background, and the errors releases met
        self._releases: dict[str, threading.Thread] = {}
        self._release_errors: list[str] = []

    def sandbox(self, server_id: str) -> Path:
        return self.root / server_id

    def boot(self, server_id: str, image: str, windows: bool, user_data: str | None,
             hostname: str = "server", interfaces: tuple[Interface, ...] = ()) -> bool:
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
        (folder / "user_data").write_text(user_data or "", encoding="utf-8")
        ini = find_agent_config(user_data)
        if ini is None:
            return False
        (folder / "agent.conf").write_text(ini, encoding="utf-8")
        (folder / "server.json").write_text(json.dumps({
            "hostname": hostname, "powershell": powershell,
            "interfaces": [vars(i) for i in interfaces]}), encoding="utf-8")
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
        ini = (self.sandbox(server_id) / "agent.conf").read_text(encoding="utf-8")
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(ini)
            own = urlsplit(broker_from_ini(ini))
        except (configparser.Error, ValueError):
            return  # starting the agent says what is wrong with its config
        if unquote(own.username or "") != identity_name(queue):
            return
        with self._lock:
            releasing = [thread for other, thread in self._releases.items()
                         if self.input_queue(other) in (queue, None)]
        for thread in releasing:
            thread.join()
        self._identities.grant(queue, parser.get("rabbitmq", "result_routing_key"),
                               unquote(own.password or ""))

    def _stop_rivals(self, server_id: str) -> None:
        """Stop other servers whose agents consume this server's queue: left by a run
        that was killed, they would take its plans (a queue has one agent)."""
        queue = self.input_queue(server_id)
        with self._lock:
            releasing = set(self._releases)
        for other in self.root.iterdir():
            if other.name != server_id and other.name not in releasing \
                    and (other / "server.json").is_file() \
                    and self.input_queue(other.name) == queue:
                LOG.warning("Server %s also serves queue %s; stopping it for server %s",
                            other.name, queue, server_id)
                self.stop(other.name)

    def resume(self, server_id: str) -> None:
        """Take back the agent of a server that was running before a restart (or start it)."""
        if (self.sandbox(server_id) / "server.json").is_file():
            self._start(server_id)

    def destroy(self, server_id: str) -> None:
        """Release the server: stop its agent, delete its queue, remove its folder.

        This runs in the background, as a cloud's server deletion does: stopping an
        agent takes about a second, and the servers that one stack update or a run of
        updates (each instance releasing its own) delete go away side by side.
        :meth:`settle` waits for them.
        """
        with self._lock:
            self._running.discard(server_id)
            if server_id in self._releases:
                return
            worker = self._releases[server_id] = threading.Thread(
                target=self._release, args=(server_id,),
                name=f"local-cloud release {server_id}")
        worker.start()

    def _release(self, server_id: str) -> None:
        try:
            if not self._revoke_identity(server_id) \
                    and (self.sandbox(server_id) / "server.json").is_file():
                self.launcher.remove(self._spec(server_id))
        except Exception as exc:  # noqa: BLE001 - reported by settle()
            LOG.exception("Releasing server %s failed", server_id)
            with self._lock:
                self._release_errors.append(f"server {server_id}: {exc}")
        finally:
            shutil.rmtree(self.sandbox(server_id), ignore_errors=True)
            with self._lock:
                self._releases.pop(server_id, None)

    def _revoke_identity(self, server_id: str) -> bool:
        """Stop a released server that has a broker user of its own, then remove that
        user and the server's queue with the administrative login (the engine revokes
        it too when it deletes the server; a server found orphaned, or deleted by a
        later ``destroy``, has only this). False, doing nothing, for a server with the
        shared login."""
        queue = self.input_queue(server_id)
        if self._identities is None or not queue \
                or _ini_login(self.sandbox(server_id) / "agent.conf") != identity_name(queue):
            return False
        if (self.sandbox(server_id) / "server.json").is_file():
            self.launcher.stop(self._spec(server_id))
        self._identities.revoke(queue)
        return True

    def settle(self) -> None:
        """Wait until every server :meth:`destroy` let go is released; a release that
        failed raises here (once)."""
        while True:
            with self._lock:
                pending = list(self._releases.values())
            if not pending:
                break
            for worker in pending:
                worker.join()
        with self._lock:
            errors, self._release_errors = self._release_errors, []
        if errors:
            raise CloudError("releasing servers failed: " + "; ".join(errors))

    def stop(self, server_id: str) -> None:
        with self._lock:
            self._running.discard(server_id)
        if (self.sandbox(server_id) / "server.json").is_file():
            self.launcher.stop(self._spec(server_id))

    def detach_all(self) -> None:
        """Leave every agent running (as VMs outlive the engine); :meth:`resume`
        takes each up again in the next engine on the same folder."""
        with self._lock:
            ids = list(self._running)
            self._running.clear()
        for server_id in ids:
            if (self.sandbox(server_id) / "server.json").is_file():
                self.launcher.detach(self._spec(server_id))
        self.launcher.close()

    def input_queue(self, server_id: str) -> str | None:
        """The queue the server's agent consumes (None when it has no agent config)."""
        try:
            ini = (self.sandbox(server_id) / "agent.conf").read_text(encoding="utf-8")
        except OSError:
            return None
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(ini)
        except configparser.Error:
            return None
        return parser.get("rabbitmq", "input_queue", fallback=None)

    def running(self) -> set[str]:
        with self._lock:
            return set(self._running)

    def _spec(self, server_id: str) -> ServerSpec:
        folder = self.sandbox(server_id)
        ini = (folder / "agent.conf").read_text(encoding="utf-8")
        if not ini.endswith("\n"):
            ini += "\n"
        meta = json.loads((folder / "server.json").read_text(encoding="utf-8"))
        broker_url = broker_from_ini(ini)
        if self._broker_url:
            broker_url = self._broker_url
            login = _ini_login(folder / "agent.conf")
            if login and login.startswith(USER_PREFIX):  # keep the server's own identity
                broker_url = with_credentials(broker_url, login, unquote(
                    urlsplit(broker_from_ini(ini)).password or ""))
        return ServerSpec(
            server_id=server_id, hostname=meta["hostname"], folder=folder, agent_ini=ini,
            broker_url=broker_url,
            interfaces=[Interface(**i) for i in meta["interfaces"]],
            powershell=meta.get("powershell"))

    def _start(self, server_id: str) -> None:
        try:
            spec = self._spec(server_id)
        except Exception as exc:  # noqa: BLE001 - any unreadable config is the guest's fault
            raise GuestError(f"the agent config in the user data is unusable: {exc}") from None
        self.launcher.start(spec)
        with self._lock:
            self._running.add(server_id)
        LOG.info("Agent of server %s (%s) started in %s", spec.hostname, server_id,
                 spec.folder)


def _ini_login(path: Path) -> str | None:
    """The broker login an agent config names (None when it names none or is unreadable)."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8"))
    except (OSError, configparser.Error):
        return None
    url = parser.get("rabbitmq", "url", fallback="")
    if url:
        return unquote(urlsplit(url).username or "") or None
    return parser.get("rabbitmq", "login", fallback=None)
