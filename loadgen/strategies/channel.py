"""A gRPC channel's connection state, in virtual or real time: which attempts reach the network.

A gRPC client sends every call of a process over one channel, and the channel, not the retry policy,
decides whether a call touches the network. States (``grpc_connectivity_state``):

* ``IDLE``: no connection; the next call starts a connect (``CONNECTING``) and waits for it.
* ``READY``: a connection is up; calls go on it.
* ``TRANSIENT_FAILURE``: the last connect failed. A call started now with ``wait_for_ready`` false (the
  default) fails at once with ``UNAVAILABLE`` without touching the network, and a retry policy may retry
  it, failing locally again. The channel connects again by itself when its reconnect backoff ends, and
  stays in ``TRANSIENT_FAILURE`` while that connect runs (pick_first's sticky failure): calls keep failing
  locally until a connect succeeds.
* A ``READY`` connection that is lost (reset, closed) leaves the channel ``IDLE`` with its backoff reset:
  the next call connects at once.

The reconnect backoff is gRPC's "Connection Backoff Protocol" (grpc/grpc ``doc/connection-backoff.md``):
connect ``n`` since the last ``READY`` (``n`` = 1, 2, ...) starts at ``t_n`` and the next may start at
``t_n + min(INITIAL_BACKOFF * MULTIPLIER ** (n - 1), MAX_BACKOFF) * U(1 - JITTER, 1 + JITTER)``, with
INITIAL_BACKOFF 1 s, MULTIPLIER 1.6, JITTER 0.2, MAX_BACKOFF 120 s
(:class:`~retrystorm.loadgen.strategies.exponential.GrpcBackoff`). Those are grpc core's
``src/core/client_channel/subchannel.cc`` (``GRPC_SUBCHANNEL_*``; ``StartConnectingLocked`` sets
``next_attempt_time_ = now + backoff_.NextAttemptDelay()`` as each connect starts, ``OnConnectingFinishedLocked``
reports ``TRANSIENT_FAILURE`` and arms the retry timer, ``OnRetryTimerLocked`` reports ``IDLE``, and a lost
connection resets ``backoff_``) with ``src/core/util/backoff.cc`` (``NextAttemptDelay``: the first delay is the
initial backoff, each next one times the multiplier, capped, then ``x U(1 - jitter, 1 + jitter)``), read at
grpc/grpc commits 00030b0 and 15bab7a. Checked against grpcio 1.85 through the fault proxy's ``reset``
(``tests/loadgen/test_live_grpc_connections.py``): an 8 s outage took 4 refused connects, the fifth succeeded.

What this model simplifies, and why it matters little under load: grpcio reconnects when its backoff ends
even with no call waiting; here the connect is made by the first attempt at or after that time, which under a
load of many calls a second is the same instant. A connect that times out (a frozen server accepts into its
kernel's backlog; a peer gone silent) is not a failure here: only a refused or reset connection is.

Pure: time and randomness are passed in; the shell (the HTTP user, the simulator) tells it what became of
each attempt it let through.
"""

from __future__ import annotations

import enum
import random

from retrystorm.durations import format_duration
from retrystorm.loadgen.strategies.exponential import GrpcBackoff


class ChannelState(enum.StrEnum):
    """gRPC's connectivity states (the channel's)."""

    IDLE = "IDLE"
    CONNECTING = "CONNECTING"
    READY = "READY"
    TRANSIENT_FAILURE = "TRANSIENT_FAILURE"


class Pick(enum.StrEnum):
    """What becomes of an attempt the channel is asked to send."""

    #: On the network, over the connection.
    SEND = "send"
    #: Queued behind the connect in progress (from ``IDLE``, as gRPC queues it): pick again once it settles.
    WAIT = "wait"
    #: On the network, and it makes the connect: its fate is the connect's (tell :meth:`GrpcChannel.settle`).
    CONNECT = "connect"
    #: Failed locally with ``UNAVAILABLE`` at once: nothing reaches the network.
    FAIL = "fail"


class GrpcChannel:
    """One gRPC channel's connection state (see the module docstring); one per client process.

    Counters: ``attempts`` made, ``sent`` on the network, ``failed_locally``, ``connects`` started.
    """

    __slots__ = (
        "attempts",
        "backoff",
        "connects",
        "failed_locally",
        "next_connect_s",
        "rng",
        "sent",
        "since_ready",
        "state",
        "sticky",
    )

    def __init__(self, rng: random.Random, backoff: GrpcBackoff | None = None) -> None:
        self.backoff = backoff if backoff is not None else GrpcBackoff()
        self.rng = rng
        self.state = ChannelState.IDLE
        #: Connects started since the channel was last READY (``n`` of the backoff).
        self.since_ready = 0
        #: When the reconnect backoff ends (valid in ``TRANSIENT_FAILURE`` and while connecting).
        self.next_connect_s = 0.0
        #: In a connect after a failure: calls fail locally meanwhile (pick_first's sticky TRANSIENT_FAILURE).
        self.sticky = False
        self.attempts = 0
        self.sent = 0
        self.failed_locally = 0
        self.connects = 0

    def text(self) -> str:
        """What the channel does, in one line (``retrystorm strategies show``)."""
        backoff = self.backoff
        return (
            "one gRPC channel per process: after a refused or reset connect, attempts fail locally (UNAVAILABLE, "
            f"never sent) until its reconnect backoff ends, min({format_duration(backoff.base_s)} x "
            f"{backoff.factor:g}^(n-1), {format_duration(backoff.max_s)}) x U({1 - backoff.jitter:g}, "
            f"{1 + backoff.jitter:g}) after connect n began"
        )

    def pick(self, now_s: float) -> Pick:
        """What becomes of an attempt started at ``now_s`` (:attr:`Pick.WAIT` is not counted: it is picked again)."""
        state = self.state
        if state is ChannelState.CONNECTING and not self.sticky:
            return Pick.WAIT
        self.attempts += 1
        if state is ChannelState.IDLE or (state is ChannelState.TRANSIENT_FAILURE and now_s >= self.next_connect_s):
            self._start_connect(now_s)
            self.sent += 1
            return Pick.CONNECT
        if state is not ChannelState.READY:  # TRANSIENT_FAILURE, or a connect after one
            self.failed_locally += 1
            return Pick.FAIL
        self.sent += 1
        return Pick.SEND

    def _start_connect(self, now_s: float) -> None:
        self.since_ready += 1
        self.connects += 1
        self.next_connect_s = now_s + self.backoff.delay(self.since_ready, 0.0, self.rng)
        self.state = ChannelState.CONNECTING

    def settle(self, pick: Pick, *, connection_error: bool) -> None:
        """What became of an attempt sent with ``pick``: ``connection_error`` when its connection was refused or
        reset (any answer, or a timeout, is not one)."""
        if pick in (Pick.FAIL, Pick.WAIT):
            return
        if self.state is ChannelState.CONNECTING:
            if pick is not Pick.CONNECT:
                return  # sent before the connect began: only the connect's own attempt tells its fate
            if connection_error:
                self.state = ChannelState.TRANSIENT_FAILURE
                self.sticky = True
            else:
                self.state = ChannelState.READY
                self.since_ready = 0
                self.sticky = False
        elif connection_error and self.state is ChannelState.READY:
            self.state = ChannelState.IDLE  # a lost connection: the backoff starts afresh
