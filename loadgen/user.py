"""The Locust user: one of the seed's clients, with a configurable retry strategy.

Mirrors the seed's Go client (``client.go`` of github.com/smira/exponential-backoff):
think, send an attempt bounded by the attempt timeout (connect and response), and on a
timeout, connection error, 5xx or 429 wait the strategy's delay and retry, as
:class:`~retrystorm.loadgen.strategies.RetrySession` decides (attempt cap, deadline, the
process's shared budget, ``Retry-After``). A timed-out attempt's connection is closed
and forgotten; the server keeps working on the request, as in the seed.

Each logical request is one request of the mix (``--request``, :mod:`retrystorm.loadgen.request_mix`),
drawn by weight with the user's seeded random source: its method, path, headers and
body. Every attempt fires a Locust request event named after the request (its ``name``;
the path for the default ``GET /api``; context: the user's ``context()`` plus attempt
number, outcome, strategy); every logical request fires one named ``NAME (logical)``
(context: attempts, outcome, strategy, and why it gave up) whose response time includes
the backoff, with an exception when it gave up. Only the outcomes of ``--retry-on`` are
retried; any other failure gives up at once (reason ``not_retryable``). The
Prometheus metrics of :mod:`retrystorm.loadgen.metrics` are updated alongside (an attempt is
counted in ``attempts_started`` as it is sent, by outcome when it ends).

Attempts go through the connection pool of ``FastHttpUser``'s client (geventhttpclient)
directly, without ``FastHttpSession.request``: that layer turns a timeout into a
wrapped error and reports an event per call, and here each attempt needs its own
classification and context. Retries carry a ``Retrystorm-Attempt`` header (2, 3, ...)
so a server can tell them apart, as gRPC's ``grpc-previous-rpc-attempts``.

With a strategy whose library has a channel (``grpc-retry``: :mod:`retrystorm.loadgen.strategies.channel`),
the process's users share its model: an attempt the channel fails locally (``TRANSIENT_FAILURE``) is made
and retried as a connection error, counted in ``attempts_failed_locally``, never sent (no Locust attempt
event, not in ``attempts_started``); a refused or reset attempt it let through tells it the connect failed.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import time
from collections.abc import Mapping
from typing import Any

import gevent
import geventhttpclient.client
from gevent.pool import Group
from geventhttpclient import URL
from geventhttpclient._parser import HTTPParseError
from geventhttpclient.client import HTTPClient
from geventhttpclient.response import HTTPConnectionClosed
from locust import FastHttpUser, task

from retrystorm.loadgen.metrics import RequestMetrics
from retrystorm.loadgen.options import Arrival
from retrystorm.loadgen.outcomes import (
    AttemptOutcome,
    RequestOutcome,
    outcome_of_status,
    parse_amz_retry_after,
    parse_retry_after,
)
from retrystorm.loadgen.plugin import runtime_of
from retrystorm.loadgen.request_mix import RequestMix, RequestSpec
from retrystorm.loadgen.schedule_lag import PlannedWait, plan_wait
from retrystorm.loadgen.strategies import GiveUp, Pick, RetryAfter, RetrySession

logger = logging.getLogger(__name__)

ATTEMPT_HEADER = "Retrystorm-Attempt"
#: How often an attempt queued behind its channel's connect looks whether the connect has settled.
CONNECT_POLL_S = 0.005


class AttemptError(Exception):
    """Why an attempt failed, as Locust's failure table shows it (one row per kind)."""


class GaveUpError(Exception):
    """Why a logical request gave up, as Locust's failure table shows it."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Kind:
    """One request of the mix, ready to send: the spec, its URL parts, names and metrics."""

    spec: RequestSpec
    path: str
    url: str
    logical_name: str
    body: bytes
    metrics: RequestMetrics

    def headers(self, attempt: int) -> dict[str, str] | None:
        """The request's headers, and ``Retrystorm-Attempt: N`` on a retry (``None``: none at all)."""
        headers = dict(self.spec.headers)
        if attempt > 1:
            headers[ATTEMPT_HEADER] = str(attempt)
        return headers or None


