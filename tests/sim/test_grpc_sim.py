"""gRPC in the simulator: grpc-retry's channel under a reset, deadlines at a frozen server, real mode's deadline."""

from retrystorm.experiment.scenario import OutageWindow, RunSpec
from retrystorm.experiment.scenario.network import HangWindow, ResetWindow
from retrystorm.loadgen.grpc_settings import DEFAULT_METHOD, GrpcMode, GrpcSettings
from retrystorm.loadgen.strategies import parse_strategy, resolve
from retrystorm.loadgen.think import ConstantThink
from retrystorm.sim.config import RunConfig
from retrystorm.sim.engine import simulate
from retrystorm.target.models import parse_model

EMULATED = GrpcSettings(GrpcMode.EMULATED, DEFAULT_METHOD, b"")


def config(strategy: str = "grpc-retry", *, grpc=EMULATED, triggers=(), outages=(), **changes) -> RunConfig:
    """20 users thinking 200 ms against a 10 ms server for 30 s, a 2 s attempt timeout."""
    policy, budget = resolve(parse_strategy(strategy))
    values = {
        "label": "t",
        "model": parse_model("fixed:base_delay=10ms"),
        "policy": policy,
        "budget": budget,
        "users": 20,
        "think": ConstantThink(wait_s=0.2),
        "duration_s": 30.0,
        "attempt_timeout_s": 2.0,
        "grpc": grpc,
        **changes,
    }
    return RunConfig(spec=RunSpec(**values), triggers=triggers, outages=outages)


def test_a_reset_puts_grpc_retry_s_channel_in_transient_failure_and_its_attempts_fail_locally():
    reset = (ResetWindow(10, 13.5, probability=1.0),)
    channel = simulate(config(triggers=reset))
    every_attempt = simulate(config("grpc-retry:channel=false", triggers=reset))
    # reconnects at 0, 0.8-1.2, 2.08-3.12 s into the reset: three refused, the fourth (4.13-6.19 s) gets through
    assert 3 <= sum(channel.series.attempts[10:14]) <= 4  # on the wire: the connects (and the call sent as it broke)
    assert channel.counts["failed_locally"] > 200
    assert sum(channel.series.goodput[10:14]) == 0
    assert sum(channel.series.goodput[16:20]) > 0  # back by 16.2 s at the latest
    assert sum(every_attempt.series.attempts[10:14]) > 50 * sum(channel.series.attempts[10:14])
    assert "failed_locally" not in every_attempt.counts
    assert channel.result().to_json()["failed_locally"] == channel.counts["failed_locally"]


def test_the_same_channel_serves_an_http_load_with_grpc_retry():
    reset = (ResetWindow(10, 13.5, probability=1.0),)
    http = simulate(config(grpc=None, triggers=reset))
    assert http.counts["failed_locally"] > 200
    assert "cancelled" not in http.counts  # an HTTP server serves what waited in its backlog


def test_calls_queued_at_a_frozen_grpc_server_whose_client_gave_up_are_dropped_at_the_resume():
    frozen = (OutageWindow(10.0, 15.0),)
    grpc = simulate(config(outages=frozen))
    http = simulate(config(grpc=None, outages=frozen))
    assert grpc.counts["cancelled"] > 0
    assert grpc.peak_in_flight < http.peak_in_flight  # the HTTP server takes its abandoned requests at once


def test_real_mode_gives_a_call_its_deadline_over_all_its_attempts():
    real = GrpcSettings(GrpcMode.REAL, DEFAULT_METHOD, b"")
    # every attempt fails at once: retries after 0.1 and 0.2 s (+-20 %); a 0.15 s deadline stops the call after two
    errors = {"attempt_timeout_s": 0.15}
    reset = (ResetWindow(1, 30, probability=1.0),)
    emulated = simulate(config("grpc-retry:channel=false", triggers=reset, **errors))
    deadline = simulate(config("grpc-retry:channel=false", grpc=real, triggers=reset, **errors))
    assert max(emulated.request_attempts) == 4
    assert max(deadline.request_attempts) == 2


def test_a_connect_a_hang_holds_counts_as_made_and_its_calls_time_out():
    hung = simulate(config(triggers=(HangWindow(10, 14, probability=1.0),)))
    assert hung.counts["failed_locally"] == 0
    assert sum(hung.series.timeouts[10:15]) > 0
