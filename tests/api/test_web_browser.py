"""The web pages in a real browser (Debian's chromium through chromedriver), the whole
job on the local cloud: upload HelloWeb and ReplicatedKV, add both through their
wizards (an invalid name first, Back), deploy, read outputs, servers and the
picture, run ReplicatedKV's ``scaleTo`` from its form (a refused count first: a
failure with its MuranoPL stack), remove ReplicatedKV, delete the environment, and
find nothing left.

Every page the test reads is waited for: a click that loads a page waits until the
old page is gone (its root element stale) and the new one is complete, and reads
of a page that updates itself (the environment page while a deployment runs) are
retried until they hold.

Screenshots go to the test's tmp folder, and to ``$MURANO_WEB_SCREENSHOTS`` when set.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from murano_engine.clouds.local.sandbox import missing_for_namespaces
from tests.apps import kv_nodes

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
    pytest.skip("no browser: install Debian's chromium and chromium-driver",
                allow_module_level=True)


def new_browser() -> Any:
    """A fresh headless chromium: a browser of its own (profile, cookies)."""
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1200,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.implicitly_wait(0)  # every wait is explicit
    driver.set_page_load_timeout(120)
    return driver


@pytest.fixture
def browsers() -> Iterator[Callable[[], Any]]:
    """Opens browsers of their own (none shares another's cookies); all quit after."""
    opened: list[Any] = []

    def open_one() -> Any:
        opened.append(new_browser())
        return opened[-1]

    yield open_one
    for driver in opened:
        driver.quit()


@pytest.fixture
def browser(browsers):
    return browsers()


def _replaced(element: Any) -> bool:
    """Whether ``element``'s page has been replaced: the element is stale. Chrome tells so
    either as a stale reference or, mid-navigation, as a node that no longer belongs to
    the document (a WebDriverException of its own)."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc):
            return True
        raise
    return False


class Pages:
    """The browser, with reads that wait for the page they read."""

    def __init__(self, driver, base: str, shots: Path) -> None:
        self.driver = driver
        self.base = base
        self.shots = shots

    def css(self, selector: str, timeout: float = 60):
        """The element ``selector`` finds once it is there."""
        from selenium.webdriver.common.by import By
        return wait_for(f"{selector} on {self.driver.current_url}",
                        lambda: self.driver.find_element(By.CSS_SELECTOR, selector), timeout)

    def all(self, selector: str) -> list:
        from selenium.webdriver.common.by import By
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def text(self, selector: str) -> str:
        return wait_for(f"the text of {selector}", lambda: self.css(selector).text or " ")

    def go(self, path: str) -> None:
        self.driver.get(self.base + path)
        self._complete()

    def login(self, token: str = "tok-a") -> None:
        """Log in on the login page with ``token``; the catalog comes."""
        self.go("/ui/login")
        self.css("#token").send_keys(token)
        self.click_to_load("#login")
        self.css("#packages")

    def click_to_load(self, selector: str, confirm: bool = False,
                      timeout: float = 120) -> None:
        """Click what loads another page, and wait until that page has replaced this one
        (answering the page's confirmation question first when ``confirm``)."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.ui import WebDriverWait

        old = self.driver.find_element(By.TAG_NAME, "html")
        self.css(selector).click()
        if confirm:
            WebDriverWait(self.driver, 30).until(expected_conditions.alert_is_present())
            self.driver.switch_to.alert.accept()
        WebDriverWait(self.driver, timeout).until(lambda _: _replaced(old))
        self._complete()

    def _complete(self) -> None:
        wait_for("the page to load", lambda: self.driver.execute_script(
            "return document.readyState") == "complete", 120)

    def settled(self, timeout: float = 300) -> str:
        """The environment page's status once no deployment runs and the page has been
        loaded again after it (not the one the script was updating)."""
        return wait_for("the deployment to end", lambda: self.driver.execute_script(
            "var e = document.getElementById('environment');"
            "var s = document.getElementById('env-status');"
            "return e && s && document.readyState === 'complete' && "
            "e.getAttribute('data-busy') === 'false' ? s.getAttribute('data-code') : null"),
            timeout)

    def shoot(self, name: str, width: int = 1200, height: int = 1000) -> None:
        target = self.shots / f"{name}.png"
        self.driver.set_window_size(width, height)
        self.driver.save_screenshot(str(target))
        self.driver.set_window_size(1200, 1000)
        extra = os.environ.get("MURANO_WEB_SCREENSHOTS")
        if extra:
            Path(extra).mkdir(parents=True, exist_ok=True)
            shutil.copy(target, Path(extra) / target.name)


def wait_for(what: str, check, timeout: float = 240):
    """``check()``'s first true value; an element missing or replaced meanwhile (the page
    reloads) counts as not yet."""
    from selenium.common.exceptions import (
        JavascriptException,
        NoSuchElementException,
        StaleElementReferenceException,
    )

    deadline = time.monotonic() + timeout
    while True:
        try:
            found = check()
        except (NoSuchElementException, StaleElementReferenceException, JavascriptException):
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.3)


def _server_folders(folder: Path) -> list[Path]:
    """The local-cloud servers of the API's projects (hidden folders hold sandbox roots)."""
    return [p for p in (folder / "cloud").glob("projects/*/servers/*")
            if not p.name.startswith(".")]


def _force_cleanup(folder: Path) -> None:
    """After a failure only: stop the servers' sandboxes and remove their namespaces."""
    ids, networks = [], set()
    for server in _server_folders(folder):
        ids.append(server.name)
        try:
            meta = json.loads((server / "server.json").read_text())
            networks |= {i["network_id"] for i in meta.get("interfaces") or []}
        except (OSError, ValueError, KeyError):
            pass
    kv_nodes.force_cleanup(ids, networks)
    assert not kv_nodes.namespaces_left(ids, networks), "namespaces left after the cleanup"


def package_zip(folder: Path, name: str) -> Path:
    source = REPO / "dsl_packages" / f"io.murano.apps.linux.{name}"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(source))
    target = folder / f"{name}.zip"
    target.write_bytes(buffer.getvalue())
    return target


