"""The compose stack end to end: real containers, real Locust, real Prometheus, real `docker pause`.

In order, on one stack (two Locust workers): it comes up healthy; the laptop-sized seed
scenario runs through ``docker compose run ... retrystorm run --backend compose`` and
its verdicts hold; the outage shows in Prometheus; every dashboard panel's query returns
data for that run; a load spike is played by the Locust master and shows in its metrics;
a SIGKILLed chaos container is restarted and resumes the target it
had paused; stopping the stack mid-outage leaves no container paused.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import textwrap
import urllib.parse

import pytest

from retrystorm.dashboards.files import DASHBOARD_DIR

from .conftest import TOKEN, Stack, http, prometheus_query, wait_until

pytestmark = [pytest.mark.docker, pytest.mark.live, pytest.mark.signals]

SCENARIO = "smira-laptop"  # a shipped scenario, by name
RUN_TIMEOUT_S = 600


def test_every_service_comes_up_healthy_with_both_workers(stack: Stack):
    states = {(row["Service"], row["State"], row.get("Health", "")) for row in stack.containers()}
    services = {row[0] for row in states}
    assert services == {"target", "chaos", "locust-master", "locust-worker", "prometheus"}
    assert all(state == "running" and health == "healthy" for _, state, health in states), states
    status, stats = http(stack.url("locust-master", "/stats/requests"))
    assert status == 200
    assert stats["worker_count"] == 2

    def scraped() -> dict[str, str]:
        return {row["metric"]["job"]: row["value"][1] for row in prometheus_query(stack, "up")}

    wait_until(lambda: scraped() == {"target": "1", "locust": "1", "chaos": "1"}, 30, "Prometheus to scrape all three")


@pytest.fixture(scope="module")
def scenario_run(stack: Stack, tmp_path_factory):
    """The laptop seed scenario run inside the chaos service's image, as CI would run it."""
    out = tmp_path_factory.mktemp("scenario")
    started = datetime.datetime.now(datetime.UTC)
    done = stack.compose(
        "run", "--rm", "--no-deps", "-v", f"{out}:/out", "chaos",
        "retrystorm", "run", SCENARIO, "--allow-saturated", "--backend", "compose", "--out", "/out/run",
        timeout_s=RUN_TIMEOUT_S, check=False,
    )  # fmt: skip
    ended = datetime.datetime.now(datetime.UTC)
    (out / "runner.log").write_text(done.stdout + "\n" + done.stderr)
    return done, out / "run", started.timestamp(), ended.timestamp()


def test_the_laptop_seed_scenario_passes_through_compose(scenario_run):
    done, folder, _, _ = scenario_run
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    document = json.loads((folder / "results.json").read_text())
    by_label = {row["strategy"]: row for row in document["results"]}
    assert set(by_label) == {"fixed:100ms", "smira"}
    assert by_label["fixed:100ms"]["server_recovery_s"] in (None, [None])  # the storm never ends
    smira = by_label["smira"]["server_recovery_s"]
    smira = smira[0] if isinstance(smira, list) else smira
    assert smira is not None
    fresh = by_label["smira"]["fresh_requests"]  # the runner's own requests to the target's published URL
    assert fresh["sent"] > 0 and fresh["answered_in_time"] < fresh["sent"], fresh  # the pause's went unanswered
    fixed, backoff = by_label["fixed:100ms"], by_label["smira"]
    assert fixed["amplification"] > 2 * backoff["amplification"]  # the storm: retries on retries
    assert fixed["peak_in_flight"] > 5 * backoff["peak_in_flight"]
    assert "compose" in document["run"]["stack"]
    assert (folder / "report.html").is_file()


def test_the_outage_shows_in_prometheus(stack: Stack, scenario_run):
    """While the target was paused its scrape failed and the chaos metric was 1, at the same instants."""
    _, _, started, ended = scenario_run
    window = f"{int(ended - started) + 5}s"
    paused_and_unscraped = '(up{job="target"} == 0) and on() (retrystorm_chaos_outage_active{target="target"} == 1)'
    both = f"max_over_time(({paused_and_unscraped})[{window}:1s])"
    assert prometheus_query(stack, both, at=ended), "no instant with the target's scrape failing while paused"
    outages = prometheus_query(stack, 'retrystorm_chaos_outages_total{target="target"}', at=ended)
    assert float(outages[0]["value"][1]) >= 2  # one outage per strategy
    assert prometheus_query(stack, 'up{job="target"}', at=ended)[0]["value"][1] == "1"


def test_every_dashboard_panel_returns_data_for_the_run(stack: Stack, scenario_run):
    from retrystorm.dashboards.queries import annotation_queries, panel_queries

    _, _, started, ended = scenario_run
    empty = []
    for path in sorted(DASHBOARD_DIR.glob("*.json")):
        dashboard = json.loads(path.read_text())
        for query in [*panel_queries(dashboard), *annotation_queries(dashboard)]:
            params = {"query": query.expr, "start": f"{started:.0f}", "end": f"{ended:.0f}", "step": "5"}
            status, body = http(stack.url("prometheus", "/api/v1/query_range?" + urllib.parse.urlencode(params)))
            assert status == 200, f"{query.panel} {query.ref_id}: {body}"
            if not body["data"]["result"]:
                empty.append(f"{path.name}: {query.panel!r} {query.ref_id}: {query.expr}")
    assert not empty, "panels without data:\n" + "\n".join(empty)


