"""Guests: a local server is a sandbox folder with the real agent running in-process.

``<servers>/<server id>/`` holds ``user_data`` (as booted), ``agent.conf`` (the
agent config found in it, see :mod:`.userdata`) and the agent's storage
(``agent/``) and log. The agent is ``murano_agent.service.AgentService``
configured from that file, with its storage, log, reboot command and (for a
Windows image) PowerShell pointed at this host; ``broker_url`` (when set)
replaces the broker address the config names, since the address a VM would use
may not be the one this host reaches.
"""

from __future__ import annotations

import logging
import re
import shutil
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from murano_agent.config import AgentConfig, ConfigError, load_config
from murano_engine.clouds.base import CloudError
from murano_engine.clouds.local.scheduler import run_ordered
from murano_engine.clouds.local.userdata import find_agent_config

LOG = logging.getLogger(__name__)

_WINDOWS_IMAGE = re.compile(r"(?<![a-z])win", re.IGNORECASE)
POWERSHELL_NAMES = ("pwsh", "powershell")


class Agent(Protocol):
    """What the local cloud needs from a guest agent."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


AgentFactory = Callable[[AgentConfig], Agent]


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


def _service_agent(config: AgentConfig) -> Agent:
    from murano_agent.service import AgentService

    return AgentService(config)


class Guests:
    """The running agents of every local server, one sandbox folder each."""

    def __init__(
        self,
        root: Path,
        *,
        broker_url: str | None = None,
        powershell: str | None = None,
        agent_factory: AgentFactory | None = None,
    ) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self._broker_url = broker_url
        self._powershell = powershell
        self._factory = agent_factory or _service_agent
        self._agents: dict[str, Agent] = {}
        self._lock = threading.Lock()

    def sandbox(self, server_id: str) -> Path:
        return self.root / server_id

    def boot(self, server_id: str, image: str, windows: bool, user_data: str | None) -> bool:
        """Create the sandbox and start the agent; True when user data had an agent."""
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
        if powershell:
            (folder / "powershell").write_text(powershell, encoding="utf-8")
        self._start(server_id)
        return True

    def resume(self, server_id: str) -> None:
        """Start the agent of a server that was running before a restart."""
        if (self.sandbox(server_id) / "agent.conf").is_file():
            self._start(server_id)

    def destroy(self, server_id: str) -> None:
        """Stop the server's agent and remove its sandbox."""
        self.stop(server_id)
        shutil.rmtree(self.sandbox(server_id), ignore_errors=True)

    def stop(self, server_id: str) -> None:
        with self._lock:
            agent = self._agents.pop(server_id, None)
        if agent is not None:
            agent.stop()

    def stop_all(self) -> None:
        """Stop every agent, side by side (each may take a moment to notice)."""
        with self._lock:
            ids = list(self._agents)
        failures = run_ordered(ids, {}, self.stop)
        for server_id, error in failures.items():
            LOG.error("Agent of server %s did not stop cleanly: %s", server_id, error)

    def running(self) -> set[str]:
        with self._lock:
            return set(self._agents)

    def _start(self, server_id: str) -> None:
        folder = self.sandbox(server_id)
        overrides: dict[str, Any] = {
            "storage": folder / "agent",
            "log_file": folder / "agent.log",
            "reboot_command": "true",
            "reboot_wait": 0,
        }
        marker = folder / "powershell"
        if marker.is_file():
            overrides["powershell"] = marker.read_text(encoding="utf-8")
        if self._broker_url:
            overrides["rabbitmq.url"] = self._broker_url
        ini = (folder / "agent.conf").read_text(encoding="utf-8")
        try:
            agent = self._factory(load_config(ini if ini.endswith("\n") else ini + "\n", overrides))
        except ConfigError as exc:
            raise GuestError(f"the agent config in the user data is unusable: {exc}") from None
        agent.start()
        with self._lock:
            self._agents[server_id] = agent
        LOG.info("Agent of server %s started in %s", server_id, folder)
