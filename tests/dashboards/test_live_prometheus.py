"""Every panel of the dashboard shows data from a real Prometheus that scraped a real run.

No Docker: on free 127.0.0.1 ports, a real ``retrystorm target``, a real headless
Locust with the retrystorm user, a real ``retrystorm chaos serve`` (process backend)
and Debian's real Prometheus scraping the three every second. The target is paused
once through the chaos API, then its capacity is cut and an error burst armed through
its admin API (the live ``slow`` and ``errors`` triggers); then every panel query of the
committed dashboard, with its variables substituted as Grafana would, must return at
least one series, and each trigger kind's annotation query must mark its window and
only it (no spike is played: the spike query must mark nothing). Every process is
stopped by its pid.

Without /usr/bin/prometheus the test is skipped, or fails when
``RETRYSTORM_REQUIRE_PROMETHEUS=1`` (CI installs Debian's ``prometheus`` and sets it).
"""

import json
import os
import shutil
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from retrystorm.dashboards.check import empty_queries, run_queries
from retrystorm.dashboards.files import DASHBOARD_DIR, load
from retrystorm.dashboards.queries import annotation_queries, panel_queries
from tests.loadgen.conftest import Processes, free_port, get_text, locust_starter, target_starter, wait_until
from tests.support.http import call

pytestmark = [pytest.mark.live, pytest.mark.signals]

RETRYSTORM = str(Path(sys.executable).with_name("retrystorm"))
OUTAGE_S = 4


def prometheus_binary() -> str:
    found = shutil.which("prometheus") or "/usr/bin/prometheus"
    if not Path(found).is_file():
        if os.environ.get("RETRYSTORM_REQUIRE_PROMETHEUS") == "1":
            pytest.fail(f"{found} is missing but RETRYSTORM_REQUIRE_PROMETHEUS=1: apt-get install -y prometheus")
        pytest.skip("Prometheus is missing (Debian: apt-get install -y prometheus)")
    return found


