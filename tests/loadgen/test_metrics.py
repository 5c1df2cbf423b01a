"""Client metrics: names, types, units, labels and buckets."""

from prometheus_client import CollectorRegistry

from retrystorm.loadgen.metrics import LATENCY_BUCKETS_S, build_metrics
from retrystorm.loadgen.outcomes import AttemptOutcome, RequestOutcome


def test_names_types_and_labels():
    registry = CollectorRegistry()
    build_metrics(registry).for_strategy("fixed")
    kinds = {metric.name: metric.type for metric in registry.collect()}
    assert kinds == {
        "retrystorm_client_attempts": "counter",
        "retrystorm_client_attempts_started": "counter",
        "retrystorm_client_responses": "counter",
        "retrystorm_client_requests": "counter",
        "retrystorm_client_requests_started": "counter",
        "retrystorm_client_attempt_latency_seconds": "histogram",
        "retrystorm_client_request_latency_seconds": "histogram",
        "retrystorm_client_retries": "counter",
        "retrystorm_client_budget_refusals": "counter",
        "retrystorm_client_attempts_failed_locally": "counter",
        "retrystorm_client_users_in_backoff": "gauge",
        "retrystorm_client_backoff_delay_seconds": "histogram",
        "retrystorm_client_active_users": "gauge",
        "retrystorm_client_load_factor": "gauge",
        "retrystorm_client_requests_in_progress_age_seconds": "gaugehistogram",
        "retrystorm_client_generator_cpu_seconds": "counter",
        "retrystorm_client_generator_saturated": "gauge",
        "retrystorm_client_generator_attempts_started": "counter",
        "retrystorm_client_schedule_lag_seconds": "histogram",
        "retrystorm_client_loop_lag_seconds": "histogram",
    }
    for metric in registry.collect():
        for sample in metric.samples:
            assert sample.labels.get("strategy", "fixed") == "fixed"
            assert set(sample.labels) & {"strategy", "process"}  # per strategy, or per process (its CPU)


def test_every_outcome_series_exists_from_the_start():
    registry = CollectorRegistry()
    build_metrics(registry).for_strategy("smira")
    for outcome in AttemptOutcome:
        labels = {"strategy": "smira", "request": "/api", "outcome": outcome.value}
        assert registry.get_sample_value("retrystorm_client_attempts_total", labels) == 0
    for outcome in RequestOutcome:
        labels = {"strategy": "smira", "request": "/api", "outcome": outcome.value}
        assert registry.get_sample_value("retrystorm_client_requests_total", labels) == 0


def test_buckets_span_ten_milliseconds_to_ten_minutes():
    assert LATENCY_BUCKETS_S[0] == 0.01
    assert LATENCY_BUCKETS_S[-1] == 600.0
    assert list(LATENCY_BUCKETS_S) == sorted(LATENCY_BUCKETS_S)
    assert 2.0 in LATENCY_BUCKETS_S  # the seed's attempt timeout


def test_updates():
    registry = CollectorRegistry()
    bound = build_metrics(registry).for_strategy("exponential")
    bound.attempt(AttemptOutcome.TIMEOUT, 2.0)
    bound.attempt(AttemptOutcome.OK, 0.1)
    bound.request(RequestOutcome.OK, 2.2)
    bound.retry(0.1)
    bound.attempts_started.inc(3)  # the user counts each attempt as it sends it; one still awaits its answer
    get = registry.get_sample_value
    assert get("retrystorm_client_attempts_started_total", {"strategy": "exponential", "request": "/api"}) == 3
    assert (
        get("retrystorm_client_attempts_total", {"strategy": "exponential", "request": "/api", "outcome": "timeout"})
        == 1
    )
    assert (
        get(
            "retrystorm_client_attempt_latency_seconds_bucket",
            {"strategy": "exponential", "request": "/api", "outcome": "timeout", "le": "2.0"},
        )
        == 1
    )
    assert (
        get(
            "retrystorm_client_request_latency_seconds_bucket",
            {"strategy": "exponential", "request": "/api", "outcome": "ok", "le": "2.0"},
        )
        == 0
    )
    assert get("retrystorm_client_retries_total", {"strategy": "exponential"}) == 1
    assert get("retrystorm_client_backoff_delay_seconds_sum", {"strategy": "exponential"}) == 0.1


