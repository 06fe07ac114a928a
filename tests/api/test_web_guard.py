"""The pages' defences, over HTTP: every state-changing ``/ui/`` route (walked from the
route table, so routes added later are covered) refuses a token-less or cross-origin
request; every page carries the anti-framing, nosniff and CSP headers and has no inline
script or style the policy would block; a logo is served only if it is an image."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
from pathlib import Path

import pytest
import requests

from murano_engine.api.catalog import pack_folder
from murano_engine.web.pages import RULES
from tests.api.test_web_pages import csrf_token, echo_package, login

PACKAGES = Path(__file__).parent / "packages"
SAFE = {"GET", "HEAD", "OPTIONS"}
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
HTML_LOGO = b"<html><body><script>alert(document.cookie)</script></body></html>"


def package_with_logo(tmp_path: Path, logo: bytes, version: int) -> bytes:
    folder = tmp_path / f"logo{version}"
    shutil.copytree(PACKAGES / "apitest", folder)
    manifest = folder / "manifest.yaml"
    manifest.write_text(manifest.read_text() + f"Version: 2.0.{version}\nLogo: logo.png\n")
    (folder / "logo.png").write_bytes(logo)
    return pack_folder(folder)


@pytest.fixture
def site(start_api, tmp_path):
    """An API with a package and an environment of project A, and A's logged-in session."""
    api = start_api()
    package = api.ok("POST", "/v1/catalog/packages",
                     files={"file": ("apitest.zip", echo_package(tmp_path))})["id"]
    env = api.ok("POST", "/v1/environments", json={"name": "guarded"})["id"]
    return api, login(api), {"package_id": package, "env_id": env}


def url(api, path: str, ids: dict[str, str]) -> str:
    """``path`` with its ``<name>`` parts filled: real ids where the site has them."""
    return api.url + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: ids.get(m.group(1), "x"), path)


def state_changing() -> list[tuple[str, str]]:
    return [(path, method) for path, _, methods in RULES for method in methods
            if method not in SAFE]


def test_the_walk_covers_the_forms_of_the_pages():
    walked = {path for path, _ in state_changing()}
    assert {"/ui/login", "/ui/logout", "/ui/packages", "/ui/packages/<package_id>/delete",
            "/ui/environments", "/ui/environments/<env_id>/deploy",
            "/ui/environments/<env_id>/add/<package_id>"} <= walked


def test_every_state_changing_route_refuses_token_less_and_cross_origin_requests(site):
    api, browser, ids = site
    token = browser.headers.pop("X-CSRF-Token")
    own = api.url
    for path, method in state_changing():
        target = url(api, path, ids)
        refusals = {
            "no token": browser.request(method, target, timeout=30, allow_redirects=False,
                                        data={"name": "forged"}),
            "a wrong token": browser.request(method, target, timeout=30, allow_redirects=False,
                                             data={"name": "forged", "csrf_token": "0" * 64}),
            "another origin": browser.request(
                method, target, timeout=30, allow_redirects=False,
                data={"name": "forged", "csrf_token": token},
                headers={"Origin": "http://evil.example"}),
            "another site's page": browser.request(
                method, target, timeout=30, allow_redirects=False,
                data={"name": "forged", "csrf_token": token},
                headers={"Referer": "http://127.0.0.1.evil.example/attack.html"}),
            "another port": browser.request(
                method, target, timeout=30, allow_redirects=False,
                data={"name": "forged"}, headers={"X-CSRF-Token": token,
                                                  "Origin": "http://127.0.0.1:1"}),
        }
        for why, answer in refusals.items():
            assert answer.status_code == 403, (method, path, why, answer.status_code)
            assert "CSRF" in answer.text or "these pages" in answer.text
    # nothing happened: the package, the environment and the login are all still there
    assert api.ok("GET", f"/v1/catalog/packages/{ids['package_id']}")["id"]
    assert [e["name"] for e in api.ok("GET", "/v1/environments")["environments"]] == \
        ["guarded"]
    assert browser.get(api.url + "/ui/", timeout=30).url.endswith("/ui/")
    # the same form with its token, from the pages' own origin, goes through
    created = browser.post(api.url + "/ui/environments", timeout=30, allow_redirects=False,
                           data={"name": "real", "csrf_token": token},
                           headers={"Origin": own, "Referer": own + "/ui/environments"})
    assert created.status_code == 302
    assert "real" in [e["name"] for e in api.ok("GET", "/v1/environments")["environments"]]


