"""The outside services an engine run uses, built from the engine's configuration:
the cloud, the agents' broker client and class configs; and a project's own view of
that configuration (the API and the worker run tasks for many projects)."""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from murano_common.options import Values

if TYPE_CHECKING:
    from murano_engine.messaging.signing import KeyRing

#: The folder of the environments' signing keys, in the local cloud's state folder.
SIGNING_KEYS_FOLDER = "signing-keys"


def engine_services(config: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The outside services a run uses: the cloud, the agents' broker, the servers'
    broker identities, class configs."""
    from murano_engine.clouds import open_cloud
    from murano_engine.engine.class_configs import ClassConfigFiles
    from murano_engine.engine.config import broker_ssl, broker_url
    from murano_engine.engine.quotas import servers_quota
    from murano_engine.messaging import AgentClient
    from murano_engine.messaging.identities import BrokerIdentities
    from murano_engine.messaging.signing import engine_key
    key_file = signing_key_file(config)
    signing_key = engine_key(key_file) if key_file is not None else None
    keys = signing_keys(config)
    identities = BrokerIdentities.from_config(config)
    services = {"cloud": open_cloud(config, identities, broker_address=broker_url(config),
                                    server_quota=servers_quota(config)),
                "agents": AgentClient(broker_url(config), signing_key_pem=signing_key,
                                      ssl=broker_ssl(config), keys=keys),
                "config": config}
    services["agents"].watch_guests(services["cloud"].guest_failure)
    if identities is not None:
        services["identities"] = identities
    folder = config["engine"].get("class_configs")
    if folder:
        services["class_configs"] = ClassConfigFiles(folder)
    return services


def signing_key_file(config: Mapping[str, Mapping[str, Any]]) -> Path | None:
    """The one private key file every environment's plans are signed with, made on
    first use: ``[engine] signing_key``; None when it is not set (each environment
    has its own key: :func:`signing_keys`) or ``[engine] sign_plans`` is off."""
    engine = config["engine"]
    if not engine.get("sign_plans", True) or not engine.get("signing_key"):
        return None
    return Path(str(engine["signing_key"])).expanduser()


def signing_keys(config: Mapping[str, Mapping[str, Any]]) -> KeyRing | None:
    """The environments' own signing keys, in ``signing-keys/`` of the local cloud's
    state folder (a project's own under the API; never in a server's folder); None
    when plans go unsigned or ``[engine] signing_key`` names one key for all."""
    from murano_engine.messaging.signing import KeyRing
    engine = config["engine"]
    if not engine.get("sign_plans", True) or engine.get("signing_key"):
        return None
    return KeyRing(Path(str(config["local_cloud"]["state_dir"])).expanduser()
                   / SIGNING_KEYS_FOLDER)


def project_config(config: Values, project_id: str) -> Values:
    """``config`` for one project's tasks: on the local cloud, a state folder of its own
    (``<state_dir>/projects/<project>``) and the project's own quotas; a Heat cloud
    scopes projects itself."""
    from murano_engine.clouds.heat import heat_configured
    from murano_engine.engine.quotas import scope
    if heat_configured(config["heat"]):
        return config
    scoped = copy.deepcopy(config)
    scope(scoped, project_id)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", project_id) or "_"
    if safe != project_id or safe in (".", ".."):
        safe = f"{safe[:40]}-{hashlib.sha256(project_id.encode()).hexdigest()[:12]}"
    base = Path(str(config["local_cloud"]["state_dir"])).expanduser()
    scoped["local_cloud"]["state_dir"] = str(base / "projects" / safe)
    return scoped


def close_services(services: Mapping[str, Any]) -> None:
    for name in ("agents", "cloud"):
        service = services.get(name)
        if service is not None and hasattr(service, "close"):
            service.close()
