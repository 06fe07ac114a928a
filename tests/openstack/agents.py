"""murano-agent processes standing in for the agents of the stand-in servers' VMs.

A stand-in server (``murano_engine/clouds/heat_providers/server.yaml``) boots
nothing; its ``user_data`` attribute is what its VM would have got (or, in
format RAW or SOFTWARE_CONFIG, the id of a Heat software config, fetched here
as Heat's own server resource fetches it). A thread watches one project's stacks in Heat: for each
complete server it starts a murano-agent on this host with the agent
configuration found in that user data, as the local cloud's guests do (its
storage in a folder of the server's own, its broker the test's, its login the
user data's); a server that leaves its stack has its agent stopped.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from heatclient import client as heat_client
from heatclient import exc as heat_exc

from murano_engine.clouds.local.sandbox import agent_config, broker_from_ini
from murano_engine.clouds.local.userdata import find_agent_config
from murano_engine.messaging.identities import USER_PREFIX, with_credentials

REPO = Path(__file__).resolve().parents[2]
UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")


class StandInAgents:
    """Agents for the stand-in servers of the stacks ``heat`` (a heatclient) sees."""

    def __init__(self, heat: heat_client.Client, folder: Path, broker_url: str,
                 interval: float = 0.5) -> None:
        self.heat = heat
        self.folder = folder
        self.broker_url = broker_url
        self.interval = interval
        self.agents: dict[str, subprocess.Popen] = {}  # the server's nested stack id
        self.names: dict[str, str] = {}  # nested stack id -> server resource name
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="stand-in-agents", daemon=True)

    def __enter__(self) -> StandInAgents:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(30)
        for server in list(self.agents):
            self._end(server)

    def running(self) -> dict[str, str]:
        """Server resource name -> nested stack id, for the agents now running."""
        return {self.names[server]: server for server, agent in self.agents.items()
                if agent.poll() is None}

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sync()
            except Exception as error:  # noqa: BLE001 - kept for the test to show
                self.errors.append(repr(error))

    def sync(self) -> None:
        """Start the agents of servers created since, stop those of servers gone (an
        update in progress keeps a server's agent, as it keeps a VM)."""
        present: dict[str, str] = {}
        booted: set[str] = set()
        for stack in self.heat.stacks.list():
            try:
                resources = self.heat.resources.list(stack.id, nested_depth=3)
            except heat_exc.HTTPNotFound:  # deleted since it was listed
                continue
            for resource in resources:
                server = resource.physical_resource_id
                if resource.resource_type != "OS::Nova::Server" or not server \
                        or resource.resource_status.startswith("DELETE"):
                    continue
                present[server] = resource.resource_name
                if not resource.resource_status.startswith(("CREATE_IN", "CREATE_F", "INIT")):
                    booted.add(server)
        for server in [s for s in self.agents if s not in present]:
            self._end(server)
        for server in booted - set(self.agents):
            self._start(server, present[server])

    def _start(self, server: str, name: str) -> None:
        try:
            outputs = {item["output_key"]: item.get("output_value")
                       for item in self.heat.stacks.get(server).outputs or []}
        except heat_exc.HTTPNotFound:  # deleted since it was listed
            return
        user_data = outputs.get("user_data") or None
        if (user_data and outputs.get("user_data_format") in ("RAW", "SOFTWARE_CONFIG")
                and UUID.fullmatch(user_data)):
            user_data = self.heat.software_configs.get(user_data).config
        ini = find_agent_config(user_data)
        self.names[server] = name
        if ini is None:  # a server without an agent: nothing runs on it
            self.agents[server] = subprocess.Popen(["true"])
            return
        root = self.folder / server
        root.mkdir(parents=True, exist_ok=True)
        (root / "agent.conf").write_text(ini)
        config = root / "agent.effective.conf"
        config.write_text(agent_config(ini, str(root), self._broker_for(ini)))
        with open(root / "agent.out", "ab") as out:
            self.agents[server] = subprocess.Popen(
                [sys.executable, "-m", "murano_agent.cli", "--config-file", str(config)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=root,
                start_new_session=True, env={**os.environ, "PYTHONPATH": str(REPO)})

    def _broker_for(self, ini: str) -> str:
        """The test's broker, with the login the user data gives the server when it is
        a broker user of the server's own (the engine mints one per server)."""
        own = urlsplit(broker_from_ini(ini))
        if unquote(own.username or "").startswith(USER_PREFIX):
            return with_credentials(self.broker_url, unquote(own.username or ""),
                                    unquote(own.password or ""))
        return self.broker_url

    def _end(self, server: str) -> None:
        agent = self.agents.pop(server)
        if agent.poll() is None:
            os.killpg(agent.pid, signal.SIGTERM)
            try:
                agent.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(agent.pid, signal.SIGKILL)
                agent.wait(5)
