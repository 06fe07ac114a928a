"""Each environment's own signing key: an agent takes plans signed for its environment
and refuses the same plan signed for another; a rotation keeps running servers working
until it is ended."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from agent_harness import AMQP_URL, delete_queues, require_broker, unique

from murano_engine.messaging import AgentClient
from murano_engine.messaging.errors import AgentError
from murano_engine.messaging.signing import KeyRing

ENV_A, ENV_B = "a" * 32, "b" * 32


def test_every_environment_gets_a_private_key_of_its_own(tmp_path: Path):
    ring = KeyRing(tmp_path / "keys")
    a, b = ring.keys(ENV_A), ring.keys(ENV_B)
    assert a.current.public_key_pem() != b.current.public_key_pem()
    assert stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700
    for name in (ENV_A, ENV_B):
        assert stat.S_IMODE((tmp_path / "keys" / f"{name}.pem").stat().st_mode) == 0o600
    # another engine process on the same folder signs with the same key
    again = KeyRing(tmp_path / "keys").keys(ENV_A)
    assert again.current.public_key_pem() == a.current.public_key_pem()
    assert ring.environments() == [ENV_A, ENV_B]
    ring.remove(ENV_A)
    assert ring.environments() == [ENV_B]
    assert not (tmp_path / "keys" / f"{ENV_A}.pem").exists()
    # a command line's own id (anything a model held) still names one file in the folder
    odd = ring.keys("../x y")
    assert [p.parent for p in (tmp_path / "keys").glob("x-*.pem")] == [tmp_path / "keys"]
    assert odd.current.public_key_pem() == ring.keys("../x y").current.public_key_pem()


class _Agents:
    """Engine clients signing with a key ring, and agents booted for an environment."""

    def __init__(self, ring: KeyRing, make_agent) -> None:
        require_broker()
        self.ring = ring
        self.client = AgentClient(AMQP_URL, region=unique("t-"), keys=ring)
        self._make_agent = make_agent

    def boot(self, environment: str):
        """An agent trusting ``environment``'s current key, as the engine boots it."""
        key = self.client.signing_key("\t", environment)
        return self._make_agent(extra="engine_key = " + key,
                                result_queue=self.client.result_queue)

    def run(self, agent, environment: str, marker: str) -> str:
        plan = self.client.build_plan(
            {"FormatVersion": "2.0.0", "Body": f"return '{marker}'", "Scripts": {}},
            lambda name: b"")
        return self.client.call(agent.queue, plan, 20, environment=environment)

    def close(self) -> None:
        self.client.close()
        delete_queues([self.client.result_queue])


@pytest.fixture
def agents(tmp_path: Path, make_agent):
    made = _Agents(KeyRing(tmp_path / "keys"), make_agent)
    yield made
    made.close()


def test_an_agent_refuses_a_plan_signed_for_another_environment(agents: _Agents):
    b_server = agents.boot(ENV_B)
    assert agents.run(b_server, ENV_B, "for b") == "for b"
    with pytest.raises(AgentError, match="signature does not match"):
        agents.run(b_server, ENV_A, "for a")


def test_the_engine_key_of_another_environment_is_refused_when_published_raw(
        agents: _Agents, make_agent, reader, tmp_path: Path):
    """A plan signed with environment A's key, published into B's agent queue by
    whoever reaches the broker (here the test, as the administrator): B's agent answers
    it with a refusal and runs nothing."""
    from agent_harness import publish_raw

    key = agents.client.signing_key("\t", ENV_B)
    b_server = make_agent(extra="engine_key = " + key + "\nenable_dynamic_result_queue = true",
                          result_queue=reader.queue)
    b_server.wait_log("connected; consuming")
    ran = tmp_path / "ran"

    def plan(plan_id: str, stamp: int) -> str:
        return json.dumps({
            "FormatVersion": "2.0.0", "ID": plan_id, "Stamp": stamp,
            "Body": "return run().stdout",
            "Scripts": {"run": {"Type": "Application", "EntryPoint": "run.sh"}},
            "Files": {"run.sh": {"Name": "run.sh", "BodyType": "Text",
                                 "Body": f"#!/bin/sh\necho {plan_id} >> {ran}\n"}}})

    body = plan("raw-a", 99)
    publish_raw(b_server.queue, body, "raw-a", headers={
        "signature": agents.ring.keys(ENV_A).current.sign(b_server.queue, body)})
    message_id, result = reader.get(60)
    assert message_id == "raw-a", result
    assert "signature does not match" in result["Body"]["Message"]
    body = plan("raw-b", 100)
    publish_raw(b_server.queue, body, "raw-b", headers={
        "signature": agents.ring.keys(ENV_B).current.sign(b_server.queue, body)})
    message_id, result = reader.get(60)
    assert message_id == "raw-b" and result["ErrorCode"] == 0, result
    assert ran.read_text() == "raw-b\n"  # the plan signed for B ran, A's did not


def test_a_rotation_keeps_running_servers_until_it_is_ended(agents: _Agents):
    before = agents.boot(ENV_B)  # trusts the key from before the rotation
    old = agents.ring.keys(ENV_B).current.public_key_pem()
    agents.ring.rotate(ENV_B)
    assert agents.ring.keys(ENV_B).current.public_key_pem() != old
    after = agents.boot(ENV_B)  # trusts the new one
    assert agents.run(before, ENV_B, "old server") == "old server"
    assert agents.run(after, ENV_B, "new server") == "new server"
    assert agents.ring.retire_previous(ENV_B)
    with pytest.raises(AgentError, match="signature does not match"):
        agents.run(before, ENV_B, "after the rotation ended")
    assert agents.run(after, ENV_B, "new key only") == "new key only"
    assert not agents.ring.retire_previous(ENV_B)


def test_rotate_key_on_the_command_line(tmp_path: Path):
    import subprocess
    import sys as system

    ini = tmp_path / "engine.ini"
    ini.write_text(f"[local_cloud]\nstate_dir = {tmp_path}\n")

    def rotate(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([system.executable, "-m", "murano_engine.cli.main", "rotate-key",
                               "--environment", ENV_A, "--config", str(ini), *extra],
                              capture_output=True, text=True, timeout=60)

    refused = rotate()
    assert refused.returncode != 0 and f"environment {ENV_A} has no key" in refused.stderr
    ring = KeyRing(tmp_path / "signing-keys")
    first = ring.keys(ENV_A).current.public_key_pem()
    assert rotate().returncode == 0
    rotated = KeyRing(tmp_path / "signing-keys").keys(ENV_A)
    assert rotated.current.public_key_pem() != first
    assert rotated.previous is not None and rotated.previous.public_key_pem() == first
    ended = rotate("--end")
    assert ended.returncode == 0 and "previous key is forgotten" in ended.stdout
    assert KeyRing(tmp_path / "signing-keys").keys(ENV_A).previous is None