SPIKE = textwrap.dedent(
    """\
    name: compose-spike
    model: fixed:base_delay=50ms
    load: {users: 10, spawn_rate: 10, think_time: constant:200ms, attempt_timeout: 2s, duration: 20s}
    strategies: [fixed:100ms]
    faults:
      - {spike: load, factor: 3, at: 6s, for: 6s}
    """
)


def test_a_spike_is_played_by_the_locust_master_and_ends_with_it(stack: Stack, tmp_path):
    """The master's own user count goes up threefold during the spike and back; Prometheus saw its factor."""
    (tmp_path / "spike.yaml").write_text(SPIKE)
    started = datetime.datetime.now(datetime.UTC).timestamp()
    done = stack.compose(
        "run", "--rm", "--no-deps", "-v", f"{tmp_path}:/out", "chaos",
        "retrystorm", "run", "/out/spike.yaml", "--allow-saturated", "--backend", "compose", "--out", "/out/run",
        timeout_s=RUN_TIMEOUT_S, check=False,
    )  # fmt: skip
    ended = datetime.datetime.now(datetime.UTC).timestamp()
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    [row] = json.loads((tmp_path / "run" / "results.json").read_text())["results"]
    assert [(w["kind"], w["start_s"], w["end_s"], w["factor"]) for w in row["triggers"]] == [("spike", 6.0, 12.0, 3.0)]
    lines = (tmp_path / "run" / "timeseries.csv").read_text().splitlines()
    header = lines[0].split(",")
    goodput = {float(values[header.index("t_s")]): float(values[header.index("goodput")]) for values in
               (line.split(",") for line in lines[1:])}  # fmt: skip
    before, during, after = goodput[3.0] + goodput[4.0], goodput[9.0] + goodput[10.0], goodput[17.0] + goodput[18.0]
    assert during > 2 * before  # 30 users instead of 10, over two workers
    assert after < 0.6 * during  # back to 10
    window = f"{int(ended - started) + 5}s"
    factor = prometheus_query(stack, f"max_over_time(retrystorm_client_load_factor[{window}])", at=ended)
    assert [float(series["value"][1]) for series in factor] == [3.0], factor
    users = prometheus_query(stack, f"max_over_time(retrystorm_client_active_users[{window}])", at=ended)
    assert max(float(series["value"][1]) for series in users) >= 30, users


def test_a_sigkilled_chaos_container_is_restarted_and_resumes_the_target(stack: Stack):
    status, outage = http(
        stack.url("chaos", "/outages"), method="POST", body={"target": "target", "duration": "2m"}, token=TOKEN
    )
    assert status == 201, outage
    assert stack.status("target") == "paused"
    before = stack.inspect("chaos")
    os.kill(before["State"]["Pid"], signal.SIGKILL)  # the chaos service's main process, by its pid
    wait_until(lambda: stack.inspect("chaos")["RestartCount"] > before["RestartCount"], 60, "the chaos restart")
    wait_until(lambda: stack.status("target") == "running", 60, "the restarted chaos service to resume the target")
    logs = stack.compose("logs", "--no-color", "chaos").stdout
    assert "left paused by a controller that did not finish" in logs
    wait_until(lambda: http(stack.url("chaos", "/healthz"))[0] == 200, 60, "the restarted chaos service to answer")


def test_stopping_the_stack_mid_outage_leaves_nothing_paused(stack: Stack):
    """The chaos service stops before the target (it depends on it) and unpauses it on its way out."""
    status, _ = http(
        stack.url("chaos", "/outages"), method="POST", body={"target": "target", "duration": "2m"}, token=TOKEN
    )
    assert status == 201
    assert stack.status("target") == "paused"
    target_id = stack.container_id("target")
    since = datetime.datetime.now(datetime.UTC).isoformat()
    stack.compose("stop", "--timeout", "20", timeout_s=180)
    states = {row["Service"]: row["State"] for row in stack.containers()}
    assert set(states.values()) == {"exited"}, states
    paused = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={stack.project}",
         "--filter", "status=paused"],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout  # fmt: skip
    assert paused == ""
    until = datetime.datetime.now(datetime.UTC).isoformat()
    events = subprocess.run(
        ["docker", "events", "--since", since, "--until", until, "--filter", f"container={target_id}",
         "--format", "{{.Action}}"],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout.split()  # fmt: skip
    assert "unpause" in events, events
    assert events.index("unpause") < events.index("kill" if "kill" in events else "die"), events
    assert "shutdown: resuming 1 paused target(s): target" in stack.compose("logs", "--no-color", "chaos").stdout
