"""A hostile ``UI/ui.yaml`` through ``POST /v1/catalog/packages/<id>/ui/model``: each
evaluation ends in one clean 4xx with the reason, in bounded memory, while another
project's requests are answered within a second; SIGTERM stops the API mid-evaluation."""

from __future__ import annotations

import html
import shutil
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from murano_engine.api.catalog import pack_folder
from tests.api.test_web_pages import login
from tests.web.test_form_budget import ALTERNATIVES, ANSWER, ENDLESS, HUGE, NESTED, definition

PACKAGES = Path(__file__).parent / "packages"
CASES = {"endless": (ENDLESS, None, "more than 1000 items"),
         "huge": (HUGE, None, "more than 1000 items"),
         "nested": (NESTED, None, "wall-clock budget"),
         "backtracking": ("$.f.x", ALTERNATIVES, "ran longer than")}
#: requests of the hostile project per case at once: more than its share of the pool
AT_ONCE = 3


def hostile_package(tmp_path: Path, version: int, ui_text: str) -> bytes:
    folder = tmp_path / f"hostile{version}"
    shutil.copytree(PACKAGES / "apitest", folder)
    manifest = folder / "manifest.yaml"
    manifest.write_text(manifest.read_text() + f"Version: 1.0.{version}\n")
    (folder / "UI").mkdir()
    (folder / "UI" / "ui.yaml").write_text(ui_text)
    return pack_folder(folder)


def peak_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    raise AssertionError("no VmHWM")


class Watch(threading.Thread):
    """Another project asking for its environments, again and again: the slowest answer."""

    def __init__(self, api) -> None:
        super().__init__(daemon=True)
        self.api, self.slowest, self.answers = api, 0.0, 0
        self.done = threading.Event()
        self.session = requests.Session()

    def run(self) -> None:
        while not self.done.is_set():
            started = time.monotonic()
            answer = self.session.get(self.api.url + "/v1/environments", timeout=30,
                                      headers={"X-Auth-Token": "tok-b"})
            assert answer.status_code == 200
            self.slowest = max(self.slowest, time.monotonic() - started)
            self.answers += 1
            time.sleep(0.05)


def test_hostile_forms_cost_their_own_project_a_clean_error_and_nobody_else_anything(
        start_api, tmp_path):
    api = start_api()
    ids = {}
    for version, (name, (template, regexp, _)) in enumerate(CASES.items()):
        ids[name] = api.ok("POST", "/v1/catalog/packages", files={"file": (
            "hostile.zip", hostile_package(tmp_path, version, definition(template, regexp)))}
        )["id"]
    ids["theirs"] = api.ok("POST", "/v1/catalog/packages", token="tok-b", files={"file": (
        "theirs.zip", hostile_package(tmp_path, 10, definition(ENDLESS)))})["id"]
    watch = Watch(api)
    watch.start()

    def model(name: str, token: str = "tok-a") -> tuple[str, int, str, float]:
        started = time.monotonic()
        answer = api.request("POST", f"/v1/catalog/packages/{ids[name]}/ui/model", token,
                             json={"answers": {"f": {"x": ANSWER}}})
        return name, answer.status_code, answer.text, time.monotonic() - started

    try:
        alone = [model(name) for name in CASES]  # each case once: its own reason
        with ThreadPoolExecutor(len(CASES) * AT_ONCE + 1) as pool:
            theirs = pool.submit(model, "theirs", "tok-b")
            outcomes = list(pool.map(model, [n for n in CASES for _ in range(AT_ONCE)]))
    finally:
        watch.done.set()
        watch.join()
    for name, status, text, seconds in alone:
        assert status == 400 and "met a limit" in text and CASES[name][2] in text, text
        assert seconds < 10, (name, seconds)
    for name, status, text, seconds in outcomes:
        assert seconds < 10, (name, seconds)
        assert status in (400, 429), (name, status, text)
        assert ("met a limit" in text and CASES[name][2] in text) if status == 400 else \
            "its share of the pool" in text, text
    assert any(status == 429 for _, status, *_ in outcomes)
    assert watch.answers > 10 and watch.slowest < 1.0, watch.slowest
    assert peak_mb(api.process.pid) < 1000
    # the other project's own evaluation had its own share of the pool meanwhile
    _, status, text, seconds = theirs.result()
    assert status == 400 and "more than 1000 items" in text and seconds < 10


def test_sigterm_stops_the_api_in_the_middle_of_an_evaluation(start_api, tmp_path):
    api = start_api(engine={"form_time_limit": "120"})
    package = api.ok("POST", "/v1/catalog/packages", files={"file": (
        "hostile.zip", hostile_package(tmp_path, 0, definition(NESTED)))})["id"]
    sent = threading.Thread(target=lambda: api.request(
        "POST", f"/v1/catalog/packages/{package}/ui/model",
        json={"answers": {"f": {"x": "x"}}}), daemon=True)
    sent.start()
    time.sleep(1.5)
    assert api.process.poll() is None
    started = time.monotonic()
    api.process.send_signal(signal.SIGTERM)
    api.process.wait(timeout=10)
    assert time.monotonic() - started < 5


def test_the_wizard_ends_hostile_forms_with_an_error_page(start_api, tmp_path):
    api = start_api()
    browser = login(api)
    env = api.ok("POST", "/v1/environments", json={"name": "wizard"})["id"]
    for version, (name, (template, regexp, says)) in enumerate(CASES.items()):
        package = api.ok("POST", "/v1/catalog/packages", files={"file": (
            "hostile.zip", hostile_package(tmp_path, version, definition(template, regexp)))}
        )["id"]
        started = time.monotonic()
        page = browser.post(f"{api.url}/ui/environments/{env}/add/{package}", timeout=30,
                            data={"_step": "0", "_answers": "{}", "x": ANSWER})
        assert time.monotonic() - started < 10, name
        assert page.status_code == 400 and "met a limit" in page.text, (name, page.text)
        assert says in html.unescape(page.text), name
    assert api.ok("GET", f"/v1/environments/{env}")["services"] == []
