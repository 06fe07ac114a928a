"""Who is calling: a token checked against the configured auth backend.

``tokens`` (the default) reads a YAML/JSON file mapping each token to
``{project_id, user_id, roles}``. ``keystone`` puts keystonemiddleware's
``auth_token`` in front of the application and trusts the identity headers it
sets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from murano_engine.api.errors import Unauthorized
from murano_engine.dsl.yaml_loader import load_plain


@dataclass(frozen=True)
class Context:
    """The caller of one request."""

    project_id: str
    user_id: str
    token: str
    roles: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles


class TokenFile:
    """Static tokens from a file: ``{TOKEN: {project_id, user_id, roles}}``."""

    def __init__(self, path: Path | None) -> None:
        data = load_plain(path.read_bytes(), str(path)) if path is not None else {}
        self.tokens: dict[str, Context] = {}
        for token, who in (data or {}).items():
            self.tokens[str(token)] = Context(
                project_id=str(who["project_id"]), user_id=str(who.get("user_id", token)),
                token=str(token), roles=tuple(who.get("roles") or ()))

    def __call__(self, environ: dict[str, Any]) -> Context:
        token = environ.get("HTTP_X_AUTH_TOKEN")
        if not token:
            raise Unauthorized("X-Auth-Token header is required")
        context = self.tokens.get(token)
        if context is None:
            raise Unauthorized("the token is not valid")
        return context


def keystone_identity(environ: dict[str, Any]) -> Context:
    """The identity keystonemiddleware confirmed for this request."""
    if environ.get("HTTP_X_IDENTITY_STATUS") != "Confirmed":
        raise Unauthorized("the token is not valid")
    roles = tuple(r.strip() for r in environ.get("HTTP_X_ROLES", "").split(",") if r.strip())
    return Context(project_id=environ.get("HTTP_X_PROJECT_ID", ""),
                   user_id=environ.get("HTTP_X_USER_ID", ""),
                   token=environ.get("HTTP_X_AUTH_TOKEN", ""), roles=roles)


def wrap_keystone(app: Callable, options: dict[str, str]) -> Callable:
    """``app`` behind keystonemiddleware's auth_token (delay_auth_decision off)."""
    from keystonemiddleware import auth_token

    return auth_token.AuthProtocol(app, dict(options))
