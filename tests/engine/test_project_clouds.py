"""Each project deploys to a local cloud of its own: its networks are the only ones it sees."""

from __future__ import annotations

from murano_engine.backend.settings import load_settings
from murano_engine.clouds.base import push_stack
from murano_engine.dsl import values
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter
from murano_engine.server.worker import EngineServices

NETWORK = {"heat_template_version": "2013-05-23", "resources": {
    "net": {"type": "OS::Neutron::Net", "properties": {"name": "secret-net-of-a"}},
    "sub": {"type": "OS::Neutron::Subnet",
            "properties": {"network": {"get_resource": "net"}, "cidr": "10.0.40.0/24"}},
    "port": {"type": "OS::Neutron::Port", "properties": {"network": {"get_resource": "net"}}}}}


def _listing(services: dict, method: str) -> list:
    loader = PackageLoader([], build_interpreter())
    executor = Executor(loader, services=services)
    explorer = executor.new_object(loader.find_class("io.murano.system.NetworkExplorer"))
    return values.thaw(executor.call(explorer, method))


def test_projects_get_clouds_of_their_own(tmp_path):
    conf = tmp_path / "murano-api.conf"
    conf.write_text(f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\n"
                    "[rabbitmq]\nurl = amqp://guest:guest@127.0.0.1:5672//\n")
    services = EngineServices(load_settings(conf, {}))
    try:
        a, b = services.get("proj-a"), services.get("proj/../b")
        assert services.get("proj-a") is a  # one cloud per project, kept for its tasks
        assert a["cloud"].state_dir == tmp_path / "cloud" / "projects" / "proj-a"
        assert b["cloud"].state_dir.parent == tmp_path / "cloud" / "projects"
        assert b["cloud"].state_dir.name.endswith(tuple("0123456789abcdef"))  # hashed, one level
        push_stack(a["cloud"], "env-a", NETWORK)

        names = [n["name"] for n in _listing(a, "listNetworks")]
        assert "secret-net-of-a" in names
        assert len(_listing(a, "listPorts")) == 1
        assert "secret-net-of-a" not in [n["name"] for n in _listing(b, "listNetworks")]
        assert _listing(b, "listPorts") == [] and _listing(b, "listSubnetworks") == []
    finally:
        services.close()
