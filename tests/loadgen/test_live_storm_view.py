"""The web UI's Retry storm tab and start form, live: a real target, a real ``retrystorm chaos
serve``, a real Locust web UI (its own process) and headless Chromium, all on loopback.

The run is started through the start form in the browser (the strategy picked from the
choices beside the field), the target is paused through the chaos API, and then the tab
and its data route are read: goodput and attempts apart, the in-flight gap while paused,
the outage shaded on every chart. Waits are bounded; nothing is asserted on elapsed time.
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

from retrystorm.loadgen.options import OPTIONS

from .browser import Page, chromium_argv, chromium_path, devtools_page_url
from .conftest import (
    Metrics,
    Processes,
    Target,
    free_port,
    get_text,
    locust_argv,
    post_form,
    target_starter,
    wait_until,
)

pytestmark = [pytest.mark.live, pytest.mark.signals]

RETRYSTORM = str(Path(sys.executable).with_name("retrystorm"))
PAUSE_S = 5
STRATEGY_HELP = next(option.help for option in OPTIONS if option.flag == "--retry-strategy")
CHARTS = ("throughput", "backoff", "amplification", "in_flight")


def get_json(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@dataclasses.dataclass
class Stack:
    target: Target
    chaos_url: str
    web: str
    web_log: Path

    def series(self, query: str = "") -> dict[str, Any]:
        status, data = get_json(self.web + "/storm/series" + query)
        assert status == 200, data
        return dict(data)

    def client_metrics(self) -> Metrics:
        return Metrics(get_text(self.web + "/metrics"))


@dataclasses.dataclass
class Observed:
    """What the fixture saw: the form before the start, the data and the tab after the outage."""

    form: dict[str, Any]
    outage: dict[str, Any]
    series: dict[str, Any]
    tab: dict[str, Any]


def require_browser() -> None:
    if chromium_path() is None:
        if os.environ.get("RETRYSTORM_REQUIRE_BROWSER") == "1":
            pytest.fail("a browser is required here but chromium is not installed")
        pytest.skip("Debian's chromium is not installed (./scripts/test installs it)")


@pytest.fixture(scope="module")
def stack(module_processes: Processes, tmp_path_factory: pytest.TempPathFactory) -> Stack:
    target = target_starter(module_processes)("--model", "fixed", "--base-delay", "10ms")
    chaos_port = free_port()
    chaos_url = f"http://127.0.0.1:{chaos_port}"
    journal = tmp_path_factory.mktemp("chaos") / "journal.jsonl"
    module_processes.start(
        "chaos",
        [RETRYSTORM, "chaos", "serve", "--port", str(chaos_port), "--target", f"target={target.process.pid}"],
        {"RETRYSTORM_CHAOS_JOURNAL": str(journal), "RETRYSTORM_CHAOS_TOKEN": ""},
    )
    port = free_port()
    argv = locust_argv(
        "--host", target.url, "--web-host", "127.0.0.1", "--web-port", str(port), "--chaos-url", chaos_url
    )  # fmt: skip
    _, log = module_processes.start("locust-storm", argv, {"RETRYSTORM_CHAOS_TOKEN": ""})
    web = f"http://127.0.0.1:{port}"
    wait_until(lambda: get_json(chaos_url + "/healthz")[0] == 200, 60, "the chaos API")
    wait_until(lambda: get_text(web + "/"), 60, "the web UI")
    return Stack(target, chaos_url, web, log)


FORM_STATE = """(() => {
  const input = document.querySelector('form [name="retryStrategy"]');
  const root = input.closest('.MuiFormControl-root');
  const help = root.querySelector('[data-retrystorm-help="retry_strategy"]');
  const select = root.querySelector('[data-retrystorm-choices]');
  const summary = [...document.querySelectorAll('.MuiAccordionSummary-root')]
    .find((s) => s.textContent.trim() === 'Custom parameters');
  const fields = [...summary.closest('.MuiAccordion-root').querySelectorAll('[name]')]
    .filter((e) => e.offsetParent !== null || e.type === 'checkbox')
    .map((e) => [e.name, (e.closest('.MuiFormControl-root') || e).getBoundingClientRect().top]);
  fields.sort((a, b) => a[1] - b[1]);
  return {
    expanded: summary.getAttribute('aria-expanded'),
    label: root.querySelector('label').textContent,
    help: help.textContent,
    helpCut: help.scrollWidth > help.clientWidth + 1 || help.scrollHeight > help.clientHeight + 1,
    title: input.title,
    list: input.getAttribute('list'),
    choices: [...select.options].map((o) => o.value).filter(Boolean),
    firstField: fields.length ? fields[0][0] : null,
  };
})()"""

TAB_STATE = """(() => {
  const charts = {};
  for (const figure of document.querySelectorAll('#retrystorm-storm figure[data-chart]')) {
    charts[figure.dataset.chart] = {
      bands: [...figure.querySelectorAll('rect[data-band]')].map((r) => ({
        kind: r.dataset.band, width: Number(r.getAttribute('width')), start_s: Number(r.dataset.startS) })),
      series: Object.fromEntries([...figure.querySelectorAll('path[data-series]')].map((p) => [p.dataset.series,
        { points: Number(p.dataset.points), moves: (p.getAttribute('d').match(/M/g) || []).length,
          stroke: p.getAttribute('stroke') }])),
      legend: [...figure.querySelectorAll('[data-legend]')].map((l) => l.textContent),
      text: figure.textContent,
    };
  }
  const sources = [...document.querySelectorAll('#storm-status [data-source]')].map((s) => s.textContent);
  return { charts, sources };
})()"""


async def start_through_the_form(page: Page, stack: Stack) -> dict[str, Any]:
    """Open the UI, read the form as shown, pick fixed from the choices, fill the rest, press Start."""
    await page.send("Page.navigate", url=stack.web + "/")
    await page.wait_for("document.querySelector('[data-retrystorm-choices]') !== null", "the strategy choices")
    await page.wait_for(
        "[...document.querySelectorAll('.MuiAccordionSummary-root')].some((s) =>"
        " s.textContent.trim() === 'Custom parameters' && s.getAttribute('aria-expanded') === 'true')",
        "Custom parameters to be open",
    )
    form = dict(await page.evaluate(FORM_STATE))
    picked = "fixed:100ms"
    await page.evaluate(
        "(() => { const s = document.querySelector('[data-retrystorm-choices]');"
        f" s.value = {json.dumps(picked)}; s.dispatchEvent(new Event('change', {{bubbles: true}})); }})()"
    )
    form["after_choice"] = await page.evaluate("document.querySelector('form [name=\"retryStrategy\"]').value")
    for name, text in (("userCount", "20"), ("spawnRate", "20"), ("thinkTime", "constant:100ms")):
        await page.type_into(f'form [name="{name}"]', text)
    await page.type_into('form [name="attemptTimeout"]', "300ms")
    await page.click('form button[type="submit"]')
    await page.wait_for("document.querySelector('[role=\"tablist\"]') !== null", "the run's tabs")
    return form


async def read_the_tab(page: Page, stack: Stack) -> dict[str, Any]:
    await page.send("Page.navigate", url=stack.web + "/?tab=storm")
    await page.wait_for(
        "(() => { const c = document.querySelectorAll('#retrystorm-storm figure[data-chart]');"
        " return c.length === 4 && [...c].every((f) => f.querySelector('rect[data-band=\"pause\"]')); })()",
        "four charts, each with the outage shaded",
    )
    return dict(await page.evaluate(TAB_STATE))


def pause_through_the_chaos_api(stack: Stack) -> dict[str, Any]:
    body = json.dumps({"target": "target", "duration": f"{PAUSE_S}s"}).encode()
    request = urllib.request.Request(
        stack.chaos_url + "/outages", data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        outage = dict(json.loads(response.read()))
    return dict(
        wait_until(
            lambda: (o := get_json(f"{stack.chaos_url}/outages/{outage['id']}")[1])["status"] == "resumed" and o,
            PAUSE_S + 60,
            "the chaos API to resume the target",
        )
    )


async def observe(page_url: str, stack: Stack) -> Observed:
    async with aiohttp.ClientSession() as session, session.ws_connect(page_url, max_msg_size=0) as socket:
        page = Page(socket)
        form = await start_through_the_form(page, stack)
        await asyncio.to_thread(
            wait_until,
            lambda: stack.client_metrics().get("retrystorm_client_requests_total", strategy="fixed", outcome="ok") > 0,
            60,
            "the run to succeed with the strategy chosen in the form",
        )
        await asyncio.to_thread(
            wait_until,
            lambda: sum(v is not None for v in stack.series()["series"]["in_flight"]["values"]) >= 3,
            60,
            "three in-flight readings before the outage",
        )
        outage = await asyncio.to_thread(pause_through_the_chaos_api, stack)
        end_s = lambda data: data["bands"][0]["end_s"] if data["bands"] else None  # noqa: E731
        await asyncio.to_thread(
            wait_until,
            lambda: (d := stack.series())["bands"] and end_s(d) is not None and d["now_s"] > end_s(d) + 3,
            60,
            "three seconds of readings after the outage",
        )
        tab = await read_the_tab(page, stack)
        return Observed(form, outage, stack.series(), tab)


@pytest.fixture(scope="module")
def observed(stack: Stack, module_processes: Processes, tmp_path_factory: pytest.TempPathFactory) -> Observed:
    require_browser()
    profile = tmp_path_factory.mktemp("chromium")
    browser, _ = module_processes.start("chromium", chromium_argv(profile))
    try:
        return asyncio.run(asyncio.wait_for(observe(devtools_page_url(profile), stack), 240))
    finally:
        browser.terminate()
        browser.wait(timeout=30)


def test_the_start_form_shows_the_retry_options_first_open_and_uncut(observed):
    form = observed.form
    assert form["expanded"] == "true"  # Locust starts "Custom parameters" collapsed; the script opened it
    assert form["firstField"] == "retryStrategy"  # Locust orders the fields alphabetically
    assert form["label"] == "Retry Strategy"  # the help no longer sits in a one-line label cut with "…"
    assert form["help"] == STRATEGY_HELP
    assert form["title"] == STRATEGY_HELP
    assert not form["helpCut"]
    assert form["list"] == "retrystorm-strategy-list"
    assert {"fixed:100ms", "none", "decorrelated:base=100ms,max=5m,growth=3"} <= set(form["choices"])
    assert form["after_choice"] == "fixed:100ms"


def test_the_data_route_keeps_attempts_and_goodput_apart_with_units(stack, observed):
    data = observed.series
    columns = data["series"]
    assert (data["interval_s"], data["window_s"], data["run"], data["run_started"]) == (1.0, 900, 1, True)
    assert {key: columns[key]["unit"] for key in ("attempts", "goodput", "in_flight", "amplification")} == {
        "attempts": "attempts/s",
        "goodput": "requests/s",
        "in_flight": "requests",
        "amplification": "attempts per request",
    }
    assert all(len(column["values"]) == len(data["t_s"]) for column in columns.values())
    assert data["t_s"] == sorted(data["t_s"])
    assert 0 < data["t_s"][0] < 3  # seconds since the run started from the form
    [band] = data["bands"]
    assert (band["kind"], band["labels"]) == ("pause", ["target"])
    assert 0 < band["start_s"] < band["end_s"] < data["now_s"]
    # the chaos API's start is taken before the pause is journaled and its watchdog armed (a process start),
    # so the freeze begins up to a second after it on a busy machine: a point covers the second before its time
    inside = [i for i, t in enumerate(data["t_s"]) if band["start_s"] + 2 <= t <= band["end_s"] - 1]
    assert len(inside) >= 2
    for i in inside:  # frozen: attempts keep going out, nothing succeeds
        assert columns["attempts"]["values"][i] > 0
        assert columns["goodput"]["values"][i] == 0
    before = [i for i, t in enumerate(data["t_s"]) if t < band["start_s"] - 1]
    assert max(columns["goodput"]["values"][i] for i in before) > 0
    assert data["sources"]["outages"] == {"enabled": True, "url": stack.chaos_url, "error": None}


def test_a_paused_target_is_a_gap_in_flight_not_a_zero(stack, observed):
    data = observed.series
    [band] = data["bands"]
    in_flight = data["series"]["in_flight"]["values"]
    inside = [v for t, v in zip(data["t_s"], in_flight, strict=True) if band["start_s"] + 2 <= t <= band["end_s"] - 1]
    before = [v for t, v in zip(data["t_s"], in_flight, strict=True) if t < band["start_s"] - 1]
    after = [v for t, v in zip(data["t_s"], in_flight, strict=True) if t > band["end_s"] + 1]
    assert inside
    assert all(value is None for value in inside)
    assert all(value is not None and value >= 0 for value in before)
    assert any(value is not None for value in after)
    assert data["sources"]["in_flight"] == {
        "url": stack.target.url + "/metrics",  # --target-metrics auto: the host's /metrics
        "metric": "retrystorm_target_in_flight_requests",
        "error": None,
    }


def test_amplification_rises_with_the_retries_of_the_outage(observed):
    data = observed.series
    [band] = data["bands"]
    total = data["series"]["amplification_total"]["values"]
    before = [v for t, v in zip(data["t_s"], total, strict=True) if t < band["start_s"] - 1 and v is not None]
    after = [v for t, v in zip(data["t_s"], total, strict=True) if t > band["end_s"] + 1 and v is not None]
    assert before
    assert after
    assert max(before) == pytest.approx(1.0, abs=0.05)  # nothing retried before the pause
    assert max(after) > max(before)


def test_the_tab_draws_goodput_and_attempts_apart_in_flight_and_the_outage(observed):
    charts = observed.tab["charts"]
    assert set(charts) == set(CHARTS)
    for name in CHARTS:
        [band] = charts[name]["bands"]
        assert band["kind"] == "pause"
        assert band["width"] > 0
        assert "s since the run started" in charts[name]["text"]
    throughput = charts["throughput"]["series"]
    assert throughput["attempts"]["points"] > 3
    assert throughput["goodput"]["points"] > 3
    assert throughput["attempts"]["stroke"] != throughput["goodput"]["stroke"]
    legend = " | ".join(charts["throughput"]["legend"])
    assert "attempts sent" in legend
    assert "goodput (logical requests that succeeded)" in legend
    assert charts["in_flight"]["series"]["in_flight"]["moves"] >= 2  # the line breaks where the target was paused
    assert set(charts["amplification"]["series"]) == {"amplification", "amplification_total"}
    assert set(charts["backoff"]["series"]) == {"users_in_backoff", "active_users"}
    sources = " ".join(observed.tab["sources"])
    assert "retrystorm_target_in_flight_requests from http://127.0.0.1:" in sources
    assert "Outages from the chaos API at http://127.0.0.1:" in sources


def test_bad_input_to_the_data_route_is_one_line(stack, observed):
    for query in ("?since_s=soon", "?since_s=nan", "?since_s=1e400"):
        status, answer = get_json(stack.web + "/storm/series" + query)
        assert status == 400
        assert list(answer) == ["error"]
        assert answer["error"].startswith("since_s: got ")
        assert "\n" not in answer["error"]
    last = observed.series["t_s"][-1]
    assert all(t > last for t in stack.series(f"?since_s={last}")["t_s"])


def test_the_scripts_write_no_html():
    for name in ("storm_view.js", "start_form.js"):
        text = (Path(__file__).resolve().parents[2] / "loadgen" / name).read_text()
        assert "innerHTML" not in text
        assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")  # nothing fetched from elsewhere


def test_a_new_run_from_the_ui_starts_the_view_again(stack, observed):
    """Last: it stops the run the other tests observed."""
    assert post_form(stack.web + "/stop", {})["success"] is True
    started = post_form(stack.web + "/swarm", {"user_count": "2", "spawn_rate": "2", "host": stack.target.url})
    assert started["success"] is True, started
    fresh = wait_until(lambda: (d := stack.series())["run"] == 2 and len(d["t_s"]) >= 2 and d, 60, "the new run")
    assert fresh["t_s"][0] < 3
    assert fresh["bands"] == []  # the outage ended before this run started
    assert all(v is None or v == pytest.approx(1.0) for v in fresh["series"]["amplification_total"]["values"])
    post_form(stack.web + "/stop", {})
    assert "Traceback" not in stack.web_log.read_text()
