"""Where the retry-storm view's readings come from: the client registry, a target's gauge, the chaos API."""

import argparse
import http.server
import socket
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from retrystorm.chaos.client import ChaosApiError
from retrystorm.loadgen.aggregate import MergedCollector, WorkerSnapshots, exposition_registry, snapshot
from retrystorm.loadgen.metrics import StrategyMetrics, build_metrics
from retrystorm.loadgen.outcomes import AttemptOutcome, RequestOutcome
from retrystorm.loadgen.storm_sources import (
    IN_FLIGHT_METRIC,
    OutageSource,
    TargetGauge,
    check_metric_name,
    check_metrics_url,
    client_reading,
    gauge_in,
    metrics_url,
)
from tests.support.http import serving

TARGET_METRICS = """\
# HELP retrystorm_target_in_flight_requests Requests being served.
# TYPE retrystorm_target_in_flight_requests gauge
retrystorm_target_in_flight_requests 17.0
# HELP other_in_flight Per shard.
# TYPE other_in_flight gauge
other_in_flight{shard="a"} 2.0
other_in_flight{shard="b"} 3.0
"""


def registry_with(strategy: str, *, attempts: int, ok: int, gave_up: int, backoff: int) -> CollectorRegistry:
    registry = CollectorRegistry()
    fill(build_metrics(registry).for_strategy(strategy), attempts=attempts, ok=ok, gave_up=gave_up, backoff=backoff)
    return registry


def fill(bound: StrategyMetrics, *, attempts: int, ok: int, gave_up: int, backoff: int) -> None:
    bound.attempts_started.inc(attempts)
    bound.requests_started.inc(ok + gave_up)
    for _ in range(ok):
        bound.attempt(AttemptOutcome.OK, 0.1)
        bound.request(RequestOutcome.OK, 0.1)
    for _ in range(gave_up):
        bound.request(RequestOutcome.GAVE_UP, 3.0)
    bound.users_in_backoff.set(backoff)
    bound.active_users.set(10)


def test_a_reading_sums_the_strategies_and_keeps_each_counter_apart():
    registry = CollectorRegistry()
    metrics = build_metrics(registry)  # one process, two runs with different strategies
    fill(metrics.for_strategy("fixed"), attempts=30, ok=8, gave_up=2, backoff=4)
    fill(metrics.for_strategy("exponential"), attempts=5, ok=1, gave_up=0, backoff=0)
    reading = client_reading(registry)
    assert (reading.attempts_started, reading.requests_started) == (35, 11)
    assert (reading.requests_ok, reading.requests_gave_up) == (9, 2)
    assert (reading.users_in_backoff, reading.active_users) == (4, 20)


def test_on_a_master_a_reading_is_the_sum_over_the_workers():
    workers = WorkerSnapshots()
    workers.update("w1", snapshot(registry_with("fixed", attempts=30, ok=8, gave_up=2, backoff=4)))
    workers.update("w2", snapshot(registry_with("exponential", attempts=12, ok=5, gave_up=0, backoff=1)))
    master = exposition_registry(MergedCollector(CollectorRegistry(), workers, lambda: {"w1", "w2"}))
    reading = client_reading(master)
    assert (reading.attempts_started, reading.requests_started, reading.requests_ok) == (42, 15, 13)
    assert (reading.users_in_backoff, reading.active_users) == (5, 20)


def test_a_gauge_is_summed_over_its_series_and_absent_is_none():
    assert gauge_in(TARGET_METRICS, IN_FLIGHT_METRIC) == 17.0
    assert gauge_in(TARGET_METRICS, "other_in_flight") == 5.0
    assert gauge_in(TARGET_METRICS, "missing") is None


