"""Readings rebuilt from Prometheus' instant-query answers: the same as a scrape of the same series."""

import json

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from retrystorm.loadgen.exposition import parse_client, parse_target, samples_of
from retrystorm.loadgen.metrics import build_metrics
from retrystorm.loadgen.outcomes import AttemptOutcome, RequestOutcome
from retrystorm.runner.compose.prometheus import (
    PrometheusMetricsSource,
    client_part,
    scraped,
    series_query,
    target_part,
    vector_samples,
)

TARGET_TEXT = """\
# TYPE retrystorm_target_in_flight_requests gauge
retrystorm_target_in_flight_requests 42.0
# TYPE retrystorm_target_delay_seconds gauge
retrystorm_target_delay_seconds 0.25
# TYPE retrystorm_target_open_connections gauge
retrystorm_target_open_connections 50.0
# TYPE retrystorm_target_abandoned_in_flight_requests gauge
retrystorm_target_abandoned_in_flight_requests 3.0
# TYPE retrystorm_target_requests_total counter
retrystorm_target_requests_total{outcome="ok"} 1000.0
retrystorm_target_requests_total{outcome="abandoned"} 7.0
"""


def client_text() -> str:
    """A real client registry's exposition: two strategies, every kind of series."""
    metrics = build_metrics(CollectorRegistry())
    for strategy, ok in (("fixed", 3), ("smira", 2)):
        bound = metrics.for_strategy(strategy)
        bound.attempts_started.inc(ok + 2)  # one attempt still awaits its answer
        for _ in range(ok):
            bound.attempt(AttemptOutcome.OK, 0.1)
            bound.request(RequestOutcome.OK, 0.3)
        bound.attempt(AttemptOutcome.TIMEOUT, 2.0)
        bound.retry(0.1)
    metrics.active_users.labels(strategy="smira").set(4)
    return generate_latest(metrics.registry).decode()


def as_prometheus_answer(text: str, job: str, *, up: float | None = 1.0) -> str:
    """What ``GET /api/v1/query`` answers for :func:`series_query` once Prometheus scraped ``text``."""
    result = [
        {"metric": {"__name__": name, **labels, "job": job, "instance": "target:8070"}, "value": [1.5, repr(value)]}
        for name, labels, value in samples_of(text)
    ]
    if up is not None:
        result.append({"metric": {"__name__": "up", "job": job, "instance": "target:8070"}, "value": [1.5, str(up)]})
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})


def test_the_target_part_is_what_a_scrape_reads():
    reading = target_part(as_prometheus_answer(TARGET_TEXT, "target"))
    assert reading == parse_target(TARGET_TEXT)
    assert reading is not None and reading.in_flight == 42 and reading.served == {"ok": 1000, "abandoned": 7}


def test_the_client_part_is_what_a_scrape_reads_histogram_included():
    text = client_text()
    reading = client_part(as_prometheus_answer(text, "locust"))
    assert reading == parse_client(text)
    assert reading is not None
    assert reading.requests_ok == 5 and reading.active_users == 4
    assert {k: v for k, v in reading.attempts.items() if v} == {"ok": 5, "timeout": 2}
    assert reading.attempts_started == 9  # summed over strategies, like every series
    assert reading.ended_buckets[-1] == (float("inf"), 5)


@pytest.mark.parametrize("up", [0.0, None, float("nan")], ids=["scrape failed", "no up", "up stale"])
def test_a_target_whose_scrape_failed_reads_none(up):
    assert target_part(as_prometheus_answer(TARGET_TEXT, "target", up=up)) is None


def test_stale_series_read_none():
    """Prometheus marks a failed scrape's series stale: only ``up`` is left."""
    assert target_part(as_prometheus_answer("", "target")) is None
    assert scraped([("up", {"job": "target"}, 1.0)], "retrystorm_target_") is None


def test_values_as_prometheus_writes_them():
    answer = {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [
                {"metric": {"__name__": "x", "le": "+Inf"}, "value": [1, "+Inf"]},
                {"metric": {"__name__": "y"}, "value": [1, "NaN"]},
                {"metric": {"__name__": "z", "job": "t"}, "value": [1, "1e3"]},
            ],
        },
    }
    samples = vector_samples(answer)
    assert samples[0] == ("x", {"le": "+Inf"}, float("inf"))
    assert samples[1][2] != samples[1][2]  # NaN
    assert samples[2] == ("z", {"job": "t"}, 1000.0)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"status": "error", "errorType": "bad_data", "error": "parse error"}, "bad_data: parse error"),
        ({"status": "success", "data": {"resultType": "matrix", "result": []}}, "expected a vector"),
    ],
)
def test_an_answer_that_is_no_vector_is_an_error(answer, expected):
    with pytest.raises(ValueError, match=expected):
        vector_samples(answer)


def test_the_queries_select_each_jobs_series_and_its_up():
    assert series_query("retrystorm_target_", "target") == '{__name__=~"retrystorm_target_.+|up",job="target"}'
    source = PrometheusMetricsSource("http://prometheus:9090/", client_job="locust-master")
    assert source.client_query == '{__name__=~"retrystorm_client_.+|up",job="locust-master"}'
    url = source.query_url(source.target_query)
    assert url.startswith("http://prometheus:9090/api/v1/query?query=")
    assert "%7B__name__%3D~%22retrystorm_target_.%2B%7Cup%22%2Cjob%3D%22target%22%7D" in url
