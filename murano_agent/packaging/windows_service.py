"""The agent as a Windows service (needs ``pywin32``; see install-windows-service.ps1).

``python -m murano_agent.packaging.windows_service install|start|stop|remove``.
The configuration file is the service's custom option ``config`` (set by the
install script), by default ``%ProgramData%\\Murano\\agent.conf``.
"""

from __future__ import annotations

import os
import sys

import servicemanager
import win32event
import win32service
import win32serviceutil

from murano_agent.cli import setup_logging
from murano_agent.config import load_config
from murano_agent.service import AgentService


def config_path() -> str:
    default = os.path.join(os.environ.get("ProgramData", r"C:\ProgramData"), "Murano", "agent.conf")
    configured = win32serviceutil.GetServiceCustomOption(MuranoAgentService._svc_name_, "config")
    return configured or default


class MuranoAgentService(win32serviceutil.ServiceFramework):
    """Runs :class:`AgentService` until the service control manager stops it."""

    _svc_name_ = "MuranoAgent"
    _svc_display_name_ = "Murano Agent"
    _svc_description_ = "Runs execution plans sent by the Murano-compatible engine."

    def __init__(self, args: list[str]) -> None:
        super().__init__(args)
        self._stopped = win32event.CreateEvent(None, 0, 0, None)
        self._agent: AgentService | None = None

    def SvcStop(self) -> None:  # noqa: N802 - pywin32's name
        self.ReportServiceStatus(win32service.SERVICE_STOP_PENDING)
        if self._agent is not None:
            self._agent.stop()
        win32event.SetEvent(self._stopped)

    def SvcDoRun(self) -> None:  # noqa: N802 - pywin32's name
        cfg = load_config(config_path())
        setup_logging(cfg)
        self._agent = AgentService(cfg)
        self._agent.start()
        servicemanager.LogInfoMsg(f"Murano Agent started with {cfg.source}")
        win32event.WaitForSingleObject(self._stopped, win32event.INFINITE)


if __name__ == "__main__":
    if len(sys.argv) == 1:
        servicemanager.Initialize()
        servicemanager.PrepareToHostSingle(MuranoAgentService)
        servicemanager.StartServiceCtrlDispatcher()
    else:
        win32serviceutil.HandleCommandLine(MuranoAgentService)