@pytest.fixture
def processes(tmp_path):
    started = Processes(tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


def instant(prometheus_url, expr):
    query = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{prometheus_url}/api/v1/query?{query}", timeout=5) as response:
        return json.loads(response.read())["data"]["result"]


def post_json(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def start_prometheus(processes, tmp_path, jobs):
    scrape = "\n".join(
        f"  - job_name: {job}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']" for job, port in jobs.items()
    )
    config = tmp_path / "prometheus.yml"
    config.write_text(
        f"global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n{scrape}\n"
    )
    port = free_port()
    processes.start(
        "prometheus",
        [
            prometheus_binary(),
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
    )
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: "Ready" in get_text(url + "/-/ready"), 60, "Prometheus to be ready")
    return url


def admin(url, path, method, body=None):
    """The status of an admin request (a JSON body when given, as the admin API requires)."""
    return call(url, method, path, body)[0]


def hold_until_scraped(prometheus_url, target, path, body, seen):
    """Put ``body`` at ``path`` until Prometheus has scraped ``seen`` for a few seconds, then delete it."""
    assert admin(target.url, path, "PUT", body) == 200
    three_scrapes = f"count_over_time(({seen})[10s:1s]) >= 3"
    wait_until(lambda: instant(prometheus_url, three_scrapes), 30, f"Prometheus to scrape {seen}")
    assert admin(target.url, path, "DELETE") == 200


def marks(prometheus_url, annotation, start_s, end_s):
    """The values of ``annotation``'s query over the run: Grafana draws a region where they are above 0."""
    ((_, series),) = run_queries(prometheus_url, [annotation], start_s=start_s, end_s=end_s)
    return [float(value) for one in series for _, value in one["values"]]


def test_every_panel_query_returns_data_after_a_real_outage(tmp_path, processes):
    prometheus_binary()  # skip or fail before starting anything
    target = target_starter(processes)()
    locust = locust_starter(processes)(
        target.url, "--think-time", "exponential:500ms", "--attempt-timeout", "1s", users=30, run_time="60s"
    )
    chaos_port = free_port()
    chaos = [
        RETRYSTORM, "chaos", "serve", "--port", str(chaos_port), "--target", f"target={target.process.pid}",
        "--journal", str(tmp_path / "journal.jsonl"), "--max-outage", "30s",
    ]  # fmt: skip
    processes.start("chaos", chaos, env={"GRAFANA_URL": ""})  # no annotations from the caller's environment
    chaos_url = f"http://127.0.0.1:{chaos_port}"
    wait_until(lambda: get_text(chaos_url + "/healthz"), 30, "the chaos API")
    jobs = {"target": urllib.parse.urlsplit(target.url).port, "locust": locust.metrics_port, "chaos": chaos_port}
    prometheus = start_prometheus(processes, tmp_path, jobs)
    start_s = time.time()

    wait_until(lambda: len(instant(prometheus, "up == 1")) == 3, 30, "Prometheus to scrape all three jobs")
    steady = 'sum(rate(retrystorm_client_requests_total{outcome="ok"}[5s])) > 0'
    wait_until(lambda: instant(prometheus, steady), 30, "goodput in Prometheus")

    outage = post_json(chaos_url + "/outages", {"target": "target", "duration": f"{OUTAGE_S}s"})
    wait_until(
        lambda: json.loads(get_text(f"{chaos_url}/outages/{outage['id']}"))["status"] == "resumed",
        OUTAGE_S + 20,
        "the outage to end",
    )
    hold_until_scraped(prometheus, target, "/admin/capacity", {"capacity": 0.5}, "retrystorm_target_capacity_ratio < 1")
    hold_until_scraped(
        prometheus, target, "/admin/faults", {"probability": 0.2}, "retrystorm_target_injected_error_probability > 0"
    )
    resumed_s = time.time()
    # a few scrapes of the target after its resume, so rates span the recovery too
    fresh = 'timestamp(up{job="target"} == 1)'
    wait_until(lambda: any(float(s["value"][1]) > resumed_s + 3 for s in instant(prometheus, fresh)), 30, "scrapes")
    end_s = time.time()

    dashboard = load(DASHBOARD_DIR / "retrystorm.json")
    queries = panel_queries(dashboard, rate_interval="15s")
    assert len({query.panel for query in queries}) >= 10
    empty = empty_queries(prometheus, queries, start_s=start_s, end_s=end_s)
    assert not empty, "panels that would show no data: " + "; ".join(f"{q.panel} ({q.ref_id}): {q.expr}" for q in empty)

    # the control: a strategy that never ran empties exactly the client panels, so the check above can fail
    nothing = panel_queries(dashboard, rate_interval="15s", variables={"strategy": "no-such-strategy"})
    emptied = {query.panel for query in empty_queries(prometheus, nothing, start_s=start_s, end_s=end_s)}
    assert emptied == {query.panel for query in queries if query.panel.startswith("Clients:")}

    annotations = {annotation.panel.split()[0]: annotation for annotation in annotation_queries(dashboard)}
    assert sorted(annotations) == ["Errors", "Outages", "Slow", "Spike"]
    for kind in ("Outages", "Slow", "Errors"):
        values = marks(prometheus, annotations[kind], start_s, end_s)
        assert any(value > 0 for value in values), f"the annotation query {annotations[kind].expr} marks nothing"
        assert any(value == 0 for value in values), f"the annotation query {annotations[kind].expr} marks the whole run"
    spike = marks(prometheus, annotations["Spike"], start_s, end_s)
    assert spike and not any(value > 0 for value in spike), "no spike was played, yet its query marks one"

    scrapes = next(query for query in queries if query.panel == "Scrapes")
    ((_, up),) = run_queries(prometheus, [scrapes], start_s=start_s, end_s=end_s)
    target_up = next(one for one in up if one["metric"]["job"] == "target")
    assert any(value == "0" for _, value in target_up["values"]), "the frozen target never failed a scrape"