def test_the_load_factor_is_served_only_once_a_shape_sets_it():
    registry = CollectorRegistry()
    metrics = build_metrics(registry)
    metrics.for_strategy("fixed")
    assert registry.get_sample_value("retrystorm_client_load_factor", {"strategy": "fixed"}) is None
    metrics.show_load_factor("fixed", 2.0)
    assert registry.get_sample_value("retrystorm_client_load_factor", {"strategy": "fixed"}) == 2.0
    metrics.show_load_factor("fixed", 1.0)
    assert registry.get_sample_value("retrystorm_client_load_factor", {"strategy": "fixed"}) == 1.0


def test_two_registries_never_collide():
    first, second = CollectorRegistry(), CollectorRegistry()
    build_metrics(first).for_strategy("fixed").retry(1.0)
    build_metrics(second)
    assert second.get_sample_value("retrystorm_client_retries_total", {"strategy": "fixed"}) is None


def test_requests_in_progress_are_a_gauge_histogram_of_their_ages():
    from retrystorm.loadgen.aggregate import merge, snapshot
    from retrystorm.loadgen.metrics import RequestsInProgress

    now = [100.0]
    tracker = RequestsInProgress(clock=lambda: now[0])
    registry = CollectorRegistry()
    registry.register(tracker)
    name = "retrystorm_client_requests_in_progress_age_seconds"
    old = tracker.begin("fixed", 10.0)  # 90 s old
    tracker.begin("fixed", 99.95)  # 50 ms old
    get = registry.get_sample_value
    assert get(name + "_bucket", {"strategy": "fixed", "le": "0.05"}) == 1
    assert get(name + "_bucket", {"strategy": "fixed", "le": "60.0"}) == 1
    assert get(name + "_bucket", {"strategy": "fixed", "le": "120.0"}) == 2
    assert get(name + "_gcount", {"strategy": "fixed"}) == 2
    tracker.end(old)
    tracker.end(old)  # twice is harmless
    now[0] = 200.0
    assert get(name + "_bucket", {"strategy": "fixed", "le": "+Inf"}) == 1
    assert get(name + "_bucket", {"strategy": "fixed", "le": "60.0"}) == 0  # it has aged
    tracker.end(1)
    assert get(name + "_gcount", {"strategy": "fixed"}) == 0  # nothing in progress reads 0, not absent
    # a master sums it like a gauge: a worker that left adds nothing
    tracker.begin("fixed", 199.0)
    part = snapshot(registry)
    merged = merge([(part, True), (part, False)])[name][2]
    assert [value for sample, _, value in merged if sample.endswith("_gcount")] == [1.0]


def test_a_user_counts_its_request_in_progress_until_it_ends():
    registry = CollectorRegistry()
    bound = build_metrics(registry).for_strategy("smira")
    token = bound.begin_request(0.0)
    assert len(bound.in_progress) == 1
    bound.end_request(token)
    assert len(bound.in_progress) == 0


def test_each_request_of_a_mix_has_its_own_series():
    registry = CollectorRegistry()
    bound = build_metrics(registry).for_strategy("fixed", ["POST /orders", "GET /orders/1"])
    bound.by_request["GET /orders/1"].attempts_started.inc(2)
    bound.by_request["POST /orders"].attempt(AttemptOutcome.TIMEOUT, 1.0)
    get = registry.get_sample_value
    assert get("retrystorm_client_attempts_started_total", {"strategy": "fixed", "request": "GET /orders/1"}) == 2
    assert get("retrystorm_client_attempts_started_total", {"strategy": "fixed", "request": "POST /orders"}) == 0
    labels = {"strategy": "fixed", "request": "POST /orders", "outcome": "timeout"}
    assert get("retrystorm_client_attempts_total", labels) == 1


def test_responses_are_counted_by_request_and_status():
    registry = CollectorRegistry()
    bound = build_metrics(registry).for_strategy("fixed", ["POST /orders", "GET /"])
    for status in (404, 404, 200):
        bound.by_request["GET /"].response(status)
    bound.by_request["POST /orders"].response(415)

    def get(request, status):
        labels = {"strategy": "fixed", "request": request, "status": status}
        return registry.get_sample_value("retrystorm_client_responses_total", labels)

    assert (get("GET /", "404"), get("GET /", "200"), get("POST /orders", "415")) == (2, 1, 1)
    assert get("POST /orders", "404") is None