def lanes(pages: Pages) -> dict[str, list[tuple[str, str]]]:
    from selenium.webdriver.common.by import By
    return {lane.get_attribute("data-lane"): [
        (plan.get_attribute("data-name"), plan.get_attribute("data-result"))
        for plan in lane.find_elements(By.CSS_SELECTOR, "g.plan")]
        for lane in pages.all("#picture g.lane")}


def app_row(pages: Pages, name: str) -> str:
    """The object id of the application the environment page lists as ``name``."""
    return wait_for(f"application {name}", lambda: next(
        (row.get_attribute("data-id") for row in pages.all("#applications tr.application")
         if row.find_element("css selector", "strong").text == name), None), 30)


@pytest.mark.skipif(bool(missing_for_namespaces()), reason="the servers are sandboxes")
def test_the_whole_job_through_the_pages(start_api, browser, tmp_path):
    from selenium.webdriver.support.ui import Select

    api = start_api(environment_class="io.murano.Environment")
    pages = Pages(browser, api.url, tmp_path)
    env_id = None
    finished = False
    try:
        pages.go("/ui/")
        assert browser.current_url.endswith("/ui/login")
        pages.css("#token").send_keys("tok-a")
        pages.click_to_load("#login")
        pages.css("#packages")  # the catalog, once logged in

        for name in ("HelloWeb", "ReplicatedKV"):
            pages.go("/ui/")
            pages.css("#package-file").send_keys(str(package_zip(tmp_path, name)))
            pages.click_to_load("#upload")
            classes = pages.text("#classes")  # the package's page
        assert "io.murano.apps.linux.replicatedKV.KvServer" in classes
        pages.go("/ui/")
        assert len(pages.all("#packages .package")) == 2
        pages.shoot("catalog", 1100, 560)
        pages.css("#search").send_keys("key-value")
        pages.click_to_load("form[action='/ui/'] button")
        assert [p.get_attribute("data-fqn") for p in pages.all("#packages .package")] == [
            "io.murano.apps.linux.ReplicatedKV"]

        pages.go("/ui/environments")
        pages.css("#env-name").send_keys("webdemo")
        pages.click_to_load("#create-env")
        env_id = browser.current_url.rsplit("/", 1)[1]

        # ReplicatedKV: its own name field names it (asked once); a bad name first; Back
        pages.click_to_load("a.add-app[data-fqn='io.murano.apps.linux.ReplicatedKV']")
        assert [li.text for li in pages.all("#steps li")] == [
            "1. App configuration", "2. Instance configuration"]
        name = pages.css("#f-name")
        name.clear()
        name.send_keys("KV!")
        pages.click_to_load("#next")
        assert pages.text("#error-name").startswith("Start with a lower-case letter")
        pages.shoot("wizard-error")
        name = pages.css("#f-name")
        name.clear()
        name.send_keys("kv")
        pages.click_to_load("#next")
        assert pages.text("#step-title") == "Step 2 of 2: Instance configuration"
        assert not pages.all("#f-application_name")
        pages.click_to_load("#back")
        assert pages.css("#f-name").get_attribute("value") == "kv"
        pages.click_to_load("#next")
        Select(pages.css("#f-osImage")).select_by_value("debian-12")
        Select(pages.css("#f-flavor")).select_by_value("m1.small")
        pages.click_to_load("#next")
        assert "kv" in pages.text("#applications")

        # HelloWeb: the added application name field names it
        pages.click_to_load("a.add-app[data-fqn='io.murano.apps.linux.HelloWeb']")
        pages.click_to_load("#next")
        Select(pages.css("#f-osImage")).select_by_value("debian-12")
        Select(pages.css("#f-flavor")).select_by_value("m1.small")
        app_name = pages.css("#f-application_name")
        app_name.clear()
        app_name.send_keys("hello")
        pages.click_to_load("#next")
        assert pages.css("#pending")

        pages.click_to_load("#deploy")
        # while it deploys (or once it has) the page lists what is being deployed
        listed = pages.text("#applications")
        assert "kv" in listed and "hello" in listed and "No application yet" not in listed
        assert pages.settled() == "ready"
        assert pages.text("#deployment-state") == "Succeeded"
        found = lanes(pages)
        assert set(found) == {"stack", "kv-1", "kv-2", "hello-1", "hello-2"}, found
        for server in ("kv-1", "kv-2"):
            assert any(n.startswith("install the key-value service") for n, _ in
                       found[server]), found
        assert all(result == "success" for plans in found.values() for _, result in plans)
        assert pages.all("#picture .stack-mark")
        assert sorted(s.get_attribute("data-name") for s in pages.all("#picture g.server")) \
            == ["hello-1", "hello-2", "kv-1", "kv-2"]  # no server template
        assert "is deployed" in pages.text("#reports")
        # outputs, servers and how to reach a sandboxed one
        hello_id, kv_id = app_row(pages, "hello"), app_row(pages, "kv")
        urls = pages.css(f"tr.app-details[data-id='{hello_id}'] .output[data-key='urls']").text
        assert re.fullmatch(r"http://[\d.]+:8080/, http://[\d.]+:8080/", urls), urls
        commands = [c.text for c in pages.all(f"tr.app-details[data-id='{hello_id}'] "
                                              f"pre.command")]
        first_url = urls.split(", ")[0]
        assert any(re.fullmatch(rf"ip netns exec ms-[\w-]+ curl -s {re.escape(first_url)}", c)
                   for c in commands), commands
        assert pages.css(f"tr.app-details[data-id='{kv_id}'] .output[data-key='masterNode']"
                         ).text == "kv-1"
        assert [s.get_attribute("data-name") for s in pages.all(
            f"tr.app-details[data-id='{kv_id}'] tr.server")] == ["kv-1", "kv-2"]
        pages.shoot("environment")
        # 720 px wide: nothing wider than the window
        browser.set_window_size(720, 1000)
        assert wait_for("the page to fit 720 px", lambda: browser.execute_script(
            "return document.documentElement.scrollWidth <= window.innerWidth"), 10)
        pages.shoot("environment-720", 720, 2000)
        pages.click_to_load("#deployments a")
        assert pages.all("svg.timeline g.plan")
        pages.shoot("deployment-picture", 1000, 760)
        pages.go(f"/ui/environments/{env_id}")

        # an action with an argument: a count the contract refuses, then a good one
        pages.click_to_load(f"tr.application[data-id='{kv_id}'] "
                            f"a.action-link[data-method='scaleTo']")
        count = pages.css("#a-nodeCount")
        assert pages.css("[data-argument='nodeCount']").get_attribute("data-kind") \
            == "integer"
        count.send_keys("0")
        pages.shoot("action-form", 1000, 520)
        pages.click_to_load("#run-action")
        assert pages.settled() == "deploy failure"
        assert pages.text("#env-status") == "Deployment failed"
        assert pages.text("#deployment-state") == "Finished with errors"
        assert "nodeCount is between 1 and 32" in pages.text("#failure h2")
        stack = pages.text("#failure pre.stack")
        assert re.search(r"ReplicatedKV\.scaleTo at \S*Classes/ReplicatedKV\.yaml:\d+", stack)
        assert "/.cache/" not in stack  # the server's folders stay hidden
        pages.shoot("failure-stack", 1200, 900)
        pages.click_to_load(f"tr.application[data-id='{kv_id}'] "
                            f"a.action-link[data-method='scaleTo']")
        pages.css("#a-nodeCount").send_keys("3")
        pages.click_to_load("#run-action")
        assert pages.settled() == "ready"
        assert pages.text("#deployment-state") == "Succeeded"
        assert pages.all("#failure[hidden]")
        assert [s.get_attribute("data-name") for s in pages.all(
            f"tr.app-details[data-id='{kv_id}'] tr.server")] == ["kv-1", "kv-2", "kv-3"]
        assert "kv-3" in lanes(pages)

        # removal of one application: its servers go
        pages.click_to_load(f"tr.application[data-id='{kv_id}'] button.remove-app",
                            confirm=True)
        assert pages.settled() == "ready"
        names = [r.find_element("css selector", "strong").text
                 for r in pages.all("#applications tr.application")]
        assert names == ["hello"]
        assert len(_server_folders(api.folder)) == 2

        # deletion of the environment: nothing left
        pages.css("#delete-env")
        pages.click_to_load("#delete-env", confirm=True)
        # the page goes to the list when the deletion ends (or, when it ended before the
        # page came, says the environment is not found)
        gone = wait_for("the deletion to end", lambda: browser.execute_script(
            "var s = document.getElementById('env-status');"
            "var e = document.getElementById('environment');"
            "if (document.readyState !== 'complete') { return null; }"
            "if (document.getElementById('environments')) { return 'listed'; }"
            "if (document.getElementById('error-message')) { return 'not found'; }"
            "return s && e && e.getAttribute('data-busy') === 'false' ? "
            "s.getAttribute('data-code') : null"), 300)
        assert gone in ("listed", "not found"), (gone, browser.page_source[-3000:])
        pages.go("/ui/environments")
        assert "webdemo" not in pages.text("#environments")
        assert api.request("GET", f"/v1/environments/{env_id}").status_code == 404
        wait_for("the servers to be released", lambda: not _server_folders(api.folder), 60)
        finished = True
    finally:
        if not finished:
            if env_id:
                api.request("DELETE", f"/v1/environments/{env_id}?abandon=true")
            _force_cleanup(api.folder)


