"""The pages' guard on its own (werkzeug requests, no server): which requests it lets
through, the headers and cookie it adds; and logo sniffing."""

from __future__ import annotations

import pytest
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request, Response

from murano_engine.web import guard
from murano_engine.web.images import image_type

BROWSER = "0123456789abcdef0123456789abcdef"


def request(method: str = "POST", cookie: str | None = BROWSER, **headers: str) -> Request:
    builder = EnvironBuilder(path="/ui/environments", method=method, base_url="http://pages:8082",
                             headers=headers, data={"name": "x"} if method == "POST" else None)
    if cookie is not None:
        builder.headers["Cookie"] = f"{guard.CSRF_COOKIE}={cookie}"
    return Request(builder.get_environ())


def test_safe_requests_pass_and_get_a_browser_cookie_and_a_token():
    keeper = guard.Guard()
    fresh = request("GET", cookie=None)
    assert keeper.begin(fresh) is None
    field = str(guard.csrf_field())
    token = keeper.token(fresh.environ["murano.csrf_browser"])
    assert field == f'<input type="hidden" name="csrf_token" value="{token}">'
    answered = keeper.finish(fresh, Response("page"))
    assert f"{guard.CSRF_COOKIE}={fresh.environ['murano.csrf_browser']}" in \
        answered.headers["Set-Cookie"]
    known = request("GET")
    assert keeper.begin(known) is None
    assert keeper.finish(known, Response("page")).headers.get("Set-Cookie") is None


@pytest.mark.parametrize(("headers", "cookie", "passes"), [
    ({"X-CSRF-Token": "right"}, BROWSER, True),
    ({"X-CSRF-Token": "right", "Origin": "http://pages:8082"}, BROWSER, True),
    ({"X-CSRF-Token": "right", "Referer": "http://pages:8082/ui/"}, BROWSER, True),
    ({}, BROWSER, False),
    ({"X-CSRF-Token": "wrong"}, BROWSER, False),
    ({"X-CSRF-Token": "right"}, None, False),
    ({"X-CSRF-Token": "right"}, "short", False),
    ({"X-CSRF-Token": "right", "Origin": "null"}, BROWSER, False),
    ({"X-CSRF-Token": "right", "Origin": "http://pages:9999"}, BROWSER, False),
    ({"X-CSRF-Token": "right", "Origin": "http://pages.evil:8082"}, BROWSER, False),
    ({"X-CSRF-Token": "right", "Referer": "http://evil/ui/"}, BROWSER, False),
])
def test_a_state_changing_request_needs_the_token_and_the_pages_origin(headers, cookie,
                                                                       passes):
    keeper = guard.Guard()
    if headers.get("X-CSRF-Token") == "right":
        headers = {**headers, "X-CSRF-Token": keeper.token(BROWSER)}
    refusal = keeper.begin(request("POST", cookie, **headers))
    assert (refusal is None) is passes, refusal


def test_another_process_does_not_take_this_ones_tokens():
    assert guard.Guard().token(BROWSER) != guard.Guard().token(BROWSER)


def test_every_answer_gets_the_headers_and_secure_cookies_when_asked():
    keeper = guard.Guard(secure_cookies=True, inline_styles=["p { color: red; }"])
    fresh = request("GET", cookie=None)
    keeper.begin(fresh)
    headers = keeper.finish(fresh, Response("page")).headers
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"
    policy = headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy
    assert guard.style_hash("p { color: red; }") in policy
    assert "; Secure" in headers["Set-Cookie"]


@pytest.mark.parametrize(("data", "kind"), [
    (b"\x89PNG\r\n\x1a\n....", "image/png"),
    (b"\xff\xd8\xff\xe0....", "image/jpeg"),
    (b"GIF89a....", "image/gif"),
    (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
    (b"<html><script>alert(1)</script>", None),
    (b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', None),
    (b"\x89PNG supplier", None),
    (b"", None),
])
def test_a_logo_is_an_image_by_its_bytes(data, kind):
    assert image_type(data) == kind
