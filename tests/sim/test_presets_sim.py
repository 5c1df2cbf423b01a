"""Presets in the simulator: retry conditions, budget-delayed sends, the presets' budgets, conservation."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrystorm.experiment.scenario import OutageWindow, RunSpec
from retrystorm.loadgen.strategies import BudgetState, RetryBudget, RetryPolicy, parse_strategy, resolve
from retrystorm.loadgen.think import ExponentialThink
from retrystorm.sim.config import RunConfig
from retrystorm.sim.engine import BACKOFF, WAITING, Simulation, simulate
from retrystorm.target.models import parse_model


def preset_config(spec: str, **changes) -> RunConfig:
    policy, budget = resolve(parse_strategy(spec))
    values = {
        "label": spec,
        "model": parse_model("fixed:base_delay=100ms"),
        "policy": policy,
        "budget": budget,
        "users": 50,
        "duration_s": 40.0,
        "think": ExponentialThink(average_s=2.0),
        "outages": (OutageWindow(10.0, 20.0),),
    }
    values.update(changes)
    run_spec = RunSpec(**{key: value for key, value in values.items() if key in SPEC_FIELDS})
    return RunConfig(spec=run_spec, **{key: value for key, value in values.items() if key not in SPEC_FIELDS})


SPEC_FIELDS = {field.name for field in dataclasses.fields(RunSpec)}


def test_grpc_retry_does_not_retry_timeouts_in_the_simulator_either():
    output = simulate(preset_config("grpc-retry"))
    assert output.counts["timeouts"] > 100
    assert output.counts["attempts"] == output.counts["requests"]  # DEADLINE_EXCEEDED is never retried
    assert output.counts["gave_up"] >= output.counts["timeouts"]


def test_rejections_are_503s_that_the_presets_conditions_retry_or_not():
    # a queue that rejects what waits over 50 ms: 503 answers, no timeouts
    model = parse_model("queue:workers=1,service_time=100ms,reject_after=50ms")
    changes = {"model": model, "outages": (), "users": 30, "think": ExponentialThink(average_s=0.5)}
    polly = simulate(preset_config("polly", **changes))  # the default ShouldHandle: a 503 is a result
    assert polly.counts["rejections"] > 100
    assert polly.counts["attempts"] == polly.counts["requests"]
    grpc = simulate(preset_config("grpc-retry", **changes))  # 503 -> UNAVAILABLE: retried
    assert grpc.counts["attempts"] > 1.2 * grpc.counts["requests"]
    assert max(grpc.request_attempts) <= 4


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SendEverySecond(RetryBudget):
    """A test budget: every send waits one second (a stand-in for a rate limiter's bucket)."""

    def start(self) -> BudgetState:
        return WaitingState()


class WaitingState(BudgetState):
    def before_send(self, now_s: float, *, retry: bool) -> float:
        return 1.0

    def try_retry(self, now_s: float, *, after_timeout: bool, throttled: bool = False) -> float | None:
        return 0.0


def test_a_budgets_wait_delays_the_send_in_virtual_time():
    policy = RetryPolicy(strategy=parse_strategy("fixed:100ms"))
    run = preset_config("fixed:100ms", policy=policy, budget=SendEverySecond(), outages=(), users=20)
    output = simulate(run)
    # each request waits 1 s for its send, then the 100 ms answer
    assert min(output.latencies) == pytest.approx(1.1)
    assert max(output.latencies) == pytest.approx(1.1)


def test_envoys_circuit_breaker_holds_retries_in_flight_to_three():
    simulation = Simulation(preset_config("envoy:num_retries=10", users=200))
    highest = 0
    state = simulation.budget
    original = state.try_retry

    def watching(now_s: float, *, after_timeout: bool, throttled: bool = False) -> float | None:
        nonlocal highest
        granted = original(now_s, after_timeout=after_timeout, throttled=throttled)
        highest = max(highest, state.retries)
        return granted

    state.try_retry = watching
    output = simulation.run()
    assert highest == 3
    assert state.refusals > 100  # the freeze times out far more than three attempts at once
    assert output.counts["attempts"] > output.counts["requests"]


def test_the_aws_rate_limiter_stays_off_without_throttles():
    standard = simulate(preset_config("aws-standard"))
    adaptive = simulate(preset_config("aws-adaptive"))
    assert adaptive.counts == standard.counts  # no 429 ever: the same run


PRESETS = ["grpc-retry", "envoy", "aws-standard", "aws-adaptive", "polly", "resilience4j", "urllib3", "finagle"]


@settings(max_examples=30, deadline=None)
@given(
    preset=st.sampled_from([*PRESETS, "polly:backoff=exponential,jitter=true", "grpc-retry:max_tokens=5"]),
    model=st.sampled_from(["exponential", "fixed:base_delay=50ms", "queue:workers=3,overwhelm_at=10"]),
    arrival=st.sampled_from(["closed", "open"]),
    seed=st.integers(0, 1000),
)
def test_conservation_with_presets(*, preset, model, arrival, seed):
    simulation = Simulation(
        preset_config(
            preset,
            model=parse_model(model),
            arrival=arrival,
            rate=15.0 if arrival == "open" else None,
            users=30,
            outages=(OutageWindow(10.0, 15.0), OutageWindow(25.0, 27.5)),
            seed=seed,
        )
    )
    output = simulation.run()
    counts = output.counts
    in_progress = sum(1 for client in simulation.clients if client.state in (WAITING, BACKOFF))
    assert counts["requests"] == counts["succeeded"] + counts["gave_up"] + in_progress
    assert counts["attempts"] == (
        counts["released"] + counts["in_flight_end"] + counts["accept_queue_end"] + counts["dropped"]
    )
    cap = simulation.config.spec.policy.max_attempts
    assert cap is None or max(output.request_attempts, default=0) <= cap
