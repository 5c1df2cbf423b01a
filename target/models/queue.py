"""The seed simulation's service: a few workers, fast rejections, and overwhelm."""

from __future__ import annotations

import dataclasses
import random
from typing import Generic, TypeVar

from retrystorm.spec import DURATION, INTEGER, optional, param
from target.models.base import (
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

    workers: int = param("workers", INTEGER, 5, "requests served at once", at_least=1)
    service_time_s: float = param("service_time", DURATION, 0.25, "time to serve a request", above=0)
    reject_after_s: float = param("reject_after", DURATION, 0.05, "time to reject a request", above=0)
    overwhelm_at: int = param(
        "overwhelm_at", INTEGER, 25, "outstanding requests above which it is overwhelmed", at_least=1
    )
    progress_per_tick: int | None = param(
        "progress_per_tick",
        optional(INTEGER, "auto"),
        None,
        "requests that progress per tick when overwhelmed (auto: overwhelm_at)",
        at_least=1,
    )
    tick_s: float = param("tick", DURATION, 0.05, "length of a tick", above=0)

    @property
    def progress_limit(self) -> int:
        """Requests that progress per tick while overwhelmed."""
        return self.overwhelm_at if self.progress_per_tick is None else self.progress_per_tick

    def start(self, now_s: float) -> QueueServer[P]:
        return QueueServer(self, now_s)


@dataclasses.dataclass(slots=True)
class _Job(Generic[P]):
    payload: P
    admitted_s: float
    remaining_s: float
    rejected: bool


class QueueServer(ModelServer[P]):
    """Workers, rejections in progress, and the overwhelm rule, one tick at a time.

    Each call of :meth:`advance` after a tick boundary performs one tick of progress,
    however long ago the previous one was: a server frozen for a while makes no
    progress meanwhile.
    """

    def __init__(self, model: QueueModel, now_s: float) -> None:
        self.model = model
        self._epoch_s = now_s
        self._last_tick_s = now_s
        self._serving: list[_Job[P]] = []
        self._rejecting: list[_Job[P]] = []

    @property
    def in_flight(self) -> int:
        return len(self._serving) + len(self._rejecting)

    @property
    def in_service(self) -> int:
        """Requests holding a worker."""
        return len(self._serving)

    @property
    def overwhelmed(self) -> bool:
        """True while more than ``overwhelm_at`` requests are outstanding."""
        return self.in_flight > self.model.overwhelm_at

    @property
    def delay_s(self) -> float:
        """Expected service time: stretched by the share that progresses when overwhelmed."""
        slowdown = max(1.0, self.in_flight / self.model.progress_limit) if self.overwhelmed else 1.0
        return self.model.service_time_s * slowdown

    def admit(self, now_s: float, payload: P) -> None:
        if len(self._serving) < self.model.workers:
            self._serving.append(_Job(payload, now_s, self.model.service_time_s, False))
        else:
            self._rejecting.append(_Job(payload, now_s, self.model.reject_after_s, True))

    def advance(self, now_s: float, rng: random.Random) -> list[Completion[P]]:
        if next_tick_s(self._last_tick_s, self.model.tick_s, self._last_tick_s) > now_s + _EPSILON:
            return []
        self._last_tick_s = now_s
        jobs = self._serving + self._rejecting
        if not jobs:
            return []
        limit = self.model.progress_limit
        moving = rng.sample(jobs, limit) if len(jobs) > self.model.overwhelm_at and limit < len(jobs) else jobs
        for job in moving:
            job.remaining_s -= self.model.tick_s
        done = [job for job in jobs if job.remaining_s <= _EPSILON]
        if not done:
            return []
        self._serving = [job for job in self._serving if job.remaining_s > _EPSILON]
        self._rejecting = [job for job in self._rejecting if job.remaining_s > _EPSILON]
        done.sort(key=lambda job: job.admitted_s)
        return [
            Completion(job.payload, Outcome.REJECTED if job.rejected else Outcome.OK, job.admitted_s) for job in done
        ]

    def next_wakeup_s(self, now_s: float) -> float | None:
        if not self.in_flight:
            return None
        return max(next_tick_s(self._epoch_s, self.model.tick_s, now_s), self._last_tick_s + self.model.tick_s)

    def withdraw(self, payload: P) -> bool:
        """A withdrawn request frees its worker (or its rejection slot) at once."""
        for jobs in (self._serving, self._rejecting):
            for index, job in enumerate(jobs):
                if job.payload is payload:
                    del jobs[index]
                    return True
        return False

    def drain(self) -> list[tuple[float, P]]:
        jobs = sorted(self._serving + self._rejecting, key=lambda job: job.admitted_s)
        self._serving, self._rejecting = [], []
        return [(job.admitted_s, job.payload) for job in jobs]

    def reconfigure(self, model: OverloadModel) -> None:
        if not isinstance(model, QueueModel):
            super().reconfigure(model)
            return
        self.model = model