def add_hello(pages: Pages, name: str) -> None:
    """Add HelloWeb, one server, through its wizard on the environment page."""
    from selenium.webdriver.support.ui import Select
    pages.click_to_load("a.add-app[data-fqn='io.murano.apps.linux.HelloWeb']")
    count = pages.css("#f-nodeCount")
    count.clear()
    count.send_keys("1")
    pages.click_to_load("#next")
    Select(pages.css("#f-osImage")).select_by_value("debian-12")
    Select(pages.css("#f-flavor")).select_by_value("m1.small")
    app_name = pages.css("#f-application_name")
    app_name.clear()
    app_name.send_keys(name)
    pages.click_to_load("#next")


def listed(pages: Pages) -> list[str]:
    """The names of the applications the environment page lists."""
    return [row.find_element("css selector", "strong").text
            for row in pages.all("#applications tr.application")]


@pytest.mark.skipif(bool(missing_for_namespaces()), reason="the servers are sandboxes")
def test_changes_made_in_one_browser_are_deployed_or_discarded_from_another(
        start_api, browsers, tmp_path):
    api = start_api(environment_class="io.murano.Environment")
    api.ok("POST", "/v1/catalog/packages",
           files={"file": ("HelloWeb.zip", package_zip(tmp_path, "HelloWeb").read_bytes())})
    first = Pages(browsers(), api.url, tmp_path)
    env_id = None
    finished = False
    try:
        first.login()
        first.go("/ui/environments")
        first.css("#env-name").send_keys("two-browsers")
        first.click_to_load("#create-env")
        env_id = first.driver.current_url.rsplit("/", 1)[1]
        page = f"/ui/environments/{env_id}"
        assert not first.all("#deploy")  # an environment with no application
        assert first.text("#nothing-to-deploy").startswith("Nothing to deploy")
        add_hello(first, "hello")
        assert listed(first) == ["hello"] and first.all("#pending")

        # a new browser, the same token: the changes are the user's
        second = Pages(browsers(), api.url, tmp_path)
        second.login()
        second.go(page)
        assert listed(second) == ["hello"]
        assert second.text("#env-status") == "Changes not deployed yet"
        assert second.all("#pending") and second.all("#deploy") and second.all("#discard")
        second.shoot("pending-in-another-browser")
        second.click_to_load("#discard", confirm=True)
        for pages in (second, first):
            pages.go(page)
            assert listed(pages) == [] and not pages.all("#pending")
            assert not pages.all("#deploy") and pages.all("#nothing-to-deploy")
            assert pages.text("#env-status") == "Ready"

        add_hello(first, "hello")
        second.go(page)
        assert listed(second) == ["hello"]
        second.click_to_load("#deploy")
        assert second.settled() == "ready"
        assert second.text("#deployment-state") == "Succeeded"
        assert listed(second) == ["hello"]
        assert "hello is deployed (1 unit)" in second.text("#reports")
        assert [s.get_attribute("data-name") for s in second.all("#picture g.server")] == [
            "hello-1"]
        first.go(page)
        assert listed(first) == ["hello"] and not first.all("#pending")
        assert first.all("#deploy")  # deployed, it may be deployed again

        first.click_to_load("#delete-env", confirm=True)
        wait_for("the environment to go", lambda: api.request(
            "GET", f"/v1/environments/{env_id}").status_code == 404, 300)
        wait_for("the servers to be released", lambda: not _server_folders(api.folder), 60)
        finished = True
    finally:
        if not finished:
            if env_id:
                api.request("DELETE", f"/v1/environments/{env_id}?abandon=true")
            _force_cleanup(api.folder)