def test_a_token_is_the_browsers_own(site):
    api, browser, _ = site
    stranger = requests.Session()
    theirs = csrf_token(stranger.get(api.url + "/ui/login", timeout=30).text)
    assert theirs != browser.headers["X-CSRF-Token"]
    browser.headers["X-CSRF-Token"] = theirs  # a token of another browser: refused
    assert browser.post(api.url + "/ui/environments", data={"name": "n"},
                        timeout=30).status_code == 403


def assert_guarded(answer: requests.Response, where: str) -> None:
    headers = answer.headers
    assert headers.get("X-Frame-Options") == "DENY", where
    assert headers.get("X-Content-Type-Options") == "nosniff", where
    policy = headers.get("Content-Security-Policy", "")
    assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy, where
    assert "unsafe-inline" not in policy, where
    if "html" in headers.get("Content-Type", ""):
        page = answer.text
        assert not re.search(r"<script(?![^>]*\ssrc=)[^>]*>", page), where
        assert not re.search(r"\sstyle=", page), where
        assert not re.search(r"\son[a-z]+=", page), where
        for css in re.findall(r"<style>(.*?)</style>", page, re.S):  # allowed by its hash
            digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
            assert f"'sha256-{digest}'" in policy, where


def test_every_page_carries_the_headers_and_no_inline_code(site, tmp_path):
    api, browser, ids = site
    env, package = ids["env_id"], ids["package_id"]
    added = browser.post(f"{api.url}/ui/environments/{env}/add/{package}", timeout=30,
                         data={"_step": "0", "_answers": "{}", "who": "guard"})
    assert added.status_code == 200  # something to deploy: an empty one is not deployed
    task = browser.post(f"{api.url}/ui/environments/{env}/deploy", timeout=30)
    assert task.status_code == 200
    api.wait_env(env, version=1)
    ids["task_id"] = api.ok("GET", f"/v1/environments/{env}/deployments")[
        "deployments"][0]["id"]
    ids["name"] = "murano.css"
    for path, _, methods in RULES:
        if "GET" in methods:
            answer = browser.get(url(api, path, ids), timeout=30)
            if set(re.findall(r"<(?:\w+:)?(\w+)>", path)) <= set(ids):  # a real page
                assert answer.status_code == 200, (path, answer.status_code)
            assert_guarded(answer, path)
    for path in ("/ui/static/environment.js", "/ui/static/package.js",
                 f"/ui/environments/{env}/add/{package}"):
        assert_guarded(browser.get(api.url + path, timeout=30), path)
    assert_guarded(browser.get(api.url + "/ui/packages/nope", timeout=30), "not found")
    stranger = requests.get(api.url + "/ui/environments", timeout=30, allow_redirects=False)
    assert stranger.status_code == 302
    assert_guarded(stranger, "the login redirect")
    assert_guarded(browser.post(api.url + "/ui/logout", timeout=30, allow_redirects=False),
                   "a refused post")


def test_a_logo_is_served_only_if_its_bytes_are_an_image(site, tmp_path):
    api, browser, _ = site
    html_logo = api.ok("POST", "/v1/catalog/packages", files={"file": (
        "p.zip", package_with_logo(tmp_path, HTML_LOGO, 1))})["id"]
    png_logo = api.ok("POST", "/v1/catalog/packages", files={"file": (
        "p.zip", package_with_logo(tmp_path, PNG, 2))})["id"]
    disguised = browser.get(f"{api.url}/ui/packages/{html_logo}/logo", timeout=30)
    assert disguised.headers["Content-Type"].startswith("image/svg+xml")  # the letter tile
    assert b"script" not in disguised.content and disguised.content.startswith(b"<svg")
    assert_guarded(disguised, "the tile")
    real = browser.get(f"{api.url}/ui/packages/{png_logo}/logo", timeout=30)
    assert real.headers["Content-Type"] == "image/png" and real.content == PNG


@pytest.mark.parametrize(("option", "secure"), [({}, False), ({"secure_cookies": "true"}, True)])
def test_the_cookies_are_secure_when_configured(start_api, option, secure):
    api = start_api(**option)
    browser = requests.Session()
    form = browser.get(api.url + "/ui/login", timeout=30)
    logged_in = browser.post(api.url + "/ui/login", timeout=30, allow_redirects=False,
                             data={"token": "tok-a", "csrf_token": csrf_token(form.text)})
    cookies = [form.headers["Set-Cookie"], logged_in.headers["Set-Cookie"]]
    assert all(("; Secure" in cookie) is secure for cookie in cookies), cookies
    assert all("HttpOnly" in cookie and "SameSite=Strict" in cookie for cookie in cookies)
