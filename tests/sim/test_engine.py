"""The engine: determinism, conservation, outage semantics, timeouts, open loop, budgets."""

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrystorm.errors import UserError
from retrystorm.experiment.scenario import OutageWindow, RunSpec
from retrystorm.loadgen.strategies import RetryPolicy, parse_budget, parse_strategy
from retrystorm.loadgen.think import ConstantThink, ExponentialThink
from retrystorm.sim.config import RunConfig
from retrystorm.sim.engine import BACKOFF, WAITING, Simulation, simulate
from retrystorm.target.models import parse_model

SIM_KNOBS = {field.name for field in dataclasses.fields(RunConfig)} - {"spec"}


def config(**changes):
    """A run of 200 users, fixed 100 ms retries, the seed's model, one outage; ``changes`` to the spec or the knobs."""
    values = {
        "label": "t",
        "model": parse_model("exponential"),
        "policy": RetryPolicy(strategy=parse_strategy("fixed:100ms")),
        "users": 200,
        "duration_s": 60.0,
        "outages": (OutageWindow(20.0, 30.0),),
    }
    values.update(changes)
    knobs = {key: value for key, value in values.items() if key in SIM_KNOBS}
    spec = RunSpec(**{key: value for key, value in values.items() if key not in SIM_KNOBS})
    return RunConfig(spec=spec, **knobs)


def document(run_config):
    output = simulate(run_config)
    return json.dumps(
        [output.result().to_json(), output.latencies, output.series.rows()], sort_keys=True, allow_nan=True
    )


def test_same_seed_same_result_to_the_last_digit():
    assert document(config(seed=5)) == document(config(seed=5))
    assert document(config(seed=5)) != document(config(seed=6))


def check_conservation(run_config):
    simulation = Simulation(run_config)
    output = simulation.run()
    counts = output.counts
    in_progress = sum(1 for client in simulation.clients if client.state in (WAITING, BACKOFF))
    # every logical request succeeded, gave up, or is still waiting or backing off
    assert counts["requests"] == counts["succeeded"] + counts["gave_up"] + in_progress
    assert counts["unfinished"] == in_progress
    # every attempt on the wire was released, is still in the model, waits in the accept queue, or was dropped
    assert counts["attempts"] == (
        counts["released"] + counts["in_flight_end"] + counts["accept_queue_end"] + counts["dropped"]
    )
    # every answer went to a client still waiting, or arrived late
    answered = counts["succeeded"] + counts["rejections"]
    assert counts["released"] == answered + counts["late_answers"]
    assert sum(output.series.attempts) == counts["attempts"]
    assert sum(output.series.goodput) == counts["succeeded"]
    return output


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(["exponential", "fixed:base_delay=50ms", "queue:workers=3,overwhelm_at=10"]),
    strategy=st.sampled_from(["none", "fixed:100ms", "smira", "exponential:base=50ms,jitter=full", "decorrelated"]),
    budget=st.sampled_from([None, "tokens", "quota", "ratio", "adaptive"]),
    timeout=st.sampled_from([None, 0.5, 2.0]),
    max_attempts=st.sampled_from([None, 3]),
    arrival=st.sampled_from(["closed", "open"]),
    backlog=st.sampled_from([None, 20]),
    seed=st.integers(0, 1000),
)
def test_conservation(*, model, strategy, budget, timeout, max_attempts, arrival, backlog, seed):
    run_config = config(
        model=parse_model(model),
        policy=RetryPolicy(strategy=parse_strategy(strategy), max_attempts=max_attempts),
        budget=parse_budget(budget) if budget else None,
        attempt_timeout_s=timeout,
        arrival=arrival,
        rate=15.0 if arrival == "open" else None,
        users=30,
        duration_s=40.0,
        think=ExponentialThink(average_s=2.0),
        outages=(OutageWindow(10.0, 15.0), OutageWindow(25.0, 27.5)),
        accept_backlog=backlog,
        seed=seed,
    )
    check_conservation(run_config)


def test_nothing_is_served_while_frozen():
    run_config = config(model=parse_model("fixed:base_delay=100ms"), attempt_timeout_s=None, users=100)
    output = check_conservation(run_config)
    series = output.series
    assert all(series.goodput[i] == 0 for i in range(20, 30))  # intervals [20, 21) ... [29, 30)
    # reading i is taken at (i + 1) s, before the events of that instant
    assert [series.frozen[i] for i in (18, 19, 20, 29, 30)] == [0, 0, 1, 1, 0]
    assert series.in_flight[20] == series.in_flight[29]  # nothing admitted or released meanwhile
    assert series.accept_queue[29] > 50  # attempts wait in the accept queue...
    assert series.accept_queue[30] == 0  # ...and are admitted at the resume
    assert series.goodput[30] > 50  # then served: a flood at the resume
    assert max(output.latencies) >= 9.9  # a request sent as the outage began waited it out


def test_a_full_accept_backlog_drops_attempts():
    output = check_conservation(config(accept_backlog=25))
    assert output.counts["dropped"] > 0
    assert max(output.series.accept_queue) == 25


def test_abandoned_attempts_stay_in_the_model():
    output = simulate(config(users=1000, duration_s=120.0))  # fixed 100 ms never recovers
    counts = output.counts
    assert counts["timeouts"] > 1000
    assert counts["in_flight_end"] > 10_000  # the server keeps what its clients gave up
    assert output.peak_in_flight >= counts["in_flight_end"]


