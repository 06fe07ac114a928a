"""What every request under ``/ui/`` passes through, whatever its route.

A state-changing request (any method but GET, HEAD and OPTIONS) is refused unless it
carries the CSRF token of the browser's pages (the form field ``csrf_token``, or the
``X-CSRF-Token`` header) and, when it names an origin (``Origin``, else ``Referer``),
that origin is the pages' own host. The token is an HMAC, under a key made when the
process starts, of a random browser id kept in the ``murano_csrf`` cookie: another site
can neither read it nor make it. Every response gets the anti-framing, ``nosniff`` and
Content-Security-Policy headers; the policy allows the pages' own scripts and style
sheets only (plus the deployment picture's one inline style sheet, by its hash).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Iterable
from contextvars import ContextVar
from urllib.parse import urlsplit

from markupsafe import Markup
from werkzeug.datastructures import Headers
from werkzeug.wrappers import Request, Response

CSRF_COOKIE = "murano_csrf"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

#: the token of the request being answered (what ``csrf_field()`` renders)
_current_token: ContextVar[str] = ContextVar("csrf_token", default="")


def style_hash(css: str) -> str:
    """The CSP source that allows the inline ``<style>`` holding exactly ``css``."""
    digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
    return f"'sha256-{digest}'"


def content_security_policy(inline_styles: Iterable[str] = ()) -> str:
    """The pages' policy: their own scripts, styles, images and fetches; no framing."""
    styles = " ".join(["'self'", *map(style_hash, inline_styles)])
    return ("default-src 'none'; script-src 'self'; style-src " + styles + "; "
            "img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; "
            "frame-ancestors 'none'")


def csrf_field() -> Markup:
    """The hidden input a state-changing form carries (a Jinja global of the pages)."""
    return Markup('<input type="hidden" name="{}" value="{}">').format(
        CSRF_FIELD, _current_token.get())


class Guard:
    """The CSRF check and the security headers of one web application."""

    def __init__(self, secure_cookies: bool = False, inline_styles: Iterable[str] = ()) -> None:
        self.secure_cookies = secure_cookies
        self.policy = content_security_policy(inline_styles)
        self._key = secrets.token_bytes(32)

    def token(self, browser_id: str) -> str:
        return hmac.new(self._key, browser_id.encode(), hashlib.sha256).hexdigest()

    def secure(self, request: Request) -> bool:
        """Whether cookies are marked ``Secure``: configured so, or served over HTTPS."""
        return self.secure_cookies or request.scheme == "https"

    def begin(self, request: Request) -> str | None:
        """Start answering ``request``: the reason to refuse it, or None. Makes the
        browser's token the one ``csrf_field()`` renders."""
        browser_id = request.cookies.get(CSRF_COOKIE, "")
        if len(browser_id) != 32:
            browser_id = ""
        request.environ["murano.csrf_browser"] = browser_id or secrets.token_hex(16)
        _current_token.set(self.token(request.environ["murano.csrf_browser"]))
        if request.method in SAFE_METHODS:
            return None
        source = request.headers.get("Origin") or request.headers.get("Referer")
        if source is not None and urlsplit(source).netloc != request.host:
            return (f"this form was sent from {source!r}, not from these pages; forms are "
                    f"accepted from the pages' own origin only")
        given = request.headers.get(CSRF_HEADER) or request.form.get(CSRF_FIELD, "")
        if not browser_id or not hmac.compare_digest(given, self.token(browser_id)):
            return ("this form has no valid CSRF token (it is older than the server's "
                    "last start, or came from another site): reload the page and send it "
                    "again")
        return None

    def finish(self, request: Request, response: Response) -> Response:
        """Add the headers every page carries, and the browser id cookie if it is new."""
        if request.cookies.get(CSRF_COOKIE) != request.environ.get("murano.csrf_browser"):
            response.set_cookie(CSRF_COOKIE, request.environ["murano.csrf_browser"],
                                httponly=True, samesite="Strict", path="/ui/",
                                secure=self.secure(request))
        protect(response.headers, self.policy)
        return response


def protect(headers: Headers, policy: str) -> None:
    """The anti-framing, ``nosniff`` and CSP headers, set on ``headers``."""
    headers["X-Frame-Options"] = "DENY"
    headers["X-Content-Type-Options"] = "nosniff"
    headers["Content-Security-Policy"] = policy
    headers["Referrer-Policy"] = "same-origin"
