"""The simulation's server side: attempts on their way, the model and its wake-ups, outages, answers.

A part of :class:`retrystorm.sim.engine.Simulation` (its base class), kept in a module of its own:
what happens once an attempt leaves its client until its answer is back. The semantics
are in :mod:`retrystorm.sim.engine`'s docstring.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import Any

from retrystorm.loadgen.strategies import GrpcChannel, Pick
from retrystorm.loadgen.think import ThinkTime
from retrystorm.sim.client import WAITING, Client
from retrystorm.sim.events import ANSWER, REACH, WAKE
from retrystorm.sim.network import Fate, NetworkPlay
from retrystorm.sim.series import Series
from retrystorm.target.models import Outcome

Event = tuple[float, int, int, Any, int]

#: The HTTP status of a model's rejection, as the target service answers it.
REJECTED_STATUS = 503
#: A refused answer's token on its way back: ``-(attempt * STATUS_SPAN + status)``.
STATUS_SPAN = 1000
#: The status of a connection error on its way back (a reset, a hung connection closed): no HTTP status at all.
CONNECTION_ERROR = 0


def refused_token(aid: int, status: int) -> int:
    """The token of an answer refusing attempt ``aid`` with ``status`` (negative; see :meth:`ServerSide.on_answer`)."""
    return -(aid * STATUS_SPAN + status)


class ServerSide:
    """The server's half of a simulation: the methods here read and write the run's state."""

    server: Any
    admit: Callable[[float, Any], None]
    frozen: bool
    accept_queue: list[tuple[Client, int]]
    wake_at: float | None
    wake_token: int
    peak_bin: int
    peak: int
    counts: dict[str, int]
    series: Series
    bin: int
    sequence: itertools.count[int]
    push_event: Callable[[Event], None]
    network: ThinkTime | None
    network_rng: random.Random
    #: The run's faults in the network (:mod:`retrystorm.sim.network`), ``None`` without any.
    net: NetworkPlay | None
    server_rng: random.Random
    accept_backlog: int | None
    admission_hastens: bool
    #: The clients' gRPC channel (a preset's, :mod:`retrystorm.loadgen.strategies.channel`), ``None`` without one.
    channel: GrpcChannel | None
    #: Whether a frozen server's queued attempts whose client gave up are dropped at the resume (gRPC deadlines).
    drop_cancelled: bool
    #: What the channel made of the attempt being sent.
    pick: Pick

    def push(self, time_s: float, kind: int, client: Any = None, token: int = 0) -> None:
        """Schedule an event."""
        raise NotImplementedError

    def succeeded(self, now: float, client: Client) -> None:
        """The current attempt succeeded."""
        raise NotImplementedError

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
        """An attempt failed."""
        raise NotImplementedError

    # -- the network ----------------------------------------------------------------

    def on_reach(self, now: float, client: Client, aid: int) -> None:
        """An attempt reaches the server after its network delay."""
        if self.frozen:
            self.queue_attempt(client, aid)
            return
        self.admit(now, (client, aid))
        if self.wake_at is None or self.admission_hastens:
            self.schedule_wake(now)

    def on_answer(self, now: float, client: Client, token: int) -> None:
        """An answer reaches its client after its network delay (``token``: the attempt, or when refused
        :func:`refused_token` of the attempt and the status)."""
        aid, status = (token, 0) if token > 0 else divmod(-token, STATUS_SPAN)
        if client.state != WAITING or client.aid != aid:
            self.counts["late_answers"] += 1
        elif token > 0:
            self.succeeded(now, client)
        elif status == CONNECTION_ERROR:
            self.counts["connection_errors"] = self.counts.get("connection_errors", 0) + 1
            self.failed(now, client, False, True, None)
        else:
            self.series.rejections[self.bin] += 1
            self.failed(now, client, False, True, status)

    def send_through(self, now: float, client: Client, aid: int, fate: Fate) -> None:
        """Attempt ``aid`` on its way, as the network faults decided (:meth:`NetworkPlay.send`)."""
        verb, at = fate
        if self.channel is not None:  # a connect's fate is its attempt's; one held by a hang is still connecting
            self.channel.settle(self.pick, connection_error=verb == "error" and at <= now)
        if verb == "at":
            self.push_event((at, next(self.sequence), REACH, client, aid))
        elif verb == "error":
            self.push_event((at, next(self.sequence), ANSWER, client, refused_token(aid, CONNECTION_ERROR)))

    def answer_through(self, now: float, client: Client, token: int) -> None:
        """An answer (``token`` as :meth:`on_answer` reads it) on its way back, through the network faults."""
        assert self.net is not None  # noqa: S101 - called only with network faults
        verb, at = self.net.answer_at(now)
        if verb == "error" and at <= now and self.channel is not None:
            self.channel.settle(Pick.SEND, connection_error=True)  # its connection is reset: the channel goes IDLE
        if verb == "error":
            aid = token if token > 0 else divmod(-token, STATUS_SPAN)[0]
            token = refused_token(aid, CONNECTION_ERROR)
        if verb != "lost":
            self.push_event((at, next(self.sequence), ANSWER, client, token))

    # -- the server -----------------------------------------------------------------

    def queue_attempt(self, client: Client, aid: int) -> None:
        """An attempt reaches a frozen server: it waits in the accept queue, or is dropped when that is full."""
        backlog = self.accept_backlog
        if backlog is not None and len(self.accept_queue) >= backlog:
            self.counts["dropped"] += 1
            return
        self.accept_queue.append((client, aid))

    def note_peak(self) -> None:
        """Update the peaks; called before each ``advance``, the only call that lowers in-flight."""
        in_flight = self.server.in_flight
        if in_flight > self.peak_bin:
            self.peak_bin = in_flight
            self.peak = max(self.peak, in_flight)

    def schedule_wake(self, now: float) -> None:
        """Make sure :meth:`on_wake` runs at the model's next wake-up."""
        wake = self.server.next_wakeup_s(now)
        if wake is None:
            return
        wake = max(wake, now)
        if self.wake_at is None or wake < self.wake_at:
            self.wake_at = wake
            self.wake_token += 1
            self.push(wake, WAKE, None, self.wake_token)

    def on_wake(self, now: float, client: object, token: int) -> None:
        """The model's wake-up: advance it and deliver what it releases."""
        if token != self.wake_token or self.frozen:
            return
        self.wake_at = None
        self.note_peak()
        self.deliver(now, self.server.advance(now, self.server_rng))
        self.schedule_wake(now)

    def deliver(self, now: float, completions: list[Any]) -> None:
        """Answers reach their clients; answers to abandoned attempts are dropped."""
        counts = self.counts
        counts["released"] += len(completions)
        if self.net is not None:
            ok = Outcome.OK
            for (client, aid), outcome, _admitted in completions:
                self.answer_through(now, client, aid if outcome is ok else refused_token(aid, REJECTED_STATUS))
            return
        if self.network is not None:
            ok, sample, rng = Outcome.OK, self.network.sample, self.network_rng
            for (client, aid), outcome, _admitted in completions:
                token = aid if outcome is ok else refused_token(aid, REJECTED_STATUS)
                self.push_event((now + sample(rng), next(self.sequence), ANSWER, client, token))
            return
        ok, succeeded, failed, rejections = Outcome.OK, self.succeeded, self.failed, self.series.rejections
        for (client, aid), outcome, _admitted in completions:
            if client.state != WAITING or client.aid != aid:
                counts["late_answers"] += 1
            elif outcome is ok:
                succeeded(now, client)
            else:
                rejections[self.bin] += 1
                failed(now, client, False, True, REJECTED_STATUS)

    def on_pause(self, now: float) -> None:
        """The server freezes: pending wake-ups are void."""
        if self.frozen:
            return
        self.frozen = True
        self.wake_at = None
        self.wake_token += 1

    def on_resume(self, now: float) -> None:
        """The server continues: catch up once, then admit what waited in the accept queue."""
        if not self.frozen:
            return
        self.frozen = False
        self.note_peak()
        self.deliver(now, self.server.advance(now, self.server_rng))
        waiting, self.accept_queue = self.accept_queue, []
        if self.drop_cancelled:  # gRPC: a call whose deadline passed was cancelled; the server never runs it
            kept = [(client, aid) for client, aid in waiting if client.state == WAITING and client.aid == aid]
            self.counts["cancelled"] += len(waiting) - len(kept)
            waiting = kept
        for payload in waiting:
            self.admit(now, payload)
        self.schedule_wake(now)

    def reschedule_wake(self, now: float) -> None:
        """Forget the pending wake-up and ask the model for its next one (its clock changed speed)."""
        self.wake_at = None
        self.wake_token += 1
        self.schedule_wake(now)

    def error_answer(self, now: float, payload: tuple[Client, int], status: int) -> None:
        """An attempt is answered at once with ``status``, an error of a burst (:mod:`retrystorm.sim.triggers`)."""
        client, aid = payload
        if self.net is not None:
            self.answer_through(now, client, refused_token(aid, status))
        elif self.network is not None:
            token = refused_token(aid, status)
            self.push_event((now + self.network.sample(self.network_rng), next(self.sequence), ANSWER, client, token))
        elif client.state != WAITING or client.aid != aid:
            self.counts["late_answers"] += 1  # it timed out in the accept queue of a frozen server
        else:
            self.series.rejections[self.bin] += 1
            self.failed(now, client, False, True, status, at_once=True)