def test_open_loop_arrivals_follow_the_rate():
    output = simulate(config(arrival="open", rate=50.0, outages=(), duration_s=100.0))
    assert output.counts["requests"] == pytest.approx(5000, rel=0.05)
    constant = simulate(config(arrival="open", rate=50.0, outages=(), duration_s=100.0, open_arrivals="constant"))
    assert abs(constant.counts["requests"] - 5000) <= 1  # at 0.02, 0.04, ... before 100 s


def test_spawn_rate_ramps_users_up():
    ramped = simulate(config(spawn_rate=2.0, users=100, outages=(), duration_s=30.0))
    assert sum(ramped.series.started[:10]) < sum(ramped.series.started[20:30])


def test_max_attempts_gives_up():
    policy = RetryPolicy(strategy=parse_strategy("fixed:100ms"), max_attempts=2)
    output = check_conservation(config(policy=policy))
    assert output.counts["gave_up"] > 0
    assert max(output.request_attempts) <= 2


def test_local_rejections_advance_virtual_time():
    """``none`` with the adaptive budget: a zero delay after a local rejection must not loop at one instant."""
    run_config = config(
        policy=RetryPolicy(strategy=parse_strategy("none")),
        budget=parse_budget("adaptive"),
        users=30,
        duration_s=60.0,
        think=ExponentialThink(average_s=2.0),
        outages=(OutageWindow(5.0, 35.0),),
    )
    output = check_conservation(run_config)
    assert output.counts["rejected_locally"] > 1000


@pytest.mark.parametrize("think", [ConstantThink(wait_s=0.0), ExponentialThink(average_s=0.0)])
def test_a_run_that_would_never_advance_virtual_time_is_refused(think):
    """Zero think time against a model that answers at once: every request at one instant, forever."""
    with pytest.raises(UserError, match=r"load.think_time .*:0s with model fixed:base_delay=0s: .*forever"):
        config(model=parse_model("fixed:base_delay=0"), think=think, outages=())


@pytest.mark.parametrize(
    "changes",
    [
        {"think": ConstantThink(wait_s=0.001)},
        {"model": parse_model("fixed:base_delay=1ms")},
        {"model": parse_model("exponential:base_delay=0")},  # released at its first check, one tick on
        {"requests_per_user": 3},
        {"arrival": "open", "rate": 50.0},
    ],
)
def test_zero_time_is_fine_when_something_advances_the_clock(changes):
    values = {"model": parse_model("fixed:base_delay=0"), "think": ConstantThink(wait_s=0.0), "outages": ()}
    output = check_conservation(config(**{**values, "users": 5, "duration_s": 2.0, **changes}))
    assert output.counts["succeeded"] > 0


def test_open_loop_smira_grows_its_first_backoff_from_the_wait_before_the_request():
    """As the live user with --arrival open: each request's session sees its user's wait (think time) before it.

    Every attempt times out (the model answers after 10 s, the timeout is 1 s), so each
    request retries once after e * that wait (smira without jitter), then gives up.
    """
    policy = RetryPolicy(strategy=parse_strategy("smira:jitter=0"), max_attempts=2)
    run_config = config(
        model=parse_model("fixed:base_delay=10s"),
        policy=policy,
        attempt_timeout_s=1.0,
        arrival="open",
        rate=20.0,
        users=100,
        duration_s=60.0,
        outages=(),
    )
    simulation = Simulation(run_config)
    simulation.run()
    retried = [client for client in simulation.clients if client.session.retry_number == 1]
    assert len(retried) > 500
    for client in retried:
        assert client.session.last_sleep_s == pytest.approx(min(2.71828 * client.think_s, 300.0))
    waits = [client.think_s for client in retried]
    assert sum(waits) / len(waits) == pytest.approx(100 / 20.0, rel=0.15)  # users / rate, as the runner's think time
    assert min(waits) < 1.0 and max(waits) > 10.0  # drawn per request (exponential), not one constant


def test_unfinished_requests_are_counted_at_their_age_and_in_progress_per_interval():
    output = simulate(config(outages=(OutageWindow(20.0, 50.0),)))  # fixed retries: the storm never ends
    result = output.result()
    assert result.unfinished > 0
    assert len(output.unfinished.ages) == result.unfinished == result.latency.censored
    assert max(output.unfinished.ages) <= 60.0
    assert len(output.latencies) == result.succeeded + result.gave_up
    assert output.series.in_progress[-1] == result.unfinished
    # after the outage began, what users waited grows with time: the p50 is at least the time since then
    p50 = output.series.latency["latency_p50"]
    assert p50[-1] is not None and p50[-1] > 20.0
    assert result.latency.p99 > 20.0  # the unfinished ones, not the few that ended quickly


def test_every_interval_has_its_latency_percentiles_in_the_csv_rows():
    output = simulate(config())
    rows = output.series.rows()
    assert {"in_progress", "latency_p50", "latency_p95", "latency_p99"} <= set(rows[0])
    assert all(row["latency_p50"] <= row["latency_p95"] <= row["latency_p99"] for row in rows if row["latency_p50"])
