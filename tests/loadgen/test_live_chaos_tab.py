"""The web UI's Chaos tab, live: a real target, a real ``retrystorm chaos serve`` (with a
token) and real Locust web UIs, all on free loopback ports.

Pauses go through Locust's own ``/chaos/...`` routes and must really stop the target
(``/proc`` state ``T``); errors of the chaos API must reach the UI as one readable line.
The last test does the same with a person's clicks in headless Chromium.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from retrystorm.chaos.client import ChaosApiError, ChaosClient
from tests.support.procfs import process_state_letter

from .browser import Page, chromium_argv, chromium_path, devtools_page_url
from .conftest import Processes, Target, free_port, get_text, locust_argv, post_form, target_starter, wait_until

pytestmark = [pytest.mark.live, pytest.mark.signals]

TOKEN = "chaos-tab-test-token"
TABS = '"extended_tabs": [{"key": "chaos", "title": "Chaos"}, {"key": "storm", "title": "Retry storm"}]'
RETRYSTORM = str(Path(sys.executable).with_name("retrystorm"))


def call(url: str, method: str = "GET", body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """One JSON request; ``(status, decoded body)`` for errors too."""
    data = body if isinstance(body, bytes) else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def is_stopped(pid: int) -> bool:
    return process_state_letter(pid) in ("T", "t")


@dataclasses.dataclass
class Stack:
    target: Target
    chaos_url: str
    web: str  # a Locust web UI with --chaos-url
    web_off: str  # one without
    web_log: Path

    @property
    def pid(self) -> int:
        return self.target.process.pid

    def active_outages(self) -> list[dict[str, Any]]:
        outages = call(self.chaos_url + "/outages", headers={"Authorization": f"Bearer {TOKEN}"})[1]
        return [outage for outage in outages if outage["status"] == "active"]

    def resume_everything(self) -> None:
        for outage in self.active_outages():
            call(f"{self.chaos_url}/outages/{outage['id']}", "DELETE", headers={"Authorization": f"Bearer {TOKEN}"})


def start_web(processes: Processes, name: str, host: str, *options: str, env: dict[str, str]) -> tuple[str, Path]:
    port = free_port()
    argv = locust_argv("--host", host, "--web-host", "127.0.0.1", "--web-port", str(port), *options)
    _, log = processes.start(name, argv, env)
    return f"http://127.0.0.1:{port}", log


@pytest.fixture(scope="module")
def stack(module_processes: Processes, tmp_path_factory: pytest.TempPathFactory) -> Stack:
    processes = module_processes
    target = target_starter(processes)("--model", "fixed", "--base-delay", "10ms")
    chaos_port = free_port()
    chaos_url = f"http://127.0.0.1:{chaos_port}"
    journal = tmp_path_factory.mktemp("chaos") / "journal.jsonl"
    processes.start(
        "chaos",
        [RETRYSTORM, "chaos", "serve", "--port", str(chaos_port), "--target", f"target={target.process.pid}"],
        {"RETRYSTORM_CHAOS_JOURNAL": str(journal), "RETRYSTORM_CHAOS_TOKEN": TOKEN},
    )
    # the token through the environment, the address as a flag; the second UI has neither
    web, web_log = start_web(
        processes, "locust-chaos", target.url, "--chaos-url", chaos_url, env={"RETRYSTORM_CHAOS_TOKEN": TOKEN}
    )
    web_off, _ = start_web(
        processes, "locust-no-chaos", target.url, env={"RETRYSTORM_CHAOS_TOKEN": "", "RETRYSTORM_CHAOS_URL": ""}
    )
    wait_until(lambda: call(chaos_url + "/healthz")[0] == 200, 60, "the chaos API")
    for url in (web, web_off):
        wait_until(lambda url=url: get_text(url + "/"), 60, f"the web UI at {url}")
    return Stack(target, chaos_url, web, web_off, web_log)


@pytest.fixture
def chaos(stack: Stack) -> Any:
    """The stack, with every outage ended and the target running after the test."""
    yield stack
    stack.resume_everything()
    assert not is_stopped(stack.pid)


def test_the_tab_lists_the_targets_and_the_token_stays_on_the_server(chaos):
    status, data = call(chaos.web + "/chaos/targets")
    assert status == 200
    assert data == {
        "enabled": True,
        "url": chaos.chaos_url,
        "targets": [{"backend": "process", "target": "target", "state": "running", "outages": []}],
    }
    page = get_text(chaos.web + "/")
    assert TABS in page
    scripts = page[page.index("</script>", page.index("window.templateArgs")) :]
    assert '<script src="/chaos/tab.js" defer></script>' in scripts  # after the page's data, before </body>
    assert scripts.index('<script src="/chaos/tab.js"') < scripts.index("</body>")
    assert TOKEN not in page
    assert TOKEN not in json.dumps(data)
    with urllib.request.urlopen(chaos.web + "/chaos/tab.js", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/javascript")
        assert b"/chaos/${action}" in response.read()


def test_pause_through_locust_stops_the_target_and_resume_continues_it(chaos):
    status, answer = call(chaos.web + "/chaos/pause", "POST", {"target": "target", "duration": "2m"})
    assert status == 200, answer
    outage = answer["outage"]
    assert (outage["status"], outage["duration_s"], outage["target"]) == ("active", 120, "target")
    assert is_stopped(chaos.pid)  # the chaos API answers once the kernel reports it stopped
    [row] = call(chaos.web + "/chaos/targets")[1]["targets"]
    assert row["state"] == "paused"
    assert [o["id"] for o in row["outages"]] == [outage["id"]]
    assert 0 < row["outages"][0]["remaining_s"] <= 120

    status, answer = call(chaos.web + "/chaos/resume", "POST", {"target": "target"})
    assert status == 200, answer
    [ended] = answer["resumed"]
    assert (ended["id"], ended["status"], ended["end_reason"]) == (outage["id"], "resumed", "early")
    assert not is_stopped(chaos.pid)
    [row] = call(chaos.web + "/chaos/targets")[1]["targets"]
    assert (row["state"], row["outages"]) == ("running", [])
    assert chaos.target.metrics().get("retrystorm_target_in_flight_requests") >= 0  # it serves again


ERRORS = [
    ("pause", {"target": "nope", "duration": "10s"}, 404, "no target 'nope'; targets: process:target"),
    ("pause", {"target": "target", "duration": "soon"}, 400, "duration: got 'soon', expected a number with a unit"),
    ("pause", {"target": "target", "duration": "0s"}, 400, "duration: got '0s', expected a finite duration > 0"),
    ("pause", {"target": "target"}, 400, "duration: expected a duration like 30s, got None"),
    ("pause", {"target": "target", "duration": "1s", "backend": "docker"}, 400, "backend: got 'docker'"),
    ("pause", b"target=target", 400, 'body: expected a JSON object like {"target": "target", "duration": "30s"}'),
    ("resume", {"target": "target"}, 409, "'target' has no active outage to end"),
    ("resume", {"target": ""}, 400, "target: expected a non-empty string, got ''"),
    ("explode", {"target": "target"}, 404, "no chaos action 'explode'; use pause or resume"),
]


@pytest.mark.parametrize(("action", "body", "status", "message"), ERRORS)
def test_errors_reach_the_ui_as_one_readable_line(chaos, action, body, status, message):
    got_status, answer = call(f"{chaos.web}/chaos/{action}", "POST", body)
    assert (got_status, list(answer)) == (status, ["error"])
    assert message in answer["error"]
    assert "\n" not in answer["error"]
    assert not is_stopped(chaos.pid)
    assert chaos.active_outages() == []


def test_posts_from_another_site_are_refused(chaos):
    body = {"target": "target", "duration": "10s"}
    status, answer = call(chaos.web + "/chaos/pause", "POST", body, {"Origin": "http://elsewhere.example"})
    assert status == 403
    assert answer["error"].startswith("refusing a request from origin http://elsewhere.example: the Locust web UI")
    assert not is_stopped(chaos.pid)


def test_dns_rebinding_and_cross_site_requests_without_an_origin_are_refused(chaos):
    """A page of evil.example whose name now points at 127.0.0.1 used to pause the target (200)."""
    port = chaos.web.rsplit(":", 1)[1]
    body = {"target": "target", "duration": "5s"}
    rebound = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
    status, answer = call(chaos.web + "/chaos/pause", "POST", body, rebound)
    assert status == 403, answer
    assert f"refusing Host 'evil.example:{port}'" in answer["error"]
    status, answer = call(chaos.web + "/chaos/pause", "POST", body, {"Sec-Fetch-Site": "cross-site"})
    assert status == 403, answer
    assert "refusing a cross-site request" in answer["error"]
    status, answer = call(chaos.web + "/chaos/pause", "POST", json.dumps(body).encode(), {"Content-Type": "text/plain"})
    assert status == 415, answer
    assert not is_stopped(chaos.pid)
    assert chaos.active_outages() == []


@pytest.mark.parametrize("path", ["/chaos/targets", "/storm/series", "/stats/requests", "/"])
def test_no_answer_lets_another_origin_read_it(chaos, path):
    request = urllib.request.Request(chaos.web + path, headers={"Origin": chaos.web})  # even its own origin
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        assert not [name for name in response.headers if name.lower().startswith("access-control-")]


def test_a_wrong_token_or_no_chaos_api_is_explained(chaos):
    with pytest.raises(ChaosApiError) as refused:
        ChaosClient(chaos.chaos_url, "wrong").overview()
    assert refused.value.status == 502
    assert "refused the token" in refused.value.message
    assert "--chaos-token or RETRYSTORM_CHAOS_TOKEN" in refused.value.message
    nobody = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ChaosApiError) as absent:
        ChaosClient(nobody).pause("target", "1s")
    assert absent.value.status == 502
    assert absent.value.message.startswith(f"cannot reach the chaos API at {nobody}: ")
    assert "retrystorm chaos serve" in absent.value.message


def test_without_chaos_url_the_tab_says_how_to_turn_it_on(stack):
    status, data = call(stack.web_off + "/chaos/targets")
    assert (status, data["enabled"], data["targets"]) == (200, False, [])
    assert "--chaos-url http://127.0.0.1:8071" in data["message"]
    status, answer = call(stack.web_off + "/chaos/pause", "POST", {"target": "target", "duration": "1s"})
    assert status == 409
    assert answer["error"] == data["message"]
    assert TABS in get_text(stack.web_off + "/")
    status, view = call(stack.web_off + "/storm/series")  # the Retry storm tab: no bands, and why
    assert (status, view["bands"], view["sources"]["outages"]["enabled"]) == (200, [], False)
    assert "start Locust with --chaos-url" in view["sources"]["outages"]["error"]
    assert not is_stopped(stack.pid)


def dom_state(target: str) -> str:
    return f"document.querySelector('[data-chaos-target=\"{target}\"]')?.dataset.state"


async def wait_stopped(pid: int, stopped: bool, timeout_s: float = 30.0) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if is_stopped(pid) == stopped:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the target is {'not ' if stopped else ''}stopped after {timeout_s:.0f} s")


async def click_through_the_tab(page_url: str, stack: Stack) -> None:
    async with aiohttp.ClientSession() as session, session.ws_connect(page_url, max_msg_size=0) as socket:
        page = Page(socket)
        await page.send("Page.navigate", url=stack.web + "/?tab=chaos")
        await page.wait_for(f"{dom_state('target')} === 'running'", "the Chaos tab to list the target, running")
        pause = '[data-chaos-target="target"] [data-action="pause"]'
        await page.type_into("#chaos-duration", "soon")
        await page.click(pause)
        shown = await page.wait_for("document.querySelector('#chaos-message').textContent", "the error message")
        assert "duration: got 'soon'" in shown
        assert not is_stopped(stack.pid)
        await page.type_into("#chaos-duration", "2m")
        await page.click(pause)
        await wait_stopped(stack.pid, stopped=True)
        await page.wait_for(f"{dom_state('target')} === 'paused'", "the tab to show the target paused")
        await page.click('[data-chaos-target="target"] [data-action="resume"]')
        await wait_stopped(stack.pid, stopped=False)
        await page.wait_for(f"{dom_state('target')} === 'running'", "the tab to show the target running again")


def test_the_tab_in_a_browser_pauses_and_resumes_the_target(chaos, module_processes, tmp_path):
    if chromium_path() is None:
        if os.environ.get("RETRYSTORM_REQUIRE_BROWSER") == "1":
            pytest.fail("a browser is required here but chromium is not installed")
        pytest.skip("Debian's chromium is not installed (./scripts/test installs it)")
    # Locust shows its tabs once a test has started
    started = post_form(chaos.web + "/swarm", {"user_count": "1", "spawn_rate": "1", "host": chaos.target.url})
    assert started["success"] is True, started
    profile = tmp_path / "chromium"
    browser, _ = module_processes.start("chromium", chromium_argv(profile))
    try:
        asyncio.run(asyncio.wait_for(click_through_the_tab(devtools_page_url(profile), chaos), 120))
    finally:
        post_form(chaos.web + "/stop", {})
        browser.terminate()
        browser.wait(timeout=30)
    assert "Traceback" not in chaos.web_log.read_text()
