"""The seed simulation's service: a few workers, fast rejections, and overwhelm."""

from __future__ import annotations

import dataclasses
import operator
import random
from typing import Generic, TypeVar

from retrystorm.spec import DURATION, INTEGER, optional, param
from retrystorm.target.models.base import (
    MAX_DURATION_S,
    MAX_REQUESTS,
    MIN_TICK_S,
    Completion,
    ModelServer,
    Outcome,
    OverloadModel,
    next_tick_s,
    register_model,
)

P = TypeVar("P")
_EPSILON = 1e-9


@register_model("queue")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class QueueModel(OverloadModel):
    """``workers`` requests in service at once; the rest are rejected; overload slows all.

    From Will Yegelwel's "Exploring backoff" (2016): a request that finds a free worker
    is served for ``service_time``; one that finds every worker busy is answered with a
    rejection (HTTP 503) after ``reject_after``. Time advances in ticks. While more than
    ``overwhelm_at`` requests (in service plus being rejected) are outstanding, the
    server is *overwhelmed*: only ``progress_per_tick`` of them, chosen uniformly at
    random, make one tick of progress per tick. The article leaves that number
    unstated; it defaults to ``overwhelm_at``, so an overwhelmed server does as much
    work per tick as a busy one, spread over more requests.
    The article's setting is ``queue:workers=5,service_time=5s,reject_after=1s,
    overwhelm_at=25,tick=1s``, reading one tick as one second.
    """

    workers: int = param("workers", INTEGER, 5, "requests served at once", at_least=1, at_most=MAX_REQUESTS)
    service_time_s: float = param(
        "service_time", DURATION, 0.25, "time to serve a request", above=0, at_most=MAX_DURATION_S
    )
    reject_after_s: float = param(
        "reject_after", DURATION, 0.05, "time to reject a request", above=0, at_most=MAX_DURATION_S
    )
    overwhelm_at: int = param(
        "overwhelm_at",
        INTEGER,
        25,
        "outstanding requests above which it is overwhelmed",
        at_least=1,
        at_most=MAX_REQUESTS,
    )
    progress_per_tick: int | None = param(
        "progress_per_tick",
        optional(INTEGER, "auto"),
        None,
        "requests that progress per tick when overwhelmed (auto: overwhelm_at)",
        at_least=1,
        at_most=MAX_REQUESTS,
    )
    tick_s: float = param("tick", DURATION, 0.05, "length of a tick", at_least=MIN_TICK_S, at_most=MAX_DURATION_S)

    @property
    def progress_limit(self) -> int:
        """Requests that progress per tick while overwhelmed."""
        return self.overwhelm_at if self.progress_per_tick is None else self.progress_per_tick

    def start(self, now_s: float) -> QueueServer[P]:
        return QueueServer(self, now_s)


@dataclasses.dataclass(slots=True, eq=False)
class _Job(Generic[P]):
    payload: P
    admitted_s: float
    remaining_s: float
    rejected: bool
    number: int  # admission order
    index: int  # place in QueueServer._jobs


#: Release order: oldest first; at equal age, served before rejected, then in admission order.
_release_order = operator.attrgetter("admitted_s", "rejected", "number")


def _random_subset(jobs: list[_Job[P]], k: int, rng: random.Random) -> list[_Job[P]]:
    """``k`` distinct jobs (``k <= len(jobs)``) chosen uniformly at random, in no particular order.

    What ``rng.sample`` returns, drawn with one C-level ``random()`` per pick rather
    than ``sample``'s Python-level ``_randbelow``, which took a tenth of
    ``retrystorm sim wyegelwel``. A pick already chosen is drawn again.
    """
    count = len(jobs)
    chosen: set[int] = set()
    while len(chosen) < k:
        chosen.add(int(rng.random() * count))
    return [jobs[index] for index in chosen]


class QueueServer(ModelServer[P]):
    """Workers, rejections in progress, and the overwhelm rule, one tick at a time.

    Each call of :meth:`advance` after a tick boundary performs one tick of progress,
    however long ago the previous one was: a server frozen for a while makes no
    progress meanwhile.

    Every request in flight is in one list, in no particular order, and knows its
    place in it: an admission appends, a release moves the last request into the
    freed place, and the random subset of an overwhelmed tick is drawn from the list
    as it stands. A tick costs O(moving) Python steps, never a copy or a scan of
    everything in flight.
    """

    def __init__(self, model: QueueModel, now_s: float) -> None:
        self.model = model
        self._epoch_s = now_s
        self._last_tick_s = now_s
        self._jobs: list[_Job[P]] = []
        self._in_service = 0
        self._admitted = 0

    @property
    def in_flight(self) -> int:
        return len(self._jobs)

    @property
    def in_service(self) -> int:
        """Requests holding a worker."""
        return self._in_service

    @property
    def overwhelmed(self) -> bool:
        """True while more than ``overwhelm_at`` requests are outstanding."""
        return len(self._jobs) > self.model.overwhelm_at

    @property
    def delay_s(self) -> float:
        """Expected service time: stretched by the share that progresses when overwhelmed."""
        model, in_flight = self.model, len(self._jobs)
        if in_flight <= model.overwhelm_at:
            return model.service_time_s
        return model.service_time_s * max(1.0, in_flight / model.progress_limit)

    def admit(self, now_s: float, payload: P) -> None:
        self._admitted += 1
        model, jobs = self.model, self._jobs
        if self._in_service < model.workers:
            self._in_service += 1
            jobs.append(_Job(payload, now_s, model.service_time_s, False, self._admitted, len(jobs)))
        else:
            jobs.append(_Job(payload, now_s, model.reject_after_s, True, self._admitted, len(jobs)))

    def advance(self, now_s: float, rng: random.Random) -> list[Completion[P]]:
        model, jobs = self.model, self._jobs
        if self._last_tick_s + model.tick_s > now_s + _EPSILON:  # the next tick is still to come
            return []
        self._last_tick_s = now_s
        limit = model.progress_limit
        moving = _random_subset(jobs, limit, rng) if len(jobs) > model.overwhelm_at and limit < len(jobs) else jobs
        tick_s = model.tick_s
        done = []
        for job in moving:
            job.remaining_s -= tick_s
            if job.remaining_s <= _EPSILON:
                done.append(job)
        self._remove(done)
        done.sort(key=_release_order)
        ok, rejected = Outcome.OK, Outcome.REJECTED
        return [(job.payload, rejected if job.rejected else ok, job.admitted_s) for job in done]

    def _remove(self, leaving: list[_Job[P]]) -> None:
        """Take ``leaving`` out of flight: into each one's place moves the last job of the list."""
        jobs = self._jobs
        for job in leaving:
            last = jobs.pop()
            if last is not job:
                jobs[job.index] = last
                last.index = job.index
            if not job.rejected:
                self._in_service -= 1

    def next_wakeup_s(self, now_s: float) -> float | None:
        if not self._jobs:
            return None
        return max(next_tick_s(self._epoch_s, self.model.tick_s, now_s), self._last_tick_s + self.model.tick_s)

    def withdraw(self, payload: P) -> bool:
        """A withdrawn request frees its worker (or its rejection slot) at once."""
        for job in self._jobs:
            if job.payload is payload:
                self._remove([job])
                return True
        return False

    def drain(self) -> list[tuple[float, P]]:
        jobs = sorted(self._jobs, key=_release_order)
        self._jobs, self._in_service = [], 0
        return [(job.admitted_s, job.payload) for job in jobs]

    def reconfigure(self, model: OverloadModel) -> None:
        if not isinstance(model, QueueModel):
            super().reconfigure(model)
            return
        self.model = model
