"""The web pages in a real browser (Debian's chromium through chromedriver): upload
ReplicatedKV, add it through its form (an invalid name first), deploy it on the local
cloud, watch the status reach success and find a lane per server in the picture.

Screenshots go to the test's tmp folder, and to ``$MURANO_WEB_SCREENSHOTS`` when set.
"""

from __future__ import annotations

import io
import os
import shutil
import time
import zipfile
from pathlib import Path

import pytest

from murano_engine.clouds.local.sandbox import missing_for_namespaces

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
    pytest.skip("no browser: install Debian's chromium and chromium-driver",
                allow_module_level=True)


@pytest.fixture
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1200,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.implicitly_wait(2)
    yield driver
    driver.quit()


def shoot(driver, tmp_path: Path, name: str, width: int = 1200, height: int = 1000) -> None:
    target = tmp_path / f"{name}.png"
    driver.set_window_size(width, height)
    driver.save_screenshot(str(target))
    driver.set_window_size(1200, 1000)
    extra = os.environ.get("MURANO_WEB_SCREENSHOTS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(target, Path(extra) / target.name)


def wait_for(what: str, check, timeout: float = 240):
    """``check()``'s first true value; an element missing or replaced meanwhile (the page
    reloads) counts as not yet."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = check()
        except (NoSuchElementException, StaleElementReferenceException):
            found = None
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def _servers(folder: Path) -> list[str]:
    """The local-cloud servers of the API's projects (hidden folders hold sandbox roots)."""
    return [p.name for p in (folder / "cloud").glob("projects/*/servers/*")
            if not p.name.startswith(".")]


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


@pytest.mark.skipif(bool(missing_for_namespaces()), reason="the servers are sandboxes")
def test_upload_add_through_the_form_deploy_and_see_the_picture(start_api, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    api = start_api(environment_class="io.murano.Environment")
    css = browser.find_element
    env_id = None
    try:
        browser.get(api.url + "/ui/")
        assert browser.current_url.endswith("/ui/login")
        css(By.ID, "token").send_keys("tok-a")
        css(By.ID, "login").click()
        css(By.ID, "packages")  # the catalog, once logged in

        for name in ("HelloWeb", "ReplicatedKV"):
            browser.get(api.url + "/ui/")
            css(By.ID, "package-file").send_keys(str(package_zip(tmp_path, name)))
            css(By.ID, "upload").click()
            classes = css(By.ID, "classes").text  # the package's page, once uploaded
        assert "io.murano.apps.linux.replicatedKV.KvServer" in classes
        browser.get(api.url + "/ui/")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#packages .package")) == 2
        shoot(browser, tmp_path, "catalog", 1100, 560)
        css(By.ID, "search").send_keys("key-value")
        css(By.CSS_SELECTOR, "form[action='/ui/'] button").click()
        assert [p.get_attribute("data-fqn") for p in browser.find_elements(
            By.CSS_SELECTOR, "#packages .package")] == ["io.murano.apps.linux.ReplicatedKV"]

        browser.get(api.url + "/ui/environments")
        css(By.ID, "env-name").send_keys("webdemo")
        css(By.ID, "create-env").click()
        env_id = browser.current_url.rsplit("/", 1)[1]
        css(By.CSS_SELECTOR, "a.add-app[data-fqn='io.murano.apps.linux.ReplicatedKV']").click()

        name = css(By.ID, "f-name")
        name.clear()
        name.send_keys("KV!")
        css(By.ID, "next").click()
        assert css(By.ID, "error-name").text.startswith("Start with a lower-case letter")
        shoot(browser, tmp_path, "wizard-error")
        name = css(By.ID, "f-name")
        name.clear()
        name.send_keys("kv")
        css(By.ID, "next").click()
        Select(css(By.ID, "f-osImage")).select_by_value("debian-12")
        Select(css(By.ID, "f-flavor")).select_by_value("m1.small")
        css(By.ID, "next").click()
        assert "Replicated key-value store" in css(By.ID, "applications").text
        css(By.ID, "deploy").click()

        wait_for("the deployment to succeed", lambda: css(
            By.ID, "env-status").text == "ready" and css(
            By.ID, "deployment-state").text == "success")
        lanes = {lane.get_attribute("data-lane"): [
            (plan.get_attribute("data-name"), plan.get_attribute("data-result"))
            for plan in lane.find_elements(By.CSS_SELECTOR, "g.plan")]
            for lane in browser.find_elements(By.CSS_SELECTOR, "#picture g.lane")}
        assert set(lanes) == {"stack", "kv-1", "kv-2"}, lanes
        for server in ("kv-1", "kv-2"):
            assert any(n.startswith("install the key-value service") for n, _ in
                       lanes[server]), lanes
            assert all(result == "success" for _, result in lanes[server]), lanes
        assert browser.find_elements(By.CSS_SELECTOR, "#picture .stack-mark")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#picture g.server")) == 2
        assert "is deployed" in css(By.ID, "reports").text
        shoot(browser, tmp_path, "environment")
        css(By.CSS_SELECTOR, "#deployments a").click()
        assert browser.find_elements(By.CSS_SELECTOR, "svg.timeline g.plan")
        shoot(browser, tmp_path, "deployment-picture", 1000, 760)
    finally:
        if env_id:
            api.request("DELETE", f"/v1/environments/{env_id}")
            wait_for("the environment to go", lambda: api.request(
                "GET", f"/v1/environments/{env_id}").status_code == 404, timeout=120)
            try:
                wait_for("the servers to be released", lambda: not _servers(api.folder),
                         timeout=60)
            except AssertionError:
                log = (api.folder / "api.log").read_text()[-4000:]
                left = _servers(api.folder)
                raise AssertionError(f"servers left after the environment went: {left}; "
                                     f"the API's log ends:\n{log}") from None
