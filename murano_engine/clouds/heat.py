"""The OpenStack Heat backend: python-heatclient on a keystoneauth1 session.

Settings come from the engine config file's ``[heat]`` section:

* ``auth_url``, ``username``, ``password``, ``project_name`` (or ``project_id``),
  ``user_domain_name``/``user_domain_id``, ``project_domain_name``/
  ``project_domain_id`` (domains default to ``Default``): a keystone v3 password
  session; Heat's endpoint then comes from the catalog (``region_name``,
  ``endpoint_type``) unless ``url`` overrides it;
* or ``url`` plus ``token``: a fixed token against a known endpoint;
* ``insecure``, ``cacert``, ``request_timeout``, ``stack_timeout`` (seconds,
  bounds every wait and is passed to Heat as the stack timeout; default
  ``[engine] stack_timeout``),
  ``poll_interval``, ``stack_tags`` (comma list, default ``murano``);
* ``no_compute``: the cloud has no Nova/Neutron/Cinder; every stack goes with
  the stand-ins of :mod:`murano_engine.clouds.heat_providers`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from heatclient import client as heat_client
from heatclient import exc as heat_exc
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from keystoneauth1.identity import v3

from murano_engine.clouds.base import (
    DEFAULT_STACK_TIMEOUT,
    CloudError,
    CloudUnavailable,
    Stack,
    StackConflict,
    StackNotFound,
    StackService,
    TemplateError,
)
from murano_engine.clouds.heat_providers import with_stand_ins


def heat_configured(section: Mapping[str, Any]) -> bool:
    """Whether a ``[heat]`` section says how to reach and authenticate to Heat."""
    return bool(section.get("auth_url") or (section.get("url") and section.get("token")))


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def keystone_session(section: Mapping[str, Any]) -> ks_session.Session:
    """A keystoneauth1 session from ``[heat]`` settings (password or token)."""
    if section.get("auth_url"):
        project = {
            key: section[key]
            for key in ("project_name", "project_id", "project_domain_name", "project_domain_id")
            if section.get(key)
        }
        if "project_domain_id" not in project:
            project.setdefault("project_domain_name", "Default")
        auth: Any = v3.Password(
            auth_url=section["auth_url"],
            username=section.get("username"),
            user_id=section.get("user_id"),
            password=section.get("password", ""),
            user_domain_name=section.get("user_domain_name")
            or (None if section.get("user_domain_id") else "Default"),
            user_domain_id=section.get("user_domain_id"),
            **project,
        )
    elif section.get("url") and section.get("token"):
        auth = token_endpoint.Token(section["url"], section["token"])
    else:
        raise CloudError("[heat] needs auth_url (keystone) or url plus token")
    verify: bool | str = not _flag(section.get("insecure", False))
    if verify and section.get("cacert"):
        verify = str(section["cacert"])
    timeout = section.get("request_timeout")
    return ks_session.Session(auth=auth, verify=verify, timeout=float(timeout) if timeout else None)


class HeatStacks(StackService):
    """Stacks in an OpenStack Heat endpoint."""

    def __init__(
        self,
        session: ks_session.Session,
        *,
        url: str | None = None,
        region_name: str | None = None,
        endpoint_type: str = "public",
        tags: str = "murano",
        timeout: float = DEFAULT_STACK_TIMEOUT,
        poll_interval: float = 2.0,
        no_compute: bool = False,
    ) -> None:
        super().__init__(timeout=timeout, poll_interval=poll_interval)
        self._session = session
        self._tags = tags
        self._no_compute = no_compute
        options: dict[str, Any] = {"session": session, "interface": endpoint_type}
        if url:
            options["endpoint_override"] = url
        if region_name:
            options["region_name"] = region_name
        self._client = heat_client.Client("1", **options)

    @classmethod
    def from_config(cls, section: Mapping[str, Any],
                    stack_timeout: float = DEFAULT_STACK_TIMEOUT) -> HeatStacks:
        """Build from the engine config's ``[heat]`` section; its ``stack_timeout``
        (when set) wins over ``stack_timeout``."""
        tags = section.get("stack_tags", "murano")
        if not isinstance(tags, str):
            tags = ",".join(tags)
        return cls(
            keystone_session(section),
            url=section.get("url") or None,
            region_name=section.get("region_name") or None,
            endpoint_type=str(section.get("endpoint_type", "public")).removesuffix("URL"),
            tags=tags,
            timeout=float(section.get("stack_timeout") or stack_timeout),
            poll_interval=float(section.get("poll_interval", 2.0)),
            no_compute=_flag(section.get("no_compute", False)),
        )

    def get(self, name: str, template: bool = True) -> Stack | None:
        with _translated(name):
            try:
                found = self._client.stacks.get(name)
            except heat_exc.HTTPNotFound:
                return None
            identifier = f"{found.stack_name}/{found.id}"
            text = self._client.stacks.template(identifier) if template else None
        return self._snapshot(found, text)

    def peek(self, name: str) -> Stack | None:
        with _translated(name):
            try:
                found = self._client.stacks.get(name, resolve_outputs=False)
            except heat_exc.HTTPNotFound:
                return None
        return self._snapshot(found, None)

    def create(
        self,
        name: str,
        template: dict[str, Any],
        parameters: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        environment: dict[str, Any] | None = None,
    ) -> None:
        with _translated(name):
            self._client.stacks.create(
                stack_name=name, **self._fields(template, parameters, files, environment)
            )

    def update(
        self,
        name: str,
        template: dict[str, Any],
        parameters: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        environment: dict[str, Any] | None = None,
    ) -> None:
        identifier = self._identifier(name)
        with _translated(name):
            self._client.stacks.update(
                identifier, **self._fields(template, parameters, files, environment)
            )

    def delete(self, name: str) -> None:
        identifier = self._identifier(name)
        with _translated(name):
            self._client.stacks.delete(identifier)

    def close(self) -> None:
        self._session.session.close()

    def _identifier(self, name: str) -> str:
        """``name/id``: Heat answers a bare name on writes with a redirect."""
        stack = self.peek(name)
        if stack is None:
            raise StackNotFound(f"Stack {name} does not exist")
        return f"{stack.name}/{stack.id}"

    def _fields(
        self,
        template: dict[str, Any],
        parameters: dict[str, Any] | None,
        files: dict[str, str] | None,
        environment: dict[str, Any] | None,
    ) -> dict[str, Any]:
        files, environment = files or {}, environment or {}
        if self._no_compute:
            files, environment = with_stand_ins(files, environment)
        return {
            "template": template,
            "parameters": parameters or {},
            "files": files,
            "environment": environment,
            "disable_rollback": True,
            "tags": self._tags,
            "timeout_mins": max(1, math.ceil(self.timeout / 60)),
        }

    @staticmethod
    def _snapshot(found: Any, template: dict[str, Any] | None) -> Stack | None:
        status = found.stack_status
        if status == "DELETE_COMPLETE":
            return None
        outputs = {
            item["output_key"]: item.get("output_value")
            for item in getattr(found, "outputs", None) or []
        }
        parameters = {
            key: value
            for key, value in (getattr(found, "parameters", None) or {}).items()
            if not key.startswith("OS::")
        }
        return Stack(
            name=found.stack_name,
            id=found.id,
            status=status,
            status_reason=getattr(found, "stack_status_reason", "") or "",
            outputs=outputs,
            parameters=parameters,
            template=template,
            created=getattr(found, "creation_time", None),
            updated=getattr(found, "updated_time", None),
        )


def _heat_message(error: heat_exc.HTTPException) -> str:
    return str(error.error["error"].get("message") or error).strip()


@contextmanager
def _translated(name: str) -> Iterator[None]:
    """Turn heatclient/keystoneauth errors into the cloud's own errors."""
    try:
        yield
    except heat_exc.HTTPNotFound as error:
        raise StackNotFound(f"Stack {name}: {_heat_message(error)}") from error
    except heat_exc.HTTPConflict as error:
        raise StackConflict(f"Stack {name}: {_heat_message(error)}") from error
    except heat_exc.HTTPBadRequest as error:
        raise TemplateError(f"Stack {name}: {_heat_message(error)}") from error
    except heat_exc.HTTPException as error:
        message = f"Stack {name}: Heat answered {error.code}: {_heat_message(error)}"
        if isinstance(error.code, int) and error.code >= 500:
            raise CloudUnavailable(message) from error
        raise CloudError(message) from error
    except ks_exc.ConnectionError as error:
        raise CloudUnavailable(f"Stack {name}: Heat is unreachable: {error}") from error
    except ks_exc.ClientException as error:
        raise CloudError(f"Stack {name}: {error}") from error