#: For each catalog tile: the words of its package's full name and of its name that a
#: line break cuts in two (their characters on more than one line), whether its full
#: name takes more than one line, whether its description is cut short, and whether a
#: line of the description is cut by the bottom of the description's box.
TILE_LAYOUT = """
function cutWords(element) {
  var cut = [], walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT), node;
  while ((node = walker.nextNode())) {
    var words = /[A-Za-z0-9_]+/g, found;  // a line may break after a hyphen
    while ((found = words.exec(node.data))) {
      var range = document.createRange(), tops = {};
      range.setStart(node, found.index);
      range.setEnd(node, found.index + found[0].length);
      Array.prototype.forEach.call(range.getClientRects(), function (r) {
        tops[Math.round(r.top)] = true; });
      if (Object.keys(tops).length > 1) { cut.push(found[0]); }
    }
  }
  return cut;
}
function lines(element) {
  var range = document.createRange(), tops = {};
  range.selectNodeContents(element);
  Array.prototype.forEach.call(range.getClientRects(), function (r) {
    tops[Math.round(r.top)] = true; });
  return Object.keys(tops).length;
}
function lineCutByTheBottom(element) {
  var range = document.createRange(), bottom = element.getBoundingClientRect().bottom;
  range.selectNodeContents(element);
  return Array.prototype.some.call(range.getClientRects(), function (r) {
    return r.top < bottom - 0.5 && r.bottom > bottom + 0.5; });
}
return Array.prototype.map.call(document.querySelectorAll("#packages .tile"), function (t) {
  var name = t.querySelector(".help"), text = t.querySelector("p");
  return {fqn: t.getAttribute("data-fqn"),
          cut: cutWords(name).concat(cutWords(t.querySelector("h3"))),
          wraps: lines(name) > 1, shortened: text.scrollHeight > text.clientHeight + 1,
          halfLine: lineCutByTheBottom(text)};
});
"""


