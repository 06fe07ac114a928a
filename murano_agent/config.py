"""Agent configuration: the INI options a Murano agent reads, plus a few of our own.

Every option is declared in :data:`SCHEMA` (``[DEFAULT]`` and ``[rabbitmq]``);
``packaging/agent.conf.sample`` lists them. Unknown sections and options
(``verbose``, oslo.log settings ...) are ignored: Murano renders agent configs
for every agent version.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from murano_common.options import ConfigError, Option, Schema, Section, SectionValues, Values

__all__ = ["SCHEMA", "AgentConfig", "ConfigError", "RabbitConfig", "load_config"]

#: The ``[rabbitmq]`` section's values (``cfg.rabbitmq.port`` ...).
RabbitConfig = SectionValues

DEFAULTS = Section(
    "DEFAULT", "The agent itself.",
    Option("storage", str, "/var/murano/plans", "Folder of the plans received and their state."),
    Option("engine_key", str, "",
           "The engine's public key (PEM, continuation lines indented); plans must then be "
           "signed with it."),
    Option("work_folder", str, "", "Where plans may write their files (default: "
                                   "<storage>/files)."),
    Option("log_file", str, "", "A file to log to, besides standard output."),
    Option("debug", bool, False, "Log debug messages."),
    Option("plan_timeout", float, 3600.0, "Seconds a plan may run before its scripts are "
                                          "killed."),
    Option("powershell", str, "powershell.exe" if sys.platform == "win32" else "pwsh",
           "PowerShell executable for v1 plans and .ps1 entry points (powershell.exe on "
           "Windows).", sample="pwsh"),
    Option("max_message_bytes", int, 64 << 20,
           "Largest plan message accepted, in bytes; a larger one is answered with an error."),
    Option("reboot_command", str,
           "shutdown /r /t 5" if sys.platform == "win32" else "shutdown -r now",
           "Command a plan's reboot request runs (shutdown /r /t 5 on Windows).",
           sample="shutdown -r now"),
    Option("reboot_wait", float, 300.0, "Seconds to wait for that reboot to happen."),
    Option("enable_dynamic_result_queue", bool, False,
           "Send each result to the plan's ReplyTo queue when it has one."),
)

RABBITMQ = Section(
    "rabbitmq", "The broker plans come from and results go to.",
    Option("url", str, "",
           "A full broker URL (e.g. memory:// or amqp://user:password@host:5672/vhost); "
           "overrides host, port, login, password, virtual_host and the TLS options."),
    Option("host", str, "localhost", "Broker host."),
    Option("port", int, 5672, "Broker port."),
    Option("login", str, "guest", "Broker user."),
    Option("password", str, "guest", "Broker password."),
    Option("virtual_host", str, "/", "Broker virtual host."),
    Option("ssl", bool, False, "Connect with TLS."),
    Option("ssl_version", str, "", "TLS protocol version, e.g. TLSv1_2 (default: the best)."),
    Option("ca_certs", str, "",
           "CA certificates file (PEM) the broker's TLS certificate is verified with "
           "(empty: the system's CAs)."),
    Option("insecure", bool, False, "With ssl: do not require a valid broker certificate."),
    Option("input_queue", str, "", "The queue plans arrive on: e<environment id>-h<instance "
                                   "id>."),
    Option("result_exchange", str, "", "The exchange results are published to."),
    Option("result_routing_key", str, "",
           "The results' routing key: -execution-results-<region name>."),
    Option("heartbeat", int, 0, "AMQP heartbeat in seconds (0: none)."),
    Option("reconnect_delay", float, 1.0, "Seconds before the first reconnection attempt."),
    Option("reconnect_max_delay", float, 60.0, "Longest pause between reconnection attempts."),
)

SCHEMA = Schema(DEFAULTS, RABBITMQ, lenient=True,
                title="Guest agent configuration (the options Murano's agent.conf has, plus a "
                      "few of ours).\nmurano-agent --config-file agent.conf")


class AgentConfig(Values):
    """The whole agent configuration: ``[DEFAULT]`` options as attributes, ``rabbitmq``
    the ``[rabbitmq]`` section; ``source`` names where it came from."""

    @property
    def files_root(self) -> Path:
        """Where plans may write their files (``work_folder`` or ``<storage>/files``)."""
        return Path(self.work_folder or os.path.join(self.storage, "files"))


def load_config(
    text_or_path: str | os.PathLike[str], overrides: Mapping[str, Any] | None = None
) -> AgentConfig:
    """Read agent configuration from INI text or from a file path.

    A ``str`` holding a newline or starting with ``[`` is INI text; anything else
    is a path. ``overrides`` maps ``option`` (``[DEFAULT]``) or ``rabbitmq.option``
    to values that win over the file, e.g. ``{"storage": d, "rabbitmq.url": "memory://"}``.
    """
    text = os.fspath(text_or_path)
    if isinstance(text_or_path, str) and ("\n" in text or text.lstrip().startswith("[")):
        where = "<agent config text>"
    else:
        where = text
        try:
            text = Path(text).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read agent config {where}: {exc.strerror}") from None
    values = SCHEMA.load(text=text, name=where, overrides=overrides)
    return AgentConfig(dict(values), values.source)