@dataclasses.dataclass(frozen=True, slots=True)
class AttemptEnd:
    """How one attempt ended: its number, outcome, HTTP status (0: none), latency, start, body length, answer."""

    number: int
    outcome: AttemptOutcome
    status: int
    latency_s: float
    started_epoch: float
    length: int
    response: Any = None
    error: BaseException | None = None

    def exception(self) -> AttemptError | None:
        """What Locust's failure table shows for it (``None``: it succeeded)."""
        if self.outcome is AttemptOutcome.OK:
            return None
        return _attempt_error(self.outcome, self.status, self.error)


@dataclasses.dataclass(slots=True)
class LogicalRequest:
    """The bookkeeping of one logical request."""

    slept_s: float
    kind: _Kind
    started_epoch: float = dataclasses.field(default_factory=time.time)
    started: float = dataclasses.field(default_factory=time.monotonic)
    attempts: int = 0
    length: int = 0


class RetryingUser(FastHttpUser):
    """A seed client: think, request, retry with the configured strategy.

    Configure it with the command-line options of :mod:`retrystorm.loadgen.options`; subclass
    it (with ``abstract = True`` removed) to change ``concurrency`` or other
    ``FastHttpUser`` settings.
    """

    abstract = True

    @classmethod
    def retried_by(cls, values: Mapping[str, Any]) -> str:  # noqa: ARG003 - the gRPC user reads its mode
        """What retries this user's requests, in words (the Retry storm tab says it of each run)."""
        return "retrystorm's emulation (the strategy retries)"

    #: Open arrival keeps many requests of one user in flight at once.
    concurrency = 100_000

    def __init__(self, environment: Any) -> None:
        self.runtime = runtime_of(environment)
        run = self.runtime.current()
        options = run.options
        self.options = options
        self.network_timeout = options.attempt_timeout_s
        self.connection_timeout = options.connect_timeout_s
        super().__init__(environment)
        self.metrics = run.metrics
        self.budget = run.budget
        self.channel = run.channel
        if self.channel is not None:
            _one_connect_per_attempt()
        self.rng = self.runtime.new_rng()
        self.think_s = 0.0
        self.planned_arrival_s: float | None = None  # open arrival: the next arrival's time on its schedule
        self.planned: PlannedWait | None = None  # the next request's planned start (its lateness is observed)
        self.requests = Group()
        self.idle_sessions: list[RetrySession] = []
        self.attempt_limit_s = max(options.attempt_timeout_s, options.connect_timeout_s)
        url = URL(self.host or "")
        self.mix = RequestMix(options.request_mix)
        self.kinds = {spec.name: self._kind(url, spec) for spec in self.mix.requests}
        self.http: HTTPClient = self.client.client.clientpool.get_client(url)
        self.fire = environment.events.request.fire

    def _kind(self, url: URL, spec: RequestSpec) -> _Kind:
        path = url.path.rstrip("/") + spec.path
        return _Kind(
            spec=spec,
            path=path,
            url=str(url.scheme) + "://" + str(url.netloc) + path,
            logical_name=spec.name + " (logical)",
            body=spec.body.encode() if spec.body is not None else b"",
            metrics=self.metrics.by_request[spec.name],
        )

    def wait_time(self) -> float:
        """The next think time; remembered, because ``smira`` grows its first backoff from it.

        Open arrival waits until the next arrival of its schedule (:func:`~retrystorm.loadgen.think.open_arrival_wait`):
        the rate asked for, whatever Locust's loop costs between two waits. The planned start is kept: how late
        the request starts against it is the schedule lag (:mod:`retrystorm.loadgen.schedule_lag`).
        """
        open_loop = self.options.arrival is Arrival.OPEN
        self.planned = plan_wait(
            self.options.think, self.rng, open_loop=open_loop, arrival_s=self.planned_arrival_s, now_s=time.monotonic()
        )
        self.think_s, self.planned_arrival_s = self.planned.think_s, self.planned.arrival_s
        return self.planned.wait_s

    def on_start(self) -> None:
        """Count the user, then think before the first request, as the seed's client does."""
        self.metrics.active_users.inc()
        self.wait()  # type: ignore[no-untyped-call]

    def on_stop(self) -> None:
        """Abandon the requests still running (open arrival) and uncount the user."""
        self.requests.kill(block=False)
        self.metrics.active_users.dec()

    @task
    def logical_request(self) -> None:
        """One logical request; with open arrival, started in its own greenlet."""
        planned, self.planned = self.planned, None
        if self.options.arrival is Arrival.OPEN:
            self.requests.spawn(self.planned_request, planned, self.think_s)
        else:
            self.planned_request(planned, self.think_s)

    def planned_request(self, planned: PlannedWait | None, slept_s: float) -> None:
        """Observe how late the request starts against its plan, then run it."""
        self.metrics.started_late(planned, time.monotonic())
        self.run_request(slept_s)

    def run_request(self, slept_s: float) -> None:
        """Attempts and backoffs until success or give-up; fires the logical event."""
        session = self.idle_sessions.pop() if self.idle_sessions else self.new_session()
        request = LogicalRequest(slept_s, self.kinds[self.mix.choose(self.rng).name])
        token = self.metrics.begin_request(request.started)
        try:
            self.retry_loop(session, request)
        finally:  # also when the user is stopped mid-request: it is no longer in progress
            self.metrics.end_request(token)
            self.idle_sessions.append(session)

    def new_session(self) -> RetrySession:
        """Retry state for one logical request at a time (reused by the user's next ones)."""
        return RetrySession(self.options.policy, budget=self.budget, rng=self.rng)

    def retry_loop(self, session: RetrySession, request: LogicalRequest) -> None:
        session.start_request(request.started, slept_s=request.slept_s)
        request.kind.metrics.requests_started.inc()
        while True:
            now = time.monotonic()
            if not session.allow_attempt(now):
                self.metrics.budget_refusals.inc()
                decision = session.on_failure(now, sent=False)
            else:
                wait_s = session.before_send(now)
                if wait_s > 0:  # the budget's rate limiter: wait for a token
                    gevent.sleep(wait_s)
                    now = time.monotonic()
                request.attempts += 1
                outcome, status, retry_after_s = self.send(request, session.remaining_s(now), now)
                now = time.monotonic()
                if outcome is AttemptOutcome.OK:
                    session.on_success(now)
                    self.finish(request, None)
                    return
                decision = session.on_failure(
                    now,
                    timed_out=outcome is AttemptOutcome.TIMEOUT,
                    retry_after_s=retry_after_s,
                    status=status or None,
                )
            if not decision.retry:
                if decision.give_up is GiveUp.BUDGET:
                    self.metrics.budget_refusals.inc()
                self.finish(request, str(decision.give_up))
                return
            self.backoff(decision.delay_s or 0.0)

    def send(self, request: LogicalRequest, remaining_s: float, now: float) -> tuple[AttemptOutcome, int, float | None]:
        """:meth:`attempt`, through the process's channel when the strategy has one (the module docstring)."""
        channel = self.channel
        if channel is None:
            return self.attempt(request, remaining_s)
        pick = channel.pick(now)
        wait_s = min(remaining_s, self.attempt_limit_s)
        while pick is Pick.WAIT and time.monotonic() - now < wait_s:  # queued behind the channel's connect
            gevent.sleep(CONNECT_POLL_S)
            pick = channel.pick(time.monotonic())
        if pick is Pick.WAIT:
            return AttemptOutcome.TIMEOUT, 0, None
        if pick is Pick.FAIL:  # the channel is in TRANSIENT_FAILURE: UNAVAILABLE, off the network
            self.metrics.failed_locally.inc()
            return AttemptOutcome.CONNECTION_ERROR, 0, None
        outcome, status, retry_after_s = self.attempt(request, remaining_s)
        channel.settle(pick, connection_error=outcome is AttemptOutcome.CONNECTION_ERROR)
        return outcome, status, retry_after_s

    def backoff(self, delay_s: float) -> None:
        """Wait out a backoff delay, counted in ``users_in_backoff`` while it lasts."""
        self.metrics.retry(delay_s)
        gauge = self.metrics.users_in_backoff
        gauge.inc()
        try:
            planned_s = time.monotonic() + delay_s
            gevent.sleep(delay_s)
            self.metrics.backoff_ended(planned_s, time.monotonic())
        finally:
            gauge.dec()

    def finish(self, request: LogicalRequest, reason: str | None) -> None:
        """Record the logical request: metrics, then one Locust event."""
        latency_s = time.monotonic() - request.started
        outcome = RequestOutcome.OK if reason is None else RequestOutcome.GAVE_UP
        request.kind.metrics.request(outcome, latency_s, request.attempts)
        context = {
            **self.context(),
            "attempts": request.attempts,
            "outcome": outcome.value,
            "strategy": self.metrics.strategy,
        }
        if reason is not None:
            context["reason"] = reason
        kind = request.kind
        self.fire(
            request_type=kind.spec.method,
            name=kind.logical_name,
            response_time=latency_s * 1000,
            response_length=request.length,
            response=None,
            context=context,
            exception=None if reason is None else GaveUpError(f"gave up: {reason}"),
            start_time=request.started_epoch,
            url=kind.url,
        )

    def read_retry_after(self, response: Any) -> float | None:
        """What a failed answer asks the next retry to wait, as the policy reads it."""
        return _read_retry_after(response, self.options.policy.retry_after)

    def attempt(self, request: LogicalRequest, remaining_s: float) -> tuple[AttemptOutcome, int, float | None]:
        """Send attempt number ``request.attempts``; its outcome, HTTP status (0: none) and ``Retry-After``."""
        number = request.attempts
        kind = request.kind
        headers = kind.headers(number)
        limit_s = min(self.attempt_limit_s, max(remaining_s, 0.0))
        started_epoch = time.time()
        started = time.perf_counter()
        status = 0
        retry_after_s = None
        body = b""
        response = None
        error: BaseException | None = None
        kind.metrics.attempts_started.inc()  # counted when sent; its outcome when it ends, below
        timer = gevent.Timeout.start_new(limit_s)
        try:
            response = self.http.request(kind.spec.method, kind.path, body=kind.body, headers=headers)
            body = response.read()
            status = response.status_code
        except gevent.Timeout as expired:
            if expired is not timer:
                raise
            error = expired
        except (OSError, HTTPConnectionClosed, HTTPParseError) as failure:
            error = failure
        finally:
            timer.close()
        latency_s = time.perf_counter() - started
        if response is not None and error is None:
            kind.metrics.response(status)
            outcome = outcome_of_status(status)
            if outcome is not AttemptOutcome.OK:
                retry_after_s = self.read_retry_after(response)
        else:
            timed_out = isinstance(error, gevent.Timeout | socket.timeout)
            outcome = AttemptOutcome.TIMEOUT if timed_out else AttemptOutcome.CONNECTION_ERROR
        ended = AttemptEnd(number, outcome, status, latency_s, started_epoch, len(body), response, error)
        self.record_attempt(request, ended)
        return outcome, status, retry_after_s

    def record_attempt(self, request: LogicalRequest, ended: AttemptEnd) -> None:
        """Count one attempt that ended (its start was counted as it was sent) and fire its Locust event."""
        kind = request.kind
        kind.metrics.attempt(ended.outcome, ended.latency_s)
        self.fire(
            request_type=kind.spec.method,
            name=kind.spec.name,
            response_time=ended.latency_s * 1000,
            response_length=ended.length,
            response=ended.response,
            context={
                **self.context(),
                "attempt": ended.number,
                "outcome": ended.outcome.value,
                "strategy": self.metrics.strategy,
            },
            exception=ended.exception(),
            start_time=ended.started_epoch,
            url=kind.url,
        )
        request.length = ended.length


