"""Local servers as guests: agent config in user data, Windows images, the real agent."""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
import textwrap
import uuid
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText

import pytest

from murano_common import amqp
from murano_engine.clouds.base import StackFailed, push_stack
from murano_engine.clouds.local.flavors import is_windows
from murano_engine.clouds.local.userdata import UserDataError, find_agent_config

INI = "[DEFAULT]\nstorage = /x\n[rabbitmq]\ninput_queue = q\n"


def cloud_config(content: str, encoding: str | None = None, path="/etc/murano/agent.conf"):
    entry = {"path": path, "content": content}
    if encoding:
        entry["encoding"] = encoding
    other = {"path": "/etc/motd", "content": "hi"}
    return "#cloud-config\n" + json.dumps({"write_files": [other, entry]})


def multipart(*parts: tuple[str, str | None]) -> str:
    message = MIMEMultipart()
    for text, filename in parts:
        part = MIMEText(text, "plain", "utf-8")
        if filename:
            part.add_header("Content-Disposition", "attachment", filename=filename)
        message.attach(part)
    return message.as_string()


def boot_script(ini: str) -> str:
    """A Linux boot script carrying the agent config as LinuxMuranoInstance's does."""
    encoded = base64.b64encode(ini.encode()).decode()
    return (f"#!/bin/sh\necho install\n#!/bin/sh\nAgentConfigBase64='{encoded}'\n"
            "echo \"$AgentConfigBase64\" | base64 -d > /etc/murano/agent.conf\n")


@pytest.mark.parametrize(
    "user_data",
    [
        cloud_config(INI),
        cloud_config(base64.b64encode(INI.encode()).decode(), "b64"),
        cloud_config(base64.b64encode(gzip.compress(INI.encode())).decode(), "gzip+base64"),
        multipart(("#!/bin/sh\necho hi\n", "boot.sh"), (INI, "agent.conf")),
        multipart(("#!/bin/sh\n", None), (cloud_config(INI), "cloud.cfg")),
        multipart((multipart((INI, "murano-agent.conf")), None)),
        multipart(("#cloud-config\nhostname: vm\n", None), (boot_script(INI), None)),
    ],
    ids=["plain", "b64", "gzip+b64", "mime-part", "mime-cloud-config", "nested-mime",
         "boot-script"],
)
def test_agent_config_is_found_in_user_data(user_data):
    assert find_agent_config(user_data) == INI


@pytest.mark.parametrize(
    "user_data",
    [None, "", "#!/bin/sh\necho no agent\n", "#ps1\nWrite-Host hi\n", cloud_config(INI, path="/a"),
     "#!/bin/sh\nAgentConfigBase64='%AGENT_CONFIG_BASE64%'\n", "#!/bin/sh\nAgentConfigBase64=''\n",
     "#!/bin/sh\necho AgentConfigBase64='SU5J'\n"],
    ids=["none", "empty", "script", "ps1", "other-path", "unreplaced", "empty-value",
         "not-an-assignment"],
)
def test_user_data_without_agent_config(user_data):
    assert find_agent_config(user_data) is None


def test_undecodable_agent_config_is_an_error():
    with pytest.raises(UserDataError, match="write_files /etc/murano/agent.conf: cannot decode"):
        find_agent_config(cloud_config("not base64 at all!", "gzip"))
    with pytest.raises(UserDataError, match="AgentConfigBase64 in the boot script is not"):
        find_agent_config("#!/bin/sh\nAgentConfigBase64='SU5'\n")


@pytest.mark.parametrize(
    ("image", "metadata", "expected"),
    [
        ("windows-2019", None, True),
        ("ws2012-win2k12r2", None, True),
        ("ws2019", {"os_type": "windows"}, True),
        ("ubuntu-22.04", None, False),
        ("twin-linux", None, False),
    ],
)
def test_windows_images_are_recognised(image, metadata, expected):
    assert is_windows(image, metadata) is expected


