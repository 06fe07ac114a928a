"""The outside services an engine run uses, built from the engine's configuration:
the cloud, the agents' broker client and class configs; and a project's own view of
that configuration (the API and the worker run tasks for many projects)."""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from murano_common.options import Values


def engine_services(config: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The outside services a run uses: the cloud, the agents' broker, class configs."""
    from murano_engine.clouds import open_cloud
    from murano_engine.engine.class_configs import ClassConfigFiles
    from murano_engine.engine.config import broker_ssl, broker_url
    from murano_engine.messaging import AgentClient
    key = config["engine"].get("signing_key") or None
    signing_key = Path(key).read_text() if key else None
    services = {"cloud": open_cloud(config),
                "agents": AgentClient(broker_url(config), signing_key_pem=signing_key,
                                      ssl=broker_ssl(config)),
                "config": config}
    folder = config["engine"].get("class_configs")
    if folder:
        services["class_configs"] = ClassConfigFiles(folder)
    return services


def project_config(config: Values, project_id: str) -> Values:
    """``config`` for one project's tasks: on the local cloud, a state folder of its own
    (``<state_dir>/projects/<project>``); a Heat cloud scopes projects itself."""
    from murano_engine.clouds.heat import heat_configured
    if heat_configured(config["heat"]):
        return config
    scoped = copy.deepcopy(config)
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