def _one_connect_per_attempt() -> None:
    """Stop geventhttpclient 2.3 from resending a GET on a fresh connection when its connection breaks
    (``HTTPClient.request`` retries up to the pool's size, ``_may_retry_after_send_error``): against a resetting
    server one attempt would make many connects, where a gRPC channel's model needs one per connect it allows.
    Process-wide; only a process whose strategy has a channel (``grpc-retry``) does it."""
    geventhttpclient.client._may_retry_after_send_error = lambda method: False  # noqa: ARG005 - its signature


def _read_retry_after(response: Any, mode: RetryAfter) -> float | None:
    """The delay the answer asks for, from the header ``mode`` reads (``x-amz-retry-after`` or ``Retry-After``)."""
    header = response.get(mode.header)
    if not isinstance(header, str):
        return None
    if mode is RetryAfter.AWS:
        return parse_amz_retry_after(header)
    return parse_retry_after(header, now_epoch_s=time.time())


def _attempt_error(outcome: AttemptOutcome, status: int, error: BaseException | None) -> AttemptError:
    if outcome is AttemptOutcome.TIMEOUT:
        return AttemptError("timeout")
    if error is not None:
        return AttemptError(f"connection error: {type(error).__name__}")
    return AttemptError(f"HTTP {status} ({outcome.value})")
