"""The engine's and murano-api's configuration: declarations, TLS to the broker, defaults."""

from __future__ import annotations

import inspect
import ssl

import pytest

from murano_engine.backend.settings import SCHEMA as API_SCHEMA
from murano_engine.backend.settings import Settings, load_settings
from murano_engine.engine import config as engine_config
from murano_engine.engine.config import ConfigError, broker_ssl, broker_url, load_config
from murano_engine.engine.services import close_services, engine_services

#: Heat by fixed token (never contacted here), so the broker is not memory://.
HEAT = {"MURANO_HEAT_URL": "http://127.0.0.1:9/v1/t", "MURANO_HEAT_TOKEN": "x"}


def test_broker_tls_settings_follow_ssl_ca_certs_and_insecure():
    def tls(**rabbit: str) -> object:
        return broker_ssl(load_config(None, {**HEAT, **{f"MURANO_RABBITMQ_{k.upper()}": v
                                                        for k, v in rabbit.items()}}))

    assert tls() is False
    assert tls(ssl="true") == {"cert_reqs": ssl.CERT_REQUIRED}
    assert tls(ssl="true", ca_certs="/ca.pem") == {"cert_reqs": ssl.CERT_REQUIRED,
                                                   "ca_certs": "/ca.pem"}
    assert tls(ssl="true", insecure="true") == {"cert_reqs": ssl.CERT_NONE}
    assert tls(ssl="true", insecure="true", ca_certs="/ca.pem")["cert_reqs"] == ssl.CERT_OPTIONAL
    assert tls(ssl="true", url="amqps://h//") is False  # a URL says its own scheme
    assert broker_url(load_config(None, {**HEAT, "MURANO_RABBITMQ_PORT": "5671"})) == \
        "amqp://guest:guest@127.0.0.1:5671/"


def test_engine_connects_to_the_broker_with_tls_and_the_configured_ca(tmp_path):
    """With ``[rabbitmq] ssl`` the engine's own connection uses TLS, verified with
    ``ca_certs`` (here a missing file, so the connection fails before any AMQP)."""
    missing = tmp_path / "missing-ca.pem"
    config = load_config(None, {**HEAT, "MURANO_RABBITMQ_SSL": "true",
                                "MURANO_RABBITMQ_CA_CERTS": str(missing)})
    services = engine_services(config)
    try:
        with pytest.raises(Exception, match="No such file"):
            services["agents"].send("econfig-test-h-tls", {"Body": "return"},
                                    environment="config-test")
    finally:
        close_services(services)


def test_the_local_clouds_default_state_folder_is_defined_once():
    from murano_engine.clouds.local import LocalCloud, cloud

    default = engine_config.SCHEMA.defaults().local_cloud.state_dir
    assert default is engine_config.DEFAULT_STATE_DIR is cloud.DEFAULT_STATE_DIR
    assert inspect.signature(LocalCloud).parameters["state_dir"].default is default


def test_config_values_are_typed_and_reach_murano_pl_by_name(tmp_path):
    path = tmp_path / "engine.ini"
    path.write_text("[engine]\nagent_timeout = 7\nagent_source = ./agent.tar.gz\n"
                    "[rabbitmq]\ninsecure = yes\n")
    config = load_config(path, {})
    assert config.engine.agent_timeout == 7 and config["engine"]["agent_storage"] is None
    assert config.rabbitmq.insecure is True and config.rabbitmq.url == ""
    assert broker_url(config) == "amqp://guest:guest@127.0.0.1:5672/"  # no in-process default
    assert config.get("engine", {}).get("agent_source") == "./agent.tar.gz"


@pytest.mark.parametrize(("text", "message"), [
    ("[engine]\nagent_timeout = soon\n", r"\[engine\]: option 'agent_timeout' = 'soon' is not "
                                         r"a whole number"),
    ("[local_cloud]\nstate_dri = /x\n", r"\[local_cloud\]: unknown option 'state_dri'"),
    ("[database]\nconnection = x\n", r"unknown section \[database\]"),
])
def test_engine_config_errors_name_file_section_and_option(tmp_path, text, message):
    path = tmp_path / "engine.ini"
    path.write_text(text)
    with pytest.raises(ConfigError, match=str(path).replace(".", r"\.") + ".*" + message):
        load_config(path, {})


def test_api_file_holds_api_and_engine_sections(tmp_path):
    path = tmp_path / "api.conf"
    path.write_text("[DEFAULT]\nbind_port = 9000\n[engine]\ntask_queue = t\nagent_timeout = 9\n"
                    "[murano]\npackage_size_limit = 2\n[auth]\ntoken_file = tokens.yaml\n"
                    "[keystone_authtoken]\nauth_type = password\n"
                    "[local_cloud]\nstate_dir = cloud\n"
                    "[database]\nconnection = sqlite:///murano-api.sqlite\n")
    settings = load_settings(path, {"MURANO_MURANO_API_LIMIT_MAX": "50"})
    assert (settings.bind_port, settings.task_queue, settings.api_limit_max) == (9000, "t", 50)
    assert settings.package_size_limit == 2 * 1024 * 1024
    assert settings.package_unpacked_limit == 20 * 1024 * 1024
    assert settings.token_file == tmp_path / "tokens.yaml"
    assert settings.keystone == {"auth_type": "password"}
    assert settings.database == f"sqlite:///{tmp_path / 'murano-api.sqlite'}"
    # what the workers give the engine: the same file, the engine's sections typed
    config = load_config(settings.config_file, {}, schema=API_SCHEMA)
    assert config.engine.agent_timeout == 9 and config.local_cloud.state_dir == "cloud"
    path.write_text("[murano]\npackage_size_limit = big\n")
    with pytest.raises(ConfigError, match=r"\[murano\]: option 'package_size_limit' = 'big'"):
        load_settings(path, {})


def test_api_defaults_are_the_declared_ones():
    assert load_settings(None, {}) == Settings()
    assert Settings().bind_port == 8082 and Settings().package_unpacked_limit == 50 * 1024 * 1024
