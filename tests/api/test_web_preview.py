"""The environment page's Preview in a real browser (chromium through chromedriver).

HelloWeb added to an environment in a session of the user's: Preview shows its
plan as an engine worker made it (two servers made, each with its plans in order,
the picture with a lane per server), says nothing was made, and the environment
is as it was: still pending, never deployed, no stack in the project's cloud.
"""

from __future__ import annotations

from murano_engine.api.catalog import pack_folder
from tests.api.test_preview import HELLO, _session_with, hello_web_service
from tests.api.test_web_browser import Pages, browser, browsers, wait_for  # noqa: F401


def test_preview_shows_the_plan_and_changes_nothing(start_api, browser, tmp_path):  # noqa: F811
    api = start_api(environment_class="io.murano.Environment",
                    sections={"local_cloud": {"state_dir": str(tmp_path / "cloud")}})
    api.ok("POST", "/v1/catalog/packages", files={"p": ("p.zip", pack_folder(HELLO))})
    env_id, _ = _session_with(api, "web", hello_web_service())
    pages = Pages(browser, api.url, tmp_path)
    pages.login("tok-a")
    pages.go(f"/ui/environments/{env_id}")
    assert pages.css("#pending").is_displayed()
    pages.click_to_load("#preview")

    assert pages.css("#plan").get_attribute("data-outcome") == "complete"
    assert pages.text("h1") == "Plan of the deploy of environment web"
    assert "Nothing was made, changed or sent." in pages.text(".plan-outcome")
    assert [li.text for li in pages.all("ul.servers li.made")] == [
        "hello-1 is made (m1.small, debian-12)", "hello-2 is made (m1.small, debian-12)"]
    for server in ("hello-1", "hello-2"):
        plans = pages.all(f'ol.plans[data-server="{server}"] > li')
        assert [li.text.split(" scripts ")[0] for li in plans] == [
            "Install the hello-web service", "Configure the hello-web service"]
    bars = {lane.get_attribute("data-lane"): len(lane.find_elements(
        "css selector", "g.plan.planned")) for lane in pages.all("svg.plan g.lane")}
    assert bars == {"stack": 0, "hello-1": 2, "hello-2": 2}
    assert len(pages.all("svg.plan path.stack-mark")) == 3
    pages.shoot("preview", 1100, 900)

    pages.click_to_load("#back")
    wait_for("the environment page", lambda: pages.css("#environment"))
    assert pages.css("#pending").is_displayed()
    assert pages.text("#deployments") == "Never deployed."
    assert not (tmp_path / "cloud" / "projects" / "proj-a" / "stacks").exists()
