"""The discrete-event engine: users with a retry strategy against a modelled server.

Virtual time, a queue of events ``(time, sequence, kind, client, token)``; ties run
in the order they were scheduled, so a run is a pure function of its configuration
and seed. Each component draws from its own random source (see
:func:`retrystorm.experiment.scenario.rng_for`): ``think`` (think times and first requests),
``arrivals`` (open-loop arrivals), ``retry`` (the strategies' jitter and budgets),
``server`` (the model).

Semantics, as in the seed experiment:

* **Closed loop**: a user thinks, sends a logical request, and retries it through its
  :class:`~retrystorm.loadgen.strategies.RetrySession` until success, give-up or deadline; then
  thinks again. The think time is what the session sees as the sleep before the
  request (the seed client's ``lastDelay``, which ``smira`` grows from).
  **Open loop**: each user starts a logical request after each wait (``users / rate``
  on average), regardless of completions, so requests arrive at ``rate``; each request
  has a fresh session, which sees the wait before it as its think time, as the live
  user's does (``smira`` grows its first backoff from it).
* **Timeouts with abandonment**: an attempt not answered within the timeout fails
  for the client; the server keeps working on it and its late answer is dropped.
* **Local rejections** (the ``adaptive`` budget): the attempt fails without reaching
  the server; the retry comes after the strategy's delay, but no sooner than
  :data:`LOCAL_RETRY_FLOOR_S` (10 ms). A live user with ``none`` would spin; in virtual
  time a zero delay would loop forever at one instant.
* **Waits before sending** (the ``aws-rate-limiter`` budget's token bucket): the send
  is scheduled after the wait, already let through by the budget.
* **Rejections** by the model are HTTP 503 answers, timeouts are timeouts: a policy's
  retry conditions (a preset's) decide whether they are retried.
* **Wake-ups**: the engine asks the model for its next wake-up after each
  ``advance``, and after an admit only when none is scheduled (an idle server): an
  admission raises the load, which never brings a model's next release forward, except
  where the model says so (``admission_hastens``: past the overflow point of
  ``exponential:overflow=go`` every check passes), and then after every admit. The in-flight peak is read before each
  ``advance`` (only ``advance`` lowers in-flight) and at each sample.
* **Outages freeze the server**: no ``advance`` while frozen; attempts arriving wait
  in an accept queue (bounded by ``accept_backlog``, beyond which they are dropped,
  like SYNs to a full backlog) and are admitted at the resume, after one catch-up
  ``advance`` (the timers that fire when a stopped process continues).
* **Other triggers** (a capacity cut, a load spike, an error burst) are played by
  :mod:`retrystorm.sim.triggers`; faults in the network (delay, loss, hang, reset, partition) by
  :mod:`retrystorm.sim.network`, on the way of each attempt and each answer.
* **gRPC's channel**: every client shares one when the strategy's preset has one (``grpc-retry``,
  :mod:`retrystorm.loadgen.strategies.channel`, as the live HTTP user shares one per process): after a
  connect refused or reset by a network fault, attempts fail locally (``UNAVAILABLE``, never sent, counted
  in ``failed_locally``; the retry comes no sooner than :data:`LOCAL_RETRY_FLOOR_S`) until its reconnect
  backoff ends. A connect's fate is its attempt's, known as it is sent (a connect a hang holds counts as made).
* **gRPC** (a scenario with ``grpc:``): a call's deadline goes with it to the server: the calls that waited
  in a frozen server's accept queue and whose client has given up are dropped at the resume
  (``cancelled``), not served. ``real`` mode is simulated through its preset (grpcio's retries are the
  preset's, checked by the drift check), with the call's deadline (``request_deadline``, else
  ``attempt_timeout``) over all its attempts.
* **Network delay** (``sim.network_delay``, none by default): an attempt reaches the
  server one draw of it after it was sent, and an answer its client one draw after
  the server released it (Brooker's ``netdelay``, each way, from the ``network``
  random source); the timeout runs from the send, and the in-flight count is the
  server's, without what is on the wire.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import logging
import math
import random
from collections.abc import Iterator
from typing import Any

from retrystorm.experiment.scenario import RunSpec, rng_for
from retrystorm.loadgen.grpc_settings import GrpcMode
from retrystorm.loadgen.series_names import ATTEMPTS, GAVE_UP, GOODPUT, STARTED, TIMEOUTS
from retrystorm.loadgen.strategies import GiveUp, Pick, RetryPolicy, RetrySession, channel_of
from retrystorm.sim.client import BACKOFF, DONE, THINKING, WAITING, Client
from retrystorm.sim.config import RunConfig
from retrystorm.sim.events import ARRIVAL, NEW, PAUSE, REACH, RESUME, RETRY, TIMEOUT, TRIGGER, EventQueue
from retrystorm.sim.latency import RequestLog
from retrystorm.sim.population import open_wait_s, start_population
from retrystorm.sim.result import RunOutput
from retrystorm.sim.series import REJECTIONS, Series
from retrystorm.sim.server_side import ServerSide
from retrystorm.sim.triggers import TriggerPlay

logger = logging.getLogger(__name__)

#: The soonest a client retries after its budget rejected an attempt locally.
LOCAL_RETRY_FLOOR_S = 0.01
#: Totals kept only as per-interval counters: count name -> series name.
_TOTALS = {
    "attempts": ATTEMPTS,
    "requests": STARTED,
    "succeeded": GOODPUT,
    "gave_up": GAVE_UP,
    "timeouts": TIMEOUTS,
    "rejections": REJECTIONS,
}


class Simulation(ServerSide):
    """One run of :class:`RunConfig`; call :meth:`run` once."""

    def __init__(self, config: RunConfig) -> None:
        spec = config.spec
        self.config = config
        self.spec = spec
        self.think = spec.think
        self.server: Any = TriggerPlay.scaled(config, config.model.start(0.0))
        self.admit = self.server.admit
        self.admission_hastens = self.server.admission_hastens
        self.series = Series.empty(spec.duration_s, config.sample_every_s)
        self.budget = spec.budget.start() if spec.budget is not None else None
        self.policy = grpc_policy(spec)
        self.channel = channel_of(spec.policy.strategy, rng_for(spec.seed, "channel"))
        #: A gRPC call's deadline reaches the server: a frozen server's queued calls whose client gave up are dropped.
        self.drop_cancelled = spec.grpc is not None
        self.pick = Pick.SEND
        self.think_rng = rng_for(spec.seed, "think")
        self.arrival_rng = rng_for(spec.seed, "arrivals")
        self.retry_rng = rng_for(spec.seed, "retry")
        self.server_rng = rng_for(spec.seed, "server")
        self.events = EventQueue(width_s=config.sample_every_s / 20)
        self.push_event = self.events.push
        self.push_timeout = self.events.push_in_order  # one constant timeout: deadlines come in order
        self.timeout_s = spec.attempt_timeout_s
        self.attempt_bins = self.series.attempts
        self.sequence = itertools.count()
        self.clients: list[Client] = []
        self.frozen = False
        self.accept_backlog = config.accept_backlog
        self.accept_queue: list[tuple[Client, int]] = []
        self.wake_at: float | None = None
        self.wake_token = 0
        self.bin = 0
        self.next_sample_s = config.sample_every_s
        self.peak_bin = 0
        self.peak = 0
        self.requests = RequestLog(self.series.length)
        self.counts = dict.fromkeys(
            ("rejected_locally", "late_answers", "dropped", "released", "events", "immediate_retries"),
            0,
        )  # fmt: skip
        if self.channel is not None:
            self.counts["failed_locally"] = 0
        if self.drop_cancelled:
            self.counts["cancelled"] = 0
        self.network = config.network_delay
        self.network_rng = rng_for(spec.seed, "network") if self.network is not None else random.Random(0)
        self.triggers = TriggerPlay(self) if config.triggers else None
        self.net = self.triggers.network if self.triggers is not None else None
        if self.triggers is not None:
            self.counts["injected_errors"] = 0
            self.admit = self.triggers.admit

    def push(self, time_s: float, kind: int, client: Any = None, token: int = 0) -> None:
        """Schedule an event."""
        self.events.push((time_s, next(self.sequence), kind, client, token))

    def add_client(self, requests_left: int | None) -> Client:
        """A new client with its own retry session (sharing the run's budget and retry random source)."""
        client = Client(RetrySession(self.policy, budget=self.budget, rng=self.retry_rng), requests_left)
        self.clients.append(client)
        return client

    # -- the loop -------------------------------------------------------------------

    def run(self) -> RunOutput:
        """Play the run to ``duration_s`` and return what it produced."""
        config = self.config
        start_population(self)
        for outage in config.outages:
            self.push(outage.start_s, PAUSE)
            self.push(outage.end_s, RESUME)
        actions = self.triggers.actions() if self.triggers is not None else []
        for index, (at_s, _) in enumerate(actions):
            self.push(at_s, TRIGGER, None, index)
        end = self.spec.duration_s
        handlers = (self.on_new, self.attempt, self.on_timeout, self.on_wake, self.on_arrival, self.on_reach,
                    self.on_answer)  # fmt: skip
        if self.triggers is not None and self.triggers.spikes:
            handlers = (self.on_new_stopping, *handlers[1:4], self.on_arrival_stopping, *handlers[5:])
        events = 0
        pop_before = self.events.pop_before
        while (event := pop_before(end)) is not None:
            now, _, kind, client, token = event
            if now >= self.next_sample_s:
                self.flush(now)
            events += 1
            if kind < PAUSE:
                handlers[kind](now, client, token)
            elif kind == PAUSE:
                self.on_pause(now)
            elif kind == RESUME:
                self.on_resume(now)
            else:
                actions[token][1](now)
        self.flush(self.series.length * config.sample_every_s)  # a last, partial interval too
        self.counts["events"] = events + self.counts["immediate_retries"]
        return self.output()

    def flush(self, now: float) -> None:
        """Record the gauges at every sample boundary up to ``now`` (state is unchanged since the last event)."""
        series, server, step = self.series, self.server, self.config.sample_every_s
        while self.next_sample_s <= now + 1e-9 and self.bin < series.length:
            in_flight = server.in_flight
            series.in_flight.append(in_flight)
            series.peak_in_flight.append(max(self.peak_bin, in_flight))
            series.delay_s.append(server.delay_s)
            series.accept_queue.append(len(self.accept_queue))
            series.frozen.append(int(self.frozen))
            self.requests.sample(self.next_sample_s)
            self.peak_bin = in_flight
            self.bin += 1
            self.next_sample_s = (self.bin + 1) * step

    # -- clients --------------------------------------------------------------------

    def on_new(self, now: float, client: Client, token: int = 0) -> None:
        """A logical request starts (after a think time, or on arrival)."""
        client.session.start_request(now, slept_s=client.think_s)
        client.start_s = now
        self.requests.start(client, now)
        self.series.started[self.bin] += 1
        self.attempt(now, client)

    def attempt(self, now: float, client: Client, token: int = 0) -> None:
        """Send one attempt (also: a backoff has passed), unless the budget rejects or delays it.

        ``token`` 1: the budget let this send through already, after a wait. The hot
        path, kept flat: the counters, the model's admit and the queue's push are bound
        at start.
        """
        session = client.session
        if session.budget is not None and token == 0:
            if not session.allow_attempt(now):
                self.counts["rejected_locally"] += 1
                self.failed(now, client, False, False)
                return
            wait = session.before_send(now)
            if wait > 0:
                client.state = BACKOFF
                self.push_event((now + wait, next(self.sequence), RETRY, client, 1))
                return
        if self.channel is not None and self.channel_fails(now, client):
            return
        client.aid = aid = client.aid + 1
        client.state = WAITING
        self.attempt_bins[self.bin] += 1
        if self.net is not None:
            self.send_through(now, client, aid, self.net.send(now, self.timeout_s))
        elif self.network is not None:
            self.push_event((now + self.network.sample(self.network_rng), next(self.sequence), REACH, client, aid))
        elif self.frozen:
            self.queue_attempt(client, aid)
        else:
            self.admit(now, (client, aid))
            if self.wake_at is None or self.admission_hastens:
                self.schedule_wake(now)
        timeout = self.timeout_s
        if timeout is not None:
            self.push_timeout((now + timeout, next(self.sequence), TIMEOUT, client, aid))

    def channel_fails(self, now: float, client: Client) -> bool:
        """Whether the clients' channel fails the attempt locally (then it is retried, or given up, here)."""
        channel = self.channel
        assert channel is not None  # noqa: S101 - called only with a channel
        pick = channel.pick(now)
        if pick is Pick.FAIL:
            self.counts["failed_locally"] += 1
            self.failed(now, client, False, at_once=True)  # UNAVAILABLE: retried as a connection error
            return True
        self.pick = pick
        if self.net is None:
            channel.settle(pick, connection_error=False)  # nothing refuses a connect without network faults
        return False

    def on_new_stopping(self, now: float, client: Client, token: int = 0) -> None:
        """:meth:`on_new`, unless the client is an extra user whose spike has ended: then it stops."""
        if now >= client.stop_s:
            client.state = DONE
            return
        self.on_new(now, client)

    def on_timeout(self, now: float, client: Client, aid: int) -> None:
        """The client gives up on an attempt it is still waiting for."""
        if client.state == WAITING and client.aid == aid:
            self.series.timeouts[self.bin] += 1
            self.failed(now, client, True)

    def failed(
        self,
        now: float,
        client: Client,
        timed_out: bool,
        sent: bool = True,
        status: int | None = None,
        *,
        at_once: bool = False,
    ) -> None:
        """An attempt failed (``status``: the HTTP status of a rejection or an injected error; ``at_once``:
        answered at the instant it was sent): back off and retry, or give up."""
        delay = client.session.retry_delay(now, timed_out=timed_out, sent=sent, status=status)
        if isinstance(delay, GiveUp):
            self.series.gave_up[self.bin] += 1
            self.requests.end(client, now, self.bin, client.session.request_attempts, ok=False)
            self.finish(now, client)
            return
        if not sent or at_once:
            delay = max(delay, LOCAL_RETRY_FLOOR_S)
        elif delay == 0.0:  # retry at once (NB)
            self.counts["immediate_retries"] += 1
            self.attempt(now, client)
            return
        client.state = BACKOFF
        self.push_event((now + delay, next(self.sequence), RETRY, client, 0))

    def succeeded(self, now: float, client: Client) -> None:
        """The current attempt succeeded: the logical request is done."""
        session = client.session
        session.on_success(now)
        self.series.goodput[self.bin] += 1
        self.requests.end(client, now, self.bin, session.request_attempts, ok=True)
        self.finish(now, client)

    def finish(self, now: float, client: Client) -> None:
        """After a request ends: think, then the next one, unless the client is done."""
        if client.requests_left is not None:
            client.requests_left -= 1
            if client.requests_left <= 0:
                client.state = DONE
                return
        client.state = THINKING
        client.think_s = self.think.sample(self.think_rng)
        self.push(now + client.think_s, NEW, client)

    def on_arrival(self, now: float, client: Client, token: int = 0) -> None:
        """Open loop: a user's logical request starts; the user waits for its next one meanwhile."""
        following = self.add_client(1)
        following.stop_s = client.stop_s
        following.think_s = open_wait_s(self)
        self.push(now + following.think_s, ARRIVAL, following)
        self.on_new(now, client)

    def on_arrival_stopping(self, now: float, client: Client, token: int = 0) -> None:
        """:meth:`on_arrival`, unless the stream is an extra one whose spike has ended: then it stops."""
        if now < client.stop_s:
            self.on_arrival(now, client)

    # -- results --------------------------------------------------------------------

    def open_requests(self) -> int:
        """Logical requests in progress now: waiting for an answer or backing off."""
        return sum(1 for client in self.clients if client.state in (WAITING, BACKOFF))

    def abandoned_held(self) -> int:
        """Requests the server holds at the end (in flight or in its accept queue) whose client no longer waits.

        Empties the server: called once, when the run is over.
        """
        held = [payload for _, payload in self.server.drain()] + self.accept_queue
        return sum(1 for client, aid in held if client.state != WAITING or client.aid != aid)

    def output(self) -> RunOutput:
        """What the run produced."""
        self.note_peak()
        series = self.series
        counts = dict(self.counts)
        for key, name in _TOTALS.items():
            counts[key] = sum(getattr(series, name))
        series.trim()
        counts["unfinished"] = self.open_requests()
        counts["in_flight_end"] = self.server.in_flight
        counts["accept_queue_end"] = len(self.accept_queue)
        counts["abandoned_in_flight_end"] = self.abandoned_held()
        peak = max(self.peak, max(self.series.peak_in_flight, default=0))
        log = self.requests
        series.add_latency(log.histograms(series.length), log.in_progress[: series.length])
        return RunOutput(
            config=self.config,
            counts=counts,
            latencies=log.latencies,
            request_attempts=log.attempts,
            peak_in_flight=peak,
            series=series,
            request_ok=log.ok,
            unfinished=log.unfinished(self.spec.duration_s, lambda client: client.session.request_attempts),  # type: ignore[attr-defined]
        )


def grpc_policy(spec: RunSpec) -> RetryPolicy:
    """The policy clients run: ``spec``'s, with grpcio's call deadline over all attempts in gRPC ``real`` mode
    (``request_deadline``, else ``attempt_timeout``, as the gRPC user gives it)."""
    policy = spec.policy
    if spec.grpc is None or spec.grpc.mode is not GrpcMode.REAL or policy.deadline_s is not None:
        return policy
    return dataclasses.replace(policy, deadline_s=spec.attempt_timeout_s)


@contextlib.contextmanager
def _cycle_collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a run.

    A run allocates millions of short-lived, acyclic objects (events, payloads,
    answers) that reference counting frees at once; the cycle collector's passes over
    the live clients and requests find nothing to collect. Measured: ``retrystorm sim
    smira`` 0.27 s of CPU with it, 0.24 s without; the seed outage at 100,000 clients
    (``bench/sim_bench.py``) 3.8 s with it, 3.0 s without.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def simulate(config: RunConfig) -> RunOutput:
    """Run ``config`` once."""
    if not math.isfinite(config.spec.duration_s):
        raise ValueError("duration must be finite")
    with _cycle_collector_paused():
        return Simulation(config).run()
