"""A server's folder is its guest's ``/sandbox``: a hostile guest rewrites it, links
included, and the engine (the host's root) must act on nothing it finds there.

Each test does from the host what the guest can do from inside (the folder is the
same), then has a later engine take the server back, restart it and delete it."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from murano_engine.clouds.base import remove_stack
from murano_engine.clouds.local import netns
from murano_engine.clouds.local.cloud import LocalCloud
from murano_engine.clouds.local.guest import Guests
from murano_engine.clouds.local.sandbox import OUTPUT_LIMIT, ProcessLauncher, write_into
from tests.clouds.test_sandboxes import AMQP, NO_NAMESPACES, Region, _server_ids


@NO_NAMESPACES
def test_a_guest_rewriting_its_folder_changes_nothing_the_engine_does(
        environment, tmp_path: Path) -> None:
    region = Region(tmp_path / "state")
    try:
        outputs = region.boot(environment, "hostile", ("vm1",), "10.0.41.0/24")
        queue = outputs["queues"]["vm1"]
        (server_id,) = _server_ids(outputs, ("vm1",))
        assert region.sh(queue, "echo up").strip() == "up"
        login = region.cloud.guests._spec(server_id).broker_url.split("//")[1].split(":")[0]
        folder = tmp_path / "state" / "servers" / server_id
        victims = {name: tmp_path / f"victim-{name}" for name in
                   ("agent.effective.conf", "agent.out", "user_data")}
        victims["agent.effective.conf"].write_text("ORIGINAL")
        # The guest: its config names another login, its
        # files the engine writes or reads are links to host files, its server.json goes.
        conf = folder / "agent.conf"
        conf.write_text(re.sub(r"(?m)^login = .*$", "login = attacker", conf.read_text()))
        meta = json.loads((folder / "server.json").read_text())
        for name, victim in victims.items():
            (folder / name).unlink(missing_ok=True)
            (folder / name).symlink_to(victim)
        (folder / "server.json").unlink()
        region.cloud.close()

        later = LocalCloud(tmp_path / "state", broker_url=AMQP, poll_interval=0.01)
        try:
            later.attach_agent(queue)  # takes the running server back: a new relay
            relay = later.guests.launcher._relays[server_id]
            assert relay.user == login != "attacker"
            later.guests.stop(server_id)  # then a restart writes its config again
            later.guests.resume(server_id)
            spec = later.guests._spec(server_id)
            assert spec.hostname == meta["hostname"] == "vm1"
            assert spec.output_file.parent == tmp_path / "state" / "servers-records"
            assert victims["agent.effective.conf"].read_text() == "ORIGINAL"
            assert not victims["agent.out"].exists()
            assert not (folder / "agent.effective.conf").is_symlink()
            assert region.sh(queue, "echo again").strip() == "again"
            remove_stack(later, "hostile")  # deleted, though its folder has no server.json
            later.settle()
            assert not netns.pids(netns.server_namespace(server_id))
            assert list((tmp_path / "state" / "servers-records").iterdir()) == []
        finally:
            later.close()
    finally:
        region.client.close()
        _remove_left(tmp_path / "state", "hostile")


def _remove_left(state: Path, stack: str) -> None:
    """Remove what a failed assertion left running (a later cloud takes it back)."""
    cloud = LocalCloud(state, broker_url=AMQP, poll_interval=0.01)
    try:
        remove_stack(cloud, stack)
        cloud.settle()
    except Exception:  # noqa: BLE001,S110 - already removed: the test's own end did it
        pass
    finally:
        cloud.close()


def test_the_broker_every_agent_reaches_is_the_engines_whatever_its_user_data_names(
        tmp_path: Path) -> None:
    """A package writes its servers' user data: a broker address there would send the
    sandbox's relay to any service on the host's loopback."""
    guests = Guests(tmp_path / "servers", ProcessLauncher(),
                    broker_address="amqp://engine:secret@127.0.0.1:5672/")
    folder = tmp_path / "servers" / "s1"
    folder.mkdir(parents=True)
    guests._record("s1", ".conf").write_text(
        "[rabbitmq]\nhost = 127.0.0.1\nport = 6379\nlogin = murano-agent-q\n"
        "password = pw\ninput_queue = q\nvirtual_host = /\n")
    guests._record("s1", ".json").write_text(json.dumps({"hostname": "s1", "interfaces": []}))
    url = guests._spec("s1").broker_url
    assert url.startswith("amqp://murano-agent-q:pw@127.0.0.1:5672/"), url


def test_writing_into_a_guests_folder_replaces_a_link_and_never_follows_it(
        tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("ORIGINAL")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "agent.effective.conf").symlink_to(victim)
    write_into(folder, "agent.effective.conf", "the engine's")
    assert victim.read_text() == "ORIGINAL"
    assert (folder / "agent.effective.conf").read_text() == "the engine's"
    assert not (folder / "agent.effective.conf").is_symlink()
    assert sorted(os.listdir(folder)) == ["agent.effective.conf"]


#: run in a guest: take the agent's standard output with pidfd_getfd (the guest is root in
#: its own user namespace), write 3 MiB into it, then try to empty what it names
TAKE_THE_AGENTS_OUTPUT = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def name(pid):
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip()
    except OSError:  # ended meanwhile
        return None
agent = next(int(p) for p in os.listdir("/proc") if p.isdigit() and name(p) == "murano-agent")
fd = libc.syscall(438, os.pidfd_open(agent), 1, 0)  # pidfd_getfd(agent, 1)
assert fd >= 0, os.strerror(ctypes.get_errno())
for _ in range(48):
    os.write(fd, b"G" * 65535 + b"\n")
os.write(fd, b"the guest's last line\n")
try:
    os.ftruncate(fd, 0)
    print("emptied")
except OSError as exc:
    print("not emptied:", exc.strerror)
"""


@NO_NAMESPACES
def test_a_guest_holding_its_agents_output_cannot_grow_or_empty_the_host_file(
        environment, tmp_path: Path) -> None:
    region = Region(tmp_path / "state")
    try:
        outputs = region.boot(environment, "hostile", ("vm1",), "10.0.42.0/24")
        queue = outputs["queues"]["vm1"]
        (server_id,) = _server_ids(outputs, ("vm1",))
        output = region.cloud.guests._spec(server_id).output_file
        answer = region.sh(queue, f"cat > /tmp/take.py <<'EOF'\n{TAKE_THE_AGENTS_OUTPUT}\nEOF\n"
                                  "python3 /tmp/take.py")
        assert answer.strip() == "not emptied: Invalid argument"  # a pipe, not the file
        deadline = time.monotonic() + 10
        while b"the guest's last line" not in output.read_bytes() \
                and time.monotonic() < deadline:
            time.sleep(0.05)  # the last of it on its way through the pipe
        kept = output.read_bytes()
        assert len(kept) <= OUTPUT_LIMIT
        assert kept.startswith(b"[earlier output cut: the last ")
        assert kept.count(b"G" * 65535) >= 7  # the end of what it wrote is there
        assert region.sh(queue, "echo still up").strip() == "still up"
    finally:
        region.close()
        _remove_left(tmp_path / "state", "hostile")
