"""The gRPC channel model: local failures in TRANSIENT_FAILURE, reconnects on gRPC's connection backoff."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.loadgen.strategies import GrpcBackoff
from retrystorm.loadgen.strategies.channel import ChannelState, GrpcChannel, Pick

NO_JITTER = GrpcBackoff(jitter=0.0)


def refusing_until(channel: GrpcChannel, end_s: float, *, every_s: float = 0.05, horizon_s: float = 20.0) -> list:
    """Attempts every ``every_s`` against a backend that refuses connections until ``end_s``; their times and picks."""
    picks = []
    for tick in range(round(horizon_s / every_s)):
        now = tick * every_s
        pick = channel.pick(now)
        channel.settle(pick, connection_error=now < end_s)
        picks.append((now, pick))
    return picks


def test_a_refusing_backend_is_connected_on_grpc_s_backoff_and_the_rest_fail_locally():
    channel = GrpcChannel(random.Random(1), NO_JITTER)
    picks = refusing_until(channel, 5.0, every_s=0.01)
    connects = [at for at, pick in picks if pick is Pick.CONNECT]
    # 1 s, then x1.6: connects at 0, 1, 2.6, 5.16 (the first after the outage succeeds), each at the next tick
    assert connects == pytest.approx([0.0, 1.0, 2.6, 5.16], abs=0.0101)
    assert channel.state is ChannelState.READY
    assert channel.connects == 4
    before_recovery = [pick for at, pick in picks if at <= connects[-1]]
    assert before_recovery.count(Pick.FAIL) == len(before_recovery) - 4
    after = [pick for at, pick in picks if at > connects[-1]]
    assert set(after) == {Pick.SEND}
    assert channel.attempts == len(picks) == channel.sent + channel.failed_locally


def test_a_lost_connection_leaves_the_channel_idle_with_its_backoff_reset():
    channel = GrpcChannel(random.Random(1), NO_JITTER)
    refusing_until(channel, 3.0, horizon_s=6.0)  # three failed connects: the next delay would be 4.1 s
    pick = channel.pick(6.0)
    assert pick is Pick.SEND
    channel.settle(pick, connection_error=True)  # the connection is reset
    assert channel.state is ChannelState.IDLE
    assert channel.pick(6.01) is Pick.CONNECT
    channel.settle(Pick.CONNECT, connection_error=True)
    assert channel.pick(6.5) is Pick.FAIL
    assert channel.pick(7.01) is Pick.CONNECT  # 1 s after the connect began, not 4.1 s


def test_calls_wait_behind_a_first_connect_and_a_timeout_is_not_a_refusal():
    channel = GrpcChannel(random.Random(1), NO_JITTER)
    assert channel.pick(0.0) is Pick.CONNECT
    assert channel.pick(0.0) is Pick.WAIT  # IDLE -> CONNECTING: gRPC queues it, not fails it
    assert channel.attempts == 1
    channel.settle(Pick.CONNECT, connection_error=False)  # answered or timed out: connected
    assert channel.state is ChannelState.READY
    assert channel.pick(0.0) is Pick.SEND


def test_calls_fail_locally_while_a_reconnect_runs_after_a_failure():
    channel = GrpcChannel(random.Random(1), NO_JITTER)
    channel.settle(channel.pick(0.0), connection_error=True)
    assert channel.pick(1.0) is Pick.CONNECT
    assert channel.pick(1.0) is Pick.FAIL  # sticky TRANSIENT_FAILURE while it connects
    assert channel.failed_locally == 1


@given(seed=st.integers(0, 2**32 - 1), outage_s=st.floats(0.5, 60.0))
def test_connects_never_come_sooner_than_grpc_s_jittered_backoff_allows(seed: int, outage_s: float):
    channel = GrpcChannel(random.Random(seed))
    connects = [at for at, pick in refusing_until(channel, outage_s, horizon_s=outage_s + 1) if pick is Pick.CONNECT]
    for number, (first, second) in enumerate(itertools.pairwise(connects), start=1):
        low = min(1.0 * 1.6 ** (number - 1), 120.0) * 0.8
        assert second - first >= low - 1e-9
