"""With Keystone in front, the pages' cookie becomes the X-Auth-Token keystonemiddleware
checks; the login page needs none."""

from __future__ import annotations

from werkzeug.test import Client
from werkzeug.wrappers import Response

from murano_engine.web.pages import COOKIE, token_from_cookie


def test_the_cookie_becomes_the_token_and_login_bypasses_keystone():
    seen: list[tuple[str, str | None]] = []

    def protected(environ, start_response):
        seen.append((environ["PATH_INFO"], environ.get("HTTP_X_AUTH_TOKEN")))
        return Response("behind keystone")(environ, start_response)

    def web(environ, start_response):
        return Response("the login form")(environ, start_response)

    client = Client(token_from_cookie(protected, web))
    assert client.get("/ui/login").text == "the login form"
    first = client.get("/ui/")
    assert first.status_code == 302 and first.headers["Location"].endswith("/ui/login")
    assert client.get("/v1/environments").text == "behind keystone"
    client.set_cookie(COOKIE, "ks-token")
    assert client.get("/ui/environments").text == "behind keystone"
    assert seen == [("/v1/environments", None), ("/ui/environments", "ks-token")]