def test_windows_image_without_powershell_fails_clearly(cloud, agents, environment, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")

    with pytest.raises(StackFailed) as caught:
        push_stack(cloud, "win", environment(("vm1",), image="windows-2019"))

    reason = caught.value.stack.status_reason
    assert reason.startswith("Resource CREATE failed: resources.vm1: image 'windows-2019'")
    assert "needs a PowerShell executable (pwsh, powershell)" in reason
    assert agents == []
    assert not any((cloud.state_dir / "servers").iterdir())


def test_windows_image_runs_with_powershell_on_the_host(
    cloud, agents, environment, tmp_path, monkeypatch
):
    fake = tmp_path / "bin" / "pwsh"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")

    push_stack(cloud, "win", environment(("vm1",), image="windows-2019"))

    (agent,) = agents
    assert agent.running and agent.spec.powershell == str(fake)
    (server,) = cloud.records("OS::Nova::Server")
    assert server.data["os"] == "windows"


GREEN_PROGRAM = textwrap.dedent(
    """
    import json, sys, time
    from murano_engine.dsl import concurrency
    concurrency.setup()
    from murano_engine.clouds import open_cloud, push_stack, remove_stack
    from murano_engine.messaging import AgentClient

    state, region, env_id = sys.argv[1:4]
    template = json.loads(sys.stdin.read())
    amqp = "amqp://guest:guest@127.0.0.1:5672//"
    cloud = open_cloud({"local_cloud": {"state_dir": state, "broker_url": amqp,
                                        "poll_interval": "0.01"}})
    client = AgentClient(amqp, region=region)
    outputs = push_stack(cloud, "green", template)
    plan = {"FormatVersion": "2.1.0", "Body": "return run().stdout",
            "Scripts": {"run": {"Type": "Application", "EntryPoint": "run.sh"}}}
    script = lambda name: b"#!/bin/sh\\ndate +%s.%N\\nsleep 0.3\\ndate +%s.%N\\n"
    queues = [client.queue_name(env_id, name) for name in ("vm1", "vm2", "vm3")]
    results = concurrency.run_all(
        [lambda q=q: client.call(q, client.build_plan(plan, script), 20) for q in queues]
    )
    remove_stack(cloud, "green")
    cloud.close()
    client.close()
    print(json.dumps({"results": results, "ips": sorted(
        outputs[f"vm{i}-ip"] for i in (1, 2, 3))}))
    """
)


def test_local_cloud_and_agents_under_eventlet_monkey_patching(tmp_path, environment):
    region, env_id = f"g-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex[:8]
    template = environment(
        ("vm1", "vm2", "vm3"), results=f"-execution-results-{region}", environment_id=env_id
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", GREEN_PROGRAM, str(tmp_path / "state"), region, env_id],
            input=json.dumps(template),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        with amqp.connection("amqp://guest:guest@127.0.0.1:5672//", "tests") as conn:
            # the program's results queue
            conn.default_channel.queue_delete(f"-execution-results-{region}")
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    spans = [[float(t) for t in r.split()] for r in outcome["results"]]
    assert all(len(span) == 2 for span in spans)
    # the three plans ran side by side: each started before any of them ended
    assert max(start for start, _ in spans) < min(end for _, end in spans)
    assert outcome["ips"] == ["10.0.5.2", "10.0.5.3", "10.0.5.4"]
    assert list((tmp_path / "state" / "servers").iterdir()) == []


class _SlowLauncher:
    """A launcher whose servers take ``delay`` seconds to stop (as a real agent does)."""

    isolation = "none"

    def __init__(self, delay: float, failing: str = "") -> None:
        self.delay = delay
        self.failing = failing
        self.removed: list[str] = []

    def remove(self, spec) -> None:  # noqa: ANN001
        import time
        time.sleep(self.delay)
        if spec.hostname == self.failing:
            raise OSError("the agent would not stop")
        self.removed.append(spec.hostname)


def _guests_with_servers(tmp_path, launcher, count: int):  # noqa: ANN001, ANN202
    from murano_engine.clouds.local.guest import Guests
    guests = Guests(tmp_path / "servers", launcher, broker_url="amqp://127.0.0.1:5672//")
    for index in range(count):
        folder = guests.sandbox(f"s{index}")
        folder.mkdir()
        (folder / "agent.conf").write_text(INI)
        (folder / "server.json").write_text(json.dumps(
            {"hostname": f"vm{index}", "powershell": None, "interfaces": []}))
    return guests


def test_destroyed_servers_are_released_side_by_side(tmp_path):
    import time
    launcher = _SlowLauncher(0.5)
    guests = _guests_with_servers(tmp_path, launcher, 6)
    started = time.monotonic()
    for index in range(6):
        guests.destroy(f"s{index}")  # one after another, as instances release themselves
    handed_over = time.monotonic() - started
    guests.settle()
    released = time.monotonic() - started
    assert handed_over < 0.3  # destroy does not wait for the server to stop
    assert released < 6 * 0.5 / 2  # the six stops overlapped
    assert sorted(launcher.removed) == [f"vm{i}" for i in range(6)]
    assert not any(guests.root.iterdir())  # every folder removed


def test_a_failed_release_is_recorded_and_tried_again_until_the_server_is_gone(tmp_path):
    """A release that fails keeps the server's records, noting what is left and why; the
    next delete of its stack tries it again (and fails while it fails), and so does the
    next Guests on the folder, until nothing of the server is left."""
    from murano_engine.clouds.base import CloudError
    from murano_engine.clouds.local.guest import Guests
    launcher = _SlowLauncher(0.0, failing="vm1")
    guests = _guests_with_servers(tmp_path, launcher, 2)
    guests.destroy("s0", "stack-a")
    guests.destroy("s1", "stack-a")
    with pytest.raises(CloudError, match="server s1: the agent would not stop"):
        guests.settle()
    guests.settle()  # reported once
    assert [folder.name for folder in guests.root.iterdir()] == ["s1"]
    assert json.loads((tmp_path / "servers-records" / "s1.releasing").read_text()) == {
        "stack": "stack-a", "left": ["sandbox"],
        "failed": {"sandbox": "the agent would not stop"}}
    with pytest.raises(CloudError, match="server s1: the agent would not stop"):
        guests.settle("stack-a")  # its stack deleted again: tried again
    guests.settle("stack-b")  # another stack's delete is not held up by it
    assert launcher.removed == ["vm0"]

    launcher.failing = ""
    Guests(guests.root, launcher).settle("stack-a")  # the next command
    assert launcher.removed == ["vm0", "vm1"]
    assert not any(guests.root.iterdir())
    assert not any((tmp_path / "servers-records").iterdir())


class _StoppingLauncher:
    """A launcher whose agents start at once and take ``delay`` seconds to stop."""

    isolation = "none"

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def start(self, spec) -> None:  # noqa: ANN001
        pass

    def discard(self, spec) -> None:  # noqa: ANN001
        import time
        time.sleep(self.delay)

    def exited(self, spec) -> bool:  # noqa: ANN001
        return False


def test_a_server_replacing_one_on_its_queue_keeps_its_broker_user(tmp_path):
    """A run killed while making a server leaves it half made; the next run removes it
    and makes it again with the same user data (the same queue and broker user): the
    old one's release, which revokes that user, must not leave the new one without it."""
    import amqp

    from murano_engine.clouds.local.guest import Guests
    from murano_engine.engine.config import load_config
    from murano_engine.messaging.identities import BrokerIdentities, with_credentials

    identities = BrokerIdentities.from_config(load_config(None, environ={}))
    assert identities is not None
    queue, results = f"e{uuid.uuid4().hex}-hserver", f"-execution-results-{uuid.uuid4().hex}"
    identity = identities.mint(queue, results)
    url = with_credentials("amqp://127.0.0.1:5672//", identity.login, identity.password)
    ini = (f"[rabbitmq]\nurl = {url}\n"
           f"input_queue = {queue}\nresult_routing_key = {results}\n"
           f"result_exchange = {identity.result_exchange}\n")
    guests = Guests(tmp_path / "servers", _StoppingLauncher(0.5), identities=identities)
    try:
        assert guests.boot("half-made", "debian-12", False, cloud_config(ini))
        guests.destroy("half-made")  # released in the background: stopped, then revoked
        assert guests.boot("again", "debian-12", False, cloud_config(ini))
        guests.settle()
        with amqp.Connection("127.0.0.1:5672", userid=identity.login,
                             password=identity.password, virtual_host="/"):
            pass  # the user is there, with the user data's password
    finally:
        identities.revoke(queue)
        identities.remove_exchange(results)
        identities.api.request("DELETE", f"/api/queues/%2F/{results}", missing_ok=True)



_DYING_RELEASE = """
import json, sys, threading
from pathlib import Path
from murano_engine.clouds.local.guest import Guests

class Hanging:  # its removals never end: the process dies mid-release
    isolation = "none"
    def remove(self, spec):
        threading.Event().wait()

root = Path(sys.argv[1])
guests = Guests(root, Hanging())
folder = guests.sandbox("s0")
folder.mkdir()
(folder / "agent.conf").write_text(sys.argv[2])
(folder / "server.json").write_text(json.dumps(
    {"hostname": "vm0", "powershell": None, "interfaces": []}))
guests.destroy("s0")
print("releasing", flush=True)
threading.Event().wait()
"""


class _StartingLauncher(_SlowLauncher):
    """Servers stop at once; the ones started are recorded."""

    def __init__(self) -> None:
        super().__init__(0.0)
        self.started: list[str] = []

    def start(self, spec) -> None:  # noqa: ANN001
        self.started.append(spec.hostname)


def test_a_release_a_dead_process_began_is_finished_by_the_next_one(tmp_path):
    """A destroy lets go of the server's stack record once its release has begun; when
    the process dies before the release ends, the next process on the folder finishes
    it (nothing else would: no record names the server any more)."""
    from murano_engine.clouds.local.guest import Guests
    root = tmp_path / "servers"
    first = subprocess.Popen([sys.executable, "-c", _DYING_RELEASE, str(root), INI],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline() == "releasing\n"
        # While that process lives the release is its own: another one on the folder
        # neither takes it up nor starts the server's agent again.
        second = Guests(root, launcher := _StartingLauncher())
        second.resume("s0")
        second.settle()
        assert launcher.started == launcher.removed == []
        assert (root / "s0" / "server.json").is_file()
    finally:
        first.kill()
        first.wait()
    third = Guests(root, launcher := _SlowLauncher(0.0))
    third.settle()
    assert launcher.removed == ["vm0"]
    assert not (root / "s0").exists()
    assert list((tmp_path / "servers-records").iterdir()) == []


class _RecordingLauncher(_StartingLauncher):
    """Servers start and stop at once; the ones started and stopped are recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.stopped: list[str] = []

    def stop(self, spec) -> None:  # noqa: ANN001
        self.stopped.append(spec.hostname)

    def exited(self, spec) -> bool:  # noqa: ANN001
        return False


def test_a_server_booted_on_a_queue_another_serves_stops_that_one_only(tmp_path):
    """A killed run's server left consuming a queue would take the plans of the server
    the next run boots on it: that one is stopped; servers of other queues are not,
    however many there are (each server's queue is read once, not at every boot)."""
    from murano_engine.clouds.local.guest import Guests
    guests = Guests(tmp_path / "servers", launcher := _RecordingLauncher())
    other = INI.replace("input_queue = q", "input_queue = other-{n}")
    for n in range(5):
        assert guests.boot(f"other-{n}", "debian-12", False,
                           cloud_config(other.format(n=n)), hostname=f"vm-other-{n}")
    assert guests.boot("left", "debian-12", False, cloud_config(INI), hostname="vm-left")
    assert guests.boot("new", "debian-12", False, cloud_config(INI), hostname="vm-new")
    assert launcher.stopped == ["vm-left"]
    assert sorted(launcher.started) == sorted(
        [f"vm-other-{n}" for n in range(5)] + ["vm-left", "vm-new"])
    assert guests.input_queue("new") == guests.input_queue("left") == "q"
    assert guests.input_queue("other-3") == "other-3"


@pytest.mark.parametrize("index", ["kept", "lost"])
def test_a_later_process_finds_a_rival_on_its_queue_through_the_queues_index(
        tmp_path, index):
    """A boot looks only at the servers listed for its queue (``by-queue/``), not at every
    server of the folder; the list outlives the process that wrote it, and a folder
    without one (lost, or an engine that kept none) is indexed once when taken up."""
    import shutil

    from murano_engine.clouds.local.guest import Guests
    records = tmp_path / "servers-records"
    first = Guests(tmp_path / "servers", _RecordingLauncher())
    assert first.boot("left", "debian-12", False, cloud_config(INI), hostname="vm-left")
    other = INI.replace("input_queue = q", "input_queue = other")
    assert first.boot("elsewhere", "debian-12", False, cloud_config(other),
                      hostname="vm-elsewhere")
    assert len(list((records / "by-queue").iterdir())) == 2  # one list per queue
    if index == "lost":
        shutil.rmtree(records / "by-queue")
    later = Guests(tmp_path / "servers", launcher := _RecordingLauncher())
    assert later.boot("new", "debian-12", False, cloud_config(INI), hostname="vm-new")
    assert launcher.stopped == ["vm-left"]
    # Releasing every server of the folder forgets the lists, and their folder.
    for server_id in ("left", "new", "elsewhere"):
        later.destroy(server_id)
    later.settle()
    assert list(records.iterdir()) == []


def test_an_agent_config_is_read_as_configparser_reads_it():
    import configparser

    from murano_engine.clouds.local.sandbox import broker_from_ini, ini_sections
    ini = ("[DEFAULT]\nhost = broker.example\nport = 5673\n"
           "[rabbitmq]\nlogin = ag ent\npassword = p@ss\nvirtual_host = /v\n"
           "input_queue = q\n")
    sections = ini_sections(ini)
    assert sections["rabbitmq"]["host"] == "broker.example"  # DEFAULT's, as configparser
    assert sections["DEFAULT"] == {"host": "broker.example", "port": "5673"}
    assert broker_from_ini(ini) == "amqp://ag%20ent:p%40ss@broker.example:5673/v"
    assert broker_from_ini("[DEFAULT]\nurl = amqp://a:b@h:1/\n") == "amqp://a:b@h:1/"
    assert broker_from_ini("[rabbitmq]\nssl = True\n") == \
        "amqps://guest:guest@localhost:5672/"
    with pytest.raises(configparser.Error):
        ini_sections("no section header\n")