def test_auto_scrapes_the_hosts_metrics():
    assert metrics_url("auto", "http://127.0.0.1:8070") == "http://127.0.0.1:8070/metrics"
    assert metrics_url("auto", "http://127.0.0.1:8070/api/v1") == "http://127.0.0.1:8070/metrics"
    assert metrics_url("auto", None) is None
    assert metrics_url("auto", "not a url") is None
    assert metrics_url("none", "http://127.0.0.1:8070") is None
    assert metrics_url("http://127.0.0.1:9/m", "http://127.0.0.1:8070") == "http://127.0.0.1:9/m"


@pytest.mark.parametrize(
    ("check", "text", "message"),
    [
        (check_metric_name, "in flight", "expected a Prometheus metric name"),
        (check_metric_name, "9lives", "expected a Prometheus metric name"),
        (check_metrics_url, "ftp://127.0.0.1/metrics", r"expected auto \(the host's /metrics\), none, or an address"),
        (check_metrics_url, "http://127.0.0.1:99999/metrics", "expected auto"),
    ],
)
def test_bad_flags_are_one_line(check, text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message) as refused:
        check(text)
    assert "\n" not in str(refused.value)


def test_good_flags_pass():
    assert check_metric_name(" my_in_flight ") == "my_in_flight"
    assert check_metrics_url("AUTO") == "auto"
    assert check_metrics_url("http://127.0.0.1:8070/metrics/") == "http://127.0.0.1:8070/metrics"


class _Metrics(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = TARGET_METRICS.encode()
        self.send_response(200 if self.path == "/metrics" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def metrics_server() -> Iterator[str]:
    with serving(_Metrics) as url:
        yield url


def test_the_gauge_is_read_from_a_real_metrics_endpoint(metrics_server):
    gauge = TargetGauge()
    assert gauge.read(metrics_server + "/metrics") == 17.0
    assert gauge.error is None
    assert TargetGauge("other_in_flight").read(metrics_server + "/metrics") == 5.0
    missing = TargetGauge("missing")
    assert missing.read(metrics_server + "/metrics") is None
    assert missing.error == f"{metrics_server}/metrics has no missing"


def test_a_target_that_does_not_answer_is_a_gap_not_a_zero():
    with socket.socket() as listener:  # accepts connections (the kernel's queue) but never answers: a paused target
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/metrics"
        gauge = TargetGauge(timeout_s=0.2)
        assert gauge.read(url) is None
    assert gauge.error is not None
    assert gauge.error.startswith(f"no answer from {url} within 0.2 s")
    assert gauge.read(None) is None
    assert "--target-metrics" in (gauge.error or "")


class FakeChaos:
    """The one call the view makes; fails when told to."""

    base_url = "http://127.0.0.1:8071"

    def __init__(self) -> None:
        self.calls = 0
        self.fail = False

    def outages(self) -> list[dict[str, str]]:
        self.calls += 1
        if self.fail:
            raise ChaosApiError(502, "cannot reach the chaos API")
        return [{"id": f"o{self.calls}"}]


def test_the_chaos_api_is_asked_at_most_once_a_second_and_its_last_answer_kept():
    now = [100.0]
    chaos = FakeChaos()
    source = OutageSource(chaos, clock=lambda: now[0])  # type: ignore[arg-type]
    assert source.latest() == [{"id": "o1"}]
    now[0] += 0.5
    assert source.latest() == [{"id": "o1"}]
    assert chaos.calls == 1
    now[0] += 0.5
    chaos.fail = True
    assert source.latest() == [{"id": "o1"}]  # the last answer, and why it is not newer
    assert (chaos.calls, source.error) == (2, "cannot reach the chaos API")
    assert OutageSource(None).latest() == []


def test_the_load_factor_is_the_largest_over_strategies_never_a_sum_and_absent_is_none():
    registry = CollectorRegistry()
    metrics = build_metrics(registry)
    assert client_reading(registry).load_factor is None  # no spike ever played in this process
    metrics.show_load_factor("fixed", 1.0)  # a strategy that ran before
    metrics.show_load_factor("exponential", 3.0)  # the one spiking now
    assert client_reading(registry).load_factor == 3.0