def test_catalog_tiles_cut_descriptions_at_a_line_and_names_between_words(
        start_api, browser, tmp_path):
    api = start_api()
    for name in ("HelloWeb", "ReplicatedKV"):
        api.ok("POST", "/v1/catalog/packages",
               files={"file": (f"{name}.zip", package_zip(tmp_path, name).read_bytes())})
    pages = Pages(browser, api.url, tmp_path)
    pages.login()
    seen: dict[str, set[str]] = {"wraps": set(), "shortened": set()}
    for width in range(460, 1000, 30):  # tiles from about 200 px to 400 px wide
        browser.set_window_size(width, 900)
        tiles = wait_for("the tiles", lambda: browser.execute_script(TILE_LAYOUT), 10)
        assert len(tiles) == 2
        for tile in tiles:
            assert tile["cut"] == [], (width, tile)
            assert not tile["halfLine"], (width, tile)
            seen["wraps"] |= {tile["fqn"]} if tile["wraps"] else set()
            seen["shortened"] |= {tile["fqn"]} if tile["shortened"] else set()
    # the widths tried made full names wrap and long descriptions shorten
    assert "io.murano.apps.linux.ReplicatedKV" in seen["wraps"], seen
    assert "io.murano.apps.linux.HelloWeb" in seen["shortened"], seen
    browser.set_window_size(700, 900)
    pages.shoot("catalog-tiles", 700, 700)
