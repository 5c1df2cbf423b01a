"""The gRPC Locust user: a seed client calling one gRPC method, retried by grpcio itself or by a strategy.

Configured by the options of :mod:`retrystorm.loadgen.options` and :mod:`retrystorm.loadgen.grpc_settings`
(which says what ``real`` and ``emulated`` mean). Every user of a process shares one channel, as
an application shares its stub's channel: gRFC A6's retry throttle is one token bucket per
channel, so the load's throttling is per process (a run with N worker processes has N buckets).

What is counted where:

* logical calls, at the user, as the HTTP user counts logical requests (``NAME (logical)``
  events, ``retrystorm_client_requests_total``);
* attempts: emulated, each one as it is sent, as over HTTP; real, where grpcio shows them: the
  ``calls_started`` of the channel's subchannels in channelz, read every second into
  ``retrystorm_client_attempts_started_total`` (an attempt grpcio failed locally, with no
  connection, reaches no subchannel and is not counted: it never reached the network). The
  built-in target counts every attempt that arrives by its number
  (``retrystorm_target_grpc_attempts_total``), whichever mode sent it;
* attempts by outcome (``retrystorm_client_attempts_total``, what a run's steady state is judged on):
  emulated, every attempt; real, each call's last attempt, whose status grpcio returns, observed at the
  call's latency (the retries before it show in ``attempts_started`` only: grpcio tells their number, not
  their outcome).
"""

from __future__ import annotations

import json
import logging
import time
import weakref
from collections.abc import Mapping
from typing import Any

import gevent
import grpc
from locust import User, task

from retrystorm.loadgen.grpc_settings import (
    ATTEMPT_METADATA,
    STATUS_OF_CODE,
    GrpcMode,
    GrpcSettings,
    read_settings,
    real_service_config,
)
from retrystorm.loadgen.metrics import RequestMetrics
from retrystorm.loadgen.options import DEFAULT_STRATEGY, Arrival
from retrystorm.loadgen.outcomes import AttemptOutcome, RequestOutcome, outcome_of_status
from retrystorm.loadgen.plugin import runtime_of
from retrystorm.loadgen.schedule_lag import PlannedWait, plan_wait
from retrystorm.loadgen.strategies import GiveUp, RetrySession

logger = logging.getLogger(__name__)
#: How often real mode reads the channel's attempts from channelz.
CHANNELZ_INTERVAL_S = 1.0
_CHANNELS: weakref.WeakKeyDictionary[Any, _Channel] = weakref.WeakKeyDictionary()


class GrpcCallError(Exception):
    """Why an attempt or a logical call failed, as Locust's failure table shows it."""


class _Channel:
    """One process's channel, its method, and (real mode) the attempts channelz has seen."""

    def __init__(self, target: str, settings: GrpcSettings, options: list[tuple[str, Any]]) -> None:
        self.channel = grpc.insecure_channel(target, options=[("grpc.enable_channelz", 1), *options])
        self.call = self.channel.unary_unary(settings.method)
        self.counted = 0

    def attempts_started(self) -> int:
        """The calls started on this channel's subchannels (channelz): the attempts on the network."""
        from grpc._cython import cygrpc  # noqa: PLC0415 - channelz's own source (grpcio-channelz reads it too)

        started = 0
        for channel in json.loads(cygrpc.channelz_get_top_channels(0)).get("channel", []):
            for ref in channel.get("subchannelRef", []):
                sub = json.loads(cygrpc.channelz_get_subchannel(int(ref["subchannelId"])))
                started += int(sub["subchannel"]["data"].get("callsStarted", 0))
        return started


def _channel_of(user: GrpcUser) -> _Channel:
    """The process's channel (made by its first user)."""
    found = _CHANNELS.get(user.environment)
    if found is None:
        if user.settings.mode is GrpcMode.REAL:
            text = str(getattr(user.environment.parsed_options, "retry_strategy", DEFAULT_STRATEGY))
            config = real_service_config(text, user.options.policy.strategy)
            options: list[tuple[str, Any]] = [("grpc.service_config", json.dumps(config))]
        else:
            options = [("grpc.enable_retries", 0)]
        found = _Channel((user.host or "").removeprefix("grpc://"), user.settings, options)
        _CHANNELS[user.environment] = found
        if user.settings.mode is GrpcMode.REAL:
            metrics = user.metrics_for_request
            gevent.spawn(_count_attempts, found, metrics)
            # and once more when the users have stopped: the last second's attempts are counted too
            user.environment.events.test_stop.add_listener(lambda **_: _count_once(found, metrics))
    return found


