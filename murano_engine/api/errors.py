"""API errors and their bodies in Murano's shape.

The body is JSON (``{code, title, explanation, error: {message, type,
traceback, request_id}}``) when the client accepts ``application/json``
explicitly or sends no ``Accept``; otherwise plain text, except for
python-muranoclient, which gets a small HTML page as Murano's WSGI stack sends
(the only text its error parser reads: its plain-text branch fails on Python 3,
and its JSON one on the ``code`` of Murano's shape). No body carries a traceback
(``traceback`` is always null, as in Murano without debug) or a server path: an
unexpected failure is logged with the request id and the body gives only that id.
"""

from __future__ import annotations

import html
import json
from typing import Any

TITLES = {400: ("Bad Request", "The server could not comply with the request since it is "
                               "either malformed or otherwise incorrect."),
          401: ("Unauthorized", "This server could not verify that you are authorized to "
                                "access the document you requested."),
          403: ("Forbidden", "Access was denied to this resource."),
          404: ("Not Found", "The resource could not be found."),
          405: ("Method Not Allowed", "The method is not allowed for this resource."),
          409: ("Conflict", "There was a conflict when trying to complete your request."),
          413: ("Request Entity Too Large", "The body of your request was too large."),
          415: ("Unsupported Media Type", "The request media type is not supported."),
          429: ("Too Many Requests", "The project has as many requests of this kind running "
                                     "as it may; try again when they end."),
          500: ("Internal Server Error", "The server has either erred or is incapable of "
                                         "performing the requested operation."),
          503: ("Service Unavailable", "The server is currently unavailable."),
          504: ("Gateway Timeout", "The operation did not finish in time.")}


class ApiError(Exception):
    """An error that becomes an HTTP response."""

    status = 500

    def __init__(self, message: str, *, problems: list[str] | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems
        if status is not None:
            self.status = status


class BadRequest(ApiError):
    status = 400


class Unauthorized(ApiError):
    status = 401


class Forbidden(ApiError):
    status = 403


class QuotaExceeded(Forbidden):
    """A project past one of its quotas (403, as Nova's); the body's ``error`` names the
    quota, its value and what the project has (``quota``: ``{name, limit, in_use}``)."""

    def __init__(self, message: str, *, name: str, limit: int, in_use: int) -> None:
        super().__init__(message)
        self.quota = {"name": name, "limit": limit, "in_use": in_use}


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class TooLarge(ApiError):
    status = 413


class Unavailable(ApiError):
    status = 503


class TimedOut(ApiError):
    status = 504


def wants_json(accept: str | None) -> bool:
    if not accept:
        return True
    return "application/json" in accept or "+json" in accept


def for_muranoclient(user_agent: str | None) -> bool:
    """Whether the request comes from python-muranoclient (the ``murano`` command)."""
    return bool(user_agent) and "muranoclient" in str(user_agent)


def render(error: ApiError, accept: str | None, request_id: str,
           user_agent: str | None = None) -> tuple[str, bytes]:
    """Content type and body for ``error`` (``user_agent``: the request's)."""
    title, explanation = TITLES.get(error.status, ("Error", ""))
    if wants_json(accept):
        inner: dict[str, Any] = {"message": error.message, "type": type(error).__name__,
                                 "traceback": None, "request_id": request_id}
        if error.problems is not None:
            inner["problems"] = error.problems
        if isinstance(error, QuotaExceeded):
            inner["quota"] = error.quota
        body = {"code": error.status, "title": title, "explanation": explanation,
                "error": inner}
        return "application/json", json.dumps(body).encode()
    if for_muranoclient(user_agent):  # the client strips the tags, joins the lines
        status = f"{error.status} {title}"
        text = [error.message, *(error.problems or []), f"Request id: {request_id}"]
        page = ["<html>", " <head>", f"  <title>{status}</title>", " </head>", " <body>",
                f"  <h1>{status}</h1>", f"  {explanation}<br /><br />",
                *(f"{html.escape(line, quote=False)}<br />" for line in text),
                " </body>", "</html>"]
        return "text/html; charset=UTF-8", ("\n".join(page) + "\n").encode()
    lines = [f"{error.status} {title}", "", error.message, *(error.problems or []),
             f"Request id: {request_id}"]
    return "text/plain; charset=UTF-8", ("\n".join(lines) + "\n").encode()
