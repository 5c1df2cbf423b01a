"""/metrics: names, types, units, buckets and values, as Prometheus parses them."""

import json
import random

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from retrystorm.target.faults import FaultInjector, FaultRule
from retrystorm.target.metrics import RESPONSE_TIME_BUCKETS_S, build_metrics
from retrystorm.target.models import parse_model
from retrystorm.target.probe import fetch, read_reply, send_and_leave

EXPECTED_TYPES = {
    "retrystorm_target_in_flight_requests": "gauge",
    "retrystorm_target_abandoned_in_flight_requests": "gauge",
    "retrystorm_target_delay_seconds": "gauge",
    "retrystorm_target_open_connections": "gauge",
    "retrystorm_target_model_info": "gauge",  # an info metric, as the text format carries it
    "retrystorm_target_model_parameter": "gauge",
    "retrystorm_target_capacity_ratio": "gauge",
    "retrystorm_target_injected_error_probability": "gauge",
    "retrystorm_target_requests": "counter",
    "retrystorm_target_response_time_seconds": "histogram",
    "retrystorm_target_bad_requests": "counter",
    "retrystorm_target_injected_failures": "counter",
    "process_cpu_seconds": "counter",
    "process_resident_memory_bytes": "gauge",
    "python_gc_collections": "counter",
    "python_info": "gauge",
}


async def scrape(port):
    reply = await fetch(port, "/metrics")
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {family.name: family for family in text_string_to_metric_families(reply.text)}


def test_every_metric_is_exposed_with_its_type(live):
    async def scenario():
        async with live.serve() as app:
            families = await scrape(app.port)
            assert {name: families[name].type for name in EXPECTED_TYPES if name in families} == EXPECTED_TYPES

    live.run(scenario())


def test_response_time_buckets_span_10ms_to_10min(live):
    async def scenario():
        async with live.serve(live.clock) as app:
            [(reader, writer)] = await live.hold(app, 1)
            live.clock.now_s = 0.3
            await read_reply(reader)
            writer.close()
            family = (await scrape(app.port))["retrystorm_target_response_time_seconds"]
            ok_buckets = {
                s.labels["le"]: s.value
                for s in family.samples
                if s.name.endswith("_bucket") and s.labels["outcome"] == "ok"
            }
            assert list(ok_buckets) == [*(repr(float(b)) for b in RESPONSE_TIME_BUCKETS_S), "+Inf"]
            assert (RESPONSE_TIME_BUCKETS_S[0], RESPONSE_TIME_BUCKETS_S[-1]) == (0.01, 600)
            assert ok_buckets["0.25"] == 0  # answered at 0.3 s
            assert ok_buckets["0.5"] == ok_buckets["+Inf"] == 1

    live.run(scenario())


def test_state_gauges_follow_the_service(live):
    async def scenario():
        async with live.serve(live.clock) as app:
            await send_and_leave(app.port)
            streams = await live.open_requests(app.port, 2)
            await live.eventually(lambda: app.driver.in_flight == 3 and app.abandoned_in_flight == 1)
            values = {
                s.name: s.value for family in (await scrape(app.port)).values() for s in family.samples if not s.labels
            }
            assert values["retrystorm_target_in_flight_requests"] == 3
            assert values["retrystorm_target_abandoned_in_flight_requests"] == 1
            assert values["retrystorm_target_open_connections"] == 3  # two clients and this scrape
            assert values["retrystorm_target_delay_seconds"] == 0.1
            for _, writer in streams:
                writer.close()

    live.run(scenario())


def test_trigger_gauges_follow_the_admin_api(live):
    """A slow trigger's capacity and an errors trigger's probability, in force, then restored."""

    async def unlabelled(port):
        return {s.name: s.value for family in (await scrape(port)).values() for s in family.samples if not s.labels}

    async def scenario():
        async with live.serve(live.clock) as app:
            values = await unlabelled(app.port)
            assert values["retrystorm_target_capacity_ratio"] == 1.0
            assert values["retrystorm_target_injected_error_probability"] == 0.0
            await fetch(app.port, "/admin/capacity", "PUT", json.dumps({"capacity": 0.4}).encode())
            await fetch(app.port, "/admin/faults", "PUT", json.dumps({"status": 503, "probability": 0.5}).encode())
            values = await unlabelled(app.port)
            assert values["retrystorm_target_capacity_ratio"] == 0.4
            assert values["retrystorm_target_injected_error_probability"] == 0.5
            await fetch(app.port, "/admin/capacity", "DELETE")
            await fetch(app.port, "/admin/faults", "DELETE")
            values = await unlabelled(app.port)
            assert values["retrystorm_target_capacity_ratio"] == 1.0
            assert values["retrystorm_target_injected_error_probability"] == 0.0

    live.run(scenario())


def test_a_spent_fault_rule_injects_with_probability_zero():
    faults = FaultInjector(random.Random(1))
    faults.arm(FaultRule(probability=1.0, count=1))
    assert faults.probability == 1.0
    assert faults.judge(1, 0.0) == 503
    assert faults.probability == 0.0


def test_model_parameters_are_published_in_base_units():
    registry = CollectorRegistry()
    metrics = build_metrics(registry)
    metrics.show_model(parse_model("queue:workers=3,service_time=2s"))
    value = registry.get_sample_value
    assert value("retrystorm_target_model_parameter", {"model": "queue", "parameter": "service_time"}) == 2.0
    assert value("retrystorm_target_model_parameter", {"model": "queue", "parameter": "workers"}) == 3
    # progress_per_tick=auto has no number to publish
    assert value("retrystorm_target_model_parameter", {"model": "queue", "parameter": "progress_per_tick"}) is None
    metrics.show_model(parse_model("fixed"))
    assert value("retrystorm_target_model_parameter", {"model": "queue", "parameter": "workers"}) is None


def test_two_services_do_not_share_metrics():
    first, second = CollectorRegistry(), CollectorRegistry()
    build_metrics(first).traffic.observe("ok", 0.1)
    build_metrics(second)
    assert first.get_sample_value("retrystorm_target_requests_total", {"outcome": "ok"}) == 1
    assert second.get_sample_value("retrystorm_target_requests_total", {"outcome": "ok"}) == 0