def _count_attempts(channel: _Channel, metrics: RequestMetrics) -> None:
    """Real mode: move channelz's attempts into ``attempts_started`` every second."""
    while True:
        gevent.sleep(CHANNELZ_INTERVAL_S)
        if not _count_once(channel, metrics):
            return


def _count_once(channel: _Channel, metrics: RequestMetrics) -> bool:
    """Move the attempts channelz has seen since the last count into ``attempts_started``; ``False``: unreadable."""
    try:
        started = channel.attempts_started()
    except (ValueError, KeyError, RuntimeError):
        logger.exception("channelz could not be read; attempts are not counted")
        return False
    if started > channel.counted:
        metrics.attempts_started.inc(started - channel.counted)
        channel.counted = started
    return True


class GrpcUser(User):
    """A seed client over gRPC (see the module docstring); subclass it with ``abstract = False``."""

    abstract = True

    @classmethod
    def retried_by(cls, values: Mapping[str, Any]) -> str:
        """What retries this user's calls, in words (the Retry storm tab says it of each run)."""
        if values.get("grpc_mode") == "real":
            return "grpcio's own retries (the service config)"
        return "retrystorm's emulation over grpcio (the strategy retries)"

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        self.runtime = runtime_of(environment)
        run = self.runtime.current()
        self.options = run.options
        self.metrics = run.metrics
        self.settings = read_settings(vars(environment.parsed_options or {}))
        self.name = self.settings.method
        self.logical_name = self.name + " (logical)"
        self.metrics_for_request = next(iter(run.metrics.by_request.values()))
        self.budget = run.budget
        self.rng = self.runtime.new_rng()
        self.think_s = 0.0
        #: The current call's backoff so far (emulated mode), for gRFC A96's grpc.client.call.retry_delay.
        self.backoff_s = 0.0
        self.planned_arrival_s: float | None = None
        self.planned: PlannedWait | None = None
        self.session = RetrySession(self.options.policy, budget=self.budget, rng=self.rng)
        self.channel = _channel_of(self)
        self.fire = environment.events.request.fire

    def wait_time(self) -> float:
        """The next think time (open arrival: until the next arrival of its schedule); its planned start is kept."""
        open_loop = self.options.arrival is Arrival.OPEN
        self.planned = plan_wait(
            self.options.think, self.rng, open_loop=open_loop, arrival_s=self.planned_arrival_s, now_s=time.monotonic()
        )
        self.think_s, self.planned_arrival_s = self.planned.think_s, self.planned.arrival_s
        return self.planned.wait_s

    def on_start(self) -> None:
        self.metrics.active_users.inc()
        self.wait()  # type: ignore[no-untyped-call]

    def on_stop(self) -> None:
        self.metrics.active_users.dec()

    @task
    def logical_call(self) -> None:
        """One logical call: grpcio's retries (real) or the strategy's (emulated)."""
        started = time.monotonic()
        self.metrics.started_late(self.planned, started)
        self.planned = None
        token = self.metrics.begin_request(started)
        self.metrics_for_request.requests_started.inc()
        try:
            if self.settings.mode is GrpcMode.REAL:
                reason, attempts = self.real_call(), None
            else:
                reason, attempts = self.emulated_call(started)
        finally:
            self.metrics.end_request(token)
        self.finish(started, reason, attempts)

    def real_call(self) -> str | None:
        """One call with grpcio's own retries under its deadline; ``None``, or the final status's name.

        Its last attempt's outcome is counted (the module docstring says why only that one).
        """
        deadline_s = self.options.policy.deadline_s or self.options.attempt_timeout_s
        started, code = time.perf_counter(), "OK"
        try:
            self.channel.call(self.settings.request, timeout=deadline_s)
        except grpc.RpcError as error:
            code = str(error.code().name)
        status = None if code in ("OK", "DEADLINE_EXCEEDED") else STATUS_OF_CODE.get(code, 500)
        self.metrics_for_request.attempt(_outcome(code, status), time.perf_counter() - started)
        return None if code == "OK" else code

    def emulated_call(self, started: float) -> tuple[str | None, int]:
        """Attempts and backoffs as the strategy decides, grpcio's retries off; the reason and the attempts."""
        session = self.session
        session.start_request(started, slept_s=self.think_s)
        attempts = 0
        self.backoff_s = 0.0
        while True:
            now = time.monotonic()
            if not session.allow_attempt(now):
                self.metrics.budget_refusals.inc()
                decision = session.on_failure(now, sent=False)
            else:
                wait_s = session.before_send(now)
                if wait_s > 0:
                    gevent.sleep(wait_s)
                attempts += 1
                code, status, pushback_s = self.attempt(attempts, session.remaining_s(time.monotonic()))
                now = time.monotonic()
                if code == "OK":
                    session.on_success(now)
                    return None, attempts
                decision = session.on_failure(
                    now, timed_out=code == "DEADLINE_EXCEEDED", retry_after_s=pushback_s, status=status
                )
            if not decision.retry:
                if decision.give_up is GiveUp.BUDGET:
                    self.metrics.budget_refusals.inc()
                return str(decision.give_up), attempts
            self.metrics.retry(decision.delay_s or 0.0)
            self.backoff_s += decision.delay_s or 0.0
            planned_s = time.monotonic() + (decision.delay_s or 0.0)
            gevent.sleep(decision.delay_s or 0.0)
            self.metrics.backoff_ended(planned_s, time.monotonic())

    def attempt(self, number: int, remaining_s: float) -> tuple[str, int | None, float | None]:
        """Send attempt ``number``: its code's name, the status the conditions read, and any pushback."""
        timeout_s = max(min(self.options.attempt_timeout_s, remaining_s), 0.001)
        metadata = ((ATTEMPT_METADATA, str(number)),) if number > 1 else None
        self.metrics_for_request.attempts_started.inc()
        started_epoch, started = time.time(), time.perf_counter()
        code, pushback_s = "OK", None
        try:
            self.channel.call(self.settings.request, timeout=timeout_s, metadata=metadata)
        except grpc.RpcError as error:
            code = str(error.code().name)
            pushback_s = _pushback_s(error)
        latency_s = time.perf_counter() - started
        status = None if code in ("OK", "DEADLINE_EXCEEDED") else STATUS_OF_CODE.get(code, 500)
        outcome = _outcome(code, status)
        self.metrics_for_request.attempt(outcome, latency_s)
        self.fire(
            request_type="grpc",
            name=self.name,
            response_time=latency_s * 1000,
            response_length=0,
            response=None,
            context={"attempt": number, "outcome": outcome.value, "strategy": self.metrics.strategy},
            exception=None if code == "OK" else GrpcCallError(code),
            start_time=started_epoch,
            url=self.settings.method,
        )
        return code, status, pushback_s

    def finish(self, started: float, reason: str | None, attempts: int | None) -> None:
        latency_s = time.monotonic() - started
        outcome = RequestOutcome.OK if reason is None else RequestOutcome.GAVE_UP
        self.metrics_for_request.request(outcome, latency_s, attempts, self.backoff_s if attempts is not None else 0.0)
        context: dict[str, Any] = {"outcome": outcome.value, "strategy": self.metrics.strategy}
        if attempts is not None:
            context["attempts"] = attempts
        if reason is not None:
            context["reason"] = reason
        self.fire(
            request_type="grpc",
            name=self.logical_name,
            response_time=latency_s * 1000,
            response_length=0,
            response=None,
            context=context,
            exception=None if reason is None else GrpcCallError(f"gave up: {reason}"),
            start_time=time.time() - latency_s,
            url=self.settings.method,
        )


def _outcome(code: str, status: int | None) -> AttemptOutcome:
    if code == "OK":
        return AttemptOutcome.OK
    if status is None:
        return AttemptOutcome.TIMEOUT
    return outcome_of_status(status)


def _pushback_s(error: grpc.RpcError) -> float | None:
    """``grpc-retry-pushback-ms`` of a failed call, in seconds (``None``: absent or not a whole number)."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-retry-pushback-ms" and str(value).isdigit():
            return int(value) / 1000
    return None
