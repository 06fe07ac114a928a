"""A LinuxMuranoInstance's boot script with the engine's broker settings: the CA
certificate of ``[rabbitmq] ca_certs`` travels to the agent, and a missing one is
a clear error."""

from __future__ import annotations

import base64
import configparser
from pathlib import Path
from typing import Any

import pytest

from murano_engine.dsl import values
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.config import load_config
from murano_engine.messaging import AgentClient


def boot_script(loader: PackageLoader, tmp_path: Path, settings: str) -> str:
    """The boot script of a fresh instance's template (nothing is pushed)."""
    (tmp_path / "engine.ini").write_text(settings)
    agents = AgentClient("memory://")  # names the queues; nothing is sent
    executor = Executor(loader, services={"config": load_config(tmp_path / "engine.ini", {}),
                                          "agents": agents})
    env = executor.new_object(loader.find_class("io.murano.Environment"),
                              props={"name": "boot"})
    instance = executor.new_object(loader.find_class("io.murano.resources.LinuxMuranoInstance"),
                                   owner=env, props={"name": "vm", "flavor": "m1.small",
                                                     "image": "debian-12"})
    try:
        executor.call(instance, "beginDeploy")
        stack = executor.get_property(env, "stack", None, lenient=True)
        template: dict[str, Any] = values.thaw(executor.call(stack, "current"))
    finally:
        agents.close()
    return template["resources"]["boot_script_vm"]["properties"]["config"]


def assignment(script: str, name: str) -> str:
    (line,) = [x for x in script.splitlines() if x.startswith(f"{name}=")]
    return base64.b64decode(line.split("=", 1)[1].strip("'")).decode()


def test_the_brokers_ca_certificate_reaches_the_agent(loader, tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    script = boot_script(loader, tmp_path, f"[rabbitmq]\nssl = true\nca_certs = {ca}\n")
    assert assignment(script, "CaCertificateBase64") == ca.read_text()
    agent = configparser.ConfigParser(interpolation=None)
    agent.read_string(assignment(script, "AgentConfigBase64"))
    assert agent["rabbitmq"]["ca_certs"] == "/etc/murano/certs/ca_certs"
    assert agent["rabbitmq"]["ssl"] == "true"


def test_without_a_ca_certificate_the_agent_names_none(loader, tmp_path):
    script = boot_script(loader, tmp_path, "")
    assert "CaCertificateBase64=''" in script
    agent = configparser.ConfigParser(interpolation=None)
    agent.read_string(assignment(script, "AgentConfigBase64"))
    assert agent["rabbitmq"]["ca_certs"] == ""


def test_an_unreadable_ca_certificate_is_a_clear_error(loader, tmp_path):
    missing = tmp_path / "nowhere.pem"
    with pytest.raises(Exception, match=rf"\[rabbitmq\] ca_certs {missing}: cannot be read"):
        boot_script(loader, tmp_path, f"[rabbitmq]\nca_certs = {missing}\n")
